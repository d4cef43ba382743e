//! File system calls for copying and loading: `FICLONE`, `copy_file_range`,
//! `SEEK_DATA`/`SEEK_HOLE`, `sync_file_range`, `pwritev2(RWF_DONTCACHE)`,
//! `O_DIRECT` opens and buffers aligned for them; `*at` calls on a directory
//! descriptor (`O_TMPFILE`, `O_EXCL|O_NOFOLLOW`, `linkat`, `renameat`), so
//! a copy's destination is resolved once and never by path again.

use std::alloc::Layout;
use std::ffi::{CStr, CString, OsStr};
use std::fs::File;
use std::io;
use std::os::fd::{AsRawFd, FromRawFd};
use std::os::unix::ffi::{OsStrExt, OsStringExt};
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};

use super::{cvt, cvt_long};

/// `ioctl(FICLONE)`: make `dst` share `src`'s extents (a reflink).
pub fn clone_file(src: &File, dst: &File) -> io::Result<()> {
    // SAFETY: FICLONE takes the source descriptor as its argument; both
    // descriptors are open for the call.
    cvt(unsafe { libc::ioctl(dst.as_raw_fd(), libc::FICLONE, src.as_raw_fd()) }).map(|_| ())
}

/// `copy_file_range(2)` of up to `len` bytes from `src` at `off` to `dst`
/// at the same offset; returns the bytes copied (0 at end of file).
pub fn copy_range(src: &File, dst: &File, off: u64, len: u64) -> io::Result<u64> {
    let mut off_in = libc::loff_t::try_from(off).map_err(|_| too_big())?;
    let mut off_out = off_in;
    let len = usize::try_from(len).unwrap_or(usize::MAX);
    // Through `syscall`, not glibc's `copy_file_range`: std declares that
    // symbol weak, so a static link with fat LTO may leave it undefined
    // (address 0) and the call crashes. tests/shipped.rs checks that no
    // libc function called here is weak-undefined in the shipped binary.
    // SAFETY: both offsets are live locals the kernel updates; the
    // descriptors are open for the call; the arguments have the types the
    // system call takes.
    let n = unsafe {
        libc::syscall(
            libc::SYS_copy_file_range,
            src.as_raw_fd(),
            &mut off_in as *mut libc::loff_t,
            dst.as_raw_fd(),
            &mut off_out as *mut libc::loff_t,
            len,
            0u32,
        )
    };
    cvt_long(n).map(|n| n as u64)
}

fn too_big() -> io::Error {
    io::Error::new(io::ErrorKind::InvalidInput, "offset beyond off_t")
}

/// Where the next data at or after `off` starts (`SEEK_DATA`); `None` when
/// only a hole follows.
pub fn seek_data(file: &File, off: u64) -> io::Result<Option<u64>> {
    seek(file, off, libc::SEEK_DATA)
}

/// Where the next hole at or after `off` starts (`SEEK_HOLE`); the end of
/// the file counts as a hole.
pub fn seek_hole(file: &File, off: u64) -> io::Result<Option<u64>> {
    seek(file, off, libc::SEEK_HOLE)
}

fn seek(file: &File, off: u64, whence: libc::c_int) -> io::Result<Option<u64>> {
    let off = libc::off_t::try_from(off).map_err(|_| too_big())?;
    // SAFETY: plain call on an open descriptor.
    let ret = unsafe { libc::lseek(file.as_raw_fd(), off, whence) };
    if ret < 0 {
        let e = io::Error::last_os_error();
        if e.raw_os_error() == Some(libc::ENXIO) {
            return Ok(None);
        }
        return Err(e);
    }
    Ok(Some(ret as u64))
}

/// How [`sync_range`] waits.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SyncRange {
    /// Start writeback of dirty pages and return.
    Start,
    /// Start writeback and wait for all of it, earlier writeback included.
    Wait,
}

/// `sync_file_range(2)` over `[off, off+len)`.
pub fn sync_range(file: &File, off: u64, len: u64, how: SyncRange) -> io::Result<()> {
    let flags = match how {
        SyncRange::Start => libc::SYNC_FILE_RANGE_WRITE,
        SyncRange::Wait => {
            libc::SYNC_FILE_RANGE_WAIT_BEFORE
                | libc::SYNC_FILE_RANGE_WRITE
                | libc::SYNC_FILE_RANGE_WAIT_AFTER
        }
    };
    let off = libc::off64_t::try_from(off).map_err(|_| too_big())?;
    let len = libc::off64_t::try_from(len).unwrap_or(libc::off64_t::MAX);
    // SAFETY: plain call on an open descriptor.
    cvt(unsafe { libc::sync_file_range(file.as_raw_fd(), off, len, flags) }).map(|_| ())
}

/// `pwrite` of `buf` at `off`, with `RWF_DONTCACHE` when `dontcache` (the
/// kernel writes the pages back and drops them; Linux 6.14+, EOPNOTSUPP
/// where the filesystem cannot).
pub fn pwrite(file: &File, buf: &[u8], off: u64, dontcache: bool) -> io::Result<usize> {
    let iov = libc::iovec {
        iov_base: buf.as_ptr() as *mut libc::c_void,
        iov_len: buf.len(),
    };
    let off = libc::off_t::try_from(off).map_err(|_| too_big())?;
    let flags = if dontcache { libc::RWF_DONTCACHE } else { 0 };
    // SAFETY: `iov` points at `buf`, live and readable for the call.
    let n = unsafe { libc::pwritev2(file.as_raw_fd(), &iov, 1, off, flags) };
    cvt_long(n as libc::c_long).map(|n| n as usize)
}

/// `pread` into `buf` at `off`, with `RWF_DONTCACHE` when `dontcache`
/// (pages the read brings in are dropped again; pages already cached stay).
pub fn pread(file: &File, buf: &mut [u8], off: u64, dontcache: bool) -> io::Result<usize> {
    let iov = libc::iovec {
        iov_base: buf.as_mut_ptr().cast(),
        iov_len: buf.len(),
    };
    let off = libc::off_t::try_from(off).map_err(|_| too_big())?;
    let flags = if dontcache { libc::RWF_DONTCACHE } else { 0 };
    // SAFETY: `iov` points at `buf`, live and writable for the call.
    let n = unsafe { libc::preadv2(file.as_raw_fd(), &iov, 1, off, flags) };
    cvt_long(n as libc::c_long).map(|n| n as usize)
}

/// What `fstatat` says of a name in a directory.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct StatAt {
    pub dev: u64,
    pub ino: u64,
    /// `st_mode`: type and permission bits.
    pub mode: u32,
    pub uid: u32,
    pub size: u64,
}

impl StatAt {
    pub fn is_symlink(&self) -> bool {
        self.mode & libc::S_IFMT == libc::S_IFLNK
    }
    pub fn is_dir(&self) -> bool {
        self.mode & libc::S_IFMT == libc::S_IFDIR
    }
    pub fn is_file(&self) -> bool {
        self.mode & libc::S_IFMT == libc::S_IFREG
    }
}

fn c_name(name: &OsStr) -> io::Result<CString> {
    CString::new(name.as_bytes())
        .map_err(|_| io::Error::new(io::ErrorKind::InvalidInput, "name holds a NUL byte"))
}

fn stat_of(st: &libc::stat) -> StatAt {
    StatAt {
        dev: st.st_dev,
        ino: st.st_ino,
        mode: st.st_mode,
        uid: st.st_uid,
        size: u64::try_from(st.st_size).unwrap_or(0),
    }
}

/// Whether the file at `path` (links followed) carries the extended
/// attribute `name` (`getxattr(2)` asked for its size): `security.capability`
/// says a program has file capabilities. `false` where the file system
/// keeps no such attributes.
pub fn has_xattr(path: &Path, name: &CStr) -> io::Result<bool> {
    let c = c_name(path.as_os_str())?;
    // SAFETY: both names are NUL-terminated; a null buffer of size 0 asks
    // for the value's size only, and nothing is written.
    let n = unsafe { libc::getxattr(c.as_ptr(), name.as_ptr(), std::ptr::null_mut(), 0) };
    if n >= 0 {
        return Ok(true);
    }
    let e = io::Error::last_os_error();
    match e.raw_os_error() {
        Some(libc::ENODATA) | Some(libc::ENOTSUP) => Ok(false),
        _ => Err(e),
    }
}

/// Opens the directory `path` (`O_DIRECTORY`), for the `*_at` calls below.
/// The kernel resolves `path`, so its link protections apply.
pub fn open_dir(path: &Path) -> io::Result<File> {
    std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_DIRECTORY | libc::O_CLOEXEC)
        .open(path)
}

/// Opens the directory `path` under `dir` (`None`: the working directory)
/// following no symbolic link in any component, `openat2(2)` with
/// `RESOLVE_NO_SYMLINKS` (and `RESOLVE_BENEATH` when `beneath`: no `..`
/// or absolute path leaves `dir`). ELOOP when a component is a link;
/// ENOSYS (kernel before 5.6, or a seccomp filter) where there is no
/// `openat2`: callers then walk with [`open_dir_at`].
pub fn open_dir_no_links(dir: Option<&File>, path: &Path, beneath: bool) -> io::Result<File> {
    let c = c_name(path.as_os_str())?;
    let mut resolve = libc::RESOLVE_NO_SYMLINKS;
    if beneath {
        resolve |= libc::RESOLVE_BENEATH;
    }
    // SAFETY: open_how is plain data; zeroed is a valid value.
    let mut how: libc::open_how = unsafe { std::mem::zeroed() };
    how.flags = (libc::O_RDONLY | libc::O_DIRECTORY | libc::O_CLOEXEC) as u64;
    how.resolve = resolve;
    let at = dir.map_or(libc::AT_FDCWD, |d| d.as_raw_fd());
    // SAFETY: `c` is NUL-terminated and `how` a live open_how of the size
    // passed; the descriptor, if any, is open for the call.
    let fd = cvt_long(unsafe {
        libc::syscall(
            libc::SYS_openat2,
            at,
            c.as_ptr(),
            &how as *const libc::open_how,
            std::mem::size_of::<libc::open_how>(),
        )
    })?;
    let fd = i32::try_from(fd).map_err(|_| io::Error::from_raw_os_error(libc::EBADF))?;
    // SAFETY: openat2 returned a new descriptor that nothing else owns.
    Ok(unsafe { File::from_raw_fd(fd) })
}

/// Opens the directory `name` under `dir` (`None`: the working
/// directory), `O_NOFOLLOW`: ELOOP (or ENOTDIR) when `name` is a link.
pub fn open_dir_at(dir: Option<&File>, name: &OsStr) -> io::Result<File> {
    let c = c_name(name)?;
    let at = dir.map_or(libc::AT_FDCWD, |d| d.as_raw_fd());
    // SAFETY: `c` is NUL-terminated; the descriptor, if any, is open.
    let fd = cvt(unsafe {
        libc::openat(
            at,
            c.as_ptr(),
            libc::O_RDONLY | libc::O_DIRECTORY | libc::O_NOFOLLOW | libc::O_CLOEXEC,
        )
    })?;
    // SAFETY: openat returned a new descriptor that nothing else owns.
    Ok(unsafe { File::from_raw_fd(fd) })
}

/// `mkdirat(dir, name, mode)`.
pub fn mkdir_at(dir: &File, name: &OsStr, mode: u32) -> io::Result<()> {
    let c = c_name(name)?;
    // SAFETY: `c` is NUL-terminated; the descriptor is open.
    cvt(unsafe { libc::mkdirat(dir.as_raw_fd(), c.as_ptr(), mode as libc::mode_t) }).map(|_| ())
}

/// `symlinkat(target, dir, name)`: a link `name` in `dir` to `target`.
pub fn symlink_at(target: &Path, dir: &File, name: &OsStr) -> io::Result<()> {
    let (t, c) = (c_name(target.as_os_str())?, c_name(name)?);
    // SAFETY: both are NUL-terminated; the descriptor is open.
    cvt(unsafe { libc::symlinkat(t.as_ptr(), dir.as_raw_fd(), c.as_ptr()) }).map(|_| ())
}

/// Opens `name` under `dir` for reading, following no link in its last
/// component. A `/proc/PID` directory opened once stays bound to its
/// process: once it has ended, every name under it fails with `ENOENT`,
/// even if the PID was given to a new process (`tally mem` opens the
/// directory with its caller's rights and reads under it with more).
pub fn open_read_at(dir: &File, name: &CStr) -> io::Result<File> {
    // SAFETY: `dir` is an open descriptor for the duration of the call and
    // `name` a NUL-terminated string; a returned descriptor is new and
    // owned by nobody else.
    let fd = cvt(unsafe {
        libc::openat(
            dir.as_raw_fd(),
            name.as_ptr(),
            libc::O_RDONLY | libc::O_CLOEXEC | libc::O_NOFOLLOW,
        )
    })?;
    // SAFETY: `fd` was just opened above and is owned by this File alone.
    Ok(unsafe { File::from_raw_fd(fd) })
}

/// `fstatat(dir, name, AT_SYMLINK_NOFOLLOW)`: the name itself, a link not
/// followed.
pub fn stat_at(dir: &File, name: &OsStr) -> io::Result<StatAt> {
    let c = c_name(name)?;
    // SAFETY: stat is plain data; zeroed is a valid value.
    let mut st: libc::stat = unsafe { std::mem::zeroed() };
    // SAFETY: `c` is NUL-terminated and `st` writable, both live for the call.
    cvt(unsafe {
        libc::fstatat(
            dir.as_raw_fd(),
            c.as_ptr(),
            &mut st,
            libc::AT_SYMLINK_NOFOLLOW,
        )
    })?;
    Ok(stat_of(&st))
}

/// `fstat` of an open directory (or any open file).
pub fn stat_fd(file: &File) -> io::Result<StatAt> {
    // SAFETY: stat is plain data; zeroed is a valid value.
    let mut st: libc::stat = unsafe { std::mem::zeroed() };
    // SAFETY: `st` is writable and the descriptor open for the call.
    cvt(unsafe { libc::fstat(file.as_raw_fd(), &mut st) })?;
    Ok(stat_of(&st))
}

/// Whether standard output is a pipe (or a socket): a reader waits at its
/// other end.
pub fn stdout_is_pipe() -> bool {
    // SAFETY: stat is plain data; zeroed is a valid value.
    let mut st: libc::stat = unsafe { std::mem::zeroed() };
    // SAFETY: `st` is writable for the call; a closed descriptor fails it.
    let ok = unsafe { libc::fstat(libc::STDOUT_FILENO, &mut st) } == 0;
    ok && matches!(st.st_mode & libc::S_IFMT, libc::S_IFIFO | libc::S_IFSOCK)
}

/// `readlinkat(dir, name)`: the target of the symbolic link `name`.
pub fn readlink_at(dir: &File, name: &OsStr) -> io::Result<PathBuf> {
    let c = c_name(name)?;
    let mut buf = vec![0u8; 4096];
    // SAFETY: `buf` is writable for its length; `c` is NUL-terminated.
    let n = unsafe {
        libc::readlinkat(
            dir.as_raw_fd(),
            c.as_ptr(),
            buf.as_mut_ptr().cast(),
            buf.len(),
        )
    };
    let n = usize::try_from(cvt_long(n as libc::c_long)?).unwrap_or(0);
    if n >= buf.len() {
        return Err(io::Error::from_raw_os_error(libc::ENAMETOOLONG));
    }
    buf.truncate(n);
    Ok(PathBuf::from(std::ffi::OsString::from_vec(buf)))
}

/// `openat(dir, name, flags | O_CLOEXEC, mode)`: the caller's flags
/// (`O_NOFOLLOW`, `O_NONBLOCK`, `O_CREAT`...) as they are.
pub fn open_at(dir: &File, name: &OsStr, flags: libc::c_int, mode: u32) -> io::Result<File> {
    let c = c_name(name)?;
    // SAFETY: `c` is NUL-terminated; the descriptor is open.
    let fd = cvt(unsafe {
        libc::openat(
            dir.as_raw_fd(),
            c.as_ptr(),
            flags | libc::O_CLOEXEC,
            mode as libc::c_uint,
        )
    })?;
    // SAFETY: openat returned a new descriptor that nothing else owns.
    Ok(unsafe { File::from_raw_fd(fd) })
}

/// Whether the open `dir` is on procfs, whose links (`/proc/self/fd/N`)
/// are the kernel's own and name open files rather than paths.
pub fn on_procfs(dir: &File) -> io::Result<bool> {
    // SAFETY: statfs is plain data; zeroed is a valid value.
    let mut st: libc::statfs = unsafe { std::mem::zeroed() };
    // SAFETY: `st` is writable and the descriptor open for the call.
    cvt(unsafe { libc::fstatfs(dir.as_raw_fd(), &mut st) })?;
    // The field's and the constant's types differ between C libraries.
    Ok(i128::from(st.f_type) == i128::from(libc::PROC_SUPER_MAGIC))
}

/// Whether `path` lies in a cgroup filesystem, v2 (`v2`) or v1: one
/// `statfs`, where finding it in /proc/self/mountinfo reads and parses
/// every mount.
pub fn is_cgroup_mount(path: &std::path::Path, v2: bool) -> bool {
    use std::os::unix::ffi::OsStrExt;
    let Ok(c) = std::ffi::CString::new(path.as_os_str().as_bytes()) else {
        return false;
    };
    // SAFETY: statfs is plain data; zeroed is a valid value.
    let mut st: libc::statfs = unsafe { std::mem::zeroed() };
    // SAFETY: `c` is NUL-terminated and `st` writable for the call.
    let ok = unsafe { libc::statfs(c.as_ptr(), &mut st) } == 0;
    let magic = if v2 {
        libc::CGROUP2_SUPER_MAGIC
    } else {
        libc::CGROUP_SUPER_MAGIC
    };
    ok && i128::from(st.f_type) == i128::from(magic)
}

/// An unnamed file in `dir` (`O_TMPFILE`), open for writing with `mode`:
/// it disappears with its last descriptor, even on SIGKILL, until
/// [`link_unnamed`] gives it a name. EOPNOTSUPP (or EISDIR, ENOENT on old
/// kernels) where the filesystem cannot.
pub fn open_unnamed(dir: &File, mode: u32) -> io::Result<File> {
    // SAFETY: a constant NUL-terminated name; the descriptor is open.
    let fd = cvt(unsafe {
        libc::openat(
            dir.as_raw_fd(),
            c".".as_ptr(),
            libc::O_TMPFILE | libc::O_RDWR | libc::O_CLOEXEC,
            mode as libc::c_uint,
        )
    })?;
    // SAFETY: openat returned a new descriptor that nothing else owns.
    Ok(unsafe { File::from_raw_fd(fd) })
}

/// Creates `name` in `dir` for writing: `O_CREAT|O_EXCL|O_NOFOLLOW`, so
/// an existing name or a link planted there is never opened.
pub fn create_new_at(dir: &File, name: &OsStr, mode: u32) -> io::Result<File> {
    let c = c_name(name)?;
    // SAFETY: `c` is NUL-terminated; the descriptor is open.
    let fd = cvt(unsafe {
        libc::openat(
            dir.as_raw_fd(),
            c.as_ptr(),
            libc::O_CREAT | libc::O_EXCL | libc::O_NOFOLLOW | libc::O_RDWR | libc::O_CLOEXEC,
            mode as libc::c_uint,
        )
    })?;
    // SAFETY: openat returned a new descriptor that nothing else owns.
    Ok(unsafe { File::from_raw_fd(fd) })
}

/// Names the unnamed `file` (from [`open_unnamed`]) `name` in `dir`;
/// EEXIST when the name is taken (nothing is replaced).
pub fn link_unnamed(file: &File, dir: &File, name: &OsStr) -> io::Result<()> {
    let c = c_name(name)?;
    // With CAP_DAC_READ_SEARCH the descriptor itself; without, its
    // /proc/self/fd entry (the way linkat(2) documents for O_TMPFILE).
    // SAFETY: the names are NUL-terminated; the descriptors are open.
    let ret = unsafe {
        libc::linkat(
            file.as_raw_fd(),
            c"".as_ptr(),
            dir.as_raw_fd(),
            c.as_ptr(),
            libc::AT_EMPTY_PATH,
        )
    };
    match cvt(ret) {
        Ok(_) => return Ok(()),
        Err(e) if matches!(e.raw_os_error(), Some(libc::ENOENT) | Some(libc::EPERM)) => {}
        Err(e) => return Err(e),
    }
    let proc = CString::new(format!("/proc/self/fd/{}", file.as_raw_fd()))
        .map_err(|_| io::Error::from_raw_os_error(libc::EINVAL))?;
    // SAFETY: as above.
    cvt(unsafe {
        libc::linkat(
            libc::AT_FDCWD,
            proc.as_ptr(),
            dir.as_raw_fd(),
            c.as_ptr(),
            libc::AT_SYMLINK_FOLLOW,
        )
    })
    .map(|_| ())
}

/// `renameat(dir, from, dir, to)`: replaces `to` (a link there is replaced,
/// not followed).
pub fn rename_at(dir: &File, from: &OsStr, to: &OsStr) -> io::Result<()> {
    let (f, t) = (c_name(from)?, c_name(to)?);
    // SAFETY: both names are NUL-terminated; the descriptor is open.
    cvt(unsafe { libc::renameat(dir.as_raw_fd(), f.as_ptr(), dir.as_raw_fd(), t.as_ptr()) })
        .map(|_| ())
}

/// `unlinkat(dir, name, 0)`.
pub fn unlink_at(dir: &File, name: &OsStr) -> io::Result<()> {
    let c = c_name(name)?;
    // SAFETY: `c` is NUL-terminated; the descriptor is open.
    cvt(unsafe { libc::unlinkat(dir.as_raw_fd(), c.as_ptr(), 0) }).map(|_| ())
}

/// Opens `path` for reading with `O_DIRECT` (the page cache bypassed).
pub fn open_direct(path: &Path) -> io::Result<File> {
    std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_DIRECT)
        .open(path)
}

/// A zeroed heap buffer aligned for `O_DIRECT`.
pub struct AlignedBuf {
    ptr: std::ptr::NonNull<u8>,
    layout: Layout,
}

impl AlignedBuf {
    /// `len` bytes aligned to `align` (a power of two); `len` > 0.
    pub fn new(len: usize, align: usize) -> io::Result<AlignedBuf> {
        let layout = Layout::from_size_align(len.max(1), align)
            .map_err(|e| io::Error::new(io::ErrorKind::InvalidInput, e.to_string()))?;
        // SAFETY: the layout has a non-zero size.
        let raw = unsafe { std::alloc::alloc_zeroed(layout) };
        let ptr = std::ptr::NonNull::new(raw).ok_or_else(|| {
            io::Error::new(io::ErrorKind::OutOfMemory, "cannot allocate a buffer")
        })?;
        Ok(AlignedBuf { ptr, layout })
    }

    pub fn as_slice(&self) -> &[u8] {
        // SAFETY: `ptr` owns `layout.size()` initialised (zeroed) bytes.
        unsafe { std::slice::from_raw_parts(self.ptr.as_ptr(), self.layout.size()) }
    }

    pub fn as_mut_slice(&mut self) -> &mut [u8] {
        // SAFETY: as above, and `&mut self` makes the borrow unique.
        unsafe { std::slice::from_raw_parts_mut(self.ptr.as_ptr(), self.layout.size()) }
    }
}

impl Drop for AlignedBuf {
    fn drop(&mut self) {
        // SAFETY: allocated in `new` with this very layout.
        unsafe { std::alloc::dealloc(self.ptr.as_ptr(), self.layout) }
    }
}

// SAFETY: the buffer is plain owned memory with no thread affinity.
unsafe impl Send for AlignedBuf {}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;

    #[test]
    fn holes_and_data_are_found() {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("sparse");
        let mut f = File::create(&path).expect("create");
        f.write_all(b"head").expect("write");
        f.set_len(64 << 20).expect("set_len");
        let f = File::open(&path).expect("open");
        assert_eq!(seek_data(&f, 0).expect("seek"), Some(0));
        let hole = seek_hole(&f, 0).expect("seek").expect("a hole");
        assert!((4..64 << 20).contains(&hole), "hole at {hole}");
        // Past the data only a hole remains (or the filesystem reports
        // the whole file as data).
        let next = seek_data(&f, hole).expect("seek");
        assert!(next.is_none() || next == Some(hole));
    }

    #[test]
    fn aligned_buffers_are_aligned() {
        let mut b = AlignedBuf::new(8192, 4096).expect("alloc");
        assert_eq!(b.as_slice().as_ptr() as usize % 4096, 0);
        assert_eq!(b.as_mut_slice().len(), 8192);
        assert!(b.as_slice().iter().all(|x| *x == 0));
    }
}

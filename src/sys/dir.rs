//! Reading a directory through its descriptor: the names in it, one level
//! at a time, with no path resolved (`getdents64` on the descriptor
//! itself), so a directory deeper than `PATH_MAX` reads like any other.

use std::ffi::{CStr, OsStr, OsString};
use std::fs::File;
use std::io;
use std::os::fd::AsRawFd;
use std::os::unix::ffi::{OsStrExt, OsStringExt};

use super::{cvt, cvt_long};

/// Bytes of entries one `getdents64` call may return.
const BUF: usize = 32 << 10;

/// What a directory entry is, as the directory itself says (`d_type`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    Dir,
    File,
    Symlink,
    /// A FIFO, socket or device.
    Other,
    /// The filesystem does not say (`DT_UNKNOWN`): ask with `fstatat`.
    Unknown,
}

impl Kind {
    /// The kind of a `st_mode`.
    pub fn of_mode(mode: u32) -> Kind {
        match mode & libc::S_IFMT {
            libc::S_IFDIR => Kind::Dir,
            libc::S_IFREG => Kind::File,
            libc::S_IFLNK => Kind::Symlink,
            _ => Kind::Other,
        }
    }
}

/// One name in a directory (never `.` or `..`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Entry {
    pub name: OsString,
    pub kind: Kind,
}

/// The entries of an open directory, read as they are asked for, a
/// buffer of them at a time.
pub struct Entries<'a> {
    dir: &'a File,
    /// `u64`s, so that every record in it is aligned as the kernel wrote it.
    buf: Vec<u64>,
    /// Bytes of `buf` filled, and read so far.
    len: usize,
    at: usize,
    done: bool,
}

/// The entries of `dir` (a directory opened for reading), from its start.
/// The directory's read position is the descriptor's: one reading at a
/// time per descriptor.
pub fn entries(dir: &File) -> io::Result<Entries<'_>> {
    // SAFETY: plain call on an open descriptor.
    let at = unsafe { libc::lseek(dir.as_raw_fd(), 0, libc::SEEK_SET) };
    cvt_long(at as libc::c_long)?;
    Ok(Entries {
        dir,
        buf: vec![0u64; BUF / 8],
        len: 0,
        at: 0,
        done: false,
    })
}

impl Entries<'_> {
    /// Refills the buffer; `false` at the end of the directory.
    fn fill(&mut self) -> io::Result<bool> {
        // SAFETY: the buffer is writable for its length in bytes; the
        // descriptor is open for the call.
        let n = unsafe {
            libc::syscall(
                libc::SYS_getdents64,
                self.dir.as_raw_fd(),
                self.buf.as_mut_ptr().cast::<u8>(),
                self.buf.len() * 8,
            )
        };
        let n = usize::try_from(cvt_long(n)?).unwrap_or(0);
        self.len = n.min(self.buf.len() * 8);
        self.at = 0;
        Ok(n > 0)
    }

    /// The record at `self.at`: its name, type and length.
    fn record(&self) -> Option<(&CStr, u8, usize)> {
        // struct linux_dirent64: d_ino u64, d_off i64, d_reclen u16,
        // d_type u8, d_name NUL-terminated.
        const NAME: usize = 19;
        // SAFETY: `buf` holds `len` initialised bytes; viewed as bytes.
        let bytes = unsafe { std::slice::from_raw_parts(self.buf.as_ptr().cast::<u8>(), self.len) };
        let rec = bytes.get(self.at..)?;
        let reclen = usize::from(u16::from_ne_bytes([*rec.get(16)?, *rec.get(17)?]));
        let d_type = *rec.get(18)?;
        let name = CStr::from_bytes_until_nul(rec.get(NAME..reclen)?).ok()?;
        (reclen > 0).then_some((name, d_type, reclen))
    }
}

impl Iterator for Entries<'_> {
    type Item = io::Result<Entry>;

    fn next(&mut self) -> Option<io::Result<Entry>> {
        loop {
            if self.done {
                return None;
            }
            if self.at >= self.len {
                match self.fill() {
                    Ok(true) => {}
                    Ok(false) => {
                        self.done = true;
                        return None;
                    }
                    Err(e) => {
                        self.done = true;
                        return Some(Err(e));
                    }
                }
            }
            let (bytes, d_type) = match self.record() {
                Some((name, d_type, reclen)) => {
                    let bytes = name.to_bytes();
                    let dots = bytes == b"." || bytes == b"..";
                    let owned = (!dots).then(|| bytes.to_vec());
                    self.at += reclen;
                    match owned {
                        Some(b) => (b, d_type),
                        None => continue,
                    }
                }
                None => {
                    self.done = true;
                    return Some(Err(io::Error::new(
                        io::ErrorKind::InvalidData,
                        "the kernel returned a malformed directory entry",
                    )));
                }
            };
            let kind = match d_type {
                libc::DT_DIR => Kind::Dir,
                libc::DT_REG => Kind::File,
                libc::DT_LNK => Kind::Symlink,
                libc::DT_UNKNOWN => Kind::Unknown,
                _ => Kind::Other,
            };
            return Some(Ok(Entry {
                name: OsString::from_vec(bytes),
                kind,
            }));
        }
    }
}

/// `unlinkat(dir, name, AT_REMOVEDIR)`: removes the empty directory
/// `name` in `dir`.
pub fn rmdir_at(dir: &File, name: &OsStr) -> io::Result<()> {
    let c = std::ffi::CString::new(name.as_bytes())
        .map_err(|_| io::Error::new(io::ErrorKind::InvalidInput, "name holds a NUL byte"))?;
    // SAFETY: `c` is NUL-terminated; the descriptor is open.
    cvt(unsafe { libc::unlinkat(dir.as_raw_fd(), c.as_ptr(), libc::AT_REMOVEDIR) }).map(|_| ())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn entries_name_each_child_once_with_its_kind() {
        let dir = tempfile::tempdir().expect("tempdir");
        std::fs::write(dir.path().join("f"), b"x").expect("write");
        std::fs::create_dir(dir.path().join("d")).expect("mkdir");
        std::os::unix::fs::symlink("f", dir.path().join("l")).expect("symlink");
        let d = File::open(dir.path()).expect("open");
        let mut got: Vec<Entry> = entries(&d)
            .expect("entries")
            .collect::<io::Result<_>>()
            .expect("read");
        got.sort_by(|a, b| a.name.cmp(&b.name));
        let names: Vec<&OsStr> = got.iter().map(|e| e.name.as_os_str()).collect();
        assert_eq!(names, ["d", "f", "l"]);
        for e in &got {
            let want = match e.name.as_bytes() {
                b"d" => Kind::Dir,
                b"f" => Kind::File,
                _ => Kind::Symlink,
            };
            assert!(e.kind == want || e.kind == Kind::Unknown, "{e:?}");
        }
        // Read again through the same descriptor: from the start.
        assert_eq!(entries(&d).expect("again").count(), 3);
        rmdir_at(&d, OsStr::new("d")).expect("rmdir");
        assert!(!dir.path().join("d").exists());
    }
}

//! Putting a file in place whole, where it was named: the way `tally cp`
//! writes every copy and every command writes its reports, exports and
//! pages.
//!
//! The destination's directory is opened (the kernel resolves its path,
//! with its own link protections); the last component is looked at with
//! `fstatat(AT_SYMLINK_NOFOLLOW)`. A symbolic link there is followed, as cp
//! does, only where the kernel's `fs.protected_symlinks` would follow it:
//! in a sticky world-writable directory (`/tmp`) a link is followed only if
//! its owner is the caller or the directory's owner. Otherwise another user
//! could plant `/tmp/foo -> /etc/shadow` and have root's write replace the
//! file the link names. Reading the link and walking its target by hand
//! (as `canonicalize` does) bypasses the kernel's check, so it is mirrored
//! here. The content is then written to an unnamed file (`O_TMPFILE`), or
//! a `O_CREAT|O_EXCL|O_NOFOLLOW` temporary name, in that directory and put
//! in place with `linkat`/`renameat` on the same descriptor: no path is
//! resolved again between the check and the rename, and until the rename
//! the name holds what it held before (a failed or killed command leaves an
//! earlier report as it was).

use std::ffi::{OsStr, OsString};
use std::fs::File;
use std::io;
use std::os::unix::ffi::{OsStrExt, OsStringExt};
use std::path::{Component, Path, PathBuf};
use std::sync::Arc;

use crate::sys::{self, cleanup::Guard, file::StatAt};
use crate::text::path::display;

/// Longest file name (`NAME_MAX`).
const NAME_MAX: usize = 255;
/// Links followed before giving up (the kernel's limit).
const MAX_LINKS: usize = 40;
/// The end of a temporary name (`.NAME.XXXXXX.tally-cp`).
const TEMP_SUFFIX: &str = ".tally-cp";

/// What the destination's name holds now.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Existing {
    Nothing,
    File(StatAt),
    Dir,
    /// A device, FIFO or socket.
    Special,
}

/// A resolved destination: the directory it lands in (open) and its name.
#[derive(Debug)]
pub struct Dest {
    /// Shared: the files a recursive copy puts in one directory share it.
    pub dir: Arc<File>,
    pub dir_path: PathBuf,
    pub name: OsString,
    pub existing: Existing,
    /// The path the copy lands at: as given, or where links led.
    pub path: PathBuf,
}

/// A destination that cannot be written, named with the fix.
#[derive(Debug, thiserror::Error)]
pub enum PlaceError {
    #[error("{} is a directory: name a file", display(.0))]
    DestinationIsDir(PathBuf),
    #[error(
        "cannot open the directory {}: {source} — create it first, or name an existing directory",
        display(dir)
    )]
    DestinationDir { dir: PathBuf, source: io::Error },
    #[error(
        "{} is a symbolic link (owner uid {link_uid}) in a world-writable sticky directory of uid {dir_uid}: not followed, as the kernel's fs.protected_symlinks refuses to — another user may have planted it; remove the link or name another destination",
        display(path)
    )]
    ProtectedLink {
        path: PathBuf,
        link_uid: u32,
        dir_uid: u32,
    },
    #[error(
        "cannot create a temporary file in {}: {source} — {}",
        display(dir),
        write_fix(source)
    )]
    Temp { dir: PathBuf, source: io::Error },
    #[error("cannot put the finished file in place as {}: {source}", display(path))]
    Rename { path: PathBuf, source: io::Error },
    #[error("{}: {message}", display(path))]
    Other { path: PathBuf, message: String },
}

impl PlaceError {
    /// The message for `path` given to `option`: `OPTION PATH: why`, or
    /// `OPTION: why` when `why` names the path first (the path said once).
    pub fn for_option(&self, option: &str, path: &Path) -> String {
        let why = self.to_string();
        let shown = display(path);
        if why.starts_with(&shown) {
            format!("{option}: {why}")
        } else {
            format!("{option} {shown}: {why}")
        }
    }
}

/// What to do when a file cannot be created or written for `e`: the fix,
/// said once (a full filesystem is not a permission problem).
pub fn write_fix(e: &io::Error) -> &'static str {
    match e.raw_os_error() {
        Some(libc::ENOSPC) => "its filesystem is full: free space there, or write elsewhere",
        Some(libc::EDQUOT) => "your disk quota there is used up: free space, or write elsewhere",
        Some(libc::EROFS) => "its filesystem is mounted read-only: write elsewhere",
        Some(libc::EIO) => {
            "the storage reported an I/O error: check the device, or write elsewhere"
        }
        Some(libc::EFBIG) => "its filesystem cannot hold a file this large: write elsewhere",
        _ => "check the directory exists and is writable",
    }
}

/// Whether the kernel's `fs.protected_symlinks` is on (unknown counts as
/// on). Read once: `cp -r` resolves a destination for every file.
fn symlinks_protected() -> bool {
    static PROTECTED: std::sync::OnceLock<bool> = std::sync::OnceLock::new();
    *PROTECTED.get_or_init(|| {
        crate::procfs::sysctl::read(&crate::procfs::ProcRoot::default(), "fs.protected_symlinks")
            .is_none_or(|s| s != "0")
    })
}

/// The kernel's `may_follow_link`: may a process with `fsuid` follow the
/// link `link` found in the directory `dir`?
pub fn may_follow(dir: &StatAt, link: &StatAt, fsuid: u32) -> bool {
    const STICKY_WORLD_WRITABLE: u32 = libc::S_ISVTX | libc::S_IWOTH;
    link.uid == fsuid
        || dir.mode & STICKY_WORLD_WRITABLE != STICKY_WORLD_WRITABLE
        || dir.uid == link.uid
}

fn split(path: &Path) -> Result<(PathBuf, OsString), PlaceError> {
    let name = path
        .file_name()
        .ok_or_else(|| PlaceError::DestinationIsDir(path.to_path_buf()))?;
    let dir = match path.parent() {
        Some(p) if !p.as_os_str().is_empty() => p.to_path_buf(),
        _ => PathBuf::from("."),
    };
    Ok((dir, name.to_os_string()))
}

/// Opens the directory `path` as the kernel would, except that a
/// symbolic link on the way is followed only where `fs.protected_symlinks`
/// would let the kernel follow it as a path's last component. The kernel
/// checks only the last component, so without this a link another user
/// planted in a sticky directory and named as a directory of the path
/// (`/tmp/theirlink/x`) would lead the write wherever it points. With no
/// link on the way (the common case) this is one `openat2(2)`
/// (`RESOLVE_NO_SYMLINKS`); with links, or without `openat2`, the path is
/// walked a component at a time, each opened `O_NOFOLLOW` relative to the
/// one before, and each link judged before it is followed.
pub fn open_dir_guarded(path: &Path) -> Result<File, PlaceError> {
    let failed = |source: io::Error| PlaceError::DestinationDir {
        dir: path.to_path_buf(),
        source,
    };
    if !symlinks_protected() {
        return sys::file::open_dir(path).map_err(failed);
    }
    match sys::file::open_dir_no_links(None, path, false) {
        Ok(dir) => return Ok(dir),
        // A link on the way (EACCES: the kernel refused a link as the
        // last component), or no openat2: walk, and say which link.
        Err(e)
            if matches!(
                e.raw_os_error(),
                Some(libc::ELOOP)
                    | Some(libc::EACCES)
                    | Some(libc::ENOSYS)
                    | Some(libc::EPERM)
                    | Some(libc::EINVAL)
            ) => {}
        Err(e) => return Err(failed(e)),
    }
    let mut todo: std::collections::VecDeque<OsString> = std::collections::VecDeque::new();
    let mut cur: Option<File> = None;
    let push_front = |todo: &mut std::collections::VecDeque<OsString>, p: &Path| {
        let parts: Vec<OsString> = p
            .components()
            .filter_map(|c| match c {
                Component::Normal(n) => Some(n.to_os_string()),
                Component::ParentDir => Some(OsString::from("..")),
                _ => None,
            })
            .collect();
        for part in parts.into_iter().rev() {
            todo.push_front(part);
        }
    };
    if path.is_absolute() {
        cur = Some(sys::file::open_dir(Path::new("/")).map_err(failed)?);
    }
    push_front(&mut todo, path);
    // The path as walked so far, links as named, for messages.
    let mut walked = if path.is_absolute() {
        PathBuf::from("/")
    } else {
        PathBuf::new()
    };
    let mut hops = 0;
    while let Some(name) = todo.pop_front() {
        let here = walked.join(&name);
        match sys::file::open_dir_at(cur.as_ref(), &name) {
            Ok(d) => {
                cur = Some(d);
                walked = here;
                continue;
            }
            Err(e) if matches!(e.raw_os_error(), Some(libc::ELOOP) | Some(libc::ENOTDIR)) => {
                let parent = match cur.take() {
                    Some(d) => d,
                    None => sys::file::open_dir(Path::new(".")).map_err(failed)?,
                };
                let st = sys::file::stat_at(&parent, &name).map_err(failed)?;
                if !st.is_symlink() {
                    return Err(failed(e));
                }
                let dir_st = sys::file::stat_fd(&parent).map_err(failed)?;
                if !may_follow(&dir_st, &st, sys::geteuid()) {
                    return Err(PlaceError::ProtectedLink {
                        path: here,
                        link_uid: st.uid,
                        dir_uid: dir_st.uid,
                    });
                }
                hops += 1;
                if hops > MAX_LINKS {
                    return Err(failed(io::Error::from_raw_os_error(libc::ELOOP)));
                }
                let target = sys::file::readlink_at(&parent, &name).map_err(failed)?;
                if target.is_absolute() {
                    cur = Some(sys::file::open_dir(Path::new("/")).map_err(failed)?);
                } else {
                    cur = Some(parent);
                }
                push_front(&mut todo, &target);
                walked = here;
            }
            Err(e) => return Err(failed(e)),
        }
    }
    match cur {
        Some(d) => Ok(d),
        None => sys::file::open_dir(Path::new(".")).map_err(failed),
    }
}

/// Resolves `path` as the module documentation says. Fails before any
/// data moves when the directory is missing, or a link must not be
/// followed.
pub fn resolve(path: &Path) -> Result<Dest, PlaceError> {
    let (mut dir_path, mut name) = split(path)?;
    let protected = symlinks_protected();
    for hop in 0..MAX_LINKS {
        let landing = |d: &Path, n: &OsStr| {
            if hop == 0 {
                path.to_path_buf()
            } else {
                d.join(n)
            }
        };
        let dangling = || PlaceError::Other {
            path: path.to_path_buf(),
            message: "is a symbolic link to nothing: remove it or name another destination".into(),
        };
        let dir = match open_dir_guarded(&dir_path) {
            Ok(d) => Arc::new(d),
            Err(PlaceError::DestinationDir { source, .. })
                if hop > 0 && source.raw_os_error() == Some(libc::ENOENT) =>
            {
                return Err(dangling());
            }
            Err(e) => return Err(e),
        };
        let st = match sys::file::stat_at(&dir, &name) {
            Ok(st) => st,
            // Not through a link that leads nowhere, as cp.
            Err(e) if hop > 0 && e.raw_os_error() == Some(libc::ENOENT) => return Err(dangling()),
            Err(e) if e.raw_os_error() == Some(libc::ENOENT) => {
                return Ok(Dest {
                    path: landing(&dir_path, &name),
                    dir,
                    dir_path,
                    name,
                    existing: Existing::Nothing,
                });
            }
            Err(e) => {
                return Err(PlaceError::Other {
                    path: dir_path.join(&name),
                    message: format!("cannot look at the destination: {e}"),
                });
            }
        };
        let existing = if st.is_symlink() && sys::file::on_procfs(&dir).unwrap_or(false) {
            // `/proc/self/fd/N` (`/dev/stdout`): the kernel's link to a
            // file tally holds open, not a path to walk; opened by
            // [`open_special`].
            Existing::Special
        } else if st.is_symlink() {
            let here = landing(&dir_path, &name);
            let dir_st = sys::file::stat_fd(&dir).map_err(|e| PlaceError::Other {
                path: dir_path.clone(),
                message: format!("cannot look at the directory: {e}"),
            })?;
            if protected && !may_follow(&dir_st, &st, sys::geteuid()) {
                return Err(PlaceError::ProtectedLink {
                    path: here,
                    link_uid: st.uid,
                    dir_uid: dir_st.uid,
                });
            }
            let target = sys::file::readlink_at(&dir, &name).map_err(|e| PlaceError::Other {
                path: here.clone(),
                message: format!("cannot read the link: {e}"),
            })?;
            // Relative targets start from the link's directory, walked by
            // the kernel (no lexical `..` folding).
            let next = if target.is_absolute() {
                target
            } else {
                dir_path.join(target)
            };
            let Ok((d, n)) = split(&next) else {
                return Err(PlaceError::DestinationIsDir(here));
            };
            (dir_path, name) = (d, n);
            continue;
        } else if st.is_dir() {
            Existing::Dir
        } else if st.is_file() {
            Existing::File(st)
        } else {
            Existing::Special
        };
        return Ok(Dest {
            path: landing(&dir_path, &name),
            dir,
            dir_path,
            name,
            existing,
        });
    }
    Err(PlaceError::Other {
        path: path.to_path_buf(),
        message: "too many levels of symbolic links".into(),
    })
}

/// Opens, to write into it where it is (never replaced), the name `dest`
/// resolved to when it is not a regular file or a directory: the one
/// policy for FIFOs and devices of every path tally writes.
///
/// - A FIFO is opened non-blocking: with no reader it is refused at once
///   (the open would otherwise wait for one forever), with one it is
///   written, blocking again.
/// - A character device (`/dev/null`, a terminal, `/dev/full`) is written.
/// - A block device is refused: a report or a command's output is not
///   put onto a disk's blocks by mistake.
/// - A socket cannot be opened by name, and is refused with the fix.
/// - A link in /proc (`/dev/stdout` is `/proc/self/fd/1`) names a file
///   tally already holds open: it is followed by the kernel, and what it
///   leads to is judged as above (a regular file is appended to).
///
/// The name is opened `O_NOFOLLOW` relative to the directory already
/// resolved, so nothing swapped in since is followed.
pub fn open_special(dest: &Dest) -> Result<File, PlaceError> {
    let other = |message: String| PlaceError::Other {
        path: dest.path.clone(),
        message,
    };
    let st = sys::file::stat_at(&dest.dir, &dest.name)
        .map_err(|e| other(format!("cannot look at it: {e}")))?;
    let magic = st.is_symlink();
    if magic && !sys::file::on_procfs(&dest.dir).unwrap_or(false) {
        return Err(other("changed while it was being opened: try again".into()));
    }
    let mut flags = libc::O_WRONLY | libc::O_NONBLOCK | libc::O_NOCTTY;
    if magic {
        flags |= libc::O_APPEND;
    } else {
        flags |= libc::O_NOFOLLOW;
    }
    let kind = st.mode & libc::S_IFMT;
    let file = sys::file::open_at(&dest.dir, &dest.name, flags, 0).map_err(|e| {
        match (e.raw_os_error(), kind) {
            (Some(libc::ENXIO), libc::S_IFIFO) => other(
                "is a FIFO with no reader: nothing would read what is written, and the open \
                 would wait for ever; start its reader first, or name a file"
                    .into(),
            ),
            (Some(libc::ENXIO), libc::S_IFSOCK) => other(
                "is a socket, which cannot be opened by name: name a file, a FIFO or a \
                 character device"
                    .into(),
            ),
            _ => other(format!("cannot open for writing: {e}")),
        }
    })?;
    let opened = sys::file::stat_fd(&file).map_err(|e| other(format!("cannot look at it: {e}")))?;
    match opened.mode & libc::S_IFMT {
        libc::S_IFBLK => {
            return Err(other(
                "is a block device: tally does not write onto a disk's blocks; name a file".into(),
            ));
        }
        libc::S_IFREG if !magic => {
            return Err(other("changed while it was being opened: try again".into()));
        }
        _ => {}
    }
    {
        use std::os::fd::AsFd;
        sys::ipc::set_blocking(file.as_fd())
            .map_err(|e| other(format!("cannot write to it: {e}")))?;
    }
    Ok(file)
}

/// `path` opened to append to, as `compare --command-output` writes
/// every run's output: resolved as [`resolve`] does (planted links
/// refused in every component), a regular file opened where it is (its
/// inode, mode and owner kept) or created (mode 0666 less the umask),
/// `O_NOFOLLOW`; anything else by [`open_special`]'s policy. The second
/// value says whether it is a regular file (which can be emptied between
/// runs).
pub fn open_append(path: &Path) -> Result<(File, bool), PlaceError> {
    let dest = resolve(path)?;
    match dest.existing {
        Existing::Dir => Err(PlaceError::DestinationIsDir(path.to_path_buf())),
        Existing::Special => {
            let file = open_special(&dest)?;
            let regular = sys::file::stat_fd(&file).is_ok_and(|st| st.is_file());
            Ok((file, regular))
        }
        Existing::Nothing | Existing::File(_) => {
            let flags = libc::O_WRONLY
                | libc::O_APPEND
                | libc::O_CREAT
                | libc::O_NOFOLLOW
                | libc::O_NOCTTY
                | libc::O_NONBLOCK;
            let file = sys::file::open_at(&dest.dir, &dest.name, flags, 0o666).map_err(|e| {
                PlaceError::Other {
                    path: dest.path.clone(),
                    message: format!("cannot be written: {e} — {}", write_fix(&e)),
                }
            })?;
            if !sys::file::stat_fd(&file).is_ok_and(|st| st.is_file()) {
                // Made a FIFO or device since it was resolved.
                return Err(PlaceError::Other {
                    path: dest.path.clone(),
                    message: "changed while it was being opened: try again".into(),
                });
            }
            {
                use std::os::fd::AsFd;
                sys::ipc::set_blocking(file.as_fd()).map_err(|e| PlaceError::Other {
                    path: dest.path.clone(),
                    message: format!("cannot write to it: {e}"),
                })?;
            }
            Ok((file, true))
        }
    }
}

/// A temporary name for `name`: `.NAME.XXXXXX.tally-cp`, with NAME cut
/// short so the whole stays within `NAME_MAX` bytes.
pub fn temp_name(name: &OsStr, salt: u64) -> OsString {
    let room = NAME_MAX - (1 + 1 + 6 + TEMP_SUFFIX.len());
    let bytes = name.as_bytes();
    let mut cut = bytes.len().min(room);
    // Cut at a character boundary when the name is UTF-8.
    if std::str::from_utf8(bytes).is_ok() {
        while cut > 0 && std::str::from_utf8(bytes.get(..cut).unwrap_or(&[])).is_err() {
            cut -= 1;
        }
    }
    let mut out = Vec::with_capacity(NAME_MAX);
    out.push(b'.');
    out.extend_from_slice(bytes.get(..cut).unwrap_or(&[]));
    out.push(b'.');
    const ALPHABET: &[u8; 62] = b"0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ";
    let mut x = salt;
    for _ in 0..6 {
        out.push(ALPHABET[(x % 62) as usize]);
        x /= 62;
    }
    out.extend_from_slice(TEMP_SUFFIX.as_bytes());
    OsString::from_vec(out)
}

/// Whether /proc/self/fd is there (an unnamed file is named through it
/// without CAP_DAC_READ_SEARCH); looked at once, not once per file.
fn proc_fd_present() -> bool {
    static PRESENT: std::sync::OnceLock<bool> = std::sync::OnceLock::new();
    *PRESENT.get_or_init(|| Path::new("/proc/self/fd").is_dir())
}

/// Some randomness for temporary names (collisions are retried).
fn salt(attempt: u64) -> u64 {
    use std::hash::{BuildHasher, Hasher};
    let mut h = std::collections::hash_map::RandomState::new().build_hasher();
    h.write_u64(attempt);
    h.write_u32(std::process::id());
    if let Ok(t) = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH) {
        h.write_u128(t.as_nanos());
    }
    h.finish()
}

/// The file a copy is written to before it is put in place. Dropped
/// without [`Temp::commit`], it leaves nothing: an unnamed file vanishes
/// with its descriptor (even on SIGKILL); a named one is unlinked, and
/// armed for removal if a signal ends tally first. Once in place it holds
/// no descriptor but its file's (a recursive copy keeps many finished
/// copies open until their pages are dropped, and not their directories).
#[derive(Debug)]
pub struct Temp {
    pub file: File,
    named: Option<Named>,
    /// The regular file the destination's name holds, opened for writing
    /// (see [`open_existing`]).
    existing: Option<File>,
}

/// A temporary file's name in its directory, armed for removal on a
/// signal (through the directory's descriptor: no path is resolved).
#[derive(Debug)]
struct Named {
    name: OsString,
    /// Dropped before `dir`, which it names the file in.
    _guard: Option<Guard>,
    dir: Arc<File>,
}

impl Named {
    /// `name` in `dir`, armed first: no moment where the name exists
    /// unguarded.
    fn arm(dir: &Arc<File>, name: OsString) -> Named {
        Named {
            _guard: Guard::arm_at(dir, &name).ok(),
            name,
            dir: Arc::clone(dir),
        }
    }
}

impl Temp {
    /// An unnamed file in `dest`'s directory where the filesystem has
    /// `O_TMPFILE` (and /proc can name it later), else a new temporary name.
    pub fn create(dest: &Dest, unnamed: bool) -> Result<Temp, PlaceError> {
        let temp_err = |e: io::Error| PlaceError::Temp {
            dir: dest.dir_path.clone(),
            source: e,
        };
        let existing = open_existing(dest)?;
        if unnamed && proc_fd_present() {
            match sys::file::open_unnamed(&dest.dir, 0o600) {
                Ok(file) => {
                    return Ok(Temp {
                        file,
                        named: None,
                        existing,
                    });
                }
                Err(e)
                    if matches!(
                        e.raw_os_error(),
                        Some(libc::EOPNOTSUPP) | Some(libc::EISDIR) | Some(libc::ENOENT)
                    ) => {}
                Err(e) => return Err(temp_err(e)),
            }
        }
        for attempt in 0..100 {
            let named = Named::arm(&dest.dir, temp_name(&dest.name, salt(attempt)));
            match sys::file::create_new_at(&dest.dir, &named.name, 0o600) {
                Ok(file) => {
                    return Ok(Temp {
                        file,
                        named: Some(named),
                        existing,
                    });
                }
                Err(e) if e.raw_os_error() == Some(libc::EEXIST) => continue,
                Err(e) => return Err(temp_err(e)),
            }
        }
        Err(temp_err(io::Error::from_raw_os_error(libc::EEXIST)))
    }

    /// Puts the finished copy in place under `dest`'s name; the file stays
    /// open in `self` (dropping it then removes nothing).
    pub fn commit(&mut self, dest: &Dest) -> Result<(), PlaceError> {
        let rename_err = |e: io::Error| PlaceError::Rename {
            path: dest.path.clone(),
            source: e,
        };
        if let Some(existing) = self.existing.take()
            && !self.keeps_attributes_of(&existing)
        {
            return self.write_into(existing, dest);
        }
        if self.named.is_none() {
            if dest.existing == Existing::Nothing {
                match sys::file::link_unnamed(&self.file, &dest.dir, &dest.name) {
                    Ok(()) => return Ok(()),
                    // Created meanwhile: replace it by a rename below.
                    Err(e) if e.raw_os_error() == Some(libc::EEXIST) => {}
                    Err(e) => return Err(rename_err(e)),
                }
            }
            let mut linked = None;
            for attempt in 0..100 {
                let named = Named::arm(&dest.dir, temp_name(&dest.name, salt(attempt)));
                match sys::file::link_unnamed(&self.file, &dest.dir, &named.name) {
                    Ok(()) => {
                        linked = Some(named);
                        break;
                    }
                    Err(e) if e.raw_os_error() == Some(libc::EEXIST) => continue,
                    Err(e) => return Err(rename_err(e)),
                }
            }
            match linked {
                Some(l) => self.named = Some(l),
                None => return Err(rename_err(io::Error::from_raw_os_error(libc::EEXIST))),
            }
        }
        if let Some(named) = &self.named {
            sys::file::rename_at(&dest.dir, &named.name, &dest.name).map_err(rename_err)?;
        }
        // In place: nothing to remove any more (the guard disarms).
        self.named = None;
        Ok(())
    }
}

impl Temp {
    /// Gives the finished file the mode and owner of the `existing` one it
    /// replaces; false where the replacement cannot keep what the existing
    /// file is: more than one name (hard links would detach from it), or an
    /// owner the caller cannot give away.
    fn keeps_attributes_of(&self, existing: &File) -> bool {
        use std::os::unix::fs::{MetadataExt, PermissionsExt};
        let Ok(meta) = existing.metadata() else {
            return false;
        };
        if meta.nlink() > 1 {
            return false;
        }
        let owned = self
            .file
            .metadata()
            .is_ok_and(|m| (m.uid(), m.gid()) == (meta.uid(), meta.gid()))
            || std::os::unix::fs::fchown(&self.file, Some(meta.uid()), Some(meta.gid())).is_ok();
        // After the owner: a change of owner clears set-id bits.
        owned
            && self
                .file
                .set_permissions(std::fs::Permissions::from_mode(meta.mode() & 0o7777))
                .is_ok()
    }

    /// Writes the finished content into `existing` where it is, as cp
    /// writes into an existing destination: its inode, links, mode and
    /// owner stay; the temporary file goes.
    fn write_into(&mut self, mut existing: File, dest: &Dest) -> Result<(), PlaceError> {
        use std::io::Seek;
        let failed = |e: io::Error| PlaceError::Other {
            path: dest.path.clone(),
            message: format!(
                "cannot write into the existing file: {e} — {}",
                write_fix(&e)
            ),
        };
        existing.set_len(0).map_err(failed)?;
        let mut from = &self.file;
        from.seek(io::SeekFrom::Start(0)).map_err(failed)?;
        io::copy(&mut from, &mut existing).map_err(failed)?;
        Ok(())
    }
}

/// The regular file `dest` names, opened for writing without truncating
/// it, `O_NOFOLLOW` relative to the directory resolved, and checked to be
/// the file resolved; `None` when the name holds no regular file. A file
/// the caller may not write is refused here, before any data moves
/// ("Permission denied", as cp says), rather than replaced by a rename the
/// directory's permissions would allow.
fn open_existing(dest: &Dest) -> Result<Option<File>, PlaceError> {
    use std::os::unix::fs::MetadataExt;
    let Existing::File(st) = dest.existing else {
        return Ok(None);
    };
    let flags =
        libc::O_WRONLY | libc::O_NOFOLLOW | libc::O_NOCTTY | libc::O_NONBLOCK | libc::O_CLOEXEC;
    let refused = |e: io::Error| PlaceError::Other {
        path: dest.path.clone(),
        message: if e.raw_os_error() == Some(libc::EACCES) || e.raw_os_error() == Some(libc::EPERM)
        {
            format!(
                "cannot write into the existing file: {e} — make it writable (chmod u+w), or name another destination"
            )
        } else {
            format!("cannot open the existing file: {e}")
        },
    };
    let file = match sys::file::open_at(&dest.dir, &dest.name, flags, 0) {
        Ok(f) => f,
        // A program that runs cannot be written into, but can be replaced
        // by the rename, as before.
        Err(e) if e.raw_os_error() == Some(libc::ETXTBSY) => return Ok(None),
        Err(e) => return Err(refused(e)),
    };
    let meta = file.metadata().map_err(refused)?;
    if !meta.is_file() || meta.ino() != st.ino || meta.dev() != st.dev {
        return Err(PlaceError::Other {
            path: dest.path.clone(),
            message: "was replaced while tally was writing it: run again".into(),
        });
    }
    Ok(Some(file))
}

impl Drop for Temp {
    fn drop(&mut self) {
        if let Some(named) = self.named.take() {
            let _ = sys::file::unlink_at(&named.dir, &named.name);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn st(mode: u32, uid: u32) -> StatAt {
        StatAt {
            dev: 0,
            ino: 0,
            mode,
            uid,
            size: 0,
        }
    }

    #[test]
    fn links_follow_as_protected_symlinks_allows() {
        let tmp = st(libc::S_IFDIR | 0o1777, 0);
        let link = |uid| st(libc::S_IFLNK | 0o777, uid);
        // Another user's link in root's /tmp: not for root.
        assert!(!may_follow(&tmp, &link(65534), 0));
        // One's own link, or the directory owner's.
        assert!(may_follow(&tmp, &link(0), 0));
        assert!(may_follow(&tmp, &link(65534), 65534));
        assert!(may_follow(&tmp, &link(0), 65534));
        // Not sticky, or not world-writable: followed.
        assert!(may_follow(&st(libc::S_IFDIR | 0o777, 0), &link(65534), 0));
        assert!(may_follow(&st(libc::S_IFDIR | 0o1775, 0), &link(65534), 0));
        // A sticky world-writable directory of the link's owner.
        assert!(may_follow(
            &st(libc::S_IFDIR | 0o1777, 65534),
            &link(65534),
            0
        ));
    }

    #[test]
    fn temp_names_stay_within_name_max() {
        for len in [1, 200, 238, 239, 254, 255] {
            let name = "é".repeat(len / 2) + &"n".repeat(len % 2);
            let t = temp_name(OsStr::new(&name), u64::MAX);
            assert!(t.len() <= NAME_MAX, "{len}: {}", t.len());
            assert!(
                t.to_str().is_some(),
                "a UTF-8 name is cut between characters"
            );
            assert!(t.as_bytes().starts_with(b".") && t.as_bytes().ends_with(b".tally-cp"));
        }
        let raw = OsStr::from_bytes(&[0xff; 255]);
        assert_eq!(temp_name(raw, 7).len(), NAME_MAX);
        assert_ne!(temp_name(raw, 7), temp_name(raw, 8));
    }
}

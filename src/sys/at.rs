//! Files named relative to an open directory (`openat`, `readlinkat`).
//!
//! A `/proc/PID` directory opened once stays bound to that process: once
//! it has ended, every name under the directory fails with `ENOENT`, even
//! if its PID has been given to a new process meanwhile. `tally mem` opens
//! the directory with its caller's rights and reads under it with more.

use std::ffi::CStr;
use std::fs::File;
use std::io;
use std::os::fd::{AsRawFd, FromRawFd};
use std::path::Path;

use super::cvt;

/// Opens a directory for reading (`O_RDONLY | O_DIRECTORY`): the open
/// itself is checked against the directory's permissions, unlike `O_PATH`.
pub fn open_dir(path: &Path) -> io::Result<File> {
    use std::os::unix::fs::OpenOptionsExt;
    std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_DIRECTORY)
        .open(path)
}

/// Opens `name` under `dir` for reading, following no link in its last
/// component.
pub fn open_in(dir: &File, name: &CStr) -> io::Result<File> {
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

/// The target of the link `name` under `dir`, as raw bytes.
pub fn read_link_in(dir: &File, name: &CStr) -> io::Result<Vec<u8>> {
    let mut buf = vec![0u8; 256];
    loop {
        // SAFETY: `buf` is valid for writes of `buf.len()` bytes, `name` is
        // NUL-terminated and `dir` is open for the duration of the call.
        let n = unsafe {
            libc::readlinkat(
                dir.as_raw_fd(),
                name.as_ptr(),
                buf.as_mut_ptr().cast(),
                buf.len(),
            )
        };
        let n = usize::try_from(n).map_err(|_| io::Error::last_os_error())?;
        if n < buf.len() {
            buf.truncate(n);
            return Ok(buf);
        }
        // Possibly cut: try again with more room (PATH_MAX is 4096).
        if buf.len() >= 1 << 16 {
            return Err(io::Error::new(
                io::ErrorKind::InvalidData,
                "link target longer than 64 KiB",
            ));
        }
        let len = buf.len() * 4;
        buf.resize(len, 0);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_under_a_proc_directory() {
        let dir = open_dir(Path::new("/proc/self")).expect("open /proc/self");
        let mut text = String::new();
        use std::io::Read;
        open_in(&dir, c"status")
            .expect("status")
            .read_to_string(&mut text)
            .expect("read");
        assert!(text.starts_with("Name:"));
        let exe = read_link_in(&dir, c"exe").expect("exe");
        assert!(exe.starts_with(b"/"));
        assert!(open_dir(Path::new("/proc/self/status")).is_err());
    }
}

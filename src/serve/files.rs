//! Reading the files `tally serve` is told to read (the web config, its
//! certificates, keys and CA files): regular files only, at most
//! [`MAX_FILE_BYTES`]. A FIFO or a device named by mistake would block
//! the start-up or a SIGHUP reload forever, and a huge file would be read
//! whole; both are refused with an error that says so.
//!
//! One small function, so that it can be swapped for a shared bounded
//! reader of files users name.

use std::fs::OpenOptions;
use std::io::{self, Read};
use std::os::unix::fs::OpenOptionsExt;
use std::path::Path;

/// The largest file read: a web config, a certificate chain or a key is a
/// few kilobytes.
pub const MAX_FILE_BYTES: u64 = 1024 * 1024;

/// The whole of the regular file at `path`, if it holds at most
/// `MAX_FILE_BYTES`.
pub fn read_regular(path: &Path) -> io::Result<Vec<u8>> {
    // O_NONBLOCK: opening a FIFO does not wait for a writer; it is then
    // refused as not a regular file before anything is read.
    let file = OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NONBLOCK | libc::O_NOCTTY)
        .open(path)?;
    let meta = file.metadata()?;
    if !meta.is_file() {
        return Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            "not a regular file",
        ));
    }
    let mut bytes = Vec::new();
    file.take(MAX_FILE_BYTES + 1).read_to_end(&mut bytes)?;
    if bytes.len() as u64 > MAX_FILE_BYTES {
        return Err(io::Error::new(
            io::ErrorKind::InvalidData,
            format!("larger than {} KiB", MAX_FILE_BYTES / 1024),
        ));
    }
    Ok(bytes)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_small_regular_files_are_read() {
        let dir = tempfile::tempdir().unwrap();
        let small = dir.path().join("small");
        std::fs::write(&small, b"abc").unwrap();
        assert_eq!(read_regular(&small).unwrap(), b"abc");
        let big = dir.path().join("big");
        std::fs::write(&big, vec![b'a'; MAX_FILE_BYTES as usize + 1]).unwrap();
        let e = read_regular(&big).unwrap_err();
        assert!(e.to_string().contains("larger than 1024 KiB"), "{e}");
        let e = read_regular(dir.path()).unwrap_err();
        assert!(e.to_string().contains("not a regular file"), "{e}");
        let e = read_regular(Path::new("/dev/null")).unwrap_err();
        assert!(e.to_string().contains("not a regular file"), "{e}");
        assert_eq!(
            read_regular(&dir.path().join("missing"))
                .unwrap_err()
                .kind(),
            io::ErrorKind::NotFound
        );
    }
}

//! Files for node_exporter's textfile collector (`tally mem --textfile
//! DIR`), written atomically: a temporary file in DIR (created anew, so a
//! planted link is never followed, and named so the collector, which reads
//! `*.prom`, skips it), flushed, made world-readable, then renamed over
//! `DIR/NAME`. A reader sees the old file or the new one, never half of
//! one. The temporary file is removed if tally dies of a signal meanwhile.

use std::fs::Permissions;
use std::io::Write;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};

use crate::report::path::display;

/// A textfile that could not be written.
#[derive(Debug, thiserror::Error)]
pub enum TextfileError {
    #[error(
        "cannot create a file in {}: {source}; give a directory you may write (node_exporter's --collector.textfile.directory)",
        display(dir)
    )]
    Create {
        dir: PathBuf,
        source: std::io::Error,
    },
    #[error("cannot write {}: {source}", display(path))]
    Write {
        path: PathBuf,
        source: std::io::Error,
    },
}

/// Writes `content` to `dir/name` atomically; returns the path written.
pub fn write_atomic(dir: &Path, name: &str, content: &[u8]) -> Result<PathBuf, TextfileError> {
    let target = dir.join(name);
    let mut tmp = tempfile::Builder::new()
        .prefix(&format!(".{name}."))
        .suffix(".tmp")
        .tempfile_in(dir)
        .map_err(|source| TextfileError::Create {
            dir: dir.to_path_buf(),
            source,
        })?;
    let failed = |source| TextfileError::Write {
        path: target.clone(),
        source,
    };
    // Gone on SIGINT/TERM/HUP and crashes; dropping `tmp` removes it on
    // any error below.
    let guard = crate::sys::cleanup::Guard::arm(tmp.path()).map_err(failed)?;
    tmp.write_all(content).map_err(failed)?;
    tmp.as_file().sync_data().map_err(failed)?;
    tmp.as_file()
        .set_permissions(Permissions::from_mode(0o644))
        .map_err(failed)?;
    tmp.persist(&target).map_err(|e| failed(e.error))?;
    drop(guard);
    Ok(target)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_file_appears_whole_and_no_temporary_file_stays() {
        let dir = tempfile::tempdir().unwrap();
        let path = write_atomic(dir.path(), "tally_mem.prom", b"a 1\n").unwrap();
        write_atomic(dir.path(), "tally_mem.prom", b"a 2\n").unwrap();
        assert_eq!(std::fs::read(&path).unwrap(), b"a 2\n");
        let names: Vec<_> = std::fs::read_dir(dir.path())
            .unwrap()
            .map(|e| e.unwrap().file_name())
            .collect();
        assert_eq!(names, vec![std::ffi::OsString::from("tally_mem.prom")]);
        let mode = std::fs::metadata(&path).unwrap().permissions().mode();
        assert_eq!(mode & 0o777, 0o644);
        assert!(write_atomic(&dir.path().join("nope"), "x.prom", b"").is_err());
    }
}

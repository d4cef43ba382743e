//! Files for node_exporter's textfile collector, once or every `--every`
//! ([`textfile_loop`]), written atomically ([`write_atomic`]); what goes in
//! them is the command's (`crate::mem::textfile` for `tally mem --textfile
//! DIR`, `crate::cache::textfile` for `tally cache --textfile DIR`): a temporary file in DIR (created anew, so a planted
//! link is never followed, and named so the collector, which reads
//! `*.prom`, skips it), flushed, made world-readable, then renamed over
//! `DIR/NAME`. A reader sees the old file or the new one, never half of
//! one. The temporary file is removed if tally dies of a signal meanwhile.

use std::fs::Permissions;
use std::io::Write;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use crate::report::prometheus;
use crate::text::path::display;

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

/// Writes `render()`'s metrics to `dir/name` atomically, once or every
/// `every` until SIGINT/TERM/HUP. `render` returns the report's metrics.
/// A failure is said on stderr; returns the exit code (1 for a failure).
pub fn textfile_loop(
    dir: &Path,
    name: &str,
    every: Option<Duration>,
    render: &mut dyn FnMut() -> Result<Vec<prometheus::Metric>, String>,
) -> u8 {
    let write_once = |render: &mut dyn FnMut() -> Result<Vec<prometheus::Metric>, String>| {
        let metrics = render()?;
        let mut text = Vec::with_capacity(16 * 1024);
        prometheus::write(&metrics, &mut text).map_err(|e| e.to_string())?;
        write_atomic(dir, name, &text).map_err(|e| e.to_string())?;
        Ok::<(), String>(())
    };
    let Some(interval) = every else {
        return match write_once(render) {
            Ok(()) => 0,
            Err(e) => {
                note(&e);
                1
            }
        };
    };
    // A signal ends the loop between two writes; one that comes during a
    // write lets it finish (the rename is atomic either way).
    let signals = match crate::sys::signals::Forwarder::install() {
        Ok(s) => s,
        Err(e) => {
            note(&format!("cannot install signal handlers for --every: {e}"));
            return 1;
        }
    };
    while signals.pending().is_none() {
        let started = Instant::now();
        if let Err(e) = write_once(render) {
            note(&e);
            return 1;
        }
        while started.elapsed() < interval && signals.pending().is_none() {
            let left = interval.saturating_sub(started.elapsed());
            std::thread::sleep(left.min(Duration::from_millis(50)));
        }
    }
    0
}

fn note(msg: &str) {
    crate::diag!("tally: {msg}");
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

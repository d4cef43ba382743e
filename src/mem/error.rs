//! Why `tally mem` fails as a whole; below the scan, which returns it.

use std::io;
use std::path::PathBuf;

use crate::report::RenderError;

/// A failure of `tally mem` as a whole (single processes never fail it).
#[derive(Debug, thiserror::Error)]
pub enum MemError {
    #[error(
        "cannot list processes in {}: {source}; --procfs must name a mounted proc filesystem",
        crate::text::path::display(path)
    )]
    ListProcs { path: PathBuf, source: io::Error },
    #[error(
        "no process directories in {}: is it a proc filesystem? (see --procfs)",
        crate::text::path::display(.0)
    )]
    NoProcesses(PathBuf),
    #[error("a scan worker failed (a bug in tally: please report it); no figures were printed")]
    WorkerPanicked,
    #[error(
        "cannot take on the caller's rights to see what /proc shows the caller, or take \
         back more after: {0}; refusing to go on"
    )]
    CallerRights(io::Error),
    #[error("cannot drop privileges after the scan: {0}; refusing to go on")]
    DropPrivileges(io::Error),
    #[error("no user named `{0}`: give a login name or a numeric uid")]
    UnknownUser(String),
    #[error("cannot install signal handlers for --watch: {0}")]
    Signals(io::Error),
    #[error("cannot write to stdout: {0}")]
    Stdout(io::Error),
    #[error("cannot write the report: {0}")]
    Render(#[from] RenderError),
}

impl crate::failure::Failure for MemError {
    /// 2 for a user that does not exist (bad usage), else 1.
    fn exit_code(&self) -> u8 {
        match self {
            MemError::UnknownUser(_) => 2,
            _ => 1,
        }
    }

    /// Whether the error is a closed stdout, to end quietly.
    fn is_broken_pipe(&self) -> bool {
        matches!(self, MemError::Render(e) if e.is_broken_pipe())
    }
}

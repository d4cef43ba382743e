//! The `--record` flags that `run`, `compare` and `bench` share: where a
//! result is kept and what identifies it. Parsed by clap alone; what they
//! mean (a store, a commit, a machine) is `crate::history::record`'s.

use std::ffi::OsString;

/// Keep the result in a history store (flattened into the arguments of
/// each command that measures).
#[derive(Debug, Clone, Default, PartialEq, Eq, clap::Args)]
pub struct RecordArgs {
    /// Record the result in a history store (see `tally history`).
    ///
    /// Record the result in STORE after the runs: a SQLite file (created
    /// if missing) or a PostgreSQL URL (`postgres://user@host/db`, TLS as
    /// `sslmode` says). Checked before any run; a store that cannot be
    /// reached afterwards gets a side file and the command that imports it.
    #[arg(long, value_name = "STORE")]
    pub record: Option<OsString>,

    /// With --record: the commit the result belongs to (default: `git
    /// rev-parse HEAD` of the working directory, marked dirty when the
    /// work tree has changes).
    #[arg(
        long,
        value_name = "COMMIT",
        requires = "record",
        hide_short_help = true
    )]
    pub commit: Option<String>,

    /// With --record: the branch (default: the current git branch, or
    /// the CI's own variable).
    #[arg(
        long,
        value_name = "BRANCH",
        requires = "record",
        hide_short_help = true
    )]
    pub branch: Option<String>,
}

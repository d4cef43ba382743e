//! `tally load` as a command, around [`super::execute`] and
//! [`procs::execute`]: the process a parent started for one load
//! ([`Child`]), where the report of a [`Plan`] goes ([`Plan::open`]), the
//! loads ([`execute`]), and the exit code their report calls for.

use std::io::{self, Write};
use std::path::PathBuf;

use super::procs::{self, ProcsConfig};
use super::procs_report::ProcsReport;
use super::report::LoadReport;
use super::{Config, LoadError, Method, Touch, hold};
use crate::failure::Outcome;
use crate::progress::Progress;
use crate::report::{Document, Output, OutputError, Render, Request, Stream};

/// The loads to make: each method in turn (`tally load FILE`), or in
/// several processes at once (`--procs N`, `--procs-sweep`,
/// `--mem-limit`).
pub enum Plan {
    /// Each method in turn, cold and warm.
    Methods(Config),
    /// N processes loading at once.
    Procs(ProcsConfig),
}

/// The report of a [`Plan`].
pub enum Measured {
    /// Of [`Plan::Methods`].
    Methods(LoadReport),
    /// Of [`Plan::Procs`].
    Procs(ProcsReport),
}

/// A process a parent `tally load` started for one load (`--child
/// METHOD`; with `--hold`, one of N of `--procs`).
#[derive(Debug, Clone)]
pub struct Child {
    pub method: Method,
    pub file: PathBuf,
    pub touch: Touch,
    /// Load at the barrier on stdin and hold the data until it closes.
    pub hold: bool,
    /// With `hold`: the parent tally.
    pub parent: Option<u32>,
    /// Where the result goes, for the parent.
    pub result: Option<PathBuf>,
}

impl Child {
    /// Makes the load; returns this process's exit code (its failure said
    /// on stderr, for the parent).
    pub fn run(&self) -> u8 {
        if self.hold {
            return self.hold();
        }
        // One load in this process, the result in a file for the parent.
        let (result, code) = match super::child::load(self.method, &self.file, self.touch) {
            Ok(r) => (r, 0),
            Err(e) => (
                super::child::ChildResult {
                    error: Some(e.to_string()),
                    ..Default::default()
                },
                if e.kind() == io::ErrorKind::OutOfMemory {
                    super::child::EXIT_NO_MEMORY
                } else {
                    1
                },
            ),
        };
        if let Some(path) = &self.result {
            let written = serde_json::to_vec(&result)
                .map_err(io::Error::other)
                .and_then(|b| std::fs::write(path, b));
            if written.is_err() {
                return code.max(1);
            }
        }
        code
    }

    /// One of N processes of `--procs`: load at the barrier, hold.
    fn hold(&self) -> u8 {
        let Some(parent) = self.parent else {
            crate::diag!("tally: load --hold needs --parent PID");
            return 2;
        };
        match hold::serve(self.method, &self.file, self.touch, parent) {
            Ok(hold::Ended::Released) => 0,
            Ok(hold::Ended::NoStart) => 1,
            Ok(hold::Ended::Failed { out_of_memory }) => {
                if out_of_memory {
                    super::child::EXIT_NO_MEMORY
                } else {
                    1
                }
            }
            Err(e) => {
                crate::diag!("tally: load --hold: {e}");
                1
            }
        }
    }
}

impl Plan {
    /// Opens where the plan's report goes (`request`), before any load:
    /// bad formats and output paths fail first, not after.
    pub fn open(&self, request: &Request) -> Result<Output, OutputError> {
        match self {
            Plan::Methods(_) => Output::open::<LoadReport>(request, "load", Some(Stream::Stdout)),
            Plan::Procs(_) => Output::open::<ProcsReport>(request, "load", Some(Stream::Stdout)),
        }
    }
}

/// Makes the loads of `plan`, telling `progress` of each ("cold read",
/// "warm mmap ×4"), from this tally binary re-executed.
pub fn execute(plan: &Plan, progress: &mut Progress) -> Result<Measured, LoadError> {
    let exe = std::env::current_exe().map_err(LoadError::Exe)?;
    match plan {
        Plan::Methods(cfg) => {
            let cfg = Config { exe, ..cfg.clone() };
            super::execute(&cfg, &mut |p| {
                let what = format_args!("{} {}", p.mode.name(), p.method.name());
                progress.step(&what, u64::from(p.done), Some(u64::from(p.of)));
            })
            .map(Measured::Methods)
        }
        Plan::Procs(cfg) => {
            let cfg = ProcsConfig { exe, ..cfg.clone() };
            procs::execute(&cfg, &mut |p| {
                let what = format_args!("{} {} ×{}", p.mode.name(), p.method.name(), p.procs);
                progress.step(&what, u64::from(p.done), Some(u64::from(p.of)));
            })
            .map(Measured::Procs)
        }
    }
}

impl Document for Measured {
    fn forms(&self) -> &dyn Render {
        match self {
            Measured::Methods(r) => r,
            Measured::Procs(r) => r,
        }
    }

    fn json(&self, out: &mut dyn Write) -> io::Result<()> {
        match self {
            Measured::Methods(r) => r.json(out),
            Measured::Procs(r) => r.json(out),
        }
    }
}

impl Outcome for Measured {
    /// 1 for loads that disagree or of which none worked.
    fn exit_code(&self) -> u8 {
        match self {
            Measured::Methods(report) => report.exit_code(),
            Measured::Procs(report) => report.exit_code(),
        }
    }
}

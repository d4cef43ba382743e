//! `tally load` from its arguments to its exit code, around
//! [`execute`](super::execute) and [`procs::execute`]: the process a
//! parent started for one load ([`child`]), the comparison planned and
//! where its report goes opened ([`prepare`]), the loads ([`Plan::execute`]),
//! and the report written and the exit code ([`output`]).

use std::io;

use super::args::LoadArgs;
use super::procs::{self, ProcsConfig};
use super::procs_report::ProcsReport;
use super::report::LoadReport;
use super::{Config, LoadError, Method, Mode, hold};
use crate::report::{Output, OutputError, Stream};

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

/// The exit code of this process when it is one a parent `tally load`
/// started (`--child METHOD`, with `--hold` one of N of `--procs`), after
/// its load; `None` for the command itself.
pub fn child(args: &LoadArgs) -> Option<u8> {
    let method = args.child?;
    if args.hold {
        // One of N processes of --procs: load at the barrier, hold.
        let Some(parent) = args.parent else {
            crate::diag!("tally: load --hold needs --parent PID");
            return Some(2);
        };
        return Some(match hold::serve(method, &args.file, args.touch, parent) {
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
        });
    }
    // One load in this process, the result in a file for the parent.
    let (result, code) = match super::child::load(method, &args.file, args.touch) {
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
    if let Some(path) = &args.result {
        let written = serde_json::to_vec(&result)
            .map_err(io::Error::other)
            .and_then(|b| std::fs::write(path, b));
        if written.is_err() {
            return Some(code.max(1));
        }
    }
    Some(code)
}

/// The [`Plan`] of the arguments, and where its report goes, opened
/// before any load (bad formats and output paths fail first, not after);
/// a failure is said on stderr and is the exit code.
pub fn prepare(args: &LoadArgs) -> Result<(Plan, Output), u8> {
    let exe = match std::env::current_exe() {
        Ok(p) => p,
        Err(e) => {
            crate::diag!("tally: cannot find the tally binary to run loads with: {e}");
            return Err(1);
        }
    };
    let modes = if args.cold {
        vec![Mode::Cold]
    } else if args.warm {
        vec![Mode::Warm]
    } else {
        vec![Mode::Cold, Mode::Warm]
    };
    let procs: Vec<u32> = if args.procs_sweep {
        procs::SWEEP.to_vec()
    } else if let Some(n) = args.procs {
        vec![n]
    } else if args.mem_limit.is_some() {
        vec![1]
    } else {
        Vec::new()
    };
    let request = args.out.request();
    let opened = if procs.is_empty() {
        let cfg = Config {
            file: args.file.clone(),
            methods: methods(args, &Method::ALL),
            modes,
            runs: args.runs,
            touch: args.touch,
            exe,
        };
        Output::open::<LoadReport>(&request, "load", Some(Stream::Stdout))
            .map(|o| (Plan::Methods(cfg), o))
    } else {
        let cfg = ProcsConfig {
            file: args.file.clone(),
            methods: methods(args, &[Method::Read, Method::Mmap]),
            modes,
            procs,
            touch: args.touch,
            mem_limit_bytes: args.mem_limit,
            exe,
        };
        Output::open::<ProcsReport>(&request, "load", Some(Stream::Stdout))
            .map(|o| (Plan::Procs(cfg), o))
    };
    opened.map_err(|e| {
        crate::diag!("tally: {e}");
        e.exit_code()
    })
}

/// Told how many loads of how many are done and, when it asks, the one
/// under way ("cold read", "warm mmap ×4").
pub type OnProgress<'a> = dyn FnMut(u32, u32, &dyn Fn() -> String) + 'a;

impl Plan {
    /// Makes the loads, telling `progress` of each.
    pub fn execute(&self, progress: &mut OnProgress<'_>) -> Result<Measured, LoadError> {
        match self {
            Plan::Methods(cfg) => super::execute(cfg, &mut |p| {
                progress(p.done, p.of, &|| {
                    format!("{} {}", p.mode.name(), p.method.name())
                });
            })
            .map(Measured::Methods),
            Plan::Procs(cfg) => procs::execute(cfg, &mut |p| {
                progress(p.done, p.of, &|| {
                    format!("{} {} ×{}", p.mode.name(), p.method.name(), p.procs)
                });
            })
            .map(Measured::Procs),
        }
    }
}

/// Writes the report of the loads to `output`, saying every failure on
/// stderr; returns the exit code: the loads' failure, the report's, or
/// 1 for loads that disagree or of which none worked.
pub fn output(output: Output, measured: Result<Measured, LoadError>) -> u8 {
    let measured = match measured {
        Ok(m) => m,
        Err(e) => {
            crate::diag!("tally: load: {e}");
            return e.exit_code();
        }
    };
    let (written, ok, none_worked) = match &measured {
        // A method this filesystem cannot do (O_DIRECT on tmpfs) is shown
        // as unavailable, not a failure; no method working at all is one.
        Measured::Methods(report) => (
            output.write(report),
            report.ok(),
            report.results.iter().all(|r| r.error.is_some()),
        ),
        // An OOM kill under --mem-limit is a finding, not a failure;
        // differing checksums, or no load completing anywhere, are.
        Measured::Procs(report) => (
            output.write(report),
            report.ok(),
            report.runs.iter().all(|r| r.completed == 0),
        ),
    };
    let code = OutputError::say(written);
    if code != 0 {
        return code;
    }
    u8::from(!ok || none_worked)
}

/// `--methods` in the order given, each once; `default` without it.
fn methods(args: &LoadArgs, default: &[Method]) -> Vec<Method> {
    if args.methods.is_empty() {
        return default.to_vec();
    }
    let mut once = Vec::new();
    for m in &args.methods {
        if !once.contains(m) {
            once.push(*m);
        }
    }
    once
}

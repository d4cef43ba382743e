//! `tally load` arguments.

use std::path::PathBuf;

use clap::Args;

use super::command::{Child, Plan};
use super::procs::{self, ProcsConfig};
use super::{Config, Method, Mode, Touch};
use crate::failure::Usage;

#[derive(Debug, Args)]
#[command(after_help = "Examples:\n  \
        tally load model.bin                       # every method, cold and warm\n  \
        tally load --methods read,mmap --warm -n 5 model.bin\n  \
        tally load --touch none --cold model.bin   # what laziness costs\n  \
        tally load --format json --html load.html model.bin\n  \
        tally load --procs 4 model.bin             # Σ PSS of 4 at once, read vs mmap\n  \
        tally load --procs 4 --mem-limit 6G --cold model.bin\n  \
        tally load --procs-sweep --html pss.html model.bin\n\n\
        Each load runs in a child process of its own; cold loads evict the file \
        and verify it left the page cache first (no root needed).\n\
        Exit status: 0 ok, 1 if the checksums differ or no method worked (with --procs: \
        no load completed; an OOM kill under --mem-limit is a finding), 2 bad usage, \
        128+N when signal N (SIGINT, SIGTERM, SIGHUP) stopped it.")]
pub struct LoadArgs {
    /// Methods to compare, comma-separated (default: all; with --procs: read,mmap).
    #[arg(long, value_enum, value_delimiter = ',', value_name = "LIST")]
    pub methods: Vec<Method>,

    /// Cold loads only (the file evicted first).
    #[arg(long, group = "mode")]
    pub cold: bool,

    /// Warm loads only (the file read in first).
    #[arg(long, group = "mode")]
    pub warm: bool,

    /// Cold and warm loads (the default).
    #[arg(long, group = "mode")]
    pub both: bool,

    /// Loads per method and mode; medians are reported (not with --procs,
    /// --procs-sweep or --mem-limit, which load once per method, mode and N).
    #[arg(short = 'n', long, value_name = "N", default_value_t = 1,
          conflicts_with_all = ["procs", "procs_sweep", "mem_limit"],
          value_parser = clap::value_parser!(u32).range(1..=1000))]
    pub runs: u32,

    /// How much of the loaded data each method uses.
    #[arg(long, value_enum, default_value_t = Touch::All)]
    pub touch: Touch,

    /// The unit of times in human output: `auto` (each scaled: ns, µs,
    /// ms, s), `ns`, `us`, `ms` or `s`. JSON and CSV keep integers.
    #[arg(short = 'u', long, value_enum, value_name = "UNIT", default_value_t = crate::units::TimeUnit::Auto)]
    pub time_unit: crate::units::TimeUnit,

    /// Where the report goes.
    #[command(flatten)]
    pub out: crate::report::OutputArgs,

    /// N processes load the file at once and hold it while tally measures
    /// Σ RSS, Σ PSS, the page cache and MemAvailable (default methods:
    /// read,mmap).
    #[arg(long, value_name = "N", conflicts_with = "procs_sweep",
          value_parser = clap::value_parser!(u32).range(1..=256))]
    pub procs: Option<u32>,

    /// Like --procs, for N = 1, 2, 4 and 8 (with --html: Σ PSS against N).
    #[arg(long)]
    pub procs_sweep: bool,

    /// Run the processes of each --procs load in a cgroup limited to SIZE
    /// (cgroup v2 memory.max, else v1 memory.limit_in_bytes; needs root or
    /// a delegated cgroup). Reports completed, OOM-killed or thrashed.
    #[arg(long, value_name = "SIZE", value_parser = crate::units::parse_size)]
    pub mem_limit: Option<u64>,

    /// Internal: run one load in this process.
    #[arg(long, hide = true, value_enum, value_name = "METHOD")]
    pub child: Option<Method>,

    /// Internal: with --child, load at the barrier on stdin and hold the
    /// data until stdin closes (a process of --procs).
    #[arg(long, hide = true, requires = "child")]
    pub hold: bool,

    /// Internal: the pid of the tally that started this --hold child.
    #[arg(long, hide = true, value_name = "PID")]
    pub parent: Option<u32>,

    /// Internal: where a child writes its result.
    #[arg(long, hide = true, value_name = "FILE")]
    pub result: Option<PathBuf>,

    /// The file to load.
    #[arg(value_name = "FILE")]
    pub file: PathBuf,
}

impl LoadArgs {
    /// The load this process is to make for a parent `tally load`
    /// (`--child METHOD`); `None` for the command itself.
    pub fn child(&self) -> Option<Child> {
        Some(Child {
            method: self.child?,
            file: self.file.clone(),
            touch: self.touch,
            hold: self.hold,
            parent: self.parent,
            result: self.result.clone(),
        })
    }

    /// The loads the arguments ask for: each method in turn, or in several
    /// processes at once (`--procs N`, `--procs-sweep`, `--mem-limit`).
    pub fn config(&self) -> Result<Plan, Usage> {
        let modes = if self.cold {
            vec![Mode::Cold]
        } else if self.warm {
            vec![Mode::Warm]
        } else {
            vec![Mode::Cold, Mode::Warm]
        };
        let procs: Vec<u32> = if self.procs_sweep {
            procs::SWEEP.to_vec()
        } else if let Some(n) = self.procs {
            vec![n]
        } else if self.mem_limit.is_some() {
            vec![1]
        } else {
            Vec::new()
        };
        // The tally binary that makes each load is found when they start.
        let exe = PathBuf::new();
        Ok(if procs.is_empty() {
            Plan::Methods(Config {
                file: self.file.clone(),
                methods: self.methods(&Method::ALL),
                modes,
                runs: self.runs,
                touch: self.touch,
                exe,
            })
        } else {
            Plan::Procs(ProcsConfig {
                file: self.file.clone(),
                methods: self.methods(&[Method::Read, Method::Mmap]),
                modes,
                procs,
                touch: self.touch,
                mem_limit_bytes: self.mem_limit,
                exe,
            })
        })
    }

    /// `--methods` in the order given, each once; `default` without it.
    fn methods(&self, default: &[Method]) -> Vec<Method> {
        if self.methods.is_empty() {
            return default.to_vec();
        }
        let mut once = Vec::new();
        for m in &self.methods {
            if !once.contains(m) {
                once.push(*m);
            }
        }
        once
    }
}

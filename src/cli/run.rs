//! `tally run` arguments.

use std::ffi::OsString;
use std::path::PathBuf;

use clap::Args;

use crate::report::Format;

#[derive(Debug, Args)]
#[command(after_help = "Examples:\n  \
        tally run -- ls -lR /usr/share/doc\n  \
        tally run -n 10 --warmup 2 --quiet-command -- gzip -k -f big.file\n  \
        tally run --cold model.bin -- ./load model.bin\n  \
        tally run --tree --format json -o report.json -- make -j2\n\n\
        Exit status: the command's own; 128+N if a signal N killed it; 127 if it \
        was not found, 126 if it could not be executed, 125 if tally itself failed.")]
pub struct RunArgs {
    /// Run the command N times and report min, median, mean ± stddev, max.
    #[arg(short = 'n', long, value_name = "N", default_value_t = 1,
          value_parser = clap::value_parser!(u32).range(1..=1_000_000))]
    pub runs: u32,

    /// Run the command N times first, unmeasured.
    #[arg(long, value_name = "N", default_value_t = 0,
          value_parser = clap::value_parser!(u32).range(0..=1_000_000))]
    pub warmup: u32,

    /// Send the command's stdout and stderr to /dev/null.
    #[arg(long)]
    pub quiet_command: bool,

    /// Before every run, evict these files (directories recursively) from
    /// the page cache, without root, and verify they left. Takes several
    /// paths: end the list with `--` before the command.
    #[arg(long, value_name = "PATH", num_args = 1.., action = clap::ArgAction::Append)]
    pub cold: Vec<PathBuf>,

    /// Before every run, drop every clean page cache (needs root).
    #[arg(long)]
    pub drop_caches: bool,

    /// Account for the whole process tree (cgroup v2, else /proc sampling).
    #[arg(long)]
    pub tree: bool,

    /// Count cycles, instructions, cache and branch misses (perf_event_open).
    #[arg(long)]
    pub counters: bool,

    /// Report format.
    #[arg(long, value_enum, default_value_t = Format::Human)]
    pub format: Format,

    /// Write the report to FILE instead of stderr.
    #[arg(short = 'o', long, value_name = "FILE")]
    pub output: Option<PathBuf>,

    /// The command and its arguments (run as given, no shell).
    #[arg(required = true, trailing_var_arg = true, value_name = "COMMAND")]
    pub command: Vec<OsString>,
}

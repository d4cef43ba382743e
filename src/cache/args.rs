//! `tally cache` arguments.

use std::path::PathBuf;

use clap::Args;

use super::command::Config;
use super::report::{Action, Shown};
use crate::failure::Usage;

#[derive(Debug, Args)]
#[command(after_help = "Examples:\n  \
        tally cache model.bin\n  \
        tally cache -r -v /var/lib/postgresql\n  \
        tally cache --evict big.iso          # no root needed\n  \
        find . -name '*.so' -print0 | tally cache -0 --warm -\n  \
        tally cache --lock model.bin         # hold in memory until Ctrl-C\n\n\
        Residency comes from cachestat(2), else mincore(2). For a file you \
        neither own nor may write, the kernel refuses or would claim 100%: \
        tally says \"unknown\" instead.\n\
        Skipped paths and files that cannot be locked are reported on stderr.\n\
        Exit status: 0 ok, 1 if a path was skipped or a file could not be locked \
        (--lock), 2 bad usage.")]
pub struct CacheArgs {
    /// Drop the files' pages: fdatasync, POSIX_FADV_DONTNEED over 2 MiB-aligned
    /// ranges, then check again and say what stayed and why (vmtouch's -e).
    #[arg(short = 'e', long, group = "action")]
    pub evict: bool,

    /// Read into the cache what is not cached yet (holes are not read;
    /// vmtouch's -t).
    #[arg(short = 't', long, group = "action")]
    pub warm: bool,

    /// Map and mlock the files, print their residency, and hold them in
    /// memory until interrupted (SIGINT, SIGTERM or SIGHUP; vmtouch's -l).
    #[arg(short = 'l', long, group = "action")]
    pub lock: bool,

    /// Include the files under directories (links inside are not followed).
    #[arg(short = 'r', long)]
    pub recursive: bool,

    /// Draw a residency map per file (as wide as the terminal, else 64
    /// ranges: blank none cached, `.` `:` `o` `O` partly, `#` all).
    #[arg(short = 'v', long)]
    pub verbose: bool,

    /// List every file in the human report (by default the 20 with the
    /// most cached are listed when there are more, and the totals cover
    /// all); the other formats always list every file.
    #[arg(long, conflicts_with = "top")]
    pub all: bool,

    /// List at most N files in the human report, those with the most
    /// cached.
    #[arg(long, value_name = "N", default_value_t = crate::cache::report::DEFAULT_TOP)]
    pub top: usize,

    /// Measure residency with mincore(2) even where cachestat(2) works, as
    /// on a kernel before 6.5 (the fallback path, selectable for tests).
    #[arg(long, hide = true)]
    pub mincore: bool,

    /// Paths read from stdin (`-`) are NUL-separated (find -print0).
    #[arg(short = '0', long = "null")]
    pub null: bool,

    /// Where the report goes.
    #[command(flatten)]
    pub out: crate::report::OutputArgs,

    /// Write the Prometheus metrics to DIR/tally_cache.prom for
    /// node_exporter's textfile collector, atomically (a temporary file in
    /// DIR renamed into place), instead of printing the report.
    #[arg(long, value_name = "DIR", conflicts_with_all = ["evict", "warm", "lock", "format", "export", "output", "html", "verbose"])]
    pub textfile: Option<PathBuf>,

    /// With --textfile: write again every SECS seconds until interrupted.
    #[arg(long, value_name = "SECS", value_parser = crate::units::parse_seconds, requires = "textfile")]
    pub every: Option<std::time::Duration>,

    /// Files or directories; `-` reads paths from stdin, one per line.
    #[arg(required = true, value_name = "PATH")]
    pub paths: Vec<PathBuf>,
}

impl CacheArgs {
    /// What to do and to which paths (clap has checked the arguments).
    pub fn config(&self) -> Result<Config, Usage> {
        let action = if self.evict {
            Action::Evict
        } else if self.warm {
            Action::Warm
        } else if self.lock {
            Action::Lock
        } else {
            Action::Status
        };
        Ok(Config {
            action,
            paths: self.paths.clone(),
            recursive: self.recursive,
            null_separated: self.null,
            map: self.verbose,
            map_buckets: 0,
            shown: Shown {
                top: self.top,
                all: self.all,
            },
            mincore_only: self.mincore,
        })
    }
}

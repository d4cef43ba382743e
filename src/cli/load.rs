//! `tally load` arguments.

use std::path::PathBuf;

use clap::Args;

use crate::load::{Method, Touch};
use crate::report::Format;

#[derive(Debug, Args)]
#[command(after_help = "Examples:\n  \
        tally load model.bin                       # every method, cold and warm\n  \
        tally load --methods read,mmap --warm -n 5 model.bin\n  \
        tally load --touch none --cold model.bin   # what laziness costs\n  \
        tally load --format json --html load.html model.bin\n\n\
        Each load runs in a child process of its own; cold loads evict the file \
        and verify it left the page cache first (no root needed).\n\
        Exit status: 0 ok, 1 if the checksums differ or no method worked, 2 bad usage, \
        128+N when signal N (SIGINT, SIGTERM, SIGHUP) stopped it.")]
pub struct LoadArgs {
    /// Methods to compare, comma-separated (default: all).
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

    /// Loads per method and mode; medians are reported.
    #[arg(short = 'n', long, value_name = "N", default_value_t = 1,
          value_parser = clap::value_parser!(u32).range(1..=1000))]
    pub runs: u32,

    /// How much of the loaded data each method uses.
    #[arg(long, value_enum, default_value_t = Touch::All)]
    pub touch: Touch,

    /// Report format (on stdout).
    #[arg(long, value_enum, default_value_t = Format::HUMAN)]
    pub format: Format,

    #[arg(long, value_name = "FORMAT=FILE", value_parser = super::ExportParser,
          action = clap::ArgAction::Append, help = super::EXPORT_HELP)]
    pub export: Vec<super::Export>,

    /// Also write an HTML page plotting the results.
    #[arg(long, value_name = "FILE")]
    pub html: Option<PathBuf>,

    /// Internal: run one load in this process.
    #[arg(long, hide = true, value_enum, value_name = "METHOD")]
    pub child: Option<Method>,

    /// Internal: where a child writes its result.
    #[arg(long, hide = true, value_name = "FILE")]
    pub result: Option<PathBuf>,

    /// The file to load.
    #[arg(value_name = "FILE")]
    pub file: PathBuf,
}

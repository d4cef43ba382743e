//! `tally bench` arguments.

use std::path::PathBuf;

use clap::Args;

use super::{Config, Mode};
use crate::failure::Usage;

#[derive(Debug, Args)]
#[command(after_help = after_help())]
pub struct BenchArgs {
    /// Benchmarks to run (default: all but the heavy ones; `--list` names them).
    #[arg(value_name = "NAMES", value_parser = clap::builder::PossibleValuesParser::new(crate::bench::registry::names()))]
    pub names: Vec<String>,

    /// Short budgets and sweeps: the whole run within a minute.
    #[arg(long, conflicts_with = "full")]
    pub quick: bool,

    /// Long budgets, full sweeps (memlat to 4× the LLC, files to 1 GiB) and
    /// the heavy benchmarks; states its expected duration first.
    #[arg(long)]
    pub full: bool,

    /// List the benchmarks and exit.
    #[arg(long)]
    pub list: bool,

    /// The unit of times in human output: `auto` (each scaled: ns, µs,
    /// ms, s), `ns`, `us`, `ms` or `s`. JSON and CSV keep integers.
    #[arg(short = 'u', long, value_enum, value_name = "UNIT", default_value_t = crate::units::TimeUnit::Auto)]
    pub time_unit: crate::units::TimeUnit,

    /// Where the report goes.
    #[command(flatten)]
    pub out: crate::report::OutputArgs,

    #[command(flatten)]
    pub record: crate::record::RecordArgs,

    /// Compare with an earlier `--format json` report (ratios per figure).
    #[arg(long, value_name = "OLD.json")]
    pub baseline: Option<PathBuf>,

    /// With --baseline: fail (exit 3) when a figure whose id matches
    /// ID_GLOB (`syscall.*`, `memlat.random.*`; `*` any characters, `?`
    /// one) got worse by more than PCT: the whole interval of its ratio to
    /// the baseline, from both runs' samples (family-wise corrected over
    /// the gated figures, widened by the figure's instability), lies beyond
    /// it in the figure's worse direction (slower, or less bandwidth).
    /// Repeatable; the first glob that matches a figure sets its limit.
    #[arg(long = "fail-on", value_name = "ID_GLOB=PCT", requires = "baseline",
          value_parser = crate::bench::baseline::parse_rule, action = clap::ArgAction::Append)]
    pub fail_on: Vec<crate::bench::baseline::BenchRule>,

    /// With --fail-on: a figure the gate cannot decide fails too (exit 4).
    #[arg(long, requires = "fail_on")]
    pub strict: bool,

    /// Directory for the file benchmarks' scratch files.
    #[arg(long, value_name = "PATH")]
    pub dir: Option<PathBuf>,

    /// Largest memory buffer (memlat, membw), e.g. 512M, 2G.
    #[arg(long, value_name = "SIZE", default_value = "1G", value_parser = crate::units::parse_size)]
    pub max_mem: u64,

    /// Largest filecache file, e.g. 8G (also bounded by free disk space).
    #[arg(long, value_name = "SIZE", default_value = "32G", value_parser = crate::units::parse_size)]
    pub max_bytes: u64,

    /// Time budget per figure in ms (overrides the mode; for tests).
    #[arg(long, value_name = "MS", hide = true,
          value_parser = clap::value_parser!(u64).range(1..=600_000))]
    pub budget_ms: Option<u64>,
}

impl BenchArgs {
    /// The run the arguments ask for: mode, names, scratch directory,
    /// limits, and the baseline and gate. Reads no file: the baseline is
    /// read when the run starts.
    pub fn config(&self) -> Result<Config, Usage> {
        let mode = if self.full {
            Mode::Full
        } else if self.quick {
            Mode::Quick
        } else {
            Mode::Standard
        };
        let mut cfg = Config::new(mode);
        cfg.names = self.names.clone();
        if let Some(dir) = &self.dir {
            cfg.dir = dir.clone();
        }
        cfg.max_mem_bytes = self.max_mem;
        cfg.max_file_bytes = self.max_bytes;
        cfg.budget = self.budget_ms.map(std::time::Duration::from_millis);
        cfg.baseline = self.baseline.clone();
        cfg.fail_on = self.fail_on.clone();
        cfg.strict = self.strict;
        Ok(cfg)
    }
}

/// The examples, and the benchmarks as the registry lists them.
fn after_help() -> String {
    let heavy: Vec<&str> = crate::bench::registry::BENCHMARKS
        .iter()
        .filter(|b| b.heavy)
        .map(|b| b.name)
        .collect();
    let mut s = String::from(
        "Examples:\n  \
        tally bench --quick\n  \
        tally bench memlat membw --format json > run.json\n  \
        tally bench --quick --html bench.html\n  \
        tally bench --baseline old.json\n  \
        tally bench syscall --baseline old.json --fail-on 'syscall.*=10%'\n  \
        tally bench fileread --dir /mnt/nfs\n\n\
        Exit status: 0 when every benchmark ran (and no gated figure regressed); \
        1 when a benchmark failed or hung, or the baseline is unusable; 2 for bad \
        usage (a --fail-on glob that matches no figure of the baseline); 3 when \
        --fail-on found a regression; 4 when --strict and a gated figure was \
        inconclusive.\n\n\
        Benchmarks: ",
    );
    s.push_str(&crate::bench::registry::names().join(" "));
    if !heavy.is_empty() {
        s.push_str(&format!(
            " ({} only with --full or by name)",
            heavy.join(", ")
        ));
    }
    s.push('.');
    s
}

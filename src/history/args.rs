//! `tally history` arguments: the series to read, how change points are
//! found, and the subcommands `check` (the CI gate) and `import`.

use std::ffi::OsString;
use std::path::PathBuf;

use clap::{Args, Subcommand};

use super::check::{self, CheckConfig};
use super::edivisive::{Method, Params};
use super::series::Selection;
use super::store::Target;
use super::{Action, Config, ImportConfig};
use crate::failure::Usage;
use crate::units::TimeUnit;

#[derive(Debug, Args)]
#[command(
    args_conflicts_with_subcommands = true,
    subcommand_negates_reqs = true,
    after_help = "Examples:\n  \
        tally compare -N --record history.db ./app      (in CI, once per commit)\n  \
        tally history history.db\n  \
        tally history history.db --figure wall --html history.html\n  \
        tally history check history.db --fail-on wall=5% --export markdown=summary.md\n  \
        tally history import history.db old/*.json\n  \
        tally history postgres://ci@db.example/perf?sslmode=verify-full --since 2026-01-01\n\n\
        Exit status: 0 when the store was read (`check`: and no gated figure changed for \
        the worse at the newest point); 1 when the store cannot be read or is refused; 2 \
        for bad usage; 3 when `check` found a regression; 4 when `check --strict` found a \
        change seen at the newest point alone."
)]
pub struct HistoryArgs {
    #[command(subcommand)]
    pub action: Option<HistoryAction>,

    #[command(flatten)]
    pub show: ShowArgs,
}

#[derive(Debug, Subcommand)]
pub enum HistoryAction {
    /// The CI gate: exit 3 when the newest point belongs to a change
    /// point that makes a gated figure worse beyond its --fail-on limit.
    Check(CheckArgs),
    /// Import compare and bench JSON reports, compare baselines, side
    /// files of a failed --record, and CSV files (a column per figure,
    /// with `time`, `commit` and `branch` columns where there are).
    Import(ImportArgs),
}

/// What every reading takes: the store, the series, the method, outputs.
#[derive(Debug, Args, Default)]
pub struct ShowArgs {
    /// The store: a SQLite file, or a postgres:// URL.
    #[arg(value_name = "STORE", required = true)]
    pub store: Option<OsString>,

    #[command(flatten)]
    pub select: SelectArgs,

    #[command(flatten)]
    pub method: MethodArgs,

    /// The unit of times in human output: `auto`, `ns`, `us`, `ms` or `s`.
    #[arg(short = 'u', long, value_enum, value_name = "UNIT", default_value_t = TimeUnit::Auto)]
    pub time_unit: TimeUnit,

    #[command(flatten)]
    pub out: crate::report::OutputArgs,
}

#[derive(Debug, Args, Default, Clone)]
pub struct SelectArgs {
    /// Only commands matching PATTERN (`*`, `?`); repeatable.
    #[arg(long = "command", value_name = "PATTERN")]
    pub commands: Vec<String>,

    /// Only figures named PATTERN (`wall_ns`, or `wall` without its unit;
    /// `*`, `?`); repeatable.
    #[arg(long = "figure", value_name = "PATTERN")]
    pub figures: Vec<String>,

    /// Only points recorded on BRANCH.
    #[arg(long, value_name = "BRANCH")]
    pub branch: Option<String>,

    /// Only points recorded at or after DATE (`2026-11-01`, or RFC 3339).
    #[arg(long, value_name = "DATE")]
    pub since: Option<String>,

    /// Only machines whose fingerprint starts with FP, or whose
    /// description (CPU model, kernel, counting source) holds it.
    #[arg(long, value_name = "FP")]
    pub machine: Option<String>,

    /// Mix every machine fingerprint (and counting source) in one series
    /// (by default each machine has series of its own).
    #[arg(long)]
    pub all_machines: bool,
}

#[derive(Debug, Args, Clone)]
pub struct MethodArgs {
    /// Points in each window of E-divisive's split step (Otava's default).
    #[arg(long, value_name = "N", default_value_t = 50,
          value_parser = clap::value_parser!(u32).range(4..=1000))]
    pub window: u32,

    /// The largest p-value a change point may have.
    #[arg(long, value_name = "P", default_value_t = 0.001, value_parser = pvalue)]
    pub max_pvalue: f64,

    /// The smallest relative change a change point may have (`0%`: any
    /// significant change, as Otava).
    #[arg(long, value_name = "PCT", default_value = "0%", value_parser = crate::gate::parse_limit)]
    pub min_magnitude: f64,

    /// `tally` (default: Otava's steps, lone outliers screened, p-values
    /// corrected for the place chosen) or `otava` (Apache Otava 0.8's own).
    #[arg(long, value_enum, default_value_t = Method::Tally)]
    pub method: Method,
}

impl Default for MethodArgs {
    fn default() -> MethodArgs {
        MethodArgs {
            window: 50,
            max_pvalue: 0.001,
            min_magnitude: 0.0,
            method: Method::Tally,
        }
    }
}

fn pvalue(s: &str) -> Result<f64, String> {
    match s.parse::<f64>() {
        Ok(p) if p > 0.0 && p < 1.0 => Ok(p),
        _ => Err(format!(
            "{s:?} is not a p-value: give one between 0 and 1, e.g. 0.001"
        )),
    }
}

#[derive(Debug, Args)]
pub struct CheckArgs {
    #[command(flatten)]
    pub show: ShowArgs,

    /// Fail (exit 3) when FIGURE got worse than PCT at a change point the
    /// newest point belongs to; repeatable, the first that matches a
    /// figure sets its limit (default: every figure, at 0%).
    #[arg(long = "fail-on", value_name = "FIGURE=PCT", value_parser = check::parse_rule)]
    pub fail_on: Vec<check::Rule>,

    /// A change point at most N points before the newest is the newest's.
    #[arg(long, value_name = "N", default_value_t = 10,
          value_parser = clap::value_parser!(u32).range(1..=1_000_000))]
    pub within: u32,

    /// A change seen at the newest point alone fails too (exit 4).
    #[arg(long)]
    pub strict: bool,
}

#[derive(Debug, Args)]
pub struct ImportArgs {
    /// The store to import into (made if missing).
    #[arg(value_name = "STORE")]
    pub store: OsString,

    /// The files: JSON reports and baselines, side files, CSV. With none,
    /// the store is made, or stepped up to this tally's schema, and
    /// nothing is imported.
    #[arg(value_name = "FILE")]
    pub files: Vec<PathBuf>,

    /// The commit of every point imported that does not name its own.
    #[arg(long, value_name = "COMMIT")]
    pub commit: Option<String>,

    /// The branch of every point imported that does not name its own.
    #[arg(long, value_name = "BRANCH")]
    pub branch: Option<String>,

    /// The command a CSV file's figures belong to (default: the file's
    /// name without its extension).
    #[arg(long = "as-command", value_name = "NAME")]
    pub as_command: Option<String>,

    /// The files were made on this machine: their points take its
    /// fingerprint (compare and run reports name only their kernel, so
    /// without it they are of a machine known by that alone).
    #[arg(long)]
    pub this_machine: bool,

    #[command(flatten)]
    pub out: crate::report::OutputArgs,
}

impl HistoryArgs {
    /// The configuration (pure: no system call).
    pub fn config(&self) -> Result<Config, Usage> {
        match &self.action {
            None => Ok(Config {
                action: Action::Show,
                ..show_config(&self.show)?
            }),
            Some(HistoryAction::Check(c)) => {
                let base = show_config(&c.show)?;
                Ok(Config {
                    action: Action::Check(CheckConfig {
                        rules: c.fail_on.clone(),
                        within: c.within as usize,
                        strict: c.strict,
                    }),
                    ..base
                })
            }
            Some(HistoryAction::Import(i)) => {
                let target = Target::parse(&i.store)?;
                for (flag, v) in [
                    ("--commit", &i.commit),
                    ("--branch", &i.branch),
                    ("--as-command", &i.as_command),
                ] {
                    if let Some(v) = v
                        && (v.is_empty() || v.len() > 256 || v.chars().any(char::is_control))
                    {
                        return Err(Usage::new(format!(
                            "{flag}: give 1 to 256 characters without control characters"
                        )));
                    }
                }
                Ok(Config {
                    target,
                    selection: Selection::default(),
                    params: Params::default(),
                    action: Action::Import(ImportConfig {
                        files: i.files.clone(),
                        commit: i.commit.clone(),
                        branch: i.branch.clone(),
                        command: i.as_command.clone(),
                        this_machine: i.this_machine,
                    }),
                })
            }
        }
    }

    /// The output flags of the action taken.
    pub fn out(&self) -> &crate::report::OutputArgs {
        match &self.action {
            None => &self.show.out,
            Some(HistoryAction::Check(c)) => &c.show.out,
            Some(HistoryAction::Import(i)) => &i.out,
        }
    }

    /// The time unit of human output.
    pub fn time_unit(&self) -> TimeUnit {
        match &self.action {
            None => self.show.time_unit,
            Some(HistoryAction::Check(c)) => c.show.time_unit,
            Some(HistoryAction::Import(_)) => TimeUnit::Auto,
        }
    }
}

fn show_config(a: &ShowArgs) -> Result<Config, Usage> {
    let store = a
        .store
        .as_ref()
        .ok_or_else(|| Usage::new("give the store: tally history STORE"))?;
    let target = Target::parse(store)?;
    let s = &a.select;
    let since_ns = match &s.since {
        None => None,
        Some(d) => Some(super::extract::parse_time(d).ok_or_else(|| {
            Usage::new(format!(
                "--since {}: not a date: give 2026-11-01 or 2026-11-01T12:00:00Z",
                crate::text::escape::escape_text(d)
            ))
        })?),
    };
    for p in s.commands.iter().chain(&s.figures) {
        if p.is_empty() || p.len() > 8192 {
            return Err(Usage::new(
                "--command and --figure take a pattern of 1 to 8192 characters",
            ));
        }
    }
    Ok(Config {
        target,
        selection: Selection {
            commands: s.commands.clone(),
            figures: s.figures.clone(),
            branch: s.branch.clone(),
            since_ns,
            machine: s.machine.clone(),
            all_machines: s.all_machines,
        },
        params: Params {
            window: a.method.window as usize,
            max_pvalue: a.method.max_pvalue,
            min_magnitude: a.method.min_magnitude,
            method: a.method.method,
        },
        action: Action::Show,
    })
}

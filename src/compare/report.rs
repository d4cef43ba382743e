//! The report of `tally compare`: per command its runs and the summary of
//! every figure of `tally run` ([`FIGURES`]), and per figure its ratio to
//! the reference command with an interval and a test.
//!
//! JSON schema (`schema_version` 2), keys carry their unit:
//! - `commands[]`: `name`, `command`, `parameters`, `runs[]` (the records of
//!   `tally run`), `run_order[]` (each run's place in the whole session),
//!   `failed_runs`, `summary[]` (per figure key) and `versus_reference[]`:
//!   per figure `ratio` (median over the reference's median), `ratio_low`
//!   and `ratio_high` (the interval), `p_value`, `u` and `verdict`
//!   (`unchanged`, `no-significant-difference`, `lower`, `higher`).
//! - `reference` (0-based), `reference_is`, `alpha`, `method`, `seed`.

use serde::Serialize;

use super::plan::Config;
use super::plan::Instance;
use crate::report::unit::Unit;
use crate::run::report::{FIGURES, Figure, FigureSummary, RunRecord, RunReport};
use crate::stats::{self, BOOTSTRAP_RESAMPLES};

/// What a figure of a command did against the reference.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Verdict {
    /// The same median and no significant difference (often: every run
    /// of both gave the same count).
    Unchanged,
    NoSignificantDifference,
    /// Significantly lower than the reference.
    Lower,
    /// Significantly higher than the reference.
    Higher,
}

/// One figure of one command against the reference.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct FigureComparison {
    pub figure: String,
    /// This command's median over the reference's (absent when the
    /// reference's median is 0).
    pub ratio: Option<f64>,
    pub ratio_low: Option<f64>,
    pub ratio_high: Option<f64>,
    pub p_value: f64,
    pub u: f64,
    /// `exact` or `normal` (see `crate::stats::mann_whitney`).
    pub test: &'static str,
    pub verdict: Verdict,
}

/// One command's runs and figures.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct CommandResult {
    pub name: String,
    pub command: String,
    pub parameters: Vec<(String, String)>,
    pub runs: Vec<RunRecord>,
    /// Each run's place (1-based) in the whole session's order.
    pub run_order: Vec<u32>,
    /// Runs that exited non-zero or were killed (with -i).
    pub failed_runs: u32,
    pub summary: Vec<FigureSummary>,
    /// Empty for the reference itself.
    pub versus_reference: Vec<FigureComparison>,
    /// How the runs ended, when not every run exited 0 (`exit 1`, `killed by SIGSEGV`).
    pub exits: Vec<String>,
}

impl CommandResult {
    pub(super) fn new(i: &Instance, capacity: usize) -> CommandResult {
        CommandResult {
            name: i.name.clone(),
            command: i.command.clone(),
            parameters: i.parameters.clone(),
            runs: Vec::with_capacity(capacity),
            run_order: Vec::with_capacity(capacity),
            failed_runs: 0,
            summary: Vec::new(),
            versus_reference: Vec::new(),
            exits: Vec::new(),
        }
    }

    /// The figure's values over the runs, when every run has it.
    pub fn values(&self, fig: &Figure) -> Option<Vec<f64>> {
        let v: Vec<f64> = self
            .runs
            .iter()
            .filter_map(|r| (fig.get)(r))
            .map(|v| v as f64)
            .collect();
        (!v.is_empty() && v.len() == self.runs.len()).then_some(v)
    }

    pub fn summary_of(&self, key: &str) -> Option<&stats::Summary> {
        self.summary
            .iter()
            .find(|f| f.figure == key)
            .map(|f| &f.summary)
    }

    pub fn versus(&self, key: &str) -> Option<&FigureComparison> {
        self.versus_reference.iter().find(|f| f.figure == key)
    }
}

/// The whole report.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct CompareReport {
    pub schema_version: u32,
    pub commands: Vec<CommandResult>,
    /// The index (0-based) of the command the others are compared with.
    pub reference: usize,
    /// `fastest` (by median wall time) or `chosen` (`--reference`).
    pub reference_is: &'static str,
    pub alpha: f64,
    /// How intervals and verdicts are computed, in words.
    pub method: String,
    pub runs_per_command: u32,
    pub warmup_runs: u32,
    pub seed: u64,
    pub warnings: Vec<String>,
    pub interrupted_by: Option<String>,
}

fn exit_text(r: &RunRecord) -> String {
    match (&r.exit.signal, r.exit.code) {
        (Some(sig), _) => format!("killed by {sig}"),
        (None, Some(code)) => format!("exit {code}"),
        (None, None) => "unknown".into(),
    }
}

impl CompareReport {
    /// Whether figure `key` is unchanged (same median, not significant)
    /// for every command against the reference.
    pub fn unchanged(&self, key: &str) -> bool {
        self.commands
            .iter()
            .enumerate()
            .filter(|(i, _)| *i != self.reference)
            .all(|(_, c)| {
                c.versus(key)
                    .is_some_and(|v| v.verdict == Verdict::Unchanged)
            })
    }

    /// Summaries, warnings, the reference and every comparison.
    pub(super) fn build(
        cfg: &Config,
        mut commands: Vec<CommandResult>,
        interrupted_by: Option<String>,
    ) -> CompareReport {
        let mut warnings = Vec::new();
        for (i, c) in commands.iter_mut().enumerate() {
            // The summary and the outlier and trend warnings of `tally run -n`.
            let mut rr = RunReport {
                schema_version: crate::report::SCHEMA_VERSION,
                command: Vec::new(),
                runs_requested: 0,
                warmup_runs: 0,
                runs: std::mem::take(&mut c.runs),
                summary: Vec::new(),
                warnings: Vec::new(),
                interrupted_by: None,
            };
            rr.summarize();
            c.runs = std::mem::take(&mut rr.runs);
            c.summary = rr.summary;
            for w in rr.warnings {
                warnings.push(format!("#{} {}: {w}", i + 1, c.name));
            }
            let mut exits: Vec<String> = c
                .runs
                .iter()
                .filter(|r| r.exit.code != Some(0))
                .map(exit_text)
                .collect();
            exits.sort();
            exits.dedup();
            c.exits = exits;
        }
        let median_wall = |c: &CommandResult| {
            c.values(&FIGURES[0])
                .and_then(|v| stats::summarize(&v))
                .map(|s| s.median)
                .unwrap_or(f64::INFINITY)
        };
        let (reference, reference_is) = match cfg.reference {
            Some(r) => (r.min(commands.len().saturating_sub(1)), "chosen"),
            None => {
                let mut best = 0;
                for (i, c) in commands.iter().enumerate() {
                    if median_wall(c) < commands.get(best).map(median_wall).unwrap_or(f64::INFINITY)
                    {
                        best = i;
                    }
                }
                (best, "fastest")
            }
        };
        let level = 1.0 - cfg.alpha;
        let ref_values: Vec<Option<Vec<f64>>> = FIGURES
            .iter()
            .map(|f| commands.get(reference).and_then(|c| c.values(f)))
            .collect();
        for (i, c) in commands.iter_mut().enumerate() {
            if i == reference {
                continue;
            }
            for (fi, fig) in FIGURES.iter().enumerate() {
                let (Some(a), Some(Some(b))) = (c.values(fig), ref_values.get(fi)) else {
                    continue;
                };
                let Some(test) = stats::mann_whitney(&a, b) else {
                    continue;
                };
                let seed = cfg
                    .seed
                    .wrapping_mul(0x9e37_79b9)
                    .wrapping_add((i * FIGURES.len() + fi) as u64);
                let ci = stats::ratio_of_medians(&a, b, level, seed);
                let (ma, mb) = (
                    stats::summarize(&a).map(|s| s.median),
                    stats::summarize(b).map(|s| s.median),
                );
                let verdict = if test.p < cfg.alpha {
                    if ma < mb {
                        Verdict::Lower
                    } else if ma > mb {
                        Verdict::Higher
                    } else {
                        // Medians equal but the distributions differ.
                        let mean = |v: &[f64]| v.iter().sum::<f64>() / v.len() as f64;
                        if mean(&a) < mean(b) {
                            Verdict::Lower
                        } else {
                            Verdict::Higher
                        }
                    }
                } else if ma == mb {
                    Verdict::Unchanged
                } else {
                    Verdict::NoSignificantDifference
                };
                c.versus_reference.push(FigureComparison {
                    figure: fig.key.into(),
                    ratio: ci.map(|c| c.ratio),
                    ratio_low: ci.map(|c| c.low),
                    ratio_high: ci.map(|c| c.high),
                    p_value: test.p,
                    u: test.u,
                    test: test.method,
                    verdict,
                });
            }
        }
        for (i, c) in commands.iter().enumerate() {
            if c.failed_runs > 0 {
                warnings.push(format!(
                    "#{} {}: {} of {} runs failed ({})",
                    i + 1,
                    c.name,
                    c.failed_runs,
                    c.runs.len(),
                    c.exits.join(", ")
                ));
            }
        }
        CompareReport {
            schema_version: crate::report::SCHEMA_VERSION,
            runs_per_command: commands.iter().map(|c| c.runs.len()).max().unwrap_or(0) as u32,
            commands,
            reference,
            reference_is,
            alpha: cfg.alpha,
            method: format!(
                "ratio: median over the reference's median, {:.0}% percentile bootstrap interval \
                 ({BOOTSTRAP_RESAMPLES} resamples); verdict: two-sided Mann-Whitney U test at alpha {}",
                level * 100.0,
                cfg.alpha
            ),
            warmup_runs: cfg.warmup,
            seed: cfg.seed,
            warnings,
            interrupted_by,
        }
    }
}

/// How a figure's direction reads: times are faster or slower, the rest
/// less or more.
pub fn direction(fig: &Figure, verdict: Verdict) -> &'static str {
    let time = fig.unit.base() == Unit::Seconds;
    match (verdict, time) {
        (Verdict::Lower, true) => "faster",
        (Verdict::Higher, true) => "slower",
        (Verdict::Lower, false) => "less",
        (Verdict::Higher, false) => "more",
        (Verdict::Unchanged, _) => "unchanged",
        (Verdict::NoSignificantDifference, _) => "no significant difference",
    }
}

/// `p=0.003`, `p<0.001`.
pub fn p_text(p: f64) -> String {
    if p < 0.001 {
        "p<0.001".into()
    } else {
        format!("p={p:.3}")
    }
}

/// `1.26× [1.24, 1.28]`; near 1, four decimals (`1.0006×`), so a
/// significant difference never reads as `1.00×`.
pub fn ratio_text(c: &FigureComparison) -> String {
    let r = |v: f64| {
        if v >= 100.0 {
            format!("{v:.0}")
        } else if v >= 10.0 {
            format!("{v:.1}")
        } else {
            format!("{v:.2}")
        }
    };
    let x = match c.ratio {
        Some(x) if x != 1.0 && (x - 1.0).abs() < 0.005 => format!("{x:.4}"),
        Some(x) => r(x),
        None => return "—".into(),
    };
    match (c.ratio_low, c.ratio_high) {
        (Some(lo), Some(hi)) => format!("{x}× [{}, {}]", r(lo), r(hi)),
        _ => format!("{x}×"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::report::{Format, Render, Style, render};

    #[test]
    fn the_models_of_run_and_compare_import_no_layout() {
        use crate::bench::layering::{assert_no_circles, imports};
        for folder in ["src/run", "src/compare"] {
            let graph = imports(folder);
            let uses = |a: &str| graph.iter().find(|g| g.0 == a).unwrap().1.clone();
            // The layouts use the model; the model uses no layout.
            assert!(
                uses("report")
                    .iter()
                    .all(|u| u != "human" && u != "html" && u != "render"),
                "{folder}: {:?}",
                uses("report")
            );
            assert!(uses("render").contains(&"report".to_string()), "{folder}");
            assert_no_circles(&graph);
        }
    }
    use crate::run::report::{ExitInfo, RunRecord};

    fn record(wall_ns: u64, rss: u64, code: i32) -> RunRecord {
        RunRecord {
            wall_ns,
            // The same spread for every command: no significant difference.
            user_us: 1_000_000 + (wall_ns / 37_000_123 % 7) * 1000,
            system_us: wall_ns / 2000,
            max_rss_bytes: rss,
            minor_faults: 271_634,
            major_faults: 0,
            voluntary_switches: 150,
            involuntary_switches: 40,
            block_input_ops: 2_097_152,
            block_output_ops: 0,
            io: None,
            io_source: None,
            io_unavailable: Some("test".into()),
            counters: None,
            tree: None,
            cold: None,
            exit: ExitInfo {
                code: Some(code),
                signal: None,
                signal_number: None,
                core_dumped: false,
            },
            forwarded_signal: None,
            escalated_to_sigkill: false,
        }
    }

    fn report() -> CompareReport {
        let cfg = Config {
            alpha: 0.05,
            seed: 1,
            ..Config::default()
        };
        let mut commands = Vec::new();
        for (i, (name, base, code)) in [
            ("python3 load.py --read model.bin", 2_416_884_000u64, 0),
            ("python3 load.py --mmap model.bin", 665_440_000, 3),
        ]
        .into_iter()
        .enumerate()
        {
            let mut c = CommandResult::new(
                &Instance {
                    name: format!("{} loader", &name[16..]),
                    command: name.into(),
                    argv: Vec::new(),
                    parameters: Vec::new(),
                },
                10,
            );
            for r in 0..10u64 {
                let rec = record(
                    base + r * 37_000_123,
                    1_087_602_688 + r * 4096 * i as u64,
                    code,
                );
                if code != 0 {
                    c.failed_runs += 1;
                }
                c.runs.push(rec);
                c.run_order.push((r * 2 + i as u64 + 1) as u32);
            }
            commands.push(c);
        }
        CompareReport::build(&cfg, commands, None)
    }

    fn human(r: &CompareReport, width: Option<usize>) -> String {
        let mut out = Vec::new();
        r.human(
            &mut out,
            Style {
                color: false,
                width,
            },
        )
        .unwrap();
        String::from_utf8(out).unwrap()
    }

    /// Long figures and long ratios once pushed the verdict column out of
    /// 100 columns; it must stay, in at most 100 columns.
    #[test]
    fn human_layout_keeps_the_verdict_within_100_columns() {
        let r = report();
        assert_eq!(r.reference, 1, "the faster is the reference");
        for width in [None, Some(100), Some(200)] {
            let text = human(&r, width);
            assert!(
                text.lines().all(|l| l.chars().count() <= 100),
                "{width:?}:\n{text}"
            );
            assert!(text.contains("verdict"), "{text}");
            assert!(text.contains("slower (p<0.001)"), "{text}");
        }
        // A narrower terminal still gets the verdict of every row.
        let narrow = human(&r, Some(90));
        assert!(narrow.contains("verdict"), "{narrow}");
        assert!(narrow.contains("no significant difference"), "{narrow}");
        let text = human(&r, None);
        // The failing command is flagged on its every row and in the list.
        let rows: Vec<&str> = text
            .lines()
            .filter(|l| l.starts_with("tally:   #2"))
            .collect();
        assert!(
            rows.len() > 3 && rows.iter().all(|l| l.contains('✗')),
            "{text}"
        );
        assert!(text.contains("no significant difference"), "{text}");
        let unchanged = text.split("unchanged:").nth(1).unwrap_or_default();
        assert!(unchanged.contains("major faults (0)"), "{text}");
    }

    #[test]
    fn every_format_renders_and_the_table_has_a_row_per_command_and_figure() {
        let r = report();
        let t = r.table();
        let figures = r.commands[0].summary.len();
        assert_eq!(t.rows.len(), 2 * figures);
        assert!(t.rows.iter().all(|row| row.len() == t.headers.len()));
        for f in [
            Format::JSON,
            Format::CSV,
            Format::MARKDOWN,
            Format::PROMETHEUS,
            Format::HTML,
        ] {
            let mut out = Vec::new();
            render(&r, f, Style::PLAIN, &mut out).unwrap();
            assert!(!out.is_empty(), "{f}");
        }
        let v = r.commands[0].versus("wall_ns").unwrap();
        assert_eq!(v.verdict, Verdict::Higher);
        assert!(
            v.ratio_low.unwrap() <= v.ratio.unwrap() && v.ratio.unwrap() <= v.ratio_high.unwrap()
        );
    }
}

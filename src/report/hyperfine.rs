//! `--format hyperfine` (and `--export hyperfine=FILE`): the JSON that
//! hyperfine's `--export-json` writes, so its own scripts
//! (`scripts/plot_whisker.py`, `plot_histogram.py`, …) and the CI actions
//! that read `results[].times` read tally's runs unchanged.
//!
//! The schema is hyperfine's `BenchmarkResult` as it serialises it: one
//! object per command in `results`, with `command` (its `--name`, else the
//! command), `mean`, `stddev` (`null` with one run), `median`, `user`,
//! `system`, `min`, `max` in seconds, `times` (each run's wall time in
//! seconds), `memory_usage_byte` (each run's peak RSS), `exit_codes` (`null`
//! for a run a signal ended) and `parameters` (only with `-P`/`-L`). Wall
//! statistics are over every measured run, as hyperfine's are; `user` and
//! `system` are the means of the tick-sampled rusage times. tally's own
//! figures follow under `tally` in each result (a key hyperfine's readers
//! ignore): every run's figures as tally's JSON has them.

use serde::Serialize;

/// Renders the timed runs of `r` with `write` (one of hyperfine's
/// shapes), or says format `name` has none to render.
pub fn render_runs(
    r: &dyn super::Document,
    out: &mut dyn std::io::Write,
    name: &'static str,
    write: fn(&[TimedCommand<'_>], &mut dyn std::io::Write) -> std::io::Result<()>,
) -> Result<(), super::RenderError> {
    match r.forms().runs() {
        Some(commands) => Ok(write(&commands, out)?),
        None => Err(super::RenderError::Unsupported(name)),
    }
}

/// `--format hyperfine`: reports of timed runs (run, compare).
pub const FORMAT: super::FormatSpec = super::FormatSpec {
    name: "hyperfine",
    help: "hyperfine's --export-json schema (results[].times, mean, …), for its scripts and CI actions (run, compare)",
    needs: super::Form::Runs,
    render: |r, _, out| render_runs(r, out, FORMAT.name, write),
    // Written from every run, at the end.
    rows: None,
};

/// One command's runs, as a report holds them, for the formats that are
/// made from runs alone.
pub struct TimedCommand<'a> {
    /// What the command is called (its `--name`, else its text).
    pub name: std::borrow::Cow<'a, str>,
    pub parameters: &'a [(String, String)],
    pub runs: Vec<TimedRun>,
    /// Every run's figures as the report's JSON has them.
    pub figures: serde_json::Value,
}

/// What hyperfine's schema holds of one run.
pub struct TimedRun {
    pub wall_ns: u64,
    pub user_us: u64,
    pub system_us: u64,
    pub max_rss_bytes: u64,
    /// `None` when a signal ended the run.
    pub exit_code: Option<i32>,
}

#[derive(Serialize)]
struct Export<'a> {
    results: Vec<Benchmark<'a>>,
}

#[derive(Serialize)]
struct Benchmark<'a> {
    command: &'a str,
    mean: f64,
    stddev: Option<f64>,
    median: f64,
    user: f64,
    system: f64,
    min: f64,
    max: f64,
    times: Vec<f64>,
    memory_usage_byte: Vec<u64>,
    exit_codes: Vec<Option<i32>>,
    #[serde(skip_serializing_if = "std::collections::BTreeMap::is_empty")]
    parameters: std::collections::BTreeMap<&'a str, &'a str>,
    tally: Extra<'a>,
}

/// tally's figures beside hyperfine's.
#[derive(Serialize)]
struct Extra<'a> {
    /// `user` and `system` are sampled by the kernel's tick: approximate.
    user_system_tick_sampled: bool,
    runs: &'a serde_json::Value,
}

/// Writes `commands` as hyperfine's JSON.
pub fn write(commands: &[TimedCommand<'_>], out: &mut dyn std::io::Write) -> std::io::Result<()> {
    let results = commands.iter().map(result).collect();
    serde_json::to_writer_pretty(&mut *out, &Export { results })?;
    out.write_all(b"\n")
}

/// hyperfine's figures of one command, seconds: what its CSV and Markdown
/// exports hold.
pub struct Summary<'a> {
    pub command: &'a str,
    pub mean: f64,
    pub stddev: Option<f64>,
    pub median: f64,
    pub user: f64,
    pub system: f64,
    pub min: f64,
    pub max: f64,
    pub parameters: std::collections::BTreeMap<&'a str, &'a str>,
}

/// [`Summary`] of `c`, as hyperfine computes it.
pub fn summary<'a>(c: &'a TimedCommand<'a>) -> Summary<'a> {
    let b = result(c);
    Summary {
        command: b.command,
        mean: b.mean,
        stddev: b.stddev,
        median: b.median,
        user: b.user,
        system: b.system,
        min: b.min,
        max: b.max,
        parameters: b.parameters,
    }
}

fn result<'a>(c: &'a TimedCommand<'a>) -> Benchmark<'a> {
    let secs = |ns: f64| ns / 1e9;
    let times: Vec<f64> = c.runs.iter().map(|r| secs(r.wall_ns as f64)).collect();
    let n = times.len() as f64;
    let mean = if times.is_empty() { 0.0 } else { times.iter().sum::<f64>() / n };
    // hyperfine's: the sample standard deviation, none from one run.
    let stddev = (times.len() > 1).then(|| {
        let ss: f64 = times.iter().map(|t| (t - mean).powi(2)).sum();
        (ss / (n - 1.0)).sqrt()
    });
    let mut sorted = times.clone();
    sorted.sort_by(f64::total_cmp);
    let median = match sorted.len() {
        0 => 0.0,
        k if k % 2 == 1 => sorted[k / 2],
        k => (sorted[k / 2 - 1] + sorted[k / 2]) / 2.0,
    };
    let mean_of = |f: fn(&TimedRun) -> u64| {
        if c.runs.is_empty() {
            0.0
        } else {
            c.runs.iter().map(|r| f(r) as f64 / 1e6).sum::<f64>() / n
        }
    };
    Benchmark {
        command: &c.name,
        mean,
        stddev,
        median,
        user: mean_of(|r| r.user_us),
        system: mean_of(|r| r.system_us),
        min: sorted.first().copied().unwrap_or(0.0),
        max: sorted.last().copied().unwrap_or(0.0),
        times,
        memory_usage_byte: c.runs.iter().map(|r| r.max_rss_bytes).collect(),
        exit_codes: c.runs.iter().map(|r| r.exit_code).collect(),
        parameters: c
            .parameters
            .iter()
            .map(|(k, v)| (k.as_str(), v.as_str()))
            .collect(),
        tally: Extra {
            user_system_tick_sampled: true,
            runs: &c.figures,
        },
    }
}

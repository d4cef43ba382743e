//! `--format hyperfine-csv` (and hyperfine's spelling `--export-csv FILE`
//! on `run` and `compare`): the CSV hyperfine's `--export-csv` writes, one
//! row per command: `command,mean,stddev,median,user,system,min,max` in
//! seconds (`stddev` empty with one run), then a `parameter_NAME` column
//! per parameter of `-P`/`-L`. Regression: `--export-csv` wrote tally's own
//! table, whose `median` column held `wall_ns` in one row and `cpu_us` in
//! the next.

use std::io::Write;

use super::hyperfine::summary;

/// `--format hyperfine-csv`: reports of timed runs (run, compare).
pub const FORMAT: super::FormatSpec = super::FormatSpec {
    name: "hyperfine-csv",
    help: "hyperfine's --export-csv columns (command, mean, stddev, median, user, system, min, max in seconds), for its scripts (run, compare)",
    needs: super::Form::Runs,
    render: |r, _, out| super::hyperfine::render_runs(r, out, FORMAT.name, write),
    rows: None,
};

/// Writes `commands` as hyperfine's CSV.
pub fn write(
    commands: &[super::hyperfine::TimedCommand<'_>],
    out: &mut dyn Write,
) -> std::io::Result<()> {
    let summaries: Vec<_> = commands.iter().map(summary).collect();
    let mut names: Vec<&str> = summaries
        .iter()
        .flat_map(|s| s.parameters.keys().copied())
        .collect();
    names.sort_unstable();
    names.dedup();
    let mut w = csv::Writer::from_writer(out);
    let mut header: Vec<String> = ["command", "mean", "stddev", "median", "user", "system", "min", "max"]
        .map(String::from)
        .to_vec();
    header.extend(names.iter().map(|n| format!("parameter_{n}")));
    w.write_record(&header)?;
    for s in &summaries {
        let mut row = vec![
            s.command.to_string(),
            s.mean.to_string(),
            s.stddev.map(|v| v.to_string()).unwrap_or_default(),
            s.median.to_string(),
            s.user.to_string(),
            s.system.to_string(),
            s.min.to_string(),
            s.max.to_string(),
        ];
        row.extend(
            names
                .iter()
                .map(|n| s.parameters.get(n).map(|v| v.to_string()).unwrap_or_default()),
        );
        w.write_record(&row)?;
    }
    w.flush()
}

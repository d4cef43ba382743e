//! `--format hyperfine-markdown` (and hyperfine's spelling
//! `--export-markdown FILE` on `run` and `compare`): the table hyperfine's
//! `--export-markdown` writes: per command its mean ± σ, min and max in
//! one unit (ms, or s when the first mean is a second or more) and its
//! mean relative to the fastest's, with the error propagated as hyperfine
//! does.

use std::io::Write;

use super::hyperfine::summary;

/// `--format hyperfine-markdown`: reports of timed runs (run, compare).
pub const FORMAT: super::FormatSpec = super::FormatSpec {
    name: "hyperfine-markdown",
    help: "hyperfine's --export-markdown table (Command, Mean, Min, Max, Relative) (run, compare)",
    needs: super::Form::Runs,
    render: |r, _, out| super::hyperfine::render_runs(r, out, FORMAT.name, write),
    rows: None,
};

/// Writes `commands` as hyperfine's Markdown table.
pub fn write(
    commands: &[super::hyperfine::TimedCommand<'_>],
    out: &mut dyn Write,
) -> std::io::Result<()> {
    let summaries: Vec<_> = commands.iter().map(summary).collect();
    let seconds = summaries.first().is_some_and(|s| s.mean >= 1.0);
    let (unit, scale, digits) = if seconds { ("s", 1.0, 3) } else { ("ms", 1e3, 1) };
    writeln!(
        out,
        "| Command | Mean [{unit}] | Min [{unit}] | Max [{unit}] | Relative |"
    )?;
    writeln!(out, "|:---|---:|---:|---:|---:|")?;
    let fastest = summaries
        .iter()
        .min_by(|a, b| a.mean.total_cmp(&b.mean))
        .map(|s| (s.mean, s.stddev.unwrap_or(0.0)));
    for s in &summaries {
        let v = |x: f64| format!("{:.*}", digits, x * scale);
        let mean = match s.stddev {
            Some(sd) => format!("{} ± {}", v(s.mean), v(sd)),
            None => v(s.mean),
        };
        let relative = match fastest {
            Some((m, sd)) if m > 0.0 && s.mean > 0.0 => {
                let ratio = s.mean / m;
                if (ratio - 1.0).abs() < f64::EPSILON {
                    "1.00".to_string()
                } else {
                    let e = ratio
                        * ((s.stddev.unwrap_or(0.0) / s.mean).powi(2) + (sd / m).powi(2)).sqrt();
                    format!("{ratio:.2} ± {e:.2}")
                }
            }
            _ => String::new(),
        };
        // A backtick in the command would end its code span.
        let command = crate::text::escape_text(s.command).replace('`', "'").replace('|', "\\|");
        writeln!(
            out,
            "| `{command}` | {mean} | {} | {} | {relative} |",
            v(s.min),
            v(s.max)
        )?;
    }
    Ok(())
}

//! Prometheus text exposition format (version 0.0.4), as read by
//! node_exporter's textfile collector and by a scraping Prometheus.

use std::io::{self, Write};

/// The type of a metric family.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MetricKind {
    Gauge,
    Counter,
}

pub use super::unit::Unit;

/// The stem of a figure key: the key without a trailing unit word
/// (`wall_us` → `wall`, `max_rss_kb` → `max_rss`, `pss_bytes` → `pss`),
/// so [`Metric::new`] can append the base unit's.
pub fn stem(key: &str) -> &str {
    const UNIT_WORDS: [&str; 12] = [
        "_ns", "_us", "_ms", "_seconds", "_kb", "_kib", "_mib", "_bytes", "_mhz", "_hz", "_mj",
        "_joules",
    ];
    UNIT_WORDS
        .iter()
        .find_map(|w| key.strip_suffix(w))
        .unwrap_or(key)
}

/// One labelled value, in the family's base unit.
#[derive(Debug, Clone, PartialEq)]
pub struct Sample {
    pub labels: Vec<(String, String)>,
    pub value: f64,
}

/// A metric family: name (with its base unit, `tally_mem_pss_bytes`),
/// help, type, unit and samples.
#[derive(Debug, Clone, PartialEq)]
pub struct Metric {
    pub name: String,
    pub help: String,
    pub kind: MetricKind,
    pub unit: Unit,
    pub samples: Vec<Sample>,
}

impl Metric {
    /// An empty family named `stem`, the base unit's suffix and, for a
    /// counter, `_total` (`tally_run_wall` in µs → `tally_run_wall_seconds`).
    pub fn new(stem: &str, unit: Unit, kind: MetricKind, help: impl Into<String>) -> Metric {
        let total = match kind {
            MetricKind::Counter => "_total",
            MetricKind::Gauge => "",
        };
        Metric {
            name: format!("{stem}{}{total}", unit.suffix()),
            help: help.into(),
            kind,
            unit,
            samples: Vec::new(),
        }
    }

    /// A gauge family; see [`Metric::new`].
    pub fn gauge(stem: &str, unit: Unit, help: impl Into<String>) -> Metric {
        Metric::new(stem, unit, MetricKind::Gauge, help)
    }

    /// Adds a sample whose `value` is in the family's unit; it is stored in
    /// the base unit.
    pub fn push(&mut self, labels: Vec<(String, String)>, value: f64) {
        self.samples.push(Sample {
            labels,
            value: self.unit.to_base(value),
        });
    }

    /// [`Metric::push`], returning the family.
    pub fn with(mut self, labels: Vec<(String, String)>, value: f64) -> Metric {
        self.push(labels, value);
        self
    }
}

fn escape_label(value: &str) -> String {
    let mut out = String::with_capacity(value.len());
    for c in value.chars() {
        match c {
            '\\' => out.push_str("\\\\"),
            '"' => out.push_str("\\\""),
            '\n' => out.push_str("\\n"),
            c => out.push(c),
        }
    }
    out
}

fn escape_help(value: &str) -> String {
    value.replace('\\', "\\\\").replace('\n', "\\n")
}

fn format_value(v: f64) -> String {
    if v.is_nan() {
        "NaN".into()
    } else if v.is_infinite() {
        if v > 0.0 {
            "+Inf".into()
        } else {
            "-Inf".into()
        }
    } else if v.fract() == 0.0 && v.abs() < 1e15 {
        format!("{}", v as i64)
    } else if v.abs() < 1e-4 {
        // Nanoseconds in seconds: 1.4317819600538568e-7, not 0.000000143….
        format!("{v:e}")
    } else {
        format!("{v}")
    }
}

/// `--format prometheus`: the report's metrics, for reports that have them.
pub const FORMAT: super::FormatSpec = super::FormatSpec {
    name: "prometheus",
    help: "Prometheus text exposition (node_exporter textfile collector)",
    needs: super::Form::Metrics,
    render: |r, _, out| match r.forms().metrics() {
        Some(metrics) => Ok(write(&metrics, out)?),
        None => Err(super::RenderError::Unsupported(FORMAT.name)),
    },
    rows: Some(|r, _, out| Ok(Box::new(MetricRows::begin(r, out)?))),
};

/// Metrics written row by row. The format wants each family's samples
/// together: the first family's go out as they come, the others' are held
/// in unnamed temporary files until the end.
struct MetricRows {
    families: Vec<Metric>,
    spills: Vec<io::BufWriter<std::fs::File>>,
    out: Box<dyn Write>,
}

impl MetricRows {
    fn begin(report: &dyn super::Rows, mut out: Box<dyn Write>) -> io::Result<MetricRows> {
        let families = report
            .families()
            .ok_or_else(|| io::Error::other("this report has no prometheus form"))?;
        if let Some(first) = families.first() {
            write_family_head(first, &mut out)?;
        }
        let mut spills = Vec::new();
        for _ in families.iter().skip(1) {
            spills.push(io::BufWriter::with_capacity(
                64 << 10,
                tempfile::tempfile()?,
            ));
        }
        Ok(MetricRows {
            families,
            spills,
            out,
        })
    }
}

impl super::RowWriter for MetricRows {
    fn row(&mut self, _: &dyn super::Rows, row: &dyn super::Row) -> io::Result<()> {
        for (i, (family, sample)) in self.families.iter().zip(row.samples()).enumerate() {
            let Some(sample) = sample else { continue };
            match i.checked_sub(1) {
                None => write_sample(family, &sample, &mut self.out)?,
                Some(k) => {
                    if let Some(spill) = self.spills.get_mut(k) {
                        write_sample(family, &sample, spill)?;
                    }
                }
            }
        }
        Ok(())
    }

    fn flush(&mut self) -> io::Result<()> {
        self.out.flush()
    }

    fn finish(&mut self, _: &dyn super::Rows) -> io::Result<()> {
        use std::io::Seek;
        for (family, spill) in self.families.iter().skip(1).zip(self.spills.drain(..)) {
            write_family_head(family, &mut self.out)?;
            let mut file = spill.into_inner().map_err(|e| e.into_error())?;
            file.rewind()?;
            io::copy(&mut file, &mut self.out)?;
        }
        self.out.flush()
    }
}

/// Writes the metric families.
pub fn write(metrics: &[Metric], out: &mut dyn Write) -> io::Result<()> {
    for m in metrics {
        write_family_head(m, out)?;
        for s in &m.samples {
            write_sample_line(m, s, out)?;
        }
    }
    Ok(())
}

/// The `# HELP` and `# TYPE` lines of a family.
pub fn write_family_head(m: &Metric, out: &mut dyn Write) -> io::Result<()> {
    writeln!(out, "# HELP {} {}", m.name, escape_help(&m.help))?;
    let kind = match m.kind {
        MetricKind::Gauge => "gauge",
        MetricKind::Counter => "counter",
    };
    writeln!(out, "# TYPE {} {kind}", m.name)
}

/// One sample of family `m`, its value in the family's unit (as
/// [`Metric::push`] takes it), for a family written sample by sample.
pub fn write_sample(m: &Metric, s: &Sample, out: &mut dyn Write) -> io::Result<()> {
    let s = Sample {
        labels: s.labels.clone(),
        value: m.unit.to_base(s.value),
    };
    write_sample_line(m, &s, out)
}

fn write_sample_line(m: &Metric, s: &Sample, out: &mut dyn Write) -> io::Result<()> {
    if s.labels.is_empty() {
        writeln!(out, "{} {}", m.name, format_value(s.value))
    } else {
        let labels: Vec<String> = s
            .labels
            .iter()
            .map(|(k, v)| format!("{k}=\"{}\"", escape_label(v)))
            .collect();
        writeln!(
            out,
            "{}{{{}}} {}",
            m.name,
            labels.join(","),
            format_value(s.value)
        )
    }
}

/// The content type of [`write()`]'s output.
pub const TEXT_CONTENT_TYPE: &str = "text/plain; version=0.0.4; charset=utf-8";

/// The content type of [`write_openmetrics`]'s output.
pub const OPENMETRICS_CONTENT_TYPE: &str =
    "application/openmetrics-text; version=1.0.0; charset=utf-8";

/// Writes the metric families in the OpenMetrics text format (1.0.0): a
/// counter's family is named without its samples' `_total`, and `# EOF`
/// ends the exposition.
pub fn write_openmetrics(metrics: &[Metric], out: &mut dyn Write) -> io::Result<()> {
    for m in metrics {
        let (family, kind) = match m.kind {
            MetricKind::Gauge => (m.name.as_str(), "gauge"),
            MetricKind::Counter => (m.name.strip_suffix("_total").unwrap_or(&m.name), "counter"),
        };
        writeln!(
            out,
            "# HELP {family} {}",
            escape_help(&m.help).replace('"', "\\\"")
        )?;
        writeln!(out, "# TYPE {family} {kind}")?;
        for s in &m.samples {
            write_sample_line(m, s, out)?;
        }
    }
    writeln!(out, "# EOF")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn exposition_escapes_labels() {
        let m = Metric::gauge("tally_x", Unit::Kibibytes, "X.")
            .with(vec![("program".into(), "a\"b\\c\nd".into())], 1.0);
        let mut out = Vec::new();
        write(&[m], &mut out).unwrap();
        assert_eq!(
            String::from_utf8(out).unwrap(),
            "# HELP tally_x_bytes X.\n# TYPE tally_x_bytes gauge\ntally_x_bytes{program=\"a\\\"b\\\\c\\nd\"} 1024\n"
        );
    }

    #[test]
    fn small_values_print_with_an_exponent() {
        assert_eq!(format_value(1.2e-7), "1.2e-7");
        assert_eq!(format_value(0.003815), "0.003815");
        assert_eq!(format_value(8192.0), "8192");
    }

    #[test]
    fn names_carry_the_base_unit_and_counters_total() {
        assert_eq!(
            Metric::gauge(stem("tally_run_wall_us"), Unit::Microseconds, "").name,
            "tally_run_wall_seconds"
        );
        assert_eq!(
            Metric::gauge(stem("tally_run_max_rss_kb"), Unit::Kibibytes, "").name,
            "tally_run_max_rss_bytes"
        );
        assert_eq!(
            Metric::new("tally_x_faults", Unit::Count, MetricKind::Counter, "").name,
            "tally_x_faults_total"
        );
        assert_eq!(stem("minor_faults"), "minor_faults");
    }

    #[test]
    fn openmetrics_names_counter_families_without_total_and_ends_with_eof() {
        let c = Metric::new("tally_x_runs", Unit::Count, MetricKind::Counter, "R \"q\".")
            .with(Vec::new(), 2.0);
        let mut out = Vec::new();
        write_openmetrics(&[c], &mut out).unwrap();
        assert_eq!(
            String::from_utf8(out).unwrap(),
            "# HELP tally_x_runs R \\\"q\\\".\n# TYPE tally_x_runs counter\ntally_x_runs_total 2\n# EOF\n"
        );
    }
}

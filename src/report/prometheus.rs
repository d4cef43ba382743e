//! Prometheus text exposition format (version 0.0.4), as read by
//! node_exporter's textfile collector and by a scraping Prometheus.

use std::io::{self, Write};

/// The type of a metric family.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MetricKind {
    Gauge,
    Counter,
}

/// One labelled value.
#[derive(Debug, Clone, PartialEq)]
pub struct Sample {
    pub labels: Vec<(String, String)>,
    pub value: f64,
}

/// A metric family: name (with its unit, `tally_mem_pss_bytes`), help,
/// type and samples.
#[derive(Debug, Clone, PartialEq)]
pub struct Metric {
    pub name: String,
    pub help: String,
    pub kind: MetricKind,
    pub samples: Vec<Sample>,
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
    } else {
        format!("{v}")
    }
}

/// Writes the metric families.
pub fn write(metrics: &[Metric], out: &mut dyn Write) -> io::Result<()> {
    for m in metrics {
        writeln!(out, "# HELP {} {}", m.name, escape_help(&m.help))?;
        let kind = match m.kind {
            MetricKind::Gauge => "gauge",
            MetricKind::Counter => "counter",
        };
        writeln!(out, "# TYPE {} {kind}", m.name)?;
        for s in &m.samples {
            if s.labels.is_empty() {
                writeln!(out, "{} {}", m.name, format_value(s.value))?;
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
                )?;
            }
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn exposition_escapes_labels() {
        let m = Metric {
            name: "tally_x_bytes".into(),
            help: "X.".into(),
            kind: MetricKind::Gauge,
            samples: vec![Sample {
                labels: vec![("program".into(), "a\"b\\c\nd".into())],
                value: 1024.0,
            }],
        };
        let mut out = Vec::new();
        write(&[m], &mut out).unwrap();
        assert_eq!(
            String::from_utf8(out).unwrap(),
            "# HELP tally_x_bytes X.\n# TYPE tally_x_bytes gauge\ntally_x_bytes{program=\"a\\\"b\\\\c\\nd\"} 1024\n"
        );
    }
}

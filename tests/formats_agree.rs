//! One measurement, every format, the same figures.
//!
//! `tally run -n 3` exports its report as JSON, CSV, Markdown and
//! Prometheus from one measurement (`--export`), and every format must
//! carry the same figures once units are converted: JSON per-run records
//! against the CSV rows (one key, one unit: `wall_ns`, `max_rss_bytes`),
//! the CSV against the Markdown table cell by cell, the CSV columns'
//! medians against the JSON summary (whose keys are the records' keys),
//! and the summary against Prometheus in base units (`_seconds`,
//! `_bytes`).

mod common;

use std::collections::HashMap;
use std::path::Path;

use serde_json::Value;

fn read(path: &Path) -> String {
    std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// Header and rows of a CSV document (no quoted commas in these figures).
fn csv_rows(text: &str) -> (Vec<String>, Vec<Vec<String>>) {
    let mut lines = text.lines();
    let header = lines
        .next()
        .expect("a CSV header")
        .split(',')
        .map(String::from)
        .collect();
    let rows = lines
        .map(|l| l.split(',').map(String::from).collect())
        .collect();
    (header, rows)
}

/// Header and rows of a Markdown table (the alignment row left out).
fn markdown_rows(text: &str) -> (Vec<String>, Vec<Vec<String>>) {
    let cells = |l: &str| -> Vec<String> {
        l.trim()
            .trim_matches('|')
            .split('|')
            .map(|c| c.trim().to_string())
            .collect()
    };
    let mut lines = text.lines().filter(|l| l.starts_with('|'));
    let header = cells(lines.next().expect("a Markdown header"));
    let rows = lines.skip(1).map(cells).collect();
    (header, rows)
}

/// Prometheus samples by metric name (one sample per name here).
fn prometheus(text: &str) -> HashMap<String, f64> {
    text.lines()
        .filter(|l| !l.starts_with('#') && !l.trim().is_empty())
        .map(|l| {
            let name = l.split(['{', ' ']).next().unwrap_or_default().to_string();
            let value = l.rsplit(' ').next().and_then(|v| v.parse().ok());
            (name, value.unwrap_or_else(|| panic!("no value in {l:?}")))
        })
        .collect()
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    let n = v.len();
    if n % 2 == 1 {
        v[n / 2]
    } else {
        (v[n / 2 - 1] + v[n / 2]) / 2.0
    }
}

#[test]
fn run_report_agrees_figure_by_figure_in_every_format() {
    let dir = tempfile::tempdir().expect("tempdir");
    let file = |f: &str| dir.path().join(f);
    let export = |format: &str, f: &str| format!("{format}={}", file(f).display());
    let out = common::tally()
        .args(["run", "-n", "3", "--export"])
        .arg(export("json", "r.json"))
        .arg("--export")
        .arg(export("csv", "r.csv"))
        .arg("--export")
        .arg(export("markdown", "r.md"))
        .arg("--export")
        .arg(export("prometheus", "r.prom"))
        .args(["--", "sh", "-c", "head -c 100000 /dev/zero > /dev/null"])
        .output()
        .expect("tally run");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );

    let json: Value = serde_json::from_str(&read(&file("r.json"))).expect("JSON");
    let (header, rows) = csv_rows(&read(&file("r.csv")));
    let (md_header, md_rows) = markdown_rows(&read(&file("r.md")));
    let prom = prometheus(&read(&file("r.prom")));
    let runs = json["runs"].as_array().expect("runs");
    assert_eq!(runs.len(), 3);
    assert_eq!(rows.len(), 3);

    // CSV and Markdown: the same table, cell by cell.
    assert_eq!(md_header, header);
    assert_eq!(md_rows, rows);

    // JSON records against CSV rows, unit by unit.
    let col = |name: &str| {
        header
            .iter()
            .position(|h| h == name)
            .unwrap_or_else(|| panic!("no CSV column {name}: {header:?}"))
    };
    let num = |row: &[String], name: &str| -> f64 {
        row[col(name)]
            .parse()
            .unwrap_or_else(|_| panic!("{name}: {:?}", row[col(name)]))
    };
    let int = |v: &Value| v.as_f64().unwrap_or_else(|| panic!("not a number: {v}"));
    for (run, row) in runs.iter().zip(&rows) {
        // One key, one unit, in every record of every format: exact.
        assert_eq!(num(row, "wall_ns"), int(&run["wall_ns"]), "{run}");
        assert_eq!(num(row, "user_us"), int(&run["user_us"]));
        assert_eq!(num(row, "system_us"), int(&run["system_us"]));
        assert_eq!(
            num(row, "cpu_us"),
            int(&run["user_us"]) + int(&run["system_us"])
        );
        assert_eq!(num(row, "max_rss_bytes"), int(&run["max_rss_bytes"]));
        for key in [
            "minor_faults",
            "major_faults",
            "voluntary_switches",
            "involuntary_switches",
            "block_input_ops",
            "block_output_ops",
        ] {
            assert_eq!(num(row, key), int(&run[key]), "{key}");
        }
        for key in [
            "storage_read_bytes",
            "storage_write_bytes",
            "read_call_bytes",
            "write_call_bytes",
        ] {
            assert_eq!(num(row, key), int(&run["io"][key]), "{key}");
        }
        assert_eq!(num(row, "exit_code"), int(&run["exit"]["code"]));
    }

    // The JSON summary: medians of the CSV columns, and Prometheus in base
    // units.
    let summary = json["summary"].as_array().expect("summary");
    assert!(summary.len() >= 10, "{summary:?}");
    for s in summary {
        let figure = s["figure"].as_str().expect("figure");
        let m = int(&s["median"]);
        let column: Vec<f64> = rows.iter().map(|r| num(r, figure)).collect();
        assert_eq!(
            median(column),
            m,
            "{figure}: CSV median against the JSON summary"
        );
        let (metric, scale) = if let Some(stem) = figure.strip_suffix("_us") {
            (format!("tally_run_{stem}_seconds"), 1e-6)
        } else if let Some(stem) = figure.strip_suffix("_ns") {
            (format!("tally_run_{stem}_seconds"), 1e-9)
        } else {
            (format!("tally_run_{figure}"), 1.0)
        };
        let p = *prom
            .get(&metric)
            .unwrap_or_else(|| panic!("{figure}: no {metric} in Prometheus"));
        let want = m * scale;
        assert!(
            (p - want).abs() <= want.abs() * 1e-9 + 1e-12,
            "{figure}: {p} in {metric}, {want} from the JSON median"
        );
    }
}

/// `tally compare`: the CSV rows (one per command and figure) against the
/// JSON summaries and comparisons, Markdown against CSV, and Prometheus
/// (medians in base units, ratios, p-values) against the JSON.
#[test]
fn compare_report_agrees_figure_by_figure_in_every_format() {
    let dir = tempfile::tempdir().expect("tempdir");
    let file = |f: &str| dir.path().join(f);
    let export = |format: &str, f: &str| format!("{format}={}", file(f).display());
    let out = common::tally()
        .args(["compare", "-N", "-n", "4", "--format", "json", "-o"])
        .arg(file("c.json"))
        .arg("--export")
        .arg(export("csv", "c.csv"))
        .arg("--export")
        .arg(export("markdown", "c.md"))
        .arg("--export")
        .arg(export("prometheus", "c.prom"))
        .args(["/bin/true", "head -c 100000 /dev/zero"])
        .output()
        .expect("tally compare");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let json: Value = serde_json::from_str(&read(&file("c.json"))).expect("JSON");
    let (header, rows) = csv_rows(&read(&file("c.csv")));
    let (md_header, md_rows) = markdown_rows(&read(&file("c.md")));
    assert_eq!(md_header, header);
    assert_eq!(md_rows, rows);
    let prom_text = read(&file("c.prom"));
    let col = |name: &str| header.iter().position(|h| h == name).expect(name);
    let commands = json["commands"].as_array().expect("commands");
    let mut checked = 0;
    for row in &rows {
        let i: usize = row[col("command_index")].parse().expect("index");
        let c = &commands[i - 1];
        let figure = &row[col("figure")];
        let s = c["summary"]
            .as_array()
            .unwrap()
            .iter()
            .find(|s| s["figure"] == figure.as_str())
            .expect("summary of the figure");
        let m = s["median"].as_f64().unwrap();
        assert_eq!(row[col("median")].parse::<f64>().unwrap(), m, "{figure}");
        // The CSV median is that of the JSON runs.
        let values: Vec<f64> = c["runs"]
            .as_array()
            .unwrap()
            .iter()
            .map(|r| {
                let v = if r[figure.as_str()].is_null() {
                    &r["io"][figure.as_str()]
                } else {
                    &r[figure.as_str()]
                };
                v.as_f64().unwrap_or_else(|| {
                    r["user_us"].as_f64().unwrap() + r["system_us"].as_f64().unwrap()
                })
            })
            .collect();
        assert_eq!(median(values), m, "{figure}: JSON runs against the summary");
        // Prometheus: the median in base units, labelled with the index.
        let (metric, scale) = if let Some(stem) = figure.strip_suffix("_us") {
            (format!("tally_compare_{stem}_seconds"), 1e-6)
        } else if let Some(stem) = figure.strip_suffix("_ns") {
            (format!("tally_compare_{stem}_seconds"), 1e-9)
        } else {
            (format!("tally_compare_{figure}"), 1.0)
        };
        let label = format!("{metric}{{index=\"{i}\",");
        let line = prom_text
            .lines()
            .find(|l| l.starts_with(&label))
            .unwrap_or_else(|| panic!("no {label} in Prometheus"));
        let p: f64 = line.rsplit(' ').next().unwrap().parse().unwrap();
        assert!(
            (p - m * scale).abs() <= (m * scale).abs() * 1e-9 + 1e-12,
            "{line}"
        );
        // The ratio of a compared command: CSV and JSON the same.
        if let Some(v) = c["versus_reference"]
            .as_array()
            .unwrap()
            .iter()
            .find(|v| v["figure"] == figure.as_str())
        {
            // (serde_json reads floats to within an ulp, not exactly.)
            let close = |a: f64, b: f64| (a - b).abs() <= a.abs() * 1e-14;
            if let Some(r) = v["ratio"].as_f64() {
                assert!(close(row[col("ratio")].parse::<f64>().unwrap(), r));
            }
            let p = v["p_value"].as_f64().unwrap();
            assert!(close(row[col("p_value")].parse::<f64>().unwrap(), p));
            assert_eq!(row[col("verdict")], v["verdict"].as_str().unwrap());
        } else {
            assert_eq!(i - 1, json["reference"].as_u64().unwrap() as usize);
            assert_eq!(row[col("verdict")], "reference");
        }
        checked += 1;
    }
    assert!(checked >= 2 * 10, "{checked} rows");
}

//! One measurement, every format, the same figures: for `tally run` in
//! detail below, and for mem, cache, cp and bench after it (each exports
//! one report as JSON, CSV, Markdown and, where it has metrics,
//! Prometheus, and each figure must agree after unit conversion).
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

/// Header and rows of a CSV document.
fn csv_rows(text: &str) -> (Vec<String>, Vec<Vec<String>>) {
    let mut r = csv::Reader::from_reader(text.as_bytes());
    let header = r
        .headers()
        .expect("a CSV header")
        .iter()
        .map(String::from)
        .collect();
    let rows = r
        .records()
        .map(|rec| {
            rec.expect("a CSV record")
                .iter()
                .map(String::from)
                .collect()
        })
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

/// Exports one report of `args` in every format into `dir`; returns
/// (JSON, CSV header and rows, Prometheus text) after checking that the
/// Markdown table is the CSV's, cell by cell.
fn export_all(
    dir: &Path,
    args: &[&str],
    prometheus: bool,
) -> (Value, Vec<String>, Vec<Vec<String>>, String) {
    let file = |f: &str| dir.join(f);
    let mut cmd = common::tally();
    for (format, name) in [("json", "r.json"), ("csv", "r.csv"), ("markdown", "r.md")]
        .into_iter()
        .chain(prometheus.then_some(("prometheus", "r.prom")))
    {
        cmd.arg("--export")
            .arg(format!("{format}={}", file(name).display()));
    }
    // Options before the subcommand's own arguments: insert after it.
    let mut full: Vec<std::ffi::OsString> = vec![args[0].into()];
    full.extend(cmd.get_args().map(|a| a.to_os_string()));
    full.extend(args[1..].iter().map(Into::into));
    let out = common::tally().args(&full).output().expect("tally runs");
    assert!(
        out.status.success(),
        "{args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let json: Value = serde_json::from_str(&read(&file("r.json"))).expect("JSON");
    let (header, rows) = csv_rows(&read(&file("r.csv")));
    let (md_header, md_rows) = markdown_rows(&read(&file("r.md")));
    assert_eq!(md_header, header, "{args:?}: Markdown header against CSV");
    assert_eq!(md_rows, rows, "{args:?}: Markdown rows against CSV");
    let prom = if prometheus {
        read(&file("r.prom"))
    } else {
        String::new()
    };
    (json, header, rows, prom)
}

/// The value of a Prometheus sample: `name{labels}` exactly as written.
fn sample(prom: &str, series: &str) -> f64 {
    prom.lines()
        .find_map(|l| l.strip_prefix(series)?.strip_prefix(' '))
        .and_then(|v| v.parse().ok())
        .unwrap_or_else(|| panic!("no sample {series} in:\n{prom}"))
}

fn cell<'a>(header: &[String], row: &'a [String], name: &str) -> &'a str {
    let i = header
        .iter()
        .position(|h| h == name)
        .unwrap_or_else(|| panic!("no CSV column {name}: {header:?}"));
    &row[i]
}

fn num_cell(header: &[String], row: &[String], name: &str) -> f64 {
    let c = cell(header, row, name);
    c.parse()
        .unwrap_or_else(|_| panic!("{name}: {c:?} is not a number"))
}

fn f(v: &Value) -> f64 {
    v.as_f64().unwrap_or_else(|| panic!("not a number: {v}"))
}

#[test]
fn mem_report_agrees_figure_by_figure_in_every_format() {
    let dir = tempfile::tempdir().expect("tempdir");
    let procfs = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/proc/typical");
    let procfs = procfs.to_str().expect("utf-8 path");
    // Bytes in CSV too, so every format holds the same numbers.
    let (json, header, rows, prom) = export_all(
        dir.path(),
        &["mem", "--procfs", procfs, "--unit", "b"],
        true,
    );
    let groups = json["groups"].as_array().expect("groups");
    assert!(groups.len() >= 3, "{json}");
    assert_eq!(rows.len(), groups.len() + 1, "a row per group and TOTAL");
    // Every figure of a row is a `KEY_bytes` field of the JSON row, the
    // CSV column of that name, and `tally_mem_KEY_bytes` in Prometheus.
    let keys: Vec<&str> = header
        .iter()
        .filter(|h| h.ends_with("_bytes") && *h != "swap_not_attributed_bytes")
        .map(String::as_str)
        .collect();
    assert!(keys.len() >= 5, "{header:?}");
    for (g, row) in groups.iter().zip(&rows) {
        let name = g["name"].as_str().expect("name");
        assert_eq!(cell(&header, row, "program"), name);
        assert_eq!(num_cell(&header, row, "processes"), f(&g["processes"]));
        for key in &keys {
            let v = f(&g[*key]);
            assert_eq!(num_cell(&header, row, key), v, "{name} {key}");
            let series = format!("tally_mem_{key}{{program=\"{name}\"}}");
            assert_eq!(sample(&prom, &series), v, "{series}");
        }
    }
    let total = rows.last().expect("TOTAL row");
    assert_eq!(cell(&header, total, "program"), "TOTAL");
    for key in &keys {
        let v = f(&json["total"][*key]);
        assert_eq!(num_cell(&header, total, key), v, "TOTAL {key}");
        let stem = key.strip_suffix("_bytes").expect("bytes");
        assert_eq!(sample(&prom, &format!("tally_mem_total_{stem}_bytes")), v);
    }
}

#[test]
fn cache_report_agrees_figure_by_figure_in_every_format() {
    let dir = tempfile::tempdir().expect("tempdir");
    let a = dir.path().join("a.bin");
    let b = dir.path().join("b.bin");
    std::fs::write(&a, vec![7u8; 300_000]).expect("write a");
    std::fs::write(&b, vec![9u8; 12_345]).expect("write b");
    let out = dir.path().join("out");
    std::fs::create_dir(&out).expect("mkdir");
    let (json, header, rows, prom) = export_all(
        &out,
        &[
            "cache",
            a.to_str().expect("utf-8"),
            b.to_str().expect("utf-8"),
        ],
        true,
    );
    let page = f(&json["page_size_bytes"]);
    let files = json["files"].as_array().expect("files");
    assert_eq!(files.len(), 2);
    assert_eq!(rows.len(), 2, "{rows:?}");
    for (file, row) in files.iter().zip(&rows) {
        let path = file["path"].as_str().expect("path");
        assert_eq!(cell(&header, row, "path"), path);
        let size = f(&file["size_bytes"]);
        assert_eq!(num_cell(&header, row, "size_bytes"), size);
        // Residency is in pages in JSON, in bytes elsewhere.
        let cached = f(&file["residency"]["cached_pages"]) * page;
        assert_eq!(num_cell(&header, row, "cached_bytes"), cached, "{path}");
        let dirty = f(&file["residency"]["dirty_pages"]) * page;
        assert_eq!(num_cell(&header, row, "dirty_bytes"), dirty, "{path}");
        let label = format!("{{path=\"{path}\"}}");
        assert_eq!(
            sample(&prom, &format!("tally_cache_size_bytes{label}")),
            size
        );
        assert_eq!(
            sample(&prom, &format!("tally_cache_cached_bytes{label}")),
            cached
        );
    }
    let summed: f64 = files
        .iter()
        .map(|x| f(&x["residency"]["cached_pages"]) * page)
        .sum();
    assert_eq!(f(&json["total"]["cached_bytes"]), summed);
}

#[test]
fn cp_report_agrees_figure_by_figure_in_every_format() {
    let dir = tempfile::tempdir().expect("tempdir");
    let src = dir.path().join("src.bin");
    std::fs::write(&src, vec![3u8; 200_000]).expect("write");
    let dst = dir.path().join("dst.bin");
    let out = dir.path().join("out");
    std::fs::create_dir(&out).expect("mkdir");
    let (json, header, rows, _) = export_all(
        &out,
        &[
            "cp",
            src.to_str().expect("utf-8"),
            dst.to_str().expect("utf-8"),
        ],
        false,
    );
    let files = json["files"].as_array().expect("files");
    assert_eq!((files.len(), rows.len()), (1, 1));
    let (file, row) = (&files[0], &rows[0]);
    for key in &header {
        match &file[key.as_str()] {
            Value::Number(n) => assert_eq!(
                num_cell(&header, row, key),
                n.as_f64().expect("number"),
                "{key}"
            ),
            Value::String(s) => assert_eq!(cell(&header, row, key), s, "{key}"),
            other => panic!("CSV column {key} has no JSON field of that name: {other}"),
        }
    }
}

#[test]
fn bench_report_agrees_figure_by_figure_in_every_format() {
    let dir = tempfile::tempdir().expect("tempdir");
    let (json, header, rows, prom) =
        export_all(dir.path(), &["bench", "--quick", "syscall", "timer"], true);
    // The unit of each figure: the CSV names it, JSON keys the summary by
    // it, and Prometheus scales it to the base unit.
    let base = |unit: &str| match unit {
        "ns" => ("seconds", 1e-9),
        "GB/s" | "gb_per_s" => ("bytes_per_second", 1e9),
        "mhz" | "MHz" => ("hertz", 1e6),
        "B" | "bytes" => ("bytes", 1.0),
        other => panic!("a unit this test does not know: {other:?}"),
    };
    let figures: Vec<&Value> = json["benchmarks"]
        .as_array()
        .expect("benchmarks")
        .iter()
        .flat_map(|b| b["figures"].as_array().expect("figures"))
        .collect();
    assert!(figures.len() >= 4, "{json}");
    let mut compared = 0;
    for row in &rows {
        let id = cell(&header, row, "id");
        let fig = figures
            .iter()
            .find(|x| x["id"] == id)
            .unwrap_or_else(|| panic!("CSV figure {id} is not in the JSON"));
        if !cell(&header, row, "unavailable").is_empty() {
            continue;
        }
        let unit = cell(&header, row, "unit");
        let summary = fig
            .as_object()
            .expect("figure object")
            .values()
            .find(|v| v.get("median").is_some())
            .unwrap_or_else(|| panic!("{id}: no summary in {fig}"));
        let median = f(&summary["median"]);
        // CSV keeps 4 decimals.
        let csv = num_cell(&header, row, "median");
        assert!(
            (csv - median).abs() <= 5e-5 + median * 1e-9,
            "{id}: {csv} against {median}"
        );
        assert_eq!(
            num_cell(&header, row, "min"),
            (f(&summary["min"]) * 1e4).round() / 1e4
        );
        if cell(&header, row, "implausible").is_empty() {
            let (suffix, scale) = base(unit);
            let bench = fig["id"]
                .as_str()
                .and_then(|i| i.split('.').next())
                .expect("id");
            let series = format!(
                "tally_bench_median_{suffix}{{benchmark=\"{bench}\",figure=\"{id}\"{}}}",
                fig["x"]
                    .as_f64()
                    .map(|x| format!(",x=\"{x}\""))
                    .unwrap_or_default()
            );
            let p = sample(&prom, &series);
            let want = median * scale;
            assert!(
                (p - want).abs() <= want.abs() * 1e-9,
                "{series}: {p} against {want}"
            );
            // The unstable mark: JSON's percent, CSV's column (2
            // decimals), Prometheus' ratio (0 for a stable figure).
            let unstable = fig["stability"]["unstable_percent"].as_f64();
            let csv_mark = cell(&header, row, "unstable_percent");
            match unstable {
                Some(u) => assert_eq!(csv_mark, format!("{u:.2}"), "{id}"),
                None => assert!(csv_mark.is_empty(), "{id}: {csv_mark}"),
            }
            let ratio = sample(
                &prom,
                &series
                    .replace("tally_bench_median_", "tally_bench_unstable_")
                    .replace(&format!("_{suffix}{{"), "_ratio{"),
            );
            assert!(
                (ratio - unstable.unwrap_or(0.0) / 100.0).abs() <= 1e-12,
                "{id}: unstable ratio {ratio} against {unstable:?}"
            );
        }
        compared += 1;
    }
    assert!(compared >= 4, "{rows:?}");
}

/// `tally compare`: the CSV rows (one per command and figure) against the
/// JSON summaries and comparisons, Markdown's summary, and Prometheus
/// (medians in base units, ratios, p-values) against the JSON.
#[test]
fn compare_report_agrees_figure_by_figure_in_every_format() {
    let dir = tempfile::tempdir().expect("tempdir");
    let file = |f: &str| dir.path().join(f);
    let export = |format: &str, f: &str| format!("{format}={}", file(f).display());
    let out = common::tally()
        // The reference named: the two take about the same wall time, so
        // the fastest, the default reference, is either.
        .args(["compare", "-N", "-n", "4", "--reference", "1"])
        .args(["--format", "json", "-o"])
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
    // Markdown is the compact summary: a headline, then per command its
    // figures against the reference (the full table is CSV's).
    let md = read(&file("c.md"));
    assert!(md.starts_with("**tally compare**: \\#2 "), "{md}");
    let (md_header, md_rows) = markdown_rows(&md);
    assert_eq!(
        md_header,
        ["figure", "reference", "now", "ratio", "interval", "verdict"],
        "{md}"
    );
    assert!(md_rows.iter().any(|r| r[0] == "wall time"), "{md}");
    assert!(md_rows.len() < rows.len(), "{md}");
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
                // A figure of the run, of its I/O, or of where its time went.
                let f = figure.as_str();
                let v = [&r[f], &r["io"][f], &r["why"][f]]
                    .into_iter()
                    .find(|v| !v.is_null())
                    .unwrap_or(&r[f]);
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

/// Every CSV cell of a load row against the JSON field of the same name
/// (lists joined by spaces, null empty, the first checksum as `checksum`,
/// the document's `mem_limit` as `mem_limit_*`).
fn load_row_agrees(json: &Value, header: &[String], row: &[String], rec: &Value) {
    for key in header {
        let c = cell(header, row, key);
        let v = match key.as_str() {
            "checksum" => rec["checksums"][0].clone(),
            "mem_limit_bytes" => json["mem_limit"]["limit_bytes"].clone(),
            "mem_limit_via" => json["mem_limit"]["via"].clone(),
            k => rec
                .get(k)
                .unwrap_or_else(|| panic!("CSV column {k} has no JSON field: {rec}"))
                .clone(),
        };
        match &v {
            Value::Null => assert_eq!(c, "", "{key}"),
            Value::String(s) => assert_eq!(c, s, "{key}"),
            Value::Number(n) => {
                let (want, got) = (f(&Value::Number(n.clone())), num_cell(header, row, key));
                assert!(
                    (want - got).abs() <= 1e-4 * want.abs().max(1.0),
                    "{key}: CSV {got} against JSON {want}"
                );
            }
            Value::Array(a) => {
                let joined: Vec<String> = a
                    .iter()
                    .map(|x| match x {
                        Value::String(s) => s.clone(),
                        other => other.to_string(),
                    })
                    .collect();
                assert_eq!(c, joined.join(" "), "{key}");
            }
            other => panic!("{key}: a JSON value the CSV cannot hold: {other}"),
        }
    }
}

#[test]
fn load_report_agrees_figure_by_figure_in_every_format() {
    let dir = tempfile::tempdir().expect("tempdir");
    let file = dir.path().join("weights.bin");
    std::fs::write(&file, vec![7u8; 256 * 1024]).expect("write");
    let path = file.to_str().expect("utf-8");
    let out = dir.path().join("out");
    std::fs::create_dir(&out).expect("mkdir");
    let (json, header, rows, _) = export_all(
        &out,
        &["load", "--runs", "1", "--methods", "read,mmap", path],
        false,
    );
    let results = json["results"].as_array().expect("results");
    assert_eq!(
        (results.len(), rows.len()),
        (4, 4),
        "two methods, cold and warm"
    );
    for row in &rows {
        let rec = results
            .iter()
            .find(|r| {
                r["mode"] == cell(&header, row, "mode")
                    && r["method"] == cell(&header, row, "method")
            })
            .unwrap_or_else(|| panic!("CSV row {row:?} is not in the JSON"));
        load_row_agrees(&json, &header, row, rec);
    }
}

#[test]
fn load_procs_report_agrees_figure_by_figure_in_every_format() {
    let dir = tempfile::tempdir().expect("tempdir");
    let file = dir.path().join("weights.bin");
    std::fs::write(&file, vec![9u8; 256 * 1024]).expect("write");
    let path = file.to_str().expect("utf-8");
    let out = dir.path().join("out");
    std::fs::create_dir(&out).expect("mkdir");
    let (json, header, rows, _) =
        export_all(&out, &["load", "--procs", "2", "--warm", path], false);
    let runs = json["runs"].as_array().expect("runs");
    assert_eq!((runs.len(), rows.len()), (2, 2), "read and mmap, warm");
    for row in &rows {
        let rec = runs
            .iter()
            .find(|r| r["method"] == cell(&header, row, "method"))
            .unwrap_or_else(|| panic!("CSV row {row:?} is not in the JSON"));
        assert_eq!(rec["pss_per_proc_bytes"].as_array().expect("list").len(), 2);
        load_row_agrees(&json, &header, row, rec);
    }
}

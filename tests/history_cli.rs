//! `tally history` through the binary: change points found and lone
//! outliers screened (and Otava's own method reporting its pairs), the
//! check's exit statuses (regression 3, pending 0 or 4 with --strict, an
//! older change 0), every format, the page's charts at 5 and 5,000 points,
//! and bad usage refused before the store is read.

mod common;

use std::path::{Path, PathBuf};
use std::process::Output;

use common::tally;
use serde_json::Value;

fn text(o: &Output) -> String {
    format!(
        "{}{}",
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    )
}

/// Deterministic noise: a linear congruential generator through
/// Box-Muller, so a test's series are the same on every machine.
struct Noise(u64);

impl Noise {
    fn uniform(&mut self) -> f64 {
        self.0 = self
            .0
            .wrapping_mul(6_364_136_223_846_793_005)
            .wrapping_add(1_442_695_040_888_963_407);
        ((self.0 >> 11) as f64 + 0.5) / (1u64 << 53) as f64
    }

    fn gauss(&mut self) -> f64 {
        let (u, v) = (self.uniform(), self.uniform());
        (-2.0 * u.ln()).sqrt() * (2.0 * std::f64::consts::PI * v).cos()
    }
}

/// A CSV of `values` of figure `wall_ns`, commits c0, c1, …
fn csv(dir: &Path, values: &[f64]) -> PathBuf {
    let mut t = String::from("time,commit,wall_ns\n");
    for (i, v) in values.iter().enumerate() {
        t.push_str(&format!("{},c{i},{v}\n", 1_793_491_200 + 60 * i as i64));
    }
    let p = dir.join("app.csv");
    std::fs::write(&p, t).unwrap();
    p
}

/// A store holding `values`.
fn store_of(dir: &Path, values: &[f64]) -> String {
    let store = dir.join("h.db").display().to_string();
    let _ = std::fs::remove_file(&store);
    let out = tally()
        .args(["history", "import", &store])
        .arg(csv(dir, values))
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", text(&out));
    store
}

fn json(store: &str, args: &[&str]) -> Value {
    let out = tally()
        .args(["history", store, "--format", "json"])
        .args(args)
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", text(&out));
    serde_json::from_slice(&out.stdout).unwrap()
}

fn indices(doc: &Value) -> Vec<u64> {
    doc["series"][0]["change_points"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["index"].as_u64().unwrap())
        .collect()
}

fn level(n: usize, noise: f64, seed: u64) -> Vec<f64> {
    let mut g = Noise(seed);
    (0..n)
        .map(|_| 1_000_000.0 * (1.0 + noise * g.gauss()))
        .collect()
}

#[test]
fn a_lone_outlier_is_screened_where_otavas_method_reports_a_pair() {
    let dir = tempfile::tempdir().unwrap();
    let mut x = level(300, 0.02, 7);
    x[70] *= 1.5;
    let store = store_of(dir.path(), &x);
    let t = json(&store, &[]);
    assert!(indices(&t).is_empty(), "{:?}", indices(&t));
    assert_eq!(t["series"][0]["outliers"], serde_json::json!([70]));
    let o = json(&store, &["--method", "otava"]);
    assert!(
        indices(&o).windows(2).any(|w| w == [70, 71]),
        "Otava's pair: {:?}",
        indices(&o)
    );
    assert_eq!(o["method"]["method"], "otava");
}

#[test]
fn a_step_is_found_with_its_commits_medians_and_change() {
    let dir = tempfile::tempdir().unwrap();
    let mut x = level(120, 0.01, 11);
    for v in &mut x[80..] {
        *v *= 1.05;
    }
    let store = store_of(dir.path(), &x);
    let doc = json(&store, &[]);
    let cp = &doc["series"][0]["change_points"][0];
    assert_eq!(indices(&doc), [80]);
    assert_eq!(
        doc["commits"][cp["first_after"].as_u64().unwrap() as usize]["commit"],
        "c80"
    );
    assert_eq!(
        doc["commits"][cp["last_before"].as_u64().unwrap() as usize]["commit"],
        "c79"
    );
    let change = cp["change"].as_f64().unwrap();
    assert!((change - 0.05).abs() < 0.01, "{change}");
    assert!(cp["p_adjusted"].as_f64().unwrap() <= 0.001);
    assert_eq!(cp["worse"], true);
    let out = tally().args(["history", &store]).output().unwrap();
    let said = text(&out);
    assert!(said.contains("#1 c79 → c80"), "{said}");
    assert!(said.contains("worse"), "{said}");
    // --min-magnitude above the change leaves none; the window is Otava's.
    assert!(indices(&json(&store, &["--min-magnitude", "10%"])).is_empty());
    assert_eq!(doc["method"]["window"], 50);
    assert_eq!(doc["method"]["max_pvalue"], 0.001);
}

/// An exact series: flat, then a 3% step at point 20.
fn stepped(n: usize) -> Vec<f64> {
    (0..n)
        .map(|i| if i < 20 { 1_000_000.0 } else { 1_030_000.0 })
        .collect()
}

fn check(store: &str, args: &[&str]) -> (Option<i32>, String) {
    let out = tally()
        .args(["history", "check", store, "--fail-on", "wall=1%"])
        .args(args)
        .output()
        .unwrap();
    (out.status.code(), text(&out))
}

#[test]
fn check_fails_on_a_change_the_newest_point_belongs_to() {
    let dir = tempfile::tempdir().unwrap();
    let (code, said) = check(&store_of(dir.path(), &stepped(20)), &[]);
    assert_eq!(code, Some(0), "{said}");
    // The newest point alone: pending, a pass unless --strict.
    let store = store_of(dir.path(), &stepped(21));
    let (code, said) = check(&store, &[]);
    assert_eq!(code, Some(0), "{said}");
    assert!(said.contains("pending"), "{said}");
    assert!(said.contains("one more point"), "{said}");
    let (code, _) = check(&store, &["--strict"]);
    assert_eq!(code, Some(4));
    // Two points after it: a regression, named by commit.
    let store = store_of(dir.path(), &stepped(22));
    let (code, said) = check(&store, &[]);
    assert_eq!(code, Some(3), "{said}");
    assert!(
        said.contains("history check: 1 regression: `app` wall_ns +3.00% from c20 beyond +1%"),
        "{said}"
    );
    // Within its limit, or for another figure: a pass.
    assert_eq!(
        check(&store, &["--fail-on", "wall=5%"]).0,
        Some(3),
        "the first rule that matches wins"
    );
    let out = tally()
        .args(["history", "check", &store, "--fail-on", "wall=5%"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    let out = tally()
        .args(["history", "check", &store, "--fail-on", "cpu=1%"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    // Older than --within: history, not news.
    let store = store_of(dir.path(), &stepped(40));
    assert_eq!(check(&store, &[]).0, Some(0));
    assert_eq!(check(&store, &["--within", "25"]).0, Some(3));
    // An improvement passes.
    let better: Vec<f64> = stepped(25).iter().map(|v| 2_060_000.0 - v).collect();
    let (code, said) = check(&store_of(dir.path(), &better), &[]);
    assert_eq!(code, Some(0), "{said}");
}

#[test]
fn check_markdown_has_compares_gate_shape() {
    let dir = tempfile::tempdir().unwrap();
    let store = store_of(dir.path(), &stepped(23));
    let md = dir.path().join("summary.md");
    let out = tally()
        .args([
            "history",
            "check",
            &store,
            "--fail-on",
            "wall=1%",
            "--export",
        ])
        .arg(format!("markdown={}", md.display()))
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(3), "{}", text(&out));
    let md = std::fs::read_to_string(md).unwrap();
    let lines: Vec<&str> = md.lines().collect();
    assert!(lines[0].starts_with("**tally history check: 1 regression**: `app` wall\\_ns +3.00% from c20 beyond +1%, p\\<0.001"), "{md}");
    assert!(md.contains("#### `app` on "), "{md}");
    assert!(
        md.contains("| figure | before | now | change | commits | verdict |"),
        "{md}"
    );
    assert!(
        md.contains(
            "| wall_ns | 1.000ms | 1.030ms | +3.00% | c19 → c20 | **regression** (> +1%, p<0.001) |"
        ),
        "{md}"
    );
    assert!(md.trim_end().ends_with("</sub>"), "{md}");
}

#[test]
fn every_format_renders_and_prometheus_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let store = store_of(dir.path(), &stepped(30));
    for (format, want) in [
        ("human", "1 series, 30 values of 30 points"),
        (
            "csv",
            "command,figure,unit,tool,machine,index,commit,dirty,branch,recorded_at,median,mad,n,outlier,change_point,change",
        ),
        (
            "markdown",
            "| command | figure | machine | last before | first after | before | after | change | p |",
        ),
        ("html", "<svg"),
        ("json", "\"change_points\""),
    ] {
        let out = tally()
            .args(["history", &store, "--format", format])
            .output()
            .unwrap();
        assert!(out.status.success(), "{format}: {}", text(&out));
        assert!(text(&out).contains(want), "{format}: {}", text(&out));
    }
    let csv_out = tally()
        .args(["history", &store, "--format", "csv"])
        .output()
        .unwrap();
    let rows = String::from_utf8_lossy(&csv_out.stdout).lines().count();
    assert_eq!(rows, 31, "a row per point and the header");
    let out = tally()
        .args(["history", &store, "--format", "prometheus"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2), "{}", text(&out));
}

#[test]
fn the_page_draws_each_point_with_its_commit_the_bands_and_the_changes() {
    let dir = tempfile::tempdir().unwrap();
    for n in [5usize, 5000] {
        let mut x = level(n, 0.01, 3);
        let at = n * 3 / 5;
        for v in &mut x[at..] {
            *v *= 1.1;
        }
        if n > 100 {
            x[100] *= 1.6;
        }
        let store = store_of(dir.path(), &x);
        let page = dir.path().join("h.html");
        let out = tally()
            .args(["history", &store, "--html"])
            .arg(&page)
            .output()
            .unwrap();
        assert!(out.status.success(), "{}", text(&out));
        let html = std::fs::read_to_string(&page).unwrap();
        assert_eq!(
            html.matches("<circle class=\"point\"").count()
                + html.matches("<circle class=\"outlier\"").count(),
            n
        );
        assert!(
            html.contains("<title>#1 c0 2026-11-01T00:00:00Z: "),
            "the commit under the pointer"
        );
        assert!(
            html.contains("point, in the order recorded"),
            "x axis title"
        );
        assert!(html.contains("wall_ns (ms)"), "y axis title with its unit");
        assert!(html.contains("class=\"band\""));
        if n > 100 {
            let planted = html
                .split("<circle class=\"outlier\"")
                .skip(1)
                .any(|c| c.contains("<title>#101 c100 "));
            assert!(planted, "the outlier planted at 100 is drawn hollow");
            assert!(html.contains("class=\"change\""));
            assert!(
                html.contains(">+10.0%<") || html.contains(">+9.9"),
                "the change's size by its line"
            );
        }
    }
}

#[test]
fn bad_usage_is_refused_before_the_store_is_read() {
    let dir = tempfile::tempdir().unwrap();
    let store = dir.path().join("none.db").display().to_string();
    for (args, want) in [
        (
            vec!["history", &store, "--since", "last tuesday"],
            "--since last tuesday: not a date",
        ),
        (
            vec!["history", &store, "--max-pvalue", "2"],
            "is not a p-value",
        ),
        (
            vec!["history", "check", &store, "--fail-on", "wall"],
            "is not FIGURE=PCT",
        ),
        (
            vec!["history", "postgres://h/db?sslmode=sometimes"],
            "sslmode sometimes is not one of",
        ),
        (
            vec!["history", &store, "--window", "1"],
            "1 is not in 4..=1000",
        ),
        (vec!["history"], "STORE"),
    ] {
        let out = tally().args(&args).output().unwrap();
        assert_eq!(out.status.code(), Some(2), "{args:?}: {}", text(&out));
        assert!(text(&out).contains(want), "{args:?}: {}", text(&out));
    }
    assert!(!Path::new(&store).exists(), "reading made no store");
    let out = tally().args(["history", &store]).output().unwrap();
    assert_eq!(out.status.code(), Some(1));
    assert!(
        text(&out).contains("there is none: record one first (--record"),
        "{}",
        text(&out)
    );
    assert!(!Path::new(&store).exists(), "reading made no store");
}

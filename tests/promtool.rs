//! Every command's `--format prometheus` passes `promtool check metrics`:
//! base units in the names (`_seconds`, `_bytes`, `_bytes_per_second`),
//! HELP and TYPE for every family, no lint problem. Skips, saying why,
//! where promtool is not installed (.ci/run installs it).

mod common;

use std::path::{Path, PathBuf};

/// promtool, or `None` (the test's skip recorded) when it is missing.
fn promtool() -> Option<PathBuf> {
    let found = std::env::var_os("PATH").and_then(|paths| {
        std::env::split_paths(&paths)
            .map(|d| d.join("promtool"))
            .find(|p| p.is_file())
    });
    if found.is_none() {
        common::record_unable(common::Unable::tool(
            "promtool",
            "tests/install-prometheus.sh installs it",
        ));
    }
    found
}

/// Runs `promtool check metrics` on `text`; fails the test on a non-zero
/// exit or on any problem it prints.
fn check(promtool: &Path, what: &str, text: &str) {
    assert!(
        text.contains("# TYPE "),
        "{what}: no metric families in\n{text}"
    );
    let (status, problems) = common::promtool_check_metrics(promtool, text);
    assert!(
        status.success() && problems.trim().is_empty(),
        "{what}: promtool check metrics ({status}) says:\n{problems}\non:\n{text}"
    );
}

/// The report `tally ARGS --format prometheus` writes to stdout.
fn metrics(args: &[&str]) -> String {
    let out = common::tally()
        .args(args)
        .args(["--format", "prometheus"])
        .assert()
        .success()
        .get_output()
        .stdout
        .clone();
    String::from_utf8(out).expect("metrics are UTF-8")
}

fn fixture(name: &str) -> String {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/proc")
        .join(name)
        .to_string_lossy()
        .into_owned()
}

/// `tally run` writes its report to stderr by default; `-o` puts it in a
/// file.
fn run_metrics(extra: &[&str]) -> String {
    let dir = tempfile::tempdir().expect("temp dir");
    let file = dir.path().join("run.prom");
    let mut cmd = common::tally();
    cmd.arg("run")
        .args(extra)
        .args(["--format", "prometheus", "-o"])
        .arg(&file)
        .args(["--", "true"])
        .assert()
        .success();
    std::fs::read_to_string(&file).expect("run report written")
}

#[test]
fn run_metrics_pass_promtool() {
    let Some(p) = promtool() else { return };
    check(&p, "tally run", &run_metrics(&[]));
    check(&p, "tally run -n 3", &run_metrics(&["-n", "3"]));
}

#[test]
fn mem_metrics_pass_promtool() {
    let Some(p) = promtool() else { return };
    check(&p, "tally mem", &metrics(&["mem"]));
    for tree in ["typical", "odd", "names"] {
        let procfs = fixture(tree);
        for by in [&[][..], &["--by", "pid"], &["--by", "user"]] {
            let mut args = vec!["mem", "--procfs", procfs.as_str()];
            args.extend_from_slice(by);
            check(&p, &args.join(" "), &metrics(&args));
        }
    }
}

#[test]
fn mem_rss_bytes_has_its_total_like_every_row_family() {
    let text = metrics(&["mem", "--procfs", &fixture("typical")]);
    let families: Vec<&str> = text
        .lines()
        .filter_map(|l| l.strip_prefix("# TYPE "))
        .filter_map(|l| l.split_whitespace().next())
        .collect();
    let rows: Vec<&str> = families
        .iter()
        .filter(|f| !f.starts_with("tally_mem_total_") && **f != "tally_mem_skipped_processes")
        .copied()
        .collect();
    assert!(rows.contains(&"tally_mem_rss_bytes"), "{families:?}");
    for row in rows {
        let total = row.replacen("tally_mem_", "tally_mem_total_", 1);
        assert!(
            families.contains(&total.as_str()),
            "{row} has no {total}: {families:?}"
        );
    }
}

#[test]
fn bench_metrics_in_base_units_pass_promtool() {
    let Some(p) = promtool() else { return };
    let dir = tempfile::tempdir().expect("temp dir");
    let dir = dir.path().to_string_lossy().into_owned();
    check(
        &p,
        "tally bench --quick",
        &metrics(&[
            "bench",
            "--quick",
            "--budget-ms",
            "2",
            "--max-mem",
            "1M",
            "--dir",
            &dir,
        ]),
    );
}

#[test]
fn cache_metrics_pass_promtool() {
    let Some(p) = promtool() else { return };
    let dir = tempfile::tempdir().expect("temp dir");
    let file = dir.path().join("a \"quoted\"\\name");
    std::fs::write(&file, vec![7u8; 3 * 4096]).expect("file written");
    let file = file.to_string_lossy().into_owned();
    check(&p, "tally cache", &metrics(&["cache", &file]));
    check(
        &p,
        "tally cache -r",
        &metrics(&["cache", "-r", &dir.path().to_string_lossy()]),
    );
}

#[test]
fn compare_metrics_pass_promtool() {
    let Some(p) = promtool() else { return };
    check(
        &p,
        "tally compare",
        &metrics(&[
            "compare",
            "-N",
            "-n",
            "3",
            "/bin/true",
            "/bin/echo \"quoted\"",
        ]),
    );
}

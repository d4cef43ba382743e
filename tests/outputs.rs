//! CLI tests of the output options shared by every command: `-o -`,
//! `--export FORMAT=FILE`, the JSON header, man pages and completions.

mod common;

use std::path::Path;

use serde_json::Value;

/// A scratch directory under the target dir, removed when dropped.
fn scratch(name: &str) -> tempfile::TempDir {
    tempfile::Builder::new()
        .prefix(&format!("outputs-{name}-"))
        .tempdir_in(env!("CARGO_TARGET_TMPDIR"))
        .expect("create scratch dir")
}

fn entries(dir: &Path) -> Vec<String> {
    let mut v: Vec<String> = std::fs::read_dir(dir)
        .expect("read dir")
        .map(|e| e.expect("entry").file_name().to_string_lossy().into_owned())
        .collect();
    v.sort();
    v
}

/// `tally run -o -` wrote its report to a file named `-` in the current
/// directory; `-` is stdout, as everywhere else.
#[test]
fn run_output_dash_created_a_file_named_dash() {
    let dir = scratch("run-dash");
    let out = common::tally()
        .current_dir(dir.path())
        .args(["run", "--format", "json", "-o", "-", "--", "true"])
        .output()
        .expect("tally runs");
    assert_eq!(out.status.code(), Some(0), "{out:?}");
    let report: Value = serde_json::from_slice(&out.stdout).expect("JSON on stdout");
    assert_eq!(report["runs"][0]["exit"]["code"], 0, "{report}");
    assert!(
        !String::from_utf8_lossy(&out.stderr).contains("\"schema_version\""),
        "the report went to stderr too"
    );
    assert_eq!(entries(dir.path()), Vec::<String>::new(), "no file named -");
}

/// The clap path (an `=` form the fast scanner leaves to clap) reads `-`
/// the same way.
#[test]
fn run_output_dash_through_clap_is_stdout() {
    let dir = scratch("run-dash-clap");
    let out = common::tally()
        .current_dir(dir.path())
        .args(["run", "--output=-", "--format=csv", "--", "true"])
        .output()
        .expect("tally runs");
    assert_eq!(out.status.code(), Some(0), "{out:?}");
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.lines().count() >= 2, "CSV on stdout: {text:?}");
    assert_eq!(entries(dir.path()), Vec::<String>::new(), "no file named -");
}

//! The rules the test suite holds itself to, checked on its own sources
//! and on the dependency graph:
//! - every process a test starts goes through `common::command` (the
//!   default signal dispositions, whatever the runner inherited);
//! - a test that cannot run here says so through `common::skip!` and its
//!   kin, which the summary counts, never by printing and returning;
//! - the minimum Rust version stated in Cargo.toml and the README is at
//!   least that of every dependency the build and the tests use.

mod common;

use std::path::PathBuf;

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// The test sources, but the helpers that implement the rules.
fn test_sources() -> Vec<(PathBuf, String)> {
    let dir = root().join("tests");
    let mut files: Vec<(PathBuf, String)> = std::fs::read_dir(&dir)
        .expect("tests/")
        .filter_map(Result::ok)
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|e| e == "rs"))
        .filter(|p| !p.ends_with("suite_rules.rs"))
        .map(|p| {
            let text = std::fs::read_to_string(&p).expect("read a test source");
            (p, text)
        })
        .collect();
    files.sort();
    assert!(files.len() > 10, "found only {} test files", files.len());
    files
}

fn offending_lines(patterns: &[&str]) -> Vec<String> {
    let mut found = Vec::new();
    for (path, text) in test_sources() {
        for (n, line) in text.lines().enumerate() {
            if patterns.iter().any(|p| line.contains(p)) {
                let name = path.file_name().unwrap_or_default().to_string_lossy();
                found.push(format!("tests/{name}:{}: {}", n + 1, line.trim()));
            }
        }
    }
    found
}

#[test]
fn every_process_the_tests_start_goes_through_the_helper() {
    let found = offending_lines(&[
        "Command::new(",
        "Cmd::new(",
        "cargo_bin(",
        "tally_default_signals",
    ]);
    assert!(
        found.is_empty(),
        "start processes with common::command / common::tally (they restore the \
         default signal dispositions):\n{}",
        found.join("\n")
    );
    // The helper itself is the one place that makes a Command.
    let common = std::fs::read_to_string(root().join("tests/common/mod.rs")).expect("common");
    assert_eq!(common.matches("Command::new(").count(), 1);
    assert!(common.contains("start_with_default_signals"));
}

#[test]
fn no_test_skips_by_printing_and_returning() {
    let found = offending_lines(&[
        "println!(\"skipped",
        "eprintln!(\"skipped",
        "part skipped",
        "println!(\"not root",
        "eprintln!(\"not root",
    ]);
    assert!(
        found.is_empty(),
        "a skip is a result: use common::skip!, skip_part!, skip_without_tool! or require!:\n{}",
        found.join("\n")
    );
}

/// `1.89` or `1.89.0` as (major, minor).
fn version(text: &str) -> Option<(u32, u32)> {
    let mut parts = text.trim().split('.');
    let major = parts.next()?.parse().ok()?;
    let minor = parts.next().unwrap_or("0").parse().ok()?;
    Some((major, minor))
}

#[test]
fn rust_version_is_at_least_every_dependencys() {
    let cargo = std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into());
    let out = common::command(cargo)
        .current_dir(root())
        .args([
            "metadata",
            "--format-version",
            "1",
            "--locked",
            "--offline",
            "--filter-platform",
            "x86_64-unknown-linux-musl",
        ])
        .output()
        .expect("cargo metadata runs");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let meta: serde_json::Value = serde_json::from_slice(&out.stdout).expect("metadata JSON");
    let packages = meta["packages"].as_array().expect("packages");
    // Only what the build and the tests resolve to (every kind: normal,
    // build and dev dependencies).
    let used: Vec<&str> = meta["resolve"]["nodes"]
        .as_array()
        .expect("resolve nodes")
        .iter()
        .filter_map(|n| n["id"].as_str())
        .collect();
    let ours = packages
        .iter()
        .find(|p| p["name"] == "tally")
        .expect("the tally package");
    let stated = version(ours["rust_version"].as_str().expect("rust-version is set"))
        .expect("rust-version parses");
    let mut needed: Vec<((u32, u32), String)> = packages
        .iter()
        .filter(|p| p["name"] != "tally")
        .filter(|p| p["id"].as_str().is_some_and(|id| used.contains(&id)))
        .filter_map(|p| {
            let v = version(p["rust_version"].as_str()?)?;
            Some((v, format!("{} {}", p["name"], p["version"])))
        })
        .collect();
    needed.sort();
    let (highest, by) = needed.last().cloned().expect("some dependency states one");
    assert!(
        stated >= highest,
        "Cargo.toml says rust-version {}.{}, but {by} needs {}.{}: raise it (and the README's)",
        stated.0,
        stated.1,
        highest.0,
        highest.1
    );
    // The README states the same minimum.
    let readme = std::fs::read_to_string(root().join("README.md")).expect("README");
    let said = format!("Rust toolchain ({}.{} or newer", stated.0, stated.1);
    assert!(
        readme.contains(&said),
        "the README does not say {said:?} (Cargo.toml's rust-version)"
    );
}

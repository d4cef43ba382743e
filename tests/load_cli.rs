//! `tally load`: every method loads the same bytes, cold and warm.

mod common;

use std::io::Write;
use std::process::Command;

use serde_json::Value;

fn tally() -> Command {
    Command::new(common::tally_bin())
}

fn sample_file(dir: &std::path::Path) -> std::path::PathBuf {
    let path = dir.join("weights.bin");
    let mut f = std::fs::File::create(&path).expect("create");
    let mut x = 0x1234_5678_9abc_def0u64;
    let data: Vec<u8> = (0..(3 << 20) + 777)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x as u8
        })
        .collect();
    f.write_all(&data).expect("write");
    f.sync_all().expect("sync");
    path
}

#[test]
fn checksums_agree_across_methods_cold_and_warm() {
    let dir = tempfile::tempdir().expect("tempdir");
    let file = sample_file(dir.path());
    let html = dir.path().join("plot.html");
    // tmpfs cannot evict: its page cache is the file.
    let tmpfs = Command::new("stat")
        .args(["-f", "-c", "%T"])
        .arg(dir.path())
        .output()
        .map(|o| String::from_utf8_lossy(&o.stdout).trim() == "tmpfs")
        .unwrap_or(false);
    let out = tally()
        .args(["load", "--format", "json", "--html"])
        .arg(&html)
        .arg(&file)
        .output()
        .expect("run");
    let v: Value = serde_json::from_slice(&out.stdout).unwrap_or_else(|e| {
        panic!("{e}: {}", String::from_utf8_lossy(&out.stderr));
    });
    assert_eq!(out.status.code(), Some(0), "{v}");
    assert_eq!(v["schema_version"], 1);
    assert_eq!(v["checksums_agree"], true);
    let results = v["results"].as_array().expect("results");
    assert_eq!(results.len(), 22, "11 methods, cold and warm");
    let mut sums = Vec::new();
    let mut worked = 0;
    for r in results {
        if !r["error"].is_null() {
            // O_DIRECT or io_uring can be missing; it must say why.
            assert!(r["error"].as_str().is_some_and(|e| !e.is_empty()));
            continue;
        }
        worked += 1;
        assert_eq!(r["runs"], 1);
        assert_eq!(r["bytes_loaded"], (3 << 20) + 777, "{r}");
        let s = r["checksums"].as_array().expect("checksums");
        assert_eq!(s.len(), 1, "{r}");
        sums.push(s[0].clone());
        assert!(r["wall_us"].as_u64().is_some());
        assert!(r["max_rss_bytes"].as_u64().is_some_and(|b| b > 0));
        if r["mode"] == "cold" && !tmpfs {
            assert_eq!(r["cached_before_bytes"], 0, "eviction verified: {r}");
        }
    }
    assert!(worked >= 16, "most methods work: {worked}");
    sums.dedup();
    assert_eq!(sums.len(), 1, "one checksum for all: {sums:?}");
    let plot = std::fs::read_to_string(&html).expect("html");
    assert!(plot.contains("<svg") && plot.contains("mmap-populate"));
}

#[test]
fn touch_none_has_no_checksum_and_lists_pick_methods() {
    let dir = tempfile::tempdir().expect("tempdir");
    let file = sample_file(dir.path());
    let out = tally()
        .args([
            "load",
            "--warm",
            "--touch",
            "none",
            "--methods",
            "read,mmap",
            "-n",
            "2",
            "--format",
            "csv",
        ])
        .arg(&file)
        .output()
        .expect("run");
    assert_eq!(out.status.code(), Some(0));
    let text = String::from_utf8_lossy(&out.stdout);
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(lines.len(), 3, "{text}");
    assert!(lines[1].starts_with("warm,read,2,"), "{text}");
    assert!(lines[2].starts_with("warm,mmap,2,"), "{text}");
}

#[test]
fn bad_input_is_explained() {
    let out = tally()
        .args(["load", "/nonexistent/file"])
        .output()
        .expect("run");
    assert_eq!(out.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&out.stderr).contains("/nonexistent/file"));
    let out = tally()
        .args(["load", "--cold", "--warm", "x"])
        .output()
        .expect("run");
    assert_eq!(out.status.code(), Some(2));
    let out = tally()
        .args(["load", "--methods", "telepathy", "x"])
        .output()
        .expect("run");
    assert_eq!(out.status.code(), Some(2));
}

#[test]
fn formats_without_a_form_are_refused_before_any_work() {
    let dir = tempfile::tempdir().expect("tempdir");
    let file = sample_file(dir.path());
    let out = tally()
        .args(["load", "--format", "prometheus"])
        .arg(&file)
        .output()
        .expect("run");
    assert_eq!(out.status.code(), Some(2));
    let dst = dir.path().join("copy");
    let out = tally()
        .args(["cp", "--format", "prometheus"])
        .arg(&file)
        .arg(&dst)
        .output()
        .expect("run");
    assert_eq!(out.status.code(), Some(2));
    assert!(!dst.exists(), "nothing copied");
}

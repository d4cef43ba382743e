//! `tally load`: every method loads the same bytes, cold and warm.

mod common;

use std::ffi::OsStr;
use std::io::Write;
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::Value;

fn tally() -> Command {
    common::tally_std()
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
    let tmpfs = common::command("stat")
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
    assert_eq!(v["schema_version"], 2);
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

fn meminfo_bytes(key: &str) -> Option<u64> {
    let text = std::fs::read_to_string("/proc/meminfo").ok()?;
    let line = text.lines().find(|l| l.starts_with(key))?;
    let kib: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kib * 1024)
}

fn sparse_file(dir: &Path, name: &str, size: u64) -> PathBuf {
    let path = dir.join(name);
    std::fs::File::create(&path)
        .and_then(|f| f.set_len(size))
        .expect("sparse file");
    path
}

#[test]
fn load_read_of_a_file_larger_than_memory_says_why_instead_of_sigabrt() {
    // An address-space limit keeps a broken build from really trying to
    // fill the machine's memory.
    common::require!(common::tool("prlimit", "util-linux"));
    let dir = tempfile::tempdir().expect("tempdir");
    let total = meminfo_bytes("MemTotal:").expect("MemTotal");
    let huge = sparse_file(dir.path(), "huge.sparse", (64u64 << 30).max(2 * total));
    let two = sparse_file(dir.path(), "two.sparse", 2 << 30);
    for (file, limit, why) in [
        // Larger than the memory available: refused before allocating.
        (&huge, 4u64 << 30, "larger than the memory available"),
        // Fits in memory, but the allocation fails (here: ulimit -v).
        (&two, 1 << 30, "the allocation failed"),
    ] {
        let out = common::command("prlimit")
            .arg(format!("--as={limit}"))
            .arg(common::tally_bin())
            .args(["load", "--methods", "read", "--warm", "--format", "json"])
            .arg(file)
            .output()
            .expect("prlimit");
        let v: Value = serde_json::from_slice(&out.stdout).unwrap_or_else(|e| {
            panic!("{e}: {}", String::from_utf8_lossy(&out.stderr));
        });
        assert_eq!(out.status.code(), Some(1), "no method worked: {v}");
        let error = v["results"][0]["error"].as_str().unwrap_or("");
        assert!(!error.contains("SIGABRT"), "{error}");
        assert!(
            error.contains("cannot allocate 2.0 GiB") || file == &huge,
            "{error}"
        );
        assert!(error.contains("for read()"), "{error}");
        assert!(error.contains(why), "{error}");
        assert!(error.contains("use mmap or read-chunks"), "{error}");
        assert!(v["checksums_agree"].is_null(), "nothing compared: {v}");
    }
    let out = common::command("prlimit")
        .arg(format!("--as={}", 4u64 << 30))
        .arg(common::tally_bin())
        .args(["load", "--methods", "read", "--warm"])
        .arg(&huge)
        .output()
        .expect("prlimit");
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        text.contains("no checksum taken: no load finished"),
        "{text}"
    );
    assert!(!text.contains("agree"), "{text}");
}

#[test]
fn load_claims_no_checksum_agreement_when_none_was_taken() {
    let dir = tempfile::tempdir().expect("tempdir");
    let file = sample_file(dir.path());
    let args = [
        "load",
        "--warm",
        "--touch",
        "none",
        "--methods",
        "read,mmap",
    ];
    let out = tally().args(args).arg(&file).output().expect("run");
    assert_eq!(out.status.code(), Some(0));
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(!text.contains("agree"), "{text}");
    assert!(text.contains("no checksum taken (--touch none)"), "{text}");
    let out = tally()
        .args(args)
        .args(["--format", "json"])
        .arg(&file)
        .output()
        .expect("run");
    let v: Value = serde_json::from_slice(&out.stdout).expect("json");
    assert!(v["checksums_agree"].is_null(), "{v}");
    // With checksums, they are compared and said to agree.
    let out = tally()
        .args(["load", "--warm", "--methods", "read,mmap"])
        .arg(&file)
        .output()
        .expect("run");
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("checksums agree (2 loads)"), "{text}");
}

#[test]
fn load_json_keeps_a_non_utf8_file_name_whole() {
    let dir = tempfile::tempdir().expect("tempdir");
    let plain = sample_file(dir.path());
    let file = dir.path().join(OsStr::from_bytes(b"w\xe9\x1b[31m.bin"));
    std::fs::rename(&plain, &file).expect("rename");
    let out = tally()
        .args(["load", "--warm", "--methods", "read", "--format", "json"])
        .arg(&file)
        .output()
        .expect("run");
    let v: Value = serde_json::from_slice(&out.stdout).unwrap_or_else(|e| {
        panic!("not JSON ({e}): {}", String::from_utf8_lossy(&out.stdout));
    });
    assert_eq!(out.status.code(), Some(0));
    let hex: String = common::hex_of(&file);
    assert_eq!(v["file"]["bytes_hex"], hex, "{v}");
    assert_eq!(v["results"][0]["bytes_loaded"], (3 << 20) + 777);
    // Human text escapes it.
    let out = tally()
        .args(["load", "--warm", "--methods", "read"])
        .arg(&file)
        .output()
        .expect("run");
    assert!(!out.stdout.contains(&0x1b));
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("w\\xe9\\x1b[31m.bin"), "{text}");
}

#[test]
fn load_keeps_its_exit_codes_when_stderr_is_unwritable() {
    let dir = tempfile::tempdir().expect("tempdir");
    let file = sample_file(dir.path());
    let missing = dir.path().join("missing");
    let full = || std::fs::OpenOptions::new().write(true).open("/dev/full");
    if full().is_ok() {
        let out = tally()
            .arg("load")
            .arg(&missing)
            .stderr(full().expect("full"))
            .output()
            .expect("run");
        assert_eq!(out.status.code(), Some(1), "missing file, 2>/dev/full");
        let out = tally()
            .args(["load", "--methods", "telepathy"])
            .arg(&file)
            .stderr(full().expect("full"))
            .output()
            .expect("run");
        assert_eq!(out.status.code(), Some(2), "bad usage, 2>/dev/full");
        let out = tally()
            .args(["load", "--warm", "--methods", "read,mmap"])
            .arg(&file)
            .stderr(full().expect("full"))
            .output()
            .expect("run");
        assert_eq!(out.status.code(), Some(0), "success, 2>/dev/full");
        assert!(String::from_utf8_lossy(&out.stdout).contains("checksums agree"));
    } else {
        common::skip_part!("the /dev/full part: no /dev/full");
    }
    let mut child = tally()
        .arg("load")
        .arg(&missing)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn");
    drop(child.stderr.take());
    let out = child.wait_with_output().expect("wait");
    assert_eq!(out.status.code(), Some(1), "stderr a closed pipe");
}

#[test]
fn load_interrupted_stops_reaps_its_load_and_starts_no_other() {
    for (name, number) in [("INT", 2u32), ("TERM", 15)] {
        let dir = tempfile::tempdir().expect("tempdir");
        let scratch = dir.path().join("tmp");
        std::fs::create_dir(&scratch).expect("mkdir");
        let file = sample_file(dir.path());
        // Far more loads than the test waits for.
        let child = common::tally_std()
            .args(["load", "-n", "1000", "--methods", "read-chunks,mmap"])
            .arg(&file)
            .env("TMPDIR", &scratch)
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("spawn");
        let pid = child.id();
        let children = format!("/proc/{pid}/task/{pid}/children");
        let start = Instant::now();
        let load = loop {
            let list = std::fs::read_to_string(&children).unwrap_or_default();
            if let Some(first) = list.split_whitespace().next() {
                break first.to_owned();
            }
            assert!(start.elapsed() < Duration::from_secs(60), "no load started");
            std::thread::sleep(Duration::from_millis(5));
        };
        common::command("kill")
            .arg(format!("-{name}"))
            .arg(pid.to_string())
            .status()
            .expect("kill");
        let out = common::wait_or_kill(child, Duration::from_secs(60));
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(128 + number as i32), "{err}");
        assert!(err.contains(&format!("interrupted by SIG{name}")), "{err}");
        // The load tally ran is gone (reaped, not orphaned), and so is the
        // directory its result went to.
        let cmdline = std::fs::read(format!("/proc/{load}/cmdline")).unwrap_or_default();
        let cmdline = String::from_utf8_lossy(&cmdline);
        assert!(
            !cmdline.contains("--child"),
            "load {load} outlived tally: {cmdline}"
        );
        let left: Vec<_> = std::fs::read_dir(&scratch).expect("ls").collect();
        assert!(left.is_empty(), "left behind: {left:?}");
    }
}

/// tally killed outright (SIGKILL: no handler runs) must not leave its
/// load running: the child is started with PR_SET_PDEATHSIG. The load is
/// stopped first (after its exec), so it cannot end by finishing its work:
/// only the death signal can end it.
#[test]
fn killing_tally_load_kills_its_running_load() {
    let dir = tempfile::tempdir().expect("tempdir");
    let file = sample_file(dir.path());
    let mut child = tally()
        .args(["load", "-n", "1000", "--methods", "read-chunks,mmap"])
        .arg(&file)
        .env("TMPDIR", dir.path())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("spawn");
    let pid = child.id();
    let children = format!("/proc/{pid}/task/{pid}/children");
    let is_load = |load: &str| {
        let cmdline = std::fs::read(format!("/proc/{load}/cmdline")).unwrap_or_default();
        String::from_utf8_lossy(&cmdline).contains("--child")
    };
    let start = Instant::now();
    let load = loop {
        let list = std::fs::read_to_string(&children).unwrap_or_default();
        if let Some(first) = list.split_whitespace().next() {
            let first = first.to_owned();
            let stopped = common::command("kill").args(["-STOP", &first]).status();
            if is_load(&first) && stopped.is_ok_and(|s| s.success()) {
                break first;
            }
            let _ = common::command("kill").args(["-CONT", &first]).status();
        }
        assert!(start.elapsed() < Duration::from_secs(60), "no load started");
        std::thread::sleep(Duration::from_millis(2));
    };
    child.kill().expect("SIGKILL tally");
    child.wait().expect("reap tally");
    let start = Instant::now();
    while is_load(&load) {
        if start.elapsed() > Duration::from_secs(10) {
            let _ = common::command("kill").args(["-KILL", &load]).status();
            panic!("load {load} outlived a killed tally");
        }
        std::thread::sleep(Duration::from_millis(10));
    }
}

#[test]
fn load_format_html_is_the_page_and_prometheus_is_refused_by_name() {
    let dir = tempfile::tempdir().expect("tempdir");
    let file = sample_file(dir.path());
    let page = dir.path().join("page.html");
    let out = tally()
        .args([
            "load",
            "--warm",
            "--methods",
            "read,mmap",
            "--format",
            "html",
        ])
        .arg("--export")
        .arg(format!("html={}", page.display()))
        .arg(&file)
        .output()
        .expect("run");
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let stdout = String::from_utf8(out.stdout).expect("utf-8");
    assert!(stdout.starts_with("<!DOCTYPE html>"), "{stdout}");
    // One bar per method of the one mode, on stdout and in the export.
    assert_eq!(stdout.matches("class=\"bar\"").count(), 2, "{stdout}");
    let exported = std::fs::read_to_string(&page).expect("export");
    assert_eq!(exported.matches("class=\"bar\"").count(), 2);
    let out = tally()
        .args(["load", "--export"])
        .arg(format!(
            "prometheus={}",
            dir.path().join("m.prom").display()
        ))
        .arg(&file)
        .output()
        .expect("run");
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("no prometheus report") && err.contains("html"),
        "{err}"
    );
    assert!(
        !dir.path().join("m.prom").exists(),
        "no file for a refused export"
    );
}

#[test]
fn a_method_named_twice_is_loaded_once() {
    let dir = tempfile::tempdir().expect("tempdir");
    let file = sample_file(dir.path());
    let out = tally()
        .args([
            "load",
            "--warm",
            "-n",
            "1",
            "--methods",
            "read,mmap,read",
            "--format",
            "json",
        ])
        .arg(&file)
        .output()
        .expect("run");
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let v: Value = serde_json::from_slice(&out.stdout).expect("json");
    let methods: Vec<&str> = v["results"]
        .as_array()
        .expect("results")
        .iter()
        .map(|r| r["method"].as_str().expect("method"))
        .collect();
    assert_eq!(methods, ["read", "mmap"]);
}

#[test]
fn runs_with_procs_is_refused_and_an_html_path_error_names_html() {
    let dir = tempfile::tempdir().expect("tempdir");
    let file = sample_file(dir.path());
    // -n repeats a load; --procs loads once per method, mode and N: the two
    // together are refused instead of -n being ignored.
    for extra in [
        &["--procs", "2"][..],
        &["--procs-sweep"],
        &["--mem-limit", "1G"],
    ] {
        let out = tally()
            .args(["load", "-n", "3"])
            .args(extra)
            .arg(&file)
            .output()
            .expect("run");
        assert_eq!(out.status.code(), Some(2), "{extra:?}");
        assert!(
            String::from_utf8_lossy(&out.stderr).contains("cannot be used with"),
            "{extra:?}"
        );
    }
    // An --html path that cannot be created is named as --html's.
    let out = tally()
        .args(["load", "--warm", "--methods", "read", "--html"])
        .arg(dir.path().join("no/such/dir/page.html"))
        .arg(&file)
        .output()
        .expect("run");
    assert_eq!(out.status.code(), Some(1));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.starts_with("tally: --html ") && err.contains("page.html: cannot open the directory"),
        "{err}"
    );
}

/// Starts `tally load ARGS FILE` on a 1 GiB sparse file, truncates it to
/// 4 KiB after half a second (during the loads), and returns the exit
/// status and the JSON report.
fn truncated_during(args: &[&str]) -> (Option<i32>, Value) {
    let dir = tempfile::tempdir().expect("tempdir");
    let file = sparse_file(dir.path(), "weights.bin", 1 << 30);
    let child = tally()
        .args(["load", "--format", "json"])
        .args(args)
        .arg(&file)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("tally load");
    std::thread::sleep(Duration::from_millis(500));
    std::fs::OpenOptions::new()
        .write(true)
        .open(&file)
        .and_then(|f| f.set_len(4096))
        .expect("truncate");
    let out = common::wait_or_kill(child, Duration::from_secs(240));
    let v: Value = serde_json::from_slice(&out.stdout).unwrap_or_else(|e| {
        panic!("{e}: {}", String::from_utf8_lossy(&out.stderr));
    });
    (out.status.code(), v)
}

#[test]
fn load_of_a_file_truncated_during_the_loads_is_invalid_not_timed_as_whole() {
    // Truncated from 1 GiB to 4 KiB mid-run, the 4 KiB loads were timed as
    // full ones, "checksums agree", exit 0.
    let (code, v) = truncated_during(&["--methods", "mmap,mmap-populate,read", "--runs", "20"]);
    assert_eq!(code, Some(1), "a changed file fails the command: {v}");
    let changed = v["file_changed"].as_str().expect("file_changed");
    assert_eq!(
        changed,
        "the file changed: its size went from 1.0 GiB to 4.0 KiB (1,073,741,824 to 4,096 bytes)"
    );
    assert_eq!(v["size_bytes"], 1u64 << 30, "the size it started with");
    let results = v["results"].as_array().expect("results");
    let first = results
        .iter()
        .position(|r| !r["invalid"].is_null())
        .expect("an invalid load");
    assert!(
        results[first]["invalid"]
            .as_str()
            .is_some_and(|s| s.starts_with("the file changed")),
        "{}",
        results[first]
    );
    for r in &results[first + 1..] {
        assert_eq!(
            r["invalid"], "not run: the file changed during an earlier load",
            "{r}"
        );
        assert_eq!(r["runs"], 0, "{r}");
    }
    // No load counted in the medians loaded less than the whole file.
    for r in results {
        if let Some(bytes) = r["bytes_loaded"].as_u64() {
            assert_eq!(bytes, 1 << 30, "{r}");
        }
    }
}

#[test]
fn load_procs_of_a_file_truncated_during_the_loads_is_invalid() {
    let (code, v) = truncated_during(&["--procs-sweep", "--both", "--methods", "mmap,read-chunks"]);
    assert_eq!(code, Some(1), "{v}");
    assert!(
        v["file_changed"]
            .as_str()
            .is_some_and(|s| s.contains("to 4.0 KiB")),
        "{v}"
    );
    let runs = v["runs"].as_array().expect("runs");
    let first = runs
        .iter()
        .position(|r| r["outcome"] == "invalid")
        .expect("an invalid load");
    assert!(
        runs[first + 1..].iter().all(|r| r["outcome"] == "invalid"),
        "{v}"
    );
}

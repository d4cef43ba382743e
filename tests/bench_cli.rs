//! CLI tests of `tally bench`: structure, counts and invariants of tiny
//! runs (a few ms per figure), never timings.

mod common;

use std::path::Path;

use assert_cmd::Command;
use predicates::prelude::*;
use serde_json::Value;

fn tally() -> Command {
    common::tally()
}

/// Runs `tally bench ARGS --budget-ms 2 --format json` and parses the report.
fn run_json(args: &[&str], dir: &Path) -> Value {
    let out = tally()
        .arg("bench")
        .args(args)
        .args([
            "--budget-ms",
            "2",
            "--max-mem",
            "1M",
            "--format",
            "json",
            "--dir",
        ])
        .arg(dir)
        .assert()
        .success()
        .get_output()
        .stdout
        .clone();
    serde_json::from_slice(&out).expect("bench JSON parses")
}

fn benchmarks(r: &Value) -> &Vec<Value> {
    r["benchmarks"].as_array().expect("benchmarks array")
}

fn figures<'a>(r: &'a Value, name: &str) -> &'a Vec<Value> {
    benchmarks(r)
        .iter()
        .find(|b| b["name"] == name)
        .unwrap_or_else(|| panic!("benchmark {name} missing"))["figures"]
        .as_array()
        .expect("figures array")
}

const UNIT_KEYS: [&str; 4] = ["ns", "gb_per_s", "mhz", "bytes"];

#[test]
fn list_names_every_benchmark() {
    let out = tally().args(["bench", "--list"]).assert().success();
    let text = String::from_utf8(out.get_output().stdout.clone()).unwrap();
    let names: Vec<&str> = text
        .lines()
        .filter_map(|l| l.split_whitespace().next())
        .collect();
    // The registry decides, in its order: no count to keep in step.
    assert_eq!(names, tally::bench::registry::names());
    assert!(text.contains("heavy"));
}

#[test]
fn help_lists_every_registered_benchmark() {
    let out = tally().args(["bench", "--help"]).assert().success();
    let text = String::from_utf8(out.get_output().stdout.clone()).unwrap();
    let list = text
        .split("Benchmarks:")
        .nth(1)
        .expect("a list of benchmarks after the examples");
    let listed: Vec<&str> = list
        .split(|c: char| !c.is_ascii_lowercase())
        .filter(|w| tally::bench::registry::find(w).is_some())
        .collect();
    let mut names = tally::bench::registry::names();
    // The heavy ones appear twice: in the list and in the note.
    let heavy: Vec<&str> = tally::bench::registry::BENCHMARKS
        .iter()
        .filter(|b| b.heavy)
        .map(|b| b.name)
        .collect();
    names.extend(heavy);
    assert_eq!(listed, names);
}

#[test]
fn unknown_benchmark_is_bad_usage() {
    tally()
        .args(["bench", "nosuch"])
        .assert()
        .code(2)
        .stderr(predicate::str::contains("nosuch"));
}

#[test]
fn quick_and_full_conflict() {
    tally()
        .args(["bench", "--quick", "--full", "--list"])
        .assert()
        .code(2);
}

#[test]
fn bad_sizes_are_bad_usage() {
    tally()
        .args(["bench", "--max-mem", "5X"])
        .assert()
        .code(2)
        .stderr(predicate::str::contains("K, M, G or T"));
    tally().args(["bench", "--max-mem", "0"]).assert().code(2);
}

#[test]
fn quick_run_has_every_benchmark_with_well_formed_figures() {
    let dir = tempfile::tempdir().unwrap();
    let html = dir.path().join("report.html");
    let r = run_json(&["--quick", "--html", html.to_str().unwrap()], dir.path());
    assert_eq!(r["schema_version"], 2);
    assert_eq!(r["mode"], "quick");
    let names: Vec<&str> = benchmarks(&r)
        .iter()
        .map(|b| b["name"].as_str().unwrap())
        .collect();
    // Every registered benchmark but the heavy ones, in registry order.
    let light: Vec<&str> = tally::bench::registry::BENCHMARKS
        .iter()
        .filter(|b| !b.heavy)
        .map(|b| b.name)
        .collect();
    assert_eq!(names, light, "filecache is heavy and stays out of --quick");
    assert!(!names.contains(&"filecache"));
    let mut ids = std::collections::HashSet::new();
    for b in benchmarks(&r) {
        assert!(b["error"].is_null(), "{} failed: {}", b["name"], b["error"]);
        assert_eq!(b["threads_at_start"], 1, "{}", b["name"]);
        let figs = b["figures"].as_array().unwrap();
        assert!(!figs.is_empty(), "{} has no figures", b["name"]);
        for f in figs {
            let id = f["id"].as_str().unwrap();
            assert!(id.starts_with(b["name"].as_str().unwrap()), "{id}");
            assert!(ids.insert(id.to_string()), "duplicate id {id}");
            assert!(!f["definition"].as_str().unwrap().is_empty(), "{id}");
            let units: Vec<&str> = UNIT_KEYS
                .iter()
                .copied()
                .filter(|k| f.get(*k).is_some())
                .collect();
            match (units.as_slice(), f.get("unavailable")) {
                ([unit], None) => {
                    let s = &f[*unit];
                    let count = s["count"].as_u64().unwrap();
                    assert!(count >= 1, "{id}");
                    assert_eq!(f["samples"].as_array().unwrap().len() as u64, count, "{id}");
                    let (min, med, max) = (
                        s["min"].as_f64().unwrap(),
                        s["median"].as_f64().unwrap(),
                        s["max"].as_f64().unwrap(),
                    );
                    assert!(min <= med && med <= max, "{id}");
                    assert!(s["p95"].as_f64().unwrap() <= max, "{id}");
                    let why = &f["implausible"];
                    assert!(why.is_null() || !why.as_str().unwrap().is_empty(), "{id}");
                }
                ([], Some(why)) => assert!(!why.as_str().unwrap().is_empty(), "{id}"),
                other => panic!("{id}: expected one unit key or unavailable, got {other:?}"),
            }
        }
    }
    // Machine and harness descriptions are there.
    assert!(r["machine"]["logical_cpus"].as_u64().unwrap() >= 1);
    assert!(r["harness"]["calibration"]["timer_hz"].as_f64().unwrap() > 0.0);
    assert!(r["noise"]["noisy"].is_boolean());

    // Sweeps: memlat sizes rise from 1 KiB and respect the tiny limit.
    let mem = figures(&r, "memlat");
    for series in ["random_4k", "random_huge", "stride_4k"] {
        let xs: Vec<u64> = mem
            .iter()
            .filter(|f| {
                f["id"]
                    .as_str()
                    .unwrap()
                    .starts_with(&format!("memlat.{series}."))
            })
            .map(|f| f["x"].as_u64().unwrap())
            .collect();
        assert!(xs.len() >= 5, "{series}");
        assert_eq!(xs[0], 1024);
        assert!(xs.windows(2).all(|w| w[0] < w[1]), "{series} not monotone");
        assert!(*xs.last().unwrap() <= 1 << 20);
    }
    let analysis = &benchmarks(&r)
        .iter()
        .find(|b| b["name"] == "memlat")
        .unwrap()["memlat"];
    assert!(analysis["levels"].is_array());
    // call: arguments 0 to 8.
    let args: Vec<u64> = figures(&r, "call")
        .iter()
        .map(|f| f["x"].as_u64().unwrap())
        .collect();
    assert_eq!(args, (0..=8).collect::<Vec<u64>>());
    // events: every API at every count, select refused past FD_SETSIZE only.
    let ev = figures(&r, "events");
    assert_eq!(
        ev.iter()
            .filter(|f| f["id"].as_str().unwrap().starts_with("events.wake."))
            .count(),
        3 * 2
    );
    // ctxswitch keeps its pipe overhead figure and pinned figures.
    let ctx: Vec<&str> = figures(&r, "ctxswitch")
        .iter()
        .map(|f| f["id"].as_str().unwrap())
        .collect();
    assert!(ctx.contains(&"ctxswitch.pipe_overhead"));
    assert!(ctx.contains(&"ctxswitch.process_pipe.pinned"));
    assert!(ctx.contains(&"ctxswitch.thread_futex.pinned"));

    // The HTML page: self-contained, balanced SVG, one plot per kind.
    let page = std::fs::read_to_string(&html).unwrap();
    assert!(page.starts_with("<!DOCTYPE html>"));
    assert!(page.trim_end().ends_with("</html>"));
    assert!(!page.contains("<script"), "no scripts");
    assert!(!page.contains("NaN"));
    let opened = page.matches("<svg").count();
    // The only URLs are the SVG namespace: nothing is fetched.
    assert_eq!(
        page.matches("http").count(),
        opened,
        "no external resources"
    );
    assert_eq!(opened, page.matches("</svg>").count());
    // One SVG per plot the benchmarks that ran declare in their `BENCH`
    // (memlat, fileread, events ×2 lines; spawn, ctxswitch, syscall, membw bars).
    let declared: usize = r["benchmarks"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|b| tally::bench::registry::find(b["name"].as_str().unwrap()))
        .map(|b| b.plots.len())
        .sum();
    assert_eq!(opened, declared);
    assert!(page.matches("<polyline").count() >= 3 + 2);
    // One bar per measured figure of every bar chart a benchmark declares.
    let mut bars = 0;
    for b in benchmarks(&r) {
        let Some(spec) = tally::bench::registry::find(b["name"].as_str().unwrap()) else {
            continue;
        };
        for p in spec.plots {
            if matches!(p.kind, tally::bench::PlotKind::Bars) {
                bars += b["figures"]
                    .as_array()
                    .unwrap()
                    .iter()
                    .filter(|f| f["id"].as_str().unwrap().starts_with(p.figures))
                    .filter(|f| f.get("unavailable").is_none() && f["implausible"].is_null())
                    .count();
            }
        }
    }
    assert_eq!(page.matches("class=\"bar\"").count(), bars);
    // Every bar and every sweep point has its whisker (min to p95).
    let points: usize = benchmarks(&r)
        .iter()
        .filter_map(|b| tally::bench::registry::find(b["name"].as_str().unwrap()))
        .flat_map(|b| b.plots.iter().map(move |p| (b.name, p.figures)))
        .map(|(name, prefix)| {
            figures(&r, name)
                .iter()
                .filter(|f| f["id"].as_str().unwrap().starts_with(prefix))
                .filter(|f| f.get("unavailable").is_none() && f["implausible"].is_null())
                .count()
        })
        .sum();
    assert_eq!(page.matches("class=\"spread\"").count(), points);
}

#[test]
fn csv_and_markdown_have_one_row_per_figure() {
    let dir = tempfile::tempdir().unwrap();
    let out = tally()
        .args(["bench", "syscall", "--budget-ms", "2", "--format", "csv"])
        .assert()
        .success();
    let text = String::from_utf8(out.get_output().stdout.clone()).unwrap();
    assert!(text.starts_with("benchmark,id,label,x,x_unit,unit,median"));
    assert_eq!(text.lines().count(), 1 + 5);
    let out = tally()
        .args([
            "bench",
            "syscall",
            "--budget-ms",
            "2",
            "--format",
            "markdown",
            "--dir",
        ])
        .arg(dir.path())
        .assert()
        .success();
    let text = String::from_utf8(out.get_output().stdout.clone()).unwrap();
    assert_eq!(text.lines().filter(|l| l.starts_with('|')).count(), 2 + 5);
}

/// Regression: the measuring process had a second thread (a watchdog, and
/// on a terminal the progress bar's ticker), so its descriptor table was
/// shared and every timed read/write took the kernel's slower lookup
/// (1-byte read of /dev/zero 1.35× a single-threaded C loop). Every
/// benchmark must start with the measuring thread alone, also right after
/// the benchmarks that start threads of their own (spawn, ctxswitch, membw,
/// stream) and on a terminal.
#[test]
fn benchmarks_time_in_a_single_threaded_process() {
    let dir = tempfile::tempdir().unwrap();
    let names = [
        "syscall",
        "spawn",
        "ctxswitch",
        "signal",
        "membw",
        "stream",
        "memsys",
        "pagefault",
    ];
    let r = run_json(&names, dir.path());
    let threads: Vec<(&str, u64)> = benchmarks(&r)
        .iter()
        .map(|b| {
            (
                b["name"].as_str().unwrap(),
                b["threads_at_start"].as_u64().expect("threads_at_start"),
            )
        })
        .collect();
    assert_eq!(threads.len(), names.len());
    assert!(threads.iter().all(|(_, n)| *n == 1), "{threads:?}");

    // On a terminal (through script(1)'s pseudo-terminal), with the
    // progress spinner drawn.
    if !common::have("script") {
        common::skip_without_tool!("script", "Debian package util-linux");
    }
    let json = dir.path().join("tty.json");
    let line = format!(
        "{} bench syscall --budget-ms 2 --export json={}",
        common::tally_bin().display(),
        json.display()
    );
    let status = common::command("script")
        .args(["-qec", &line, "/dev/null"])
        .stdout(std::process::Stdio::null())
        .status()
        .expect("script runs");
    assert!(status.success());
    let r: Value = serde_json::from_slice(&std::fs::read(&json).unwrap()).unwrap();
    assert_eq!(benchmarks(&r)[0]["threads_at_start"], 1, "on a terminal");
}

#[test]
fn human_output_is_grouped_by_section() {
    let out = tally()
        .args(["bench", "syscall", "pagefault", "--budget-ms", "2"])
        .assert()
        .success();
    let text = String::from_utf8(out.get_output().stdout.clone()).unwrap();
    let cpu = text.find("== CPU & scheduling ==").unwrap();
    let mem = text.find("== Memory ==").unwrap();
    assert!(cpu < mem);
    assert!(text.contains("getpid (raw syscall)"));
    assert!(text.contains("anonymous minor fault"));
}

#[test]
fn prometheus_output_names_base_units() {
    let out = tally()
        .args([
            "bench",
            "timer",
            "--budget-ms",
            "2",
            "--format",
            "prometheus",
        ])
        .assert()
        .success();
    let text = String::from_utf8(out.get_output().stdout.clone()).unwrap();
    assert!(text.contains("# TYPE tally_bench_median_seconds gauge"));
    assert!(text.contains("tally_bench_median_hertz{"));
}

#[test]
fn baseline_gives_ratios_for_common_figures() {
    let dir = tempfile::tempdir().unwrap();
    let old = run_json(&["syscall", "call"], dir.path());
    let old_path = dir.path().join("old.json");
    std::fs::write(&old_path, serde_json::to_vec(&old).unwrap()).unwrap();
    let new = run_json(
        &["syscall", "timer", "--baseline", old_path.to_str().unwrap()],
        dir.path(),
    );
    let base = &new["baseline"];
    let comps = base["comparisons"].as_array().unwrap();
    assert_eq!(comps.len(), 5, "the five syscall figures");
    for c in comps {
        assert!(c["id"].as_str().unwrap().starts_with("syscall."));
        let ratio = c["ratio"].as_f64().unwrap();
        assert!(ratio.is_finite() && ratio > 0.0);
    }
    assert!(
        base["missing_in_baseline"].as_u64().unwrap() >= 1,
        "timer is new"
    );
    // The HTML page carries the same comparisons.
    let html = dir.path().join("b.html");
    tally()
        .args(["bench", "syscall", "--budget-ms", "2", "--html"])
        .arg(&html)
        .arg("--baseline")
        .arg(&old_path)
        .assert()
        .success();
    let page = std::fs::read_to_string(&html).unwrap();
    assert!(page.contains("Against the baseline"));
    assert_eq!(page.matches("<tr><td>syscall.").count(), 5);
}

#[test]
fn unusable_baseline_is_refused_before_measuring() {
    let dir = tempfile::tempdir().unwrap();
    let bad = dir.path().join("bad.json");
    std::fs::write(&bad, "{\"not\": \"a report\"}").unwrap();
    tally()
        .args(["bench", "timer", "--baseline"])
        .arg(&bad)
        .assert()
        .code(1)
        .stderr(predicate::str::contains("bad.json"))
        .stderr(predicate::str::contains("schema_version"));
    tally()
        .args(["bench", "timer", "--baseline"])
        .arg(dir.path().join("missing.json"))
        .assert()
        .code(1)
        .stderr(predicate::str::contains("missing.json"));
}

#[test]
fn unusable_dir_names_the_fix() {
    tally()
        .args([
            "bench",
            "fileread",
            "--budget-ms",
            "2",
            "--dir",
            "/nonexistent/tally",
        ])
        .assert()
        .code(1)
        .stderr(predicate::str::contains("/nonexistent/tally"))
        .stderr(predicate::str::contains("--dir"));
}

#[test]
fn html_file_that_cannot_be_created_fails_early() {
    tally()
        .args(["bench", "timer", "--html", "/nonexistent/dir/x.html"])
        .assert()
        .code(1)
        .stderr(predicate::str::contains("x.html"));
}

#[test]
fn filecache_runs_when_named_with_a_tiny_bound() {
    let dir = tempfile::tempdir().unwrap();
    let out = tally()
        .args([
            "bench",
            "filecache",
            "--budget-ms",
            "2",
            "--max-bytes",
            "2M",
            "--format",
            "json",
            "--dir",
        ])
        .arg(dir.path())
        .assert()
        .success();
    let r: Value = serde_json::from_slice(&out.get_output().stdout).unwrap();
    let f = &figures(&r, "filecache")[0];
    assert_eq!(f["id"], "filecache.cached_bytes");
    if let Some(b) = f.get("bytes") {
        assert!(b["median"].as_f64().unwrap() <= 2.0 * 1024.0 * 1024.0);
    }
    // The scratch file is gone.
    assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 0);
}

#[test]
fn runs_unprivileged() {
    if unsafe_free_euid() != 0 || !Path::new("/usr/bin/setpriv").exists() {
        return; // needs root to drop to nobody
    }
    let bin = common::tally_for_others();
    let out = common::command("setpriv")
        .args(["--reuid=65534", "--regid=65534", "--clear-groups"])
        .arg(&bin)
        .args([
            "bench",
            "syscall",
            "events",
            "--budget-ms",
            "2",
            "--format",
            "json",
        ])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let r: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert!(
        r["harness"]["priority"]
            .as_str()
            .unwrap()
            .starts_with("unchanged")
    );
    assert_eq!(benchmarks(&r).len(), 2);
}

/// The effective uid, read from /proc (no libc in the tests).
fn unsafe_free_euid() -> u32 {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with("Uid:"))
                .and_then(|l| l.split_whitespace().nth(2))
                .and_then(|v| v.parse().ok())
        })
        .unwrap_or(u32::MAX)
}

#[test]
fn closed_stdout_ends_quietly() {
    let bin = common::tally_bin();
    let mut child = common::command(bin)
        .args(["bench", "syscall", "--budget-ms", "2"])
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    drop(child.stdout.take()); // the reader goes away before any output
    let out = child.wait_with_output().unwrap();
    assert_eq!(out.status.code(), Some(0));
    assert_eq!(String::from_utf8_lossy(&out.stderr), "");
}

#[test]
fn tiny_limits_give_small_sweeps_not_panics() {
    let dir = tempfile::tempdir().unwrap();
    let out = tally()
        .args(["bench", "memlat", "membw", "filecache", "--budget-ms", "1"])
        .args([
            "--max-mem",
            "4K",
            "--max-bytes",
            "1",
            "--format",
            "json",
            "--dir",
        ])
        .arg(dir.path())
        .assert()
        .success();
    let r: Value = serde_json::from_slice(&out.get_output().stdout).unwrap();
    let xs: Vec<u64> = figures(&r, "memlat")
        .iter()
        .filter(|f| f["id"].as_str().unwrap().starts_with("memlat.random_4k."))
        .map(|f| f["x"].as_u64().unwrap())
        .collect();
    assert_eq!(xs, [1024, 1536, 2048, 3072, 4096]);
    assert!(
        figures(&r, "membw").len() >= 3,
        "read, write, copy at least"
    );
    let fc = &figures(&r, "filecache")[0];
    assert!(fc["unavailable"].as_str().unwrap().contains("no room"));
}

/// The all-threads bandwidth used to be timed by the calling thread, which
/// shares a CPU with a worker: when the worker ran first the span began
/// late, and a 2-CPU VM "read" 210 GB/s (p95 23,307 GB/s) against 27 GB/s
/// on one thread. No all-threads figure may exceed threads × the fastest
/// one-thread sample × 1.5, nor be flagged implausible for it.
#[test]
fn membw_all_threads_never_exceeds_threads_times_one_thread() {
    let dir = tempfile::tempdir().unwrap();
    let (mut unflagged, mut checked) = (0, 0);
    for _ in 0..3 {
        let out = tally()
            .args(["bench", "membw", "--budget-ms", "9", "--max-mem", "1M"])
            .args(["--format", "json", "--dir"])
            .arg(dir.path())
            .assert()
            .success();
        let r: Value = serde_json::from_slice(&out.get_output().stdout).unwrap();
        let figs = figures(&r, "membw");
        for kernel in ["read", "write", "copy"] {
            let Some(all) = figs
                .iter()
                .find(|f| f["id"] == format!("membw.{kernel}.all"))
            else {
                continue; // one CPU allowed: no all-threads figure
            };
            let one = figs
                .iter()
                .find(|f| f["id"] == format!("membw.{kernel}.1"))
                .unwrap();
            // "…, N thread(s)" closes the definition.
            let threads: f64 = all["definition"]
                .as_str()
                .unwrap()
                .rsplit(", ")
                .next()
                .and_then(|t| t.split(' ').next())
                .and_then(|n| n.parse().ok())
                .unwrap();
            assert!(threads >= 2.0);
            let bound = threads * one["gb_per_s"]["max"].as_f64().unwrap() * 1.5;
            // On a loaded machine a figure may fail the check (every
            // one-thread sample preempted): then it must be flagged, never
            // shown as measured. The span bug made every run fail it, so
            // most runs must pass unflagged.
            if all["implausible"].is_null() {
                let max = all["gb_per_s"]["max"].as_f64().unwrap();
                assert!(
                    max <= bound,
                    "membw.{kernel}.all: {max} GB/s against a bound of {bound} GB/s, not flagged"
                );
                unflagged += 1;
            }
            assert!(!all["samples"].as_array().unwrap().is_empty());
            checked += 1;
        }
        if checked == 0 {
            common::skip!("one CPU allowed: no all-threads figures");
        }
    }
    assert!(
        unflagged * 2 > checked,
        "only {unflagged} of {checked} all-threads figures passed the bound"
    );
}

/// Files under `dir` that `pid` holds open (named or already unlinked).
fn open_files_under(pid: u32, dir: &Path) -> usize {
    let Ok(fds) = std::fs::read_dir(format!("/proc/{pid}/fd")) else {
        return 0;
    };
    fds.flatten()
        .filter_map(|e| std::fs::read_link(e.path()).ok())
        .filter(|t| t.starts_with(dir))
        .count()
}

/// Scratch entries (`.tally-bench-*`) left in `dir`.
fn scratch_left(dir: &Path) -> Vec<String> {
    std::fs::read_dir(dir)
        .unwrap()
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|n| n.starts_with(".tally-bench-"))
        .collect()
}

/// SIGINT, SIGTERM or SIGHUP during `tally bench fileread` or filecache
/// left its `.tally-bench-*` scratch file behind, up to 571 MB of it.
#[test]
fn interrupted_fileread_leaves_no_scratch_file() {
    use std::os::unix::process::ExitStatusExt;
    for (bench, sig, num) in [
        ("fileread", "INT", 2),
        ("fileread", "TERM", 15),
        ("fileread", "HUP", 1),
        ("filecache", "INT", 2),
    ] {
        let dir = tempfile::tempdir().unwrap();
        let child = common::tally_std()
            // A budget long enough that the benchmark is still running,
            // its file open, when the signal comes (with 9 ms a fast
            // machine finished first and exited 0).
            .args(["bench", bench, "--budget-ms", "1000", "--max-bytes", "64M"])
            .arg("--dir")
            .arg(dir.path())
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .spawn()
            .unwrap();
        let pid = child.id();
        let mut reaper = common::Reaper(vec![child]);
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
        let mut seen = false;
        while std::time::Instant::now() < deadline {
            if open_files_under(pid, dir.path()) > 0 {
                seen = true;
                break;
            }
            if reaper.0[0].try_wait().unwrap().is_some() {
                break;
            }
        }
        assert!(
            seen,
            "SIG{sig}: fileread ended before its scratch file was seen"
        );
        let killed = common::command("kill")
            .args([format!("-{sig}"), pid.to_string()])
            .status()
            .unwrap();
        assert!(killed.success());
        let status = reaper.0[0].wait().unwrap();
        assert_eq!(status.signal(), Some(num), "{bench} SIG{sig}: {status:?}");
        assert_eq!(
            scratch_left(dir.path()),
            Vec::<String>::new(),
            "{bench} SIG{sig}"
        );
    }
}

/// Runs tally with stderr on /dev/full (every write fails with ENOSPC).
fn with_full_stderr(args: &[&str]) -> std::process::Output {
    let full = std::fs::OpenOptions::new()
        .write(true)
        .open("/dev/full")
        .unwrap();
    common::tally_std()
        .args(args)
        .stderr(full)
        .output()
        .unwrap()
}

/// With stderr unwritable (`2>/dev/full`) a message to it must neither
/// panic (exit 101) nor change the documented exit status.
#[test]
fn unwritable_stderr_keeps_bench_exit_codes() {
    if !Path::new("/dev/full").exists() {
        common::skip!("no /dev/full");
    }
    // --full announces its plan on stderr before measuring.
    let out = with_full_stderr(&[
        "bench",
        "--full",
        "syscall",
        "--budget-ms",
        "2",
        "--format",
        "json",
    ]);
    assert_eq!(out.status.code(), Some(0), "{:?}", out.status);
    let r: Value = serde_json::from_slice(&out.stdout).expect("the report is whole");
    assert_eq!(benchmarks(&r).len(), 1);
    // Failures: a bad scratch directory, a missing baseline, an HTML page
    // that cannot be created (exit 1); usage errors (exit 2).
    for (args, code) in [
        (&["bench", "fileread", "--dir", "/nonexistent/tally"][..], 1),
        (
            &["bench", "timer", "--baseline", "/nonexistent/old.json"][..],
            1,
        ),
        (
            &["bench", "timer", "--html", "/nonexistent/dir/x.html"][..],
            1,
        ),
        (&["bench", "nosuch"][..], 2),
        (&["bench", "--max-mem", "5X"][..], 2),
    ] {
        let out = with_full_stderr(args);
        assert_eq!(out.status.code(), Some(code), "{args:?}: {:?}", out.status);
    }
}

/// A non-UTF-8 `--dir` or `--baseline` path cut the JSON report short
/// ("path contains invalid UTF-8 characters"): such paths are written
/// losslessly, and escaped in text.
#[test]
fn non_utf8_dir_and_baseline_paths_keep_the_json_whole() {
    use std::os::unix::ffi::OsStrExt;
    let top = tempfile::tempdir().unwrap();
    let dir = top
        .path()
        .join(std::ffi::OsStr::from_bytes(b"caf\xe9\x1b[31m"));
    std::fs::create_dir(&dir).unwrap();
    let r = run_json(&["fileread"], &dir);
    let notes = benchmarks(&r)[0]["notes"].to_string();
    assert!(notes.contains("caf\\\\xe9"), "{notes}");
    assert!(
        !notes.contains("\\u001b"),
        "no raw escape character: {notes}"
    );
    assert_eq!(std::fs::read_dir(&dir).unwrap().count(), 0);
    let old = dir.join(std::ffi::OsStr::from_bytes(b"old\xff.json"));
    std::fs::write(&old, serde_json::to_vec(&r).unwrap()).unwrap();
    let out = tally()
        .args(["bench", "syscall", "--budget-ms", "2", "--format", "json"])
        .arg("--baseline")
        .arg(&old)
        .assert()
        .success();
    let new: Value = serde_json::from_slice(&out.get_output().stdout).expect("JSON whole");
    let hex: String = common::hex_of(&old);
    assert_eq!(new["baseline"]["path"]["bytes_hex"], hex.as_str());
    // The new report can serve as a baseline in turn.
    let newer = dir.join("new.json");
    std::fs::write(&newer, &out.get_output().stdout).unwrap();
    let out = tally()
        .args(["bench", "syscall", "--budget-ms", "2"])
        .arg("--baseline")
        .arg(&newer)
        .assert()
        .success();
    let text = String::from_utf8(out.get_output().stdout.clone()).unwrap();
    assert!(text.contains("baseline: "), "{text}");
}

/// Where the kernel put a mapping moved with address-space randomisation,
/// and with it mmap's figures from one run to the next (an untouched
/// 1 GiB mapping read 5.6–9.6 µs over six runs): a bench run lays memory
/// out without randomisation, the same way every time, and says so.
#[test]
fn mmap_figures_moved_with_address_space_randomisation() {
    let dir = tempfile::tempdir().unwrap();
    let r = run_json(&["timer"], dir.path());
    assert_eq!(
        r["machine"]["layout_fixed"],
        Value::Bool(true),
        "{}",
        r["machine"]
    );
    // Started with randomisation already off (setarch -R, util-linux), it
    // runs as it is.
    let out = common::command("setarch")
        .args(["-R"])
        .arg(common::tally_bin())
        .args(["bench", "timer", "--budget-ms", "2", "--format", "json"])
        .output()
        .expect("setarch runs");
    assert!(out.status.success(), "{out:?}");
    let r: Value = serde_json::from_slice(&out.stdout).expect("bench JSON parses");
    assert_eq!(r["machine"]["layout_fixed"], Value::Bool(true));
}

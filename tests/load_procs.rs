//! `tally load --procs N`: N processes load one file together and hold it.
//! Counts and invariants only, never timings.

mod common;

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::{Duration, Instant};

use serde_json::Value;

const PAGE: u64 = 4096;

fn data_file(dir: &Path, bytes: usize) -> PathBuf {
    let path = dir.join("weights.bin");
    let mut f = std::fs::File::create(&path).expect("create");
    let mut x = 0x9e37_79b9_7f4a_7c15u64;
    let data: Vec<u8> = (0..bytes)
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

fn json_of(args: &[&str], file: &Path) -> (Value, i32, String) {
    let out = common::tally_std()
        .arg("load")
        .args(args)
        .args(["--format", "json"])
        .arg(file)
        .output()
        .expect("run tally");
    let err = String::from_utf8_lossy(&out.stderr).into_owned();
    let v: Value = serde_json::from_slice(&out.stdout).unwrap_or_else(|e| panic!("{e}: {err}"));
    (v, out.status.code().unwrap_or(-1), err)
}

fn run<'a>(v: &'a Value, method: &str, mode: &str, procs: u64) -> &'a Value {
    v["runs"]
        .as_array()
        .expect("runs")
        .iter()
        .find(|r| r["method"] == method && r["mode"] == mode && r["procs"] == procs)
        .unwrap_or_else(|| panic!("no {method} {mode} ×{procs} in {v}"))
}

fn u(v: &Value) -> u64 {
    v.as_u64().unwrap_or_else(|| panic!("not a count: {v}"))
}

#[test]
fn four_mmap_processes_share_one_copy_and_four_read_processes_keep_four() {
    let dir = tempfile::tempdir().expect("tempdir");
    let size = 16u64 << 20;
    let file = data_file(dir.path(), size as usize);
    let (v, code, err) = json_of(&["--procs", "4", "--warm"], &file);
    assert_eq!(code, 0, "{err}\n{v}");
    assert_eq!(v["procs"], serde_json::json!([4]));
    let mmap = run(&v, "mmap", "warm", 4);
    let read = run(&v, "read", "warm", 4);
    for r in [mmap, read] {
        assert_eq!(r["outcome"], "completed", "{r}");
        assert_eq!(u(&r["completed"]), 4, "{r}");
        let children = r["children"].as_array().expect("children");
        assert_eq!(children.len(), 4);
        // Measured at the hold: every process alive, loaded, holding.
        for c in children {
            assert!(c["pss_bytes"].is_u64() && c["load_us"].is_u64(), "{c}");
            assert_eq!(u(&c["bytes_loaded"]), size, "{c}");
        }
        assert_eq!(r["pss_per_proc_bytes"].as_array().map(Vec::len), Some(4));
    }
    // mmap: the four share the file's pages, Σ PSS of its mapping is one
    // copy, and each process holds a quarter of it at the same moment.
    let shared = u(&mmap["sum_file_map_pss_bytes"]);
    assert!(
        shared.abs_diff(size) <= 4 * PAGE,
        "Σ PSS {shared} of {size}"
    );
    for c in mmap["children"].as_array().expect("children") {
        let quarter = u(&c["file_map_pss_bytes"]);
        assert!(
            quarter.abs_diff(size / 4) <= PAGE,
            "{quarter} of {}",
            size / 4
        );
    }
    // read: a private copy each, about four copies; the file is not mapped.
    let anon = u(&read["sum_pss_anon_bytes"]);
    assert!(anon >= 4 * size, "Σ anonymous PSS {anon} < 4 × {size}");
    assert!(anon <= 4 * size + 4 * (16 << 20), "{anon}");
    assert_eq!(u(&read["sum_file_map_pss_bytes"]), 0);
    let ratio = read["sum_pss_vs_mmap"].as_f64().expect("ratio");
    assert!(ratio > 1.5, "read Σ PSS only {ratio}× mmap's");
    assert_eq!(mmap["sum_pss_vs_mmap"].as_f64(), Some(1.0));
    assert_eq!(v["checksums_agree"], true);
}

#[test]
fn checksums_agree_across_processes_and_methods_cold_and_warm() {
    let dir = tempfile::tempdir().expect("tempdir");
    let file = data_file(dir.path(), (2 << 20) + 4097);
    let methods = "read,mmap,read-chunks,mmap-populate";
    let (v, code, err) = json_of(&["--procs", "3", "--methods", methods], &file);
    assert_eq!(code, 0, "{err}\n{v}");
    let runs = v["runs"].as_array().expect("runs");
    assert_eq!(runs.len(), 8, "4 methods, cold and warm");
    let mut sums = Vec::new();
    for r in runs {
        for c in r["children"].as_array().expect("children") {
            sums.push(c["checksum"].as_str().expect("a checksum").to_string());
        }
    }
    assert_eq!(sums.len(), 24);
    assert!(sums.iter().all(|s| *s == sums[0]), "{sums:?}");
    assert_eq!(v["checksums_agree"], true);
    // Same names in CSV as in JSON.
    let out = common::tally_std()
        .args(["load", "--procs", "1", "--warm", "--methods", "mmap"])
        .args(["--format", "csv"])
        .arg(&file)
        .output()
        .expect("csv");
    let csv = String::from_utf8_lossy(&out.stdout);
    let header: Vec<&str> = csv.lines().next().expect("header").split(',').collect();
    for key in runs[0].as_object().expect("run").keys() {
        if key != "children" && key != "checksums" {
            assert!(header.contains(&key.as_str()), "{key} not in {header:?}");
        }
    }
}

#[test]
fn procs_sweep_plots_sum_of_pss_against_n() {
    let dir = tempfile::tempdir().expect("tempdir");
    let file = data_file(dir.path(), 1 << 20);
    let html = dir.path().join("pss.html");
    let html_arg = html.to_string_lossy().into_owned();
    let (v, code, err) = json_of(&["--procs-sweep", "--warm", "--html", &html_arg], &file);
    assert_eq!(code, 0, "{err}");
    assert_eq!(v["procs"], serde_json::json!([1, 2, 4, 8]));
    assert_eq!(v["runs"].as_array().map(Vec::len), Some(8));
    for n in [1u64, 2, 4, 8] {
        assert_eq!(u(&run(&v, "read", "warm", n)["completed"]), n);
    }
    let page = std::fs::read_to_string(&html).expect("html");
    assert!(page.contains("<svg") && page.contains("read warm") && page.contains("mmap warm"));
}

/// Where tally (a child of this test) would create its cgroups: below
/// this process's own cgroup in the v2 and the v1 memory hierarchy.
fn cgroup_parents() -> Vec<PathBuf> {
    let own = std::fs::read_to_string("/proc/self/cgroup").unwrap_or_default();
    let mut out = Vec::new();
    for line in own.lines() {
        let mut p = line.splitn(3, ':');
        let (Some(_), Some(ctl), Some(path)) = (p.next(), p.next(), p.next()) else {
            continue;
        };
        let path = path.trim_start_matches('/');
        if ctl.is_empty() {
            out.push(Path::new("/sys/fs/cgroup/unified").join(path));
            out.push(Path::new("/sys/fs/cgroup").join(path));
        } else if ctl.split(',').any(|c| c == "memory") {
            out.push(Path::new("/sys/fs/cgroup/memory").join(path));
        }
    }
    out
}

fn cgroups_left_by(pid: u32) -> Vec<PathBuf> {
    let prefix = format!("tally-load-{pid}-");
    cgroup_parents()
        .iter()
        .filter_map(|d| std::fs::read_dir(d).ok())
        .flatten()
        .flatten()
        .filter(|e| e.file_name().to_string_lossy().starts_with(&prefix))
        .map(|e| e.path())
        .collect()
}

fn swap_total_kb() -> u64 {
    std::fs::read_to_string("/proc/meminfo")
        .unwrap_or_default()
        .lines()
        .find_map(|l| l.strip_prefix("SwapTotal:"))
        .and_then(|r| r.split_whitespace().next()?.parse().ok())
        .unwrap_or(0)
}

/// The "Bigger Models" claim: with the limit between one copy of the file
/// and two, four read() copies cannot fit where one shared mapping does.
#[test]
fn mem_limit_between_one_and_two_copies_read_fails_where_mmap_completes() {
    if euid() != 0 {
        common::skip!("--mem-limit needs root to create a cgroup");
    }
    let dir = tempfile::tempdir().expect("tempdir");
    let size = 64u64 << 20;
    let file = data_file(dir.path(), size as usize);
    let child = common::tally_std()
        .args(["load", "--procs", "4", "--cold", "--mem-limit", "96M"])
        .args(["--format", "json"])
        .arg(&file)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn");
    let pid = child.id();
    let out = common::wait_or_kill(child, Duration::from_secs(300));
    let err = String::from_utf8_lossy(&out.stderr);
    let v: Value = serde_json::from_slice(&out.stdout).unwrap_or_else(|e| panic!("{e}: {err}"));
    assert_eq!(out.status.code(), Some(0), "{err}\n{v}");
    assert!(
        cgroups_left_by(pid).is_empty(),
        "{:?}",
        cgroups_left_by(pid)
    );
    let limit = &v["mem_limit"];
    assert_eq!(u(&limit["limit_bytes"]), 96 << 20);
    if limit["via"].is_null() {
        assert!(limit["unavailable"].is_string());
        common::skip!("no memory-limited cgroup here: {}", limit["unavailable"]);
    }
    assert!(["cgroup-v1", "cgroup-v2"].contains(&limit["via"].as_str().unwrap_or("")));
    let mmap = run(&v, "mmap", "cold", 4);
    let read = run(&v, "read", "cold", 4);
    for r in [mmap, read] {
        let counted = ["completed", "oom_killed", "killed", "failed"]
            .iter()
            .map(|k| u(&r[*k]))
            .sum::<u64>();
        assert_eq!(counted, 4, "every process has one outcome: {r}");
        assert!(r["group_peak_bytes"].is_u64(), "{r}");
    }
    assert_eq!(mmap["outcome"], "completed", "{mmap}");
    assert_eq!(u(&mmap["completed"]), 4);
    if swap_total_kb() == 0 {
        // Without swap, four private 64 MiB copies cannot fit in 96 MiB.
        assert!(
            ["oom-killed", "failed", "thrashed"].contains(&read["outcome"].as_str().unwrap_or("")),
            "{read}"
        );
        assert!(
            u(&read["completed"]) < 4 || read["outcome"] == "thrashed",
            "{read}"
        );
    } else {
        println!("swap is on: read may swap instead of failing; outcome not asserted");
    }
}

fn euid() -> u32 {
    // The effective uid from /proc, without libc.
    std::fs::read_to_string("/proc/self/status")
        .unwrap_or_default()
        .lines()
        .find_map(|l| l.strip_prefix("Uid:"))
        .and_then(|r| r.split_whitespace().nth(1)?.parse().ok())
        .unwrap_or(u32::MAX)
}

fn held_children(pid: u32) -> Vec<String> {
    let list =
        std::fs::read_to_string(format!("/proc/{pid}/task/{pid}/children")).unwrap_or_default();
    list.split_whitespace().map(String::from).collect()
}

fn is_load_process(pid: &str) -> bool {
    let cmdline = std::fs::read(format!("/proc/{pid}/cmdline")).unwrap_or_default();
    String::from_utf8_lossy(&cmdline).contains("--hold")
}

/// A process still running, or a zombie nobody reaped.
fn remains(pid: &str) -> bool {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
    let zombie = stat
        .rsplit_once(") ")
        .is_some_and(|(_, rest)| rest.starts_with('Z'));
    zombie || is_load_process(pid)
}

/// SIGINT (and SIGTERM) while the processes load or hold: tally kills and
/// reaps every one before it exits (none is left running or a zombie for
/// someone else to reap), and removes its cgroup.
#[test]
fn interrupted_procs_load_kills_and_reaps_every_process() {
    let dir = tempfile::tempdir().expect("tempdir");
    let file = data_file(dir.path(), 32 << 20);
    let root = euid() == 0;
    for (name, number) in [("INT", 2), ("TERM", 15)] {
        let mut cmd = common::tally_std();
        cmd.args(["load", "--procs", "4"]);
        cmd.args(["--methods", "read,mmap,read-chunks"]);
        if root {
            cmd.args(["--mem-limit", "4G"]);
        }
        let child = cmd
            .arg(&file)
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("spawn");
        let pid = child.id();
        let start = Instant::now();
        let mut seen: Vec<String> = Vec::new();
        loop {
            for c in held_children(pid) {
                if !seen.contains(&c) && is_load_process(&c) {
                    seen.push(c);
                }
            }
            if seen.len() >= 4 {
                break;
            }
            assert!(
                start.elapsed() < Duration::from_secs(120),
                "no processes started"
            );
            std::thread::sleep(Duration::from_millis(2));
        }
        common::command("kill")
            .arg(format!("-{name}"))
            .arg(pid.to_string())
            .status()
            .expect("kill");
        let out = common::wait_or_kill(child, Duration::from_secs(60));
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(128 + number), "{err}");
        assert!(err.contains(&format!("interrupted by SIG{name}")), "{err}");
        let left: Vec<&String> = seen.iter().filter(|p| remains(p)).collect();
        assert!(left.is_empty(), "load processes outlived tally: {left:?}");
        assert!(
            cgroups_left_by(pid).is_empty(),
            "{:?}",
            cgroups_left_by(pid)
        );
    }
}

/// Whether process `pid` has passed its PR_SET_PDEATHSIG call: it blocks
/// signals right after it.
fn armed(pid: &str) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/status"))
        .unwrap_or_default()
        .lines()
        .find_map(|l| l.strip_prefix("SigBlk:"))
        .is_some_and(|m| !m.trim().trim_start_matches('0').is_empty())
}

/// tally killed outright (no handler runs): a held process dies with it
/// (PR_SET_PDEATHSIG). The process is stopped first, so closing the
/// barrier pipe cannot end it: only the death signal can.
#[test]
fn killing_tally_kills_its_held_processes() {
    let dir = tempfile::tempdir().expect("tempdir");
    let file = data_file(dir.path(), 8 << 20);
    let mut child = common::tally_std()
        .args(["load", "--procs-sweep", "--methods", "read,mmap"])
        .arg(&file)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("spawn");
    let pid = child.id();
    let start = Instant::now();
    let stopped = loop {
        if let Some(first) = held_children(pid).into_iter().next() {
            let ok = common::command("kill").args(["-STOP", &first]).status();
            if is_load_process(&first) && ok.is_ok_and(|s| s.success()) && armed(&first) {
                break first;
            }
            let _ = common::command("kill").args(["-CONT", &first]).status();
        }
        assert!(
            start.elapsed() < Duration::from_secs(60),
            "no process started"
        );
        std::thread::sleep(Duration::from_millis(2));
    };
    child.kill().expect("SIGKILL tally");
    child.wait().expect("reap tally");
    let start = Instant::now();
    while is_load_process(&stopped) {
        if start.elapsed() > Duration::from_secs(10) {
            let _ = common::command("kill").args(["-KILL", &stopped]).status();
            panic!("process {stopped} outlived a killed tally");
        }
        std::thread::sleep(Duration::from_millis(10));
    }
}

#[test]
fn load_procs_beyond_available_memory_is_refused_before_any_load() {
    // `--procs 256` of a large file with `read` went ahead and exhausted
    // the machine's memory. A file a quarter of MemAvailable, 64 copies:
    // 16 times what there is. An address-space limit keeps a broken build
    // from really trying.
    common::require!(common::tool("prlimit", "util-linux"));
    let text = std::fs::read_to_string("/proc/meminfo").expect("meminfo");
    let available: u64 = text
        .lines()
        .find_map(|l| l.strip_prefix("MemAvailable:"))
        .and_then(|v| v.split_whitespace().next()?.parse::<u64>().ok())
        .expect("MemAvailable")
        * 1024;
    let dir = tempfile::tempdir().expect("tempdir");
    let file = dir.path().join("huge.sparse");
    std::fs::File::create(&file)
        .and_then(|f| f.set_len(available / 4))
        .expect("sparse file");
    let child = common::command("prlimit")
        .arg("--as=4000000000")
        .arg(common::tally_bin())
        .args(["load", "--procs", "64", "--methods", "mmap,read", "--warm"])
        .arg(&file)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("prlimit");
    let out = common::wait_or_kill(child, Duration::from_secs(60));
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(out.stdout.is_empty(), "no report: nothing ran");
    assert!(
        err.contains("tally: load: --procs 64 with read of a"),
        "{err}"
    );
    assert!(err.contains("64 × "), "the figure's make-up: {err}");
    assert!(err.contains("(MemAvailable)"), "{err}");
    assert!(err.contains("--mem-limit SIZE"), "the fix: {err}");
}

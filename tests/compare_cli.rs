//! `tally compare` end to end: verdicts and directions of commands that
//! differ by construction, a command against itself, failing commands,
//! SIGINT, bad input, and the HTML page. Counts, structure and
//! invariants only: no test asserts a duration.

mod common;

use std::path::Path;
use std::process::Stdio;
use std::time::{Duration, Instant};

use common::tally;
use serde_json::Value;

fn scratch(name: &str) -> tempfile::TempDir {
    tempfile::Builder::new()
        .prefix(&format!("compare-{name}-"))
        .tempdir_in(env!("CARGO_TARGET_TMPDIR"))
        .expect("create scratch dir")
}

/// `tally compare ARGS --format json`: exit code and report.
fn compare_json(args: &[&str]) -> (i32, Value) {
    let out = tally()
        .arg("compare")
        .args(args)
        .args(["--format", "json"])
        .output()
        .expect("tally runs");
    let code = out.status.code().unwrap_or(-1);
    let report = serde_json::from_slice(&out.stdout).unwrap_or_else(|e| {
        panic!(
            "no JSON ({e}): {}\n{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        )
    });
    (code, report)
}

/// The comparison of command `i` (0-based) for `figure`.
fn versus<'a>(r: &'a Value, i: usize, figure: &str) -> &'a Value {
    r["commands"][i]["versus_reference"]
        .as_array()
        .expect("versus_reference")
        .iter()
        .find(|v| v["figure"] == figure)
        .unwrap_or_else(|| panic!("no {figure} for command {i}"))
}

#[test]
fn a_slower_sleep_is_significantly_slower_and_the_faster_is_the_reference() {
    let (code, r) = compare_json(&["-n", "20", "sleep 0.05", "sleep 0.01"]);
    assert_eq!(code, 0);
    assert_eq!(r["commands"].as_array().unwrap().len(), 2);
    assert_eq!(r["reference"], 1, "the faster command is the reference");
    assert_eq!(r["reference_is"], "fastest");
    for c in r["commands"].as_array().unwrap() {
        assert_eq!(c["runs"].as_array().unwrap().len(), 20);
        assert_eq!(c["run_order"].as_array().unwrap().len(), 20);
    }
    assert!(
        r["commands"][1]["versus_reference"]
            .as_array()
            .unwrap()
            .is_empty()
    );
    let wall = versus(&r, 0, "wall_ns");
    assert_eq!(wall["verdict"], "higher", "{wall}");
    assert!(wall["ratio"].as_f64().unwrap() > 1.0);
    assert!(wall["ratio_low"].as_f64().unwrap() > 1.0, "{wall}");
    assert!(wall["p_value"].as_f64().unwrap() < 0.05);
    // Every run has a distinct place in the interleaved order.
    let mut order: Vec<u64> = r["commands"]
        .as_array()
        .unwrap()
        .iter()
        .flat_map(|c| {
            c["run_order"]
                .as_array()
                .unwrap()
                .iter()
                .map(|v| v.as_u64().unwrap())
        })
        .collect();
    order.sort_unstable();
    assert_eq!(order, (1..=40).collect::<Vec<u64>>());

    let human = tally()
        .args(["compare", "-n", "8", "sleep 0.05", "sleep 0.01"])
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&human.stdout);
    assert!(text.contains("slower (p"), "{text}");
    assert!(text.lines().all(|l| l.chars().count() <= 100), "{text}");
}

#[test]
fn twice_the_memory_is_significantly_more_peak_memory() {
    common::require!(common::tool("python3", "python3"));
    let alloc = |mb: u32| {
        format!(
            "python3 -c 'b = bytearray({mb} * 1024 * 1024); b[::4096] = b\"x\" * len(b[::4096])'"
        )
    };
    // Six runs of each at least: fewer cannot reach significance over the
    // family of figures (too-few-runs says so).
    let (code, r) = compare_json(&[
        "-n",
        "8",
        "--reference",
        "1",
        "--name",
        "50 MB",
        "--name",
        "100 MB",
        &alloc(50),
        &alloc(100),
    ]);
    assert_eq!(code, 0);
    assert_eq!(r["reference"], 0);
    assert_eq!(r["reference_is"], "chosen");
    assert_eq!(r["commands"][1]["name"], "100 MB");
    let rss = versus(&r, 1, "max_rss_bytes");
    assert_eq!(rss["verdict"], "higher", "{rss}");
    let ratio = rss["ratio"].as_f64().unwrap();
    // (interpreter + 100 MB) / (interpreter + 50 MB)
    assert!(ratio > 1.4 && ratio < 2.1, "{rss}");
    assert!(rss["ratio_low"].as_f64().unwrap() > 1.0);
}

#[test]
fn a_command_against_itself_has_unchanged_counts() {
    let (code, r) = compare_json(&["-N", "-n", "8", "/bin/true", "/bin/true"]);
    assert_eq!(code, 0);
    for figure in [
        "write_call_bytes",
        "block_output_ops",
        "storage_write_bytes",
    ] {
        assert_eq!(
            versus(&r, 1 - r["reference"].as_u64().unwrap() as usize, figure)["verdict"],
            "unchanged"
        );
    }
    // Every figure of `tally run` is compared.
    let other = 1 - r["reference"].as_u64().unwrap() as usize;
    let n = r["commands"][other]["versus_reference"]
        .as_array()
        .unwrap()
        .len();
    // The GPU figures are left out, no command here used one; and where
    // no cgroup can be made for the runs (not root, no writable cgroup v2
    // tree), the parts that need one, storage wait and memory stall, which
    // each run then says are unavailable and why.
    let figures = tally::run::report::FIGURES
        .iter()
        .filter(|f| !f.only_when_measured())
        .count();
    let why = &r["commands"][other]["runs"][0]["why"];
    assert!(why["cpu_wait_ns"].is_u64(), "{why}");
    let without_group = ["io_wait_ns", "memory_stall_ns"]
        .iter()
        .filter(|part| {
            let unavailable = why["unavailable"][*part].as_str();
            assert!(
                why[*part].is_u64() || unavailable.is_some_and(|u| u.contains("cgroup")),
                "{why}"
            );
            why[*part].is_null()
        })
        .count();
    assert_eq!(n, figures - without_group);
}

#[test]
fn a_failing_command_stops_the_comparison_without_ignore_failure() {
    let out = tally()
        .args(["compare", "-n", "3", "true", "exit 3"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("command 2 (exit 3) failed"), "{err}");
    assert!(
        err.contains("exit status 3") && err.contains("--ignore-failure"),
        "{err}"
    );
    assert!(out.stdout.is_empty());

    let (code, r) = compare_json(&["-i", "-n", "3", "true", "exit 3"]);
    assert_eq!(code, 0);
    assert_eq!(r["commands"][1]["failed_runs"], 3);
    assert_eq!(r["commands"][1]["exits"][0], "exit 3");
    let human = tally()
        .args(["compare", "-i", "-n", "3", "true", "exit 3"])
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&human.stdout);
    let flagged = text.lines().filter(|l| l.contains("#2 ✗ exit 3")).count();
    let rows = text.lines().filter(|l| l.starts_with("  #2 ")).count();
    // The headline figures (wall, cpu, peak memory) always have a row;
    // others only when they changed, which varies from run to run.
    assert!(
        flagged >= 3 && flagged + 1 == rows,
        "every row of #2 is flagged:\n{text}"
    );
    assert!(
        text.contains("#2 ✗"),
        "the list of commands flags it too:\n{text}"
    );
    assert!(text.contains("✗ #2: 3 of 3 runs failed (exit 3)"), "{text}");
}

/// The pid a command writes to `pidfile` once it runs.
fn pid_written_to(pidfile: &Path) -> u32 {
    let start = Instant::now();
    loop {
        if let Ok(text) = std::fs::read_to_string(pidfile)
            && let Ok(pid) = text.trim().parse::<u32>()
        {
            return pid;
        }
        assert!(
            start.elapsed() < Duration::from_secs(20),
            "the command never started"
        );
        std::thread::sleep(Duration::from_millis(10));
    }
}

#[test]
fn sigint_stops_the_comparison_and_reaps_the_command() {
    let tmp = scratch("sigint");
    let pidfile = tmp.path().join("pid");
    let script = format!("echo $$ > {}; exec sleep 30", pidfile.display());
    let child = common::tally_std()
        .args([
            // The same command twice: whichever the order starts with
            // writes its pid.
            "compare", "-n", "100", "--format", "json", &script, &script,
        ])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let guard = common::Reaper(Vec::new());
    let pid = pid_written_to(&pidfile);
    std::thread::sleep(Duration::from_millis(50));
    let sent = common::command("kill")
        .args(["-INT", &child.id().to_string()])
        .status()
        .unwrap();
    assert!(sent.success());
    let out = common::wait_or_kill(child, Duration::from_secs(20));
    drop(guard);
    assert_eq!(
        out.status.code(),
        Some(130),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let r: Value = serde_json::from_slice(&out.stdout).expect("the runs so far, as JSON");
    assert_eq!(r["interrupted_by"], "SIGINT");
    // The command is gone: not running, not a zombie left behind.
    assert!(
        !Path::new(&format!("/proc/{pid}")).exists(),
        "pid {pid} still exists"
    );
}

#[test]
fn bad_input_is_a_usage_error_that_names_the_fix() {
    let cases: &[(&[&str], &str)] = &[
        (&["compare"], "COMMAND"),
        (&["compare", "-P", "n", "5", "1", "sleep {n}"], "above HI"),
        (
            &["compare", "-P", "n", "1", "x", "sleep {n}"],
            "not an integer",
        ),
        (
            &["compare", "-P", "n", "1", "2", "sleep {m}"],
            "unknown {m}",
        ),
        (&["compare", "-L", "n", "1,2", "true"], "not used"),
        (
            &["compare", "--reference", "3", "true", "false"],
            "--reference 3",
        ),
        (
            &["compare", "--name", "a", "true", "false"],
            "one name per command",
        ),
        (&["compare", "--alpha", "2", "true"], "significance level"),
        (
            &["compare", "--cold", "/nonexistent/x", "--", "true", "true"],
            "--cold",
        ),
    ];
    for (args, needle) in cases {
        let out = tally().args(*args).output().unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {err}");
        assert!(err.contains(needle), "{args:?}: {err}");
        assert!(out.stdout.is_empty(), "{args:?}");
    }
}

#[test]
fn parameter_scan_runs_every_value_in_the_command() {
    let (code, r) = compare_json(&[
        "-N",
        "-n",
        "2",
        "-P",
        "n",
        "1",
        "5",
        "-D",
        "2",
        "/bin/echo {n}",
    ]);
    assert_eq!(code, 0);
    let commands: Vec<&str> = r["commands"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["command"].as_str().unwrap())
        .collect();
    assert_eq!(commands, ["/bin/echo 1", "/bin/echo 3", "/bin/echo 5"]);
    assert_eq!(
        r["commands"][2]["parameters"][0],
        serde_json::json!(["n", "5"])
    );
}

#[test]
fn html_page_has_plots_for_every_figure_and_the_ratio_table() {
    let tmp = scratch("html");
    let page = tmp.path().join("c.html");
    let out = tally()
        .args(["compare", "-N", "-n", "4", "--html"])
        .arg(&page)
        .args(["/bin/true", "/bin/echo <b>"])
        .output()
        .unwrap();
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let html = std::fs::read_to_string(&page).unwrap();
    assert!(html.starts_with("<!DOCTYPE html>"));
    assert!(html.contains("class=\"ratios\""));
    assert!(html.contains("&lt;b&gt;") && !html.contains("echo <b>"));
    // Wall, cpu and peak memory always have a plot per command: at 4 runs
    // each its dots and median line, no box.
    assert!(html.matches("class=\"median\"").count() >= 6);
    assert_eq!(html.matches("class=\"box\"").count(), 0);
    assert!(html.contains("wall time in run order"));

    let run = tally()
        .args([
            "run",
            "-n",
            "5",
            "--format",
            "html",
            "-o",
            "-",
            "--",
            "/bin/true",
        ])
        .output()
        .unwrap();
    let html = String::from_utf8_lossy(&run.stdout);
    assert_eq!(run.status.code(), Some(0));
    // Five runs: a dot each, no histogram.
    assert_eq!(html.matches("class=\"bin\"").count(), 0);
    assert!(html.matches("class=\"pt\"").count() >= 5, "a dot per run");
    assert!(html.contains("wall time in run order"));

    let out = tally().args(["mem", "--format", "html"]).output().unwrap();
    assert_ne!(out.status.code(), Some(0));
    assert!(String::from_utf8_lossy(&out.stderr).contains("mem has no html report"));
}

/// `--cold PATH` takes one path, so the commands can follow it directly,
/// as in `tally compare --cold model.bin 'load --read' 'load --mmap'`
/// (a list-taking --cold swallowed the commands as paths).
#[test]
fn cold_takes_one_path_and_the_commands_follow_it() {
    let tmp = scratch("cold");
    let file = tmp.path().join("data.bin");
    std::fs::write(&file, vec![1u8; 64 * 1024]).unwrap();
    let file = file.to_string_lossy().into_owned();
    let (code, r) = compare_json(&["-n", "2", "--cold", &file, &format!("cat {file}"), "true"]);
    assert_eq!(code, 0);
    let commands = r["commands"].as_array().unwrap();
    assert_eq!(commands.len(), 2);
    assert_eq!(commands[1]["command"], "true");
    // The last run of each command says what was evicted before it.
    let cold = &commands[0]["runs"][1]["cold"];
    assert_eq!(cold["files"].as_array().unwrap().len(), 1, "{cold}");
    assert!(
        commands[0]["runs"][0]["cold"].is_null(),
        "only the last run keeps it"
    );
}

/// A cold comparison evicts before every run, and that can cost more than
/// the runs: the report says what it cost (not counted in any run).
#[test]
fn compare_says_what_evicting_and_warming_before_each_run_cost() {
    let tmp = scratch("cold-cost");
    let dir = tmp.path().join("tree");
    std::fs::create_dir(&dir).unwrap();
    for i in 0..50 {
        std::fs::write(dir.join(format!("f{i}")), vec![1u8; 8192]).unwrap();
    }
    let dir = dir.to_string_lossy().into_owned();
    let (code, r) = compare_json(&["-n", "3", "--cold", &dir, "true", "true"]);
    assert_eq!(code, 0, "{r}");
    let p = &r["page_cache"];
    assert_eq!(p["runs"], 6, "{p}");
    assert_eq!(p["evicted_files"], 50, "{p}");
    assert!(p["evict_ns_total"].as_u64().unwrap() > 0, "{p}");
    assert!(p["evict_ns_median"].as_u64().unwrap() > 0, "{p}");
    assert!(p["warmed_files"].is_null(), "{p}");
    let out = tally()
        .args(["compare", "-n", "2", "--warm", &dir, "true", "true"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0));
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        text.contains("\nwarm: 50 files warmed before each of 4 runs:"),
        "{text}"
    );
    let (_, r) = compare_json(&["-n", "2", "true", "true"]);
    assert!(r["page_cache"].is_null(), "{r}");
}

#[test]
fn peak_memory_of_a_small_command_does_not_grow_with_the_rounds() {
    // As in tally run: the records stay out of what the commands inherit.
    let dir = scratch("tiny");
    let tiny = common::tiny_static_command(dir.path());
    let tiny = tiny.to_str().expect("utf-8 path");
    let (code, r) = compare_json(&["-N", "-n", "800", tiny, tiny]);
    assert_eq!(code, 0, "{r}");
    for c in r["commands"].as_array().expect("commands") {
        let rss: Vec<u64> = c["runs"]
            .as_array()
            .expect("runs")
            .iter()
            .map(|x| x["max_rss_bytes"].as_u64().expect("bytes"))
            .collect();
        assert_eq!(rss.len(), 800);
        let med = |s: &[u64]| {
            let mut s = s.to_vec();
            s.sort_unstable();
            s[s.len() / 2]
        };
        let (first, last) = (med(&rss[..100]), med(&rss[700..]));
        assert!(
            last <= first + 128 * 1024,
            "peak memory rose from {first} to {last} bytes over 800 rounds"
        );
    }
}

/// Peak memory (bytes) of each run of command `i` in a JSON report.
fn peaks(r: &Value, i: usize) -> Vec<u64> {
    r["commands"][i]["runs"]
        .as_array()
        .expect("runs")
        .iter()
        .map(|x| x["max_rss_bytes"].as_u64().expect("bytes"))
        .collect()
}

fn median(v: &[u64]) -> u64 {
    let mut v = v.to_vec();
    v.sort_unstable();
    v[v.len() / 2]
}

#[test]
fn a_commands_peak_memory_is_its_own_not_the_spawners() {
    // The runs start from a spawner sharing its memory until exec, which
    // hands its own peak to the command (src/run/spawner.rs): it must stay
    // below the smallest ordinary program, a dynamically linked
    // `main(){}`, which `tally run` (fork) measures the same. (Below a
    // static glibc one too, when tally was linked against glibc: its
    // spawner's peak was 560 KiB there, 832 KiB linked against musl,
    // whose start-up costs half a millisecond less; docs/compare.md.)
    let dir = scratch("own-peak");
    let tiny = common::tiny_dynamic_command(dir.path());
    let tiny = tiny.to_str().expect("utf-8 path");
    let (code, r) = compare_json(&["-N", "-n", "30", tiny, tiny]);
    assert_eq!(code, 0, "{r}");
    let out = tally()
        .args(["run", "-n", "30", "--format", "json", "-o", "-", "--", tiny])
        .output()
        .expect("tally runs");
    assert!(out.status.success(), "{out:?}");
    let run: Value = serde_json::from_slice(&out.stdout).expect("JSON");
    let by_run: Vec<u64> = run["runs"]
        .as_array()
        .expect("runs")
        .iter()
        .map(|x| x["max_rss_bytes"].as_u64().expect("bytes"))
        .collect();
    let forked = median(&by_run);
    for i in 0..2 {
        let shared = median(&peaks(&r, i));
        // The kernel's resident-set counters are per-CPU and read
        // approximately (a few dozen pages either way on two CPUs).
        assert!(
            shared.abs_diff(forked) <= 192 * 1024,
            "compare measured {shared} bytes, run (fork) {forked}: the spawner's own peak is \
             too high (is link/run-hot-path.order stale? run link/order-hot-path.sh)"
        );
    }
    spawner_peak_within_the_counters_error(&r, forked);
}

/// The spawner's own peak, named by a warning that a command's peak
/// memory is an upper bound, stays within the kernel's error of counting
/// resident pages (per-CPU counters read approximately: a few dozen pages
/// either way on two CPUs, 192 KiB as above) of `own`, the peak of the
/// smallest static program: a spawner that grew would be flagged for
/// every small command, and this fails.
fn spawner_peak_within_the_counters_error(r: &Value, own: u64) {
    for w in r["warnings"].as_array().expect("warnings") {
        let w = w.as_str().unwrap_or_default();
        if !w.contains("upper bound") {
            continue;
        }
        let floor_kib: u64 = w
            .split("peak memory at most ")
            .nth(1)
            .and_then(|t| t.split(" KiB").next())
            .and_then(|n| n.replace(',', "").parse().ok())
            .unwrap_or_else(|| panic!("no floor in {w}"));
        assert!(
            floor_kib * 1024 <= own + 192 * 1024,
            "the spawner's own peak, {floor_kib} KiB, is beyond the command's {own} bytes: {w}"
        );
    }
}

#[cfg(target_arch = "x86_64")]
#[test]
fn a_command_smaller_than_the_spawner_is_flagged_as_an_upper_bound() {
    // A program of a few pages (no C library): its own peak is below the
    // spawner's, so the figure compare gets is the spawner's, and says so.
    let dir = scratch("smaller");
    let exe = common::compile_c(
        dir.path(),
        "exit",
        "void _start(void) { __asm__ volatile(\"mov $60, %eax\\n xor %edi, %edi\\n syscall\"); }\n",
        &["-O2", "-static", "-nostdlib"],
    );
    let exe = exe.to_str().expect("utf-8 path");
    // Two warm-up runs each, not counted: they are not reported.
    let (code, r) = compare_json(&["-N", "-w", "2", "-n", "5", exe, exe]);
    assert_eq!(code, 0, "{r}");
    let warnings = r["warnings"].as_array().expect("warnings");
    // The runs are flagged. Not each command in every run, nor always both
    // commands: the kernel carries an approximate reading of the spawner's
    // resident set into the command (per-CPU counters, README, Limits),
    // and the spawner reads one of itself later: under the load of the
    // whole suite, one command's five runs all read a few pages above the
    // spawner's 672 KiB once.
    let floors: Vec<u64> = warnings
        .iter()
        .filter_map(Value::as_str)
        .filter(|w| w.contains("upper bounds"))
        .map(|w| {
            w.split("peak memory at most ")
                .nth(1)
                .and_then(|t| t.split(" KiB").next())
                .and_then(|n| n.replace(',', "").parse().ok())
                .unwrap_or_else(|| panic!("no floor in {w}"))
        })
        .collect();
    assert!(!floors.is_empty(), "no run flagged: {warnings:?}");
    // Every run read the spawner's peak, give or take the counters' error
    // (192 KiB on two CPUs, as in `spawner_peak_within_the_counters_error`):
    // none is the program's own few pages.
    let floor = floors.iter().max().copied().unwrap_or(0) * 1024;
    for i in 0..2 {
        for peak in peaks(&r, i) {
            assert!(
                peak.abs_diff(floor) <= 192 * 1024,
                "command {i}: a run read {peak} bytes, the spawner's peak {floor}: {r}"
            );
        }
    }
}

#[test]
fn a_killed_compare_leaves_neither_its_spawner_nor_the_command() {
    let tmp = scratch("killed");
    let pidfile = tmp.path().join("pid");
    let script = format!("echo $$ > {}; exec sleep 30", pidfile.display());
    let child = common::tally_std()
        .args([
            // The same command twice: whichever the order starts with
            // writes its pid.
            "compare", "-n", "3", "--format", "json", &script, &script,
        ])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let tally_pid = child.id();
    let guard = common::Reaper(vec![child]);
    let pid = pid_written_to(&pidfile);
    // The command's parent: tally's spawner, itself tally's child.
    let parent_of = |pid: u32| -> Option<u32> {
        let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
        stat.rsplit_once(')')?
            .1
            .split_whitespace()
            .nth(1)?
            .parse()
            .ok()
    };
    let spawner = parent_of(pid).expect("the command's parent");
    assert_eq!(parent_of(spawner), Some(tally_pid), "spawner {spawner}");
    let killed = common::command("kill")
        .args(["-KILL", &tally_pid.to_string()])
        .status()
        .unwrap();
    assert!(killed.success());
    drop(guard);
    // Gone, or a zombie waiting for whoever reaps orphans here.
    let alive = |pid: u32| {
        std::fs::read_to_string(format!("/proc/{pid}/stat"))
            .ok()
            .and_then(|s| {
                s.rsplit_once(')')
                    .map(|(_, rest)| rest.trim_start().to_string())
            })
            .is_some_and(|rest| !rest.starts_with('Z') && !rest.starts_with('X'))
    };
    let start = Instant::now();
    while (alive(spawner) || alive(pid)) && start.elapsed() < Duration::from_secs(10) {
        std::thread::sleep(Duration::from_millis(20));
    }
    assert!(!alive(spawner), "the spawner {spawner} outlived tally");
    assert!(!alive(pid), "the command {pid} outlived tally");
}

#[test]
fn as_nobody_every_run_has_its_io_figures() {
    // The command opens its own /proc/PID/io before exec: once it has
    // exited, only root could.
    common::require!(common::can_switch_users());
    let bin = common::tally_for_others();
    let out = common::command("setpriv")
        .args(["--reuid=65534", "--regid=65534", "--clear-groups"])
        .arg(&bin)
        .args([
            "compare",
            "-N",
            "-n",
            "20",
            "--format",
            "json",
            "/bin/true",
            "/bin/echo",
        ])
        .current_dir("/")
        .output()
        .expect("setpriv (util-linux) runs");
    assert!(out.status.success(), "{out:?}");
    let r: Value = serde_json::from_slice(&out.stdout).expect("JSON");
    for c in r["commands"].as_array().expect("commands") {
        let runs = c["runs"].as_array().expect("runs");
        assert_eq!(runs.len(), 20);
        for run in runs {
            assert!(
                run["io"]["read_calls"].as_u64().is_some_and(|n| n > 0),
                "{run}"
            );
        }
    }
}

/// The spawner sent its batch of 32 answers while the next command ran,
/// and tally's work on them slowed that run: in 512 + 512 runs of
/// `/bin/true`, the runs at places ≡ 1 (mod 32) took 1.31–1.36× the
/// others' wall time. No period of 8, 16 or 32 and no phase may stand out
/// now (Mann–Whitney of the phase's runs against the rest, Bonferroni over
/// the 56 tests at a family level of 1%, and more than 3% off the rest's
/// median, so that the test itself does not fail by chance on a busy
/// machine; benches/compare_positions.py checks the 5% level). It runs
/// alone (.config/nextest.toml): other tests' processes move its timings.
///
/// A phase that stands out is measured again in a second comparison, and
/// the test fails only if it stands out in both: an effect of the order
/// comes back at the same place, and a burst of the VM's other work does
/// not (once, phase 6 of 16 at 1.068×, p = 1.2e-4, in a clean run of CI).
#[test]
fn the_place_of_a_run_in_the_order_does_not_change_its_wall_time() {
    let first = places_standing_out();
    if first.is_empty() {
        return;
    }
    let second = places_standing_out();
    let both: Vec<String> = first
        .iter()
        .filter_map(|(at, why)| {
            second
                .iter()
                .find(|(again, _)| again == at)
                .map(|(_, why_again)| format!("{why}; again: {why_again}"))
        })
        .collect();
    assert!(both.is_empty(), "{}", both.join("\n"));
}

/// The (period, phase) places of a comparison of 512 + 512 runs of
/// `/bin/true` whose runs stand out from the rest, each with its figures.
fn places_standing_out() -> Vec<((u64, u64), String)> {
    let (code, r) = compare_json(&["-N", "-n", "512", "/bin/true", "/bin/true"]);
    assert_eq!(code, 0, "{r}");
    let mut by_place: Vec<(u64, f64)> = Vec::new();
    for c in r["commands"].as_array().expect("commands") {
        let places = c["run_order"].as_array().expect("run_order");
        let runs = c["runs"].as_array().expect("runs");
        assert_eq!(places.len(), runs.len());
        for (place, run) in places.iter().zip(runs) {
            by_place.push((
                place.as_u64().expect("place"),
                run["wall_ns"].as_f64().expect("wall"),
            ));
        }
    }
    assert_eq!(by_place.len(), 1024);
    let tests: u32 = 8 + 16 + 32;
    let mut standing_out = Vec::new();
    for period in [8u64, 16, 32] {
        for phase in 0..period {
            let (at, rest): (Vec<_>, Vec<_>) = by_place
                .iter()
                .partition(|(place, _)| place % period == phase);
            let at: Vec<f64> = at.iter().map(|(_, w)| *w).collect();
            let rest: Vec<f64> = rest.iter().map(|(_, w)| *w).collect();
            let test = tally::stats::mann_whitney(&at, &rest).expect("a test");
            let median = |v: &[f64]| tally::stats::summarize(v).map_or(0.0, |s| s.median);
            let ratio = median(&at) / median(&rest);
            if test.p * f64::from(tests) < 0.01 && (ratio - 1.0).abs() > 0.03 {
                standing_out.push((
                    (period, phase),
                    format!(
                        "period {period} phase {phase}: {ratio:.3}× the rest, p = {:.2e}",
                        test.p
                    ),
                ));
            }
        }
    }
    standing_out
}

/// The seed was 1 in every comparison, so any effect of the order was
/// repeated identically instead of averaged out. Now each comparison
/// draws its own, prints it, and `--seed` replays the order.
#[test]
fn every_comparison_has_its_own_seed_and_seed_replays_the_order() {
    let seeds: Vec<u64> = (0..3)
        .map(|_| {
            let (code, r) = compare_json(&["-N", "-n", "4", "/bin/true", "/bin/true"]);
            assert_eq!(code, 0, "{r}");
            r["seed"].as_u64().expect("a seed in the JSON")
        })
        .collect();
    assert!(
        seeds[0] != seeds[1] && seeds[1] != seeds[2] && seeds[0] != seeds[2],
        "{seeds:?}"
    );
    let order = |seed: &str| {
        let (code, r) = compare_json(&["-N", "-n", "12", "--seed", seed, "/bin/true", "/bin/echo"]);
        assert_eq!(code, 0, "{r}");
        assert_eq!(r["seed"].to_string(), seed);
        r["commands"][0]["run_order"].clone()
    };
    let seed = seeds[0].to_string();
    assert_eq!(
        order(&seed),
        order(&seed),
        "--seed {seed} replays the order"
    );
    assert_ne!(order("1"), order("2"));
    let human = tally()
        .args([
            "compare",
            "-N",
            "-n",
            "3",
            "--seed",
            "77",
            "/bin/true",
            "/bin/true",
        ])
        .output()
        .expect("tally runs");
    let text = String::from_utf8_lossy(&human.stdout);
    assert!(text.contains("seed 77 (--seed 77 replays it)"), "{text}");
}

/// `compare -n 3 'sleep 0.001' 'sleep 0.07'` printed a 73.6× ratio and
/// "no significant difference": three runs of each cannot reach p < 0.05.
/// Now it says too few runs, and how many would do.
#[test]
fn three_runs_each_say_too_few_runs_never_no_difference() {
    let out = tally()
        .args(["compare", "-n", "3", "sleep 0.001", "sleep 0.07"])
        .output()
        .expect("tally runs");
    let text = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(0), "{text}");
    assert!(!text.contains("significant"), "{text}");
    assert!(text.contains("too few runs (need "), "{text}");
    assert!(
        text.split_whitespace()
            .collect::<Vec<_>>()
            .join(" ")
            .contains("3 runs of each are too few for a verdict"),
        "{text}"
    );
    let (_, r) = compare_json(&["-n", "3", "sleep 0.001", "sleep 0.07"]);
    let wall = versus(&r, 1, "wall_ns");
    assert_eq!(wall["verdict"], "too-few-runs", "{wall}");
    let needed = wall["runs_needed"].as_u64().expect("runs_needed");
    assert!(needed > 3, "{wall}");
    // With that many runs the difference is found.
    let (_, r) = compare_json(&["-n", &needed.to_string(), "sleep 0.001", "sleep 0.07"]);
    assert_eq!(versus(&r, 1, "wall_ns")["verdict"], "higher");
}

/// Each figure was tested alone at 5%, so some figure of a command
/// against itself came out "significant" in 9 of 40 comparisons. The
/// family's intervals are now at 1 − alpha/m (Bonferroni), and the report
/// says so.
#[test]
fn a_command_against_itself_reports_the_correction_and_its_headline() {
    let (code, r) = compare_json(&["-N", "-n", "30", "/bin/true", "/bin/true"]);
    assert_eq!(code, 0, "{r}");
    assert_eq!(r["correction"], "bonferroni");
    let m = r["family_size"].as_u64().expect("family_size");
    assert!(m >= 1, "{r}");
    let level = r["interval_level"].as_f64().expect("interval_level");
    assert!(
        (level - (1.0 - 0.05 / m as f64)).abs() < 1e-9,
        "{level} {m}"
    );
    assert!(
        r["threshold"]
            .as_f64()
            .is_some_and(|t| (t - 0.01).abs() < 1e-12)
    );
    let other = 1 - r["reference"].as_u64().expect("reference") as usize;
    let headline = r["commands"][other]["headline"].as_str().expect("headline");
    assert!(
        headline.starts_with(&format!("#{} /bin/true: ", other + 1)),
        "{headline}"
    );
    for v in r["commands"][other]["versus_reference"]
        .as_array()
        .expect("versus")
    {
        let (p, adjusted) = (
            v["p_value"].as_f64().expect("p"),
            v["p_adjusted"].as_f64().expect("p_adjusted"),
        );
        assert!(adjusted >= p, "{v}");
    }
}

/// The help's `-P n` example read `xz -T` and a line break: clap turns
/// `{n}` into one anywhere in help text.
#[test]
fn the_help_examples_print_as_written() {
    let out = tally()
        .args(["compare", "--help"])
        .output()
        .expect("tally runs");
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("'xz -T{t} -c big > /dev/null'"), "{text}");
}

/// The options CI scripts take from hyperfine are there, under its names.
#[test]
fn help_lists_the_options_named_as_hyperfine_names_them() {
    let out = tally()
        .args(["compare", "--help"])
        .output()
        .expect("tally runs");
    let text = String::from_utf8_lossy(&out.stdout);
    for option in [
        "--input <FILE>",
        "--command-output <WHERE>",
        "--shell <SHELL>",
        "--conclude <CMD>",
        "--sort <METHOD>",
        "--time-unit <UNIT>",
        "--parameter-step-size <STEP>",
        "--fail-on <FIGURE=PCT>",
        "--baseline <FILE>",
        "--save-baseline <FILE>",
    ] {
        assert!(text.contains(option), "{option}: {text}");
    }
    assert!(
        text.contains("3 when --fail-on found a regression"),
        "{text}"
    );
}

#[test]
fn a_decimal_parameter_scan_runs_each_value_exactly() {
    let (code, r) = compare_json(&[
        "-n",
        "2",
        "-P",
        "d",
        "0.001",
        "0.003",
        "-D",
        "0.001",
        "sleep {d}",
    ]);
    assert_eq!(code, 0, "{r}");
    let commands: Vec<&str> = r["commands"]
        .as_array()
        .expect("commands")
        .iter()
        .map(|c| c["command"].as_str().expect("command"))
        .collect();
    assert_eq!(commands, ["sleep 0.001", "sleep 0.002", "sleep 0.003"]);
    let out = tally()
        .args(["compare", "-n", "2", "-P", "d", "0.1", "0.3", "sleep {d}"])
        .output()
        .expect("tally runs");
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("needs its step"));
}

/// Every run reads `--input` from its start (the spawner rewinds it
/// between runs), and `--command-output FILE` holds the last run's output.
#[test]
fn every_run_reads_the_whole_input_and_the_output_file_holds_the_last_run() {
    let dir = scratch("input");
    let input = dir.path().join("in.txt");
    std::fs::write(&input, b"x\n".repeat(50_000)).unwrap();
    let output = dir.path().join("out.txt");
    let (code, r) = compare_json(&[
        "-N",
        "-n",
        "5",
        "--input",
        input.to_str().unwrap(),
        "--command-output",
        output.to_str().unwrap(),
        "wc -l",
        "wc -l",
    ]);
    assert_eq!(code, 0, "{r}");
    let read: Vec<u64> = r["commands"][0]["runs"]
        .as_array()
        .expect("runs")
        .iter()
        .map(|run| run["io"]["read_call_bytes"].as_u64().expect("rchar"))
        .collect();
    assert_eq!(read.len(), 5);
    assert!(read.iter().all(|b| *b >= 100_000), "{read:?}");
    assert_eq!(std::fs::read_to_string(&output).unwrap(), "50000\n");
    // Not a file to read again: refused before any run.
    let fifo = dir.path().join("fifo");
    assert!(
        common::command("mkfifo")
            .arg(&fifo)
            .status()
            .is_ok_and(|s| s.success())
    );
    let marker = dir.path().join("ran");
    let out = tally()
        .args(["compare", "-n", "2", "--input"])
        .arg(&fifo)
        .arg(format!("touch {}", marker.display()))
        .arg("true")
        .output()
        .expect("tally runs");
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(
        err.contains("--input") && err.contains("give a file"),
        "{err}"
    );
    assert!(!marker.exists());
}

/// Commands read /dev/null, not tally's stdin: `cat` ends though tally's
/// stdin stays open.
#[test]
fn a_command_reads_dev_null_by_default_not_tallys_stdin() {
    let child = common::tally_std()
        .args(["compare", "-n", "2", "cat", "cat", "-o", "/dev/null"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("tally starts");
    let out = common::wait_or_kill(child, Duration::from_secs(60));
    assert!(out.status.success(), "{out:?}");
}

/// `pipe`: tally reads and discards what the commands write, so one that
/// writes more than a pipe holds still ends.
#[test]
fn a_piped_commands_output_is_read_so_it_never_blocks() {
    let child = common::tally_std()
        .args([
            "compare",
            "-n",
            "3",
            "--command-output",
            "pipe",
            "head -c 1000000 /dev/zero",
            "head -c 1000000 /dev/zero",
            "--format",
            "json",
        ])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("tally starts");
    let out = common::wait_or_kill(child, Duration::from_secs(60));
    assert!(out.status.success(), "{out:?}");
    let r: Value = serde_json::from_slice(&out.stdout).expect("JSON");
    for run in r["commands"][0]["runs"].as_array().expect("runs") {
        assert!(run["io"]["write_call_bytes"].as_u64().expect("wchar") >= 1_000_000);
    }
}

/// `--prepare` before and `--conclude` after every run, warm-up ones too.
#[test]
fn conclude_runs_after_every_run_and_prepare_before() {
    let dir = scratch("conclude");
    let log = dir.path().join("log");
    let log = log.to_str().unwrap();
    let (code, r) = compare_json(&[
        "-w",
        "1",
        "-n",
        "3",
        "--prepare",
        &format!("echo p >> {log}"),
        "--conclude",
        &format!("echo z >> {log}"),
        &format!("echo c >> {log}"),
        &format!("echo c >> {log}"),
    ]);
    assert_eq!(code, 0, "{r}");
    let text = std::fs::read_to_string(log).unwrap();
    // Two commands, each one warm-up and three runs.
    assert_eq!(text, "p\nc\nz\n".repeat(8), "{text}");
    // A failing --conclude stops the comparison, as --prepare does.
    let out = tally()
        .args(["compare", "-n", "2", "--conclude", "exit 3", "true", ":"])
        .output()
        .expect("tally runs");
    assert_eq!(out.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&out.stderr).contains("--conclude"));
}

#[test]
fn the_shell_option_runs_each_command_string_with_that_shell() {
    let dir = scratch("shell");
    let out_file = dir.path().join("out");
    let out = tally()
        .args([
            "compare",
            "-n",
            "2",
            "--shell",
            "bash --norc",
            "--command-output",
        ])
        .arg(&out_file)
        .args(["echo ${BASH_VERSION:-none}", "echo ${BASH_VERSION:-none}"])
        .args(["-o", "/dev/null"])
        .output()
        .expect("tally runs");
    assert!(out.status.success(), "{out:?}");
    let said = std::fs::read_to_string(&out_file).unwrap();
    assert!(!said.trim().is_empty() && said.trim() != "none", "{said}");
    // `none` is -N: no shell, so `$X` reaches echo as it is.
    let out = tally()
        .args(["compare", "-n", "2", "--shell", "none", "--command-output"])
        .arg(&out_file)
        .args(["/bin/echo $X", "/bin/echo $X", "-o", "/dev/null"])
        .output()
        .expect("tally runs");
    assert!(out.status.success(), "{out:?}");
    assert_eq!(std::fs::read_to_string(&out_file).unwrap(), "$X\n");
    let out = tally()
        .args(["compare", "-N", "--shell", "bash", "true"])
        .output()
        .expect("tally runs");
    assert_eq!(out.status.code(), Some(2));
}

#[test]
fn sort_and_time_unit_lay_out_the_human_table() {
    let out = tally()
        .args([
            "compare",
            "-n",
            "6",
            "--sort",
            "median-time",
            "-u",
            "millisecond",
            "sleep 0.08",
            "sleep 0.01",
        ])
        .output()
        .expect("tally runs");
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{text}");
    let rows: Vec<&str> = text
        .lines()
        .skip_while(|l| *l != "wall time")
        .skip(1)
        .take(2)
        .collect();
    assert_eq!(rows.len(), 2, "{text}");
    assert!(rows[0].starts_with("  #2 "), "fastest first: {text}");
    assert!(rows.iter().all(|r| r.contains("ms ±")), "{text}");
}

/// `--input` and `--command-output FILE` are set up in tally and reset by
/// the spawner between runs: the command's peak memory stays its own.
#[test]
fn a_commands_peak_memory_stays_its_own_with_input_and_output_files() {
    let dir = scratch("peak-streams");
    // The smallest ordinary program, as in the test above: a static one
    // is smaller than the spawner linked against musl.
    let tiny = common::tiny_dynamic_command(dir.path());
    let tiny = tiny.to_str().expect("utf-8 path");
    let input = dir.path().join("in");
    std::fs::write(&input, b"data\n").unwrap();
    let output = dir.path().join("out");
    let (code, plain) = compare_json(&["-N", "-n", "30", tiny, tiny]);
    assert_eq!(code, 0, "{plain}");
    let (code, with) = compare_json(&[
        "-N",
        "-n",
        "30",
        "--input",
        input.to_str().unwrap(),
        "--command-output",
        output.to_str().unwrap(),
        tiny,
        tiny,
    ]);
    assert_eq!(code, 0, "{with}");
    for i in 0..2 {
        let (a, b) = (median(&peaks(&plain, i)), median(&peaks(&with, i)));
        assert!(
            a.abs_diff(b) <= 192 * 1024,
            "peak memory {a} bytes without the streams, {b} with"
        );
    }
    spawner_peak_within_the_counters_error(&with, median(&peaks(&plain, 0)));
}

/// The spawner stays on one CPU (see `run::spawner`); the commands it
/// starts and the hooks tally runs must not: each may run on every CPU
/// tally may, as it would without tally.
#[test]
fn a_compared_command_may_run_on_every_cpu_tally_may() {
    let tmp = scratch("cpus");
    let seen = tmp.path().join("cpus");
    let allowed = |status: &str| {
        status
            .lines()
            .find_map(|l| l.strip_prefix("Cpus_allowed_list:"))
            .map(|v| v.trim().to_string())
    };
    let ours = allowed(&std::fs::read_to_string("/proc/self/status").unwrap()).unwrap();
    let cmd = format!(
        "grep Cpus_allowed_list /proc/self/status >> {}",
        seen.display()
    );
    // Each line `cmd` wrote in a comparison with `args`, the same as
    // tally's own list, as many as `lines`.
    let each_sees_ours = |args: &[&str], lines: usize| {
        let _ = std::fs::remove_file(&seen);
        let out = tally().arg("compare").args(args).output().unwrap();
        assert_eq!(out.status.code(), Some(0), "{out:?}");
        let text = std::fs::read_to_string(&seen).unwrap();
        let lists: Vec<_> = text.lines().filter_map(allowed).collect();
        assert_eq!(lists.len(), lines, "{args:?}: {text}");
        assert!(
            lists.iter().all(|l| *l == ours),
            "{args:?}: tally may use {ours}: {text}"
        );
    };
    each_sees_ours(&["-n", "3", &cmd, &cmd], 6);
    // Nor its hooks: tally's thread, kept beside the spawner when it has
    // no work between runs, moves freely when it has (a --prepare).
    each_sees_ours(&["-n", "2", "--prepare", &cmd, "true", "true"], 4);
}

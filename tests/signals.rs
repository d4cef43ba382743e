//! Signals, however the suite and tally are started.
//!
//! A job started by `nohup`, `trap '' INT`, a shell's `&` or many CI
//! runners has SIGINT (or SIGHUP) ignored, and exec keeps an ignored
//! signal ignored. Two things must hold then:
//! - the suite's own tests still pass: every process they start goes
//!   through `common::command`, which restores the default dispositions
//!   and an empty mask (`representative_tests_pass_with_sigint_and_sigterm_ignored`
//!   reruns the tests that interrupt tally from a parent ignoring both);
//! - tally still acts on what it is sent: SIGINT, SIGTERM and SIGQUIT stop
//!   a repeated run and are forwarded, while the command keeps the
//!   dispositions tally inherited; an ignored SIGHUP stays ignored
//!   (`nohup`).

mod common;

use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::{Duration, Instant};

use serde_json::Value;

/// The tests, in other test binaries of this suite, that interrupt tally
/// or its children with SIGINT or SIGTERM.
const INTERRUPTING: [(&str, &str); 12] = [
    ("run_cli", "sigint_stops_repeated_runs_with_a_report"),
    ("run_cli", "sigterm_is_forwarded_and_the_run_still_reported"),
    (
        "run_cli",
        "a_second_sigterm_kills_a_command_that_ignores_the_first",
    ),
    (
        "compare_cli",
        "sigint_stops_the_comparison_and_reaps_the_command",
    ),
    (
        "compare_cli",
        "a_killed_compare_leaves_neither_its_spawner_nor_the_command",
    ),
    ("mem_live", "watch_appends_on_a_pipe_and_stops_on_sigint"),
    ("serve", "serve_exits_0_on_sigterm_and_on_sigint"),
    (
        "serve",
        "mem_textfile_every_rewrites_until_sigterm_and_exits_0",
    ),
    ("cp_cli", "cp_interrupted_by_a_signal_leaves_no_temp_file"),
    (
        "load_cli",
        "load_interrupted_stops_reaps_its_load_and_starts_no_other",
    ),
    (
        "load_procs",
        "interrupted_procs_load_kills_and_reaps_every_process",
    ),
    ("bench_map", "interrupted_fsops_leaves_no_file"),
];

/// The newest test binary of `name` beside this one (cargo names them
/// `NAME-HASH` in the same directory).
fn test_binary(name: &str) -> PathBuf {
    let me = std::env::current_exe().expect("current_exe");
    let dir = me.parent().expect("a directory");
    let prefix = format!("{name}-");
    std::fs::read_dir(dir)
        .expect("read the test binaries' directory")
        .filter_map(Result::ok)
        .filter(|e| {
            let n = e.file_name();
            let n = n.to_string_lossy();
            n.starts_with(&prefix)
                && n[prefix.len()..].chars().all(|c| c.is_ascii_hexdigit())
                && e.metadata().is_ok_and(|m| m.is_file())
        })
        .max_by_key(|e| e.metadata().and_then(|m| m.modified()).ok())
        .map(|e| e.path())
        .unwrap_or_else(|| panic!("no test binary {name}-* in {}", dir.display()))
}

/// `SigIgn` of a process started by `env --ignore-signal=...` (the parent
/// the tests below are run from), as a bit mask.
fn ignored_mask_under(ignore: &[&str]) -> u64 {
    let out = common::command("env")
        .args(ignore.iter().map(|s| format!("--ignore-signal={s}")))
        .args(["cat", "/proc/self/status"])
        .output()
        .expect("env (coreutils 8.31+) runs");
    assert!(out.status.success(), "{out:?}");
    let text = String::from_utf8_lossy(&out.stdout);
    let hex = text
        .lines()
        .find_map(|l| l.strip_prefix("SigIgn:"))
        .expect("SigIgn line")
        .trim();
    u64::from_str_radix(hex, 16).expect("hex mask")
}

fn bit(sig: i32) -> u64 {
    1 << (sig - 1)
}

#[test]
fn representative_tests_pass_with_sigint_and_sigterm_ignored() {
    let ignore = ["INT", "TERM"];
    // The premise: a process started this way has both ignored.
    let mask = ignored_mask_under(&ignore);
    assert_eq!(
        mask & (bit(libc_sig::SIGINT) | bit(libc_sig::SIGTERM)),
        bit(libc_sig::SIGINT) | bit(libc_sig::SIGTERM),
        "env did not ignore SIGINT and SIGTERM: SigIgn {mask:x}"
    );
    let mut failed = Vec::new();
    for (binary, test) in INTERRUPTING {
        let child = common::command("env")
            .args(ignore.iter().map(|s| format!("--ignore-signal={s}")))
            .arg(test_binary(binary))
            .args(["--exact", test, "--test-threads=1", "--nocapture"])
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("the test binary runs");
        // A signal that does nothing leaves a test waiting: a hang is a
        // failure here, not the suite's timeout.
        let Some(out) = wait_at_most(child, Duration::from_secs(90)) else {
            failed.push(format!(
                "{binary}::{test}: still running after 90 s (killed)"
            ));
            continue;
        };
        let text = String::from_utf8_lossy(&out.stdout);
        if !out.status.success() || !text.contains("1 passed") {
            failed.push(format!(
                "{binary}::{test}: {}\n{text}{}",
                out.status,
                String::from_utf8_lossy(&out.stderr)
            ));
        }
    }
    assert!(failed.is_empty(), "{}", failed.join("\n\n"));
}

/// The output of `child`, or `None` when it ran past `limit` (then it
/// is killed).
fn wait_at_most(mut child: std::process::Child, limit: Duration) -> Option<std::process::Output> {
    let start = Instant::now();
    while child.try_wait().expect("try_wait").is_none() {
        if start.elapsed() > limit {
            let _ = child.kill();
            let _ = child.wait();
            return None;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    Some(child.wait_with_output().expect("wait"))
}

/// Signal numbers (x86_64 and aarch64 Linux agree on these).
mod libc_sig {
    pub const SIGINT: i32 = 2;
    pub const SIGTERM: i32 = 15;
}

fn wait_for(path: &Path, what: &str) {
    let start = Instant::now();
    while !path.exists() {
        assert!(
            start.elapsed() < Duration::from_secs(20),
            "timed out waiting for {what}"
        );
        std::thread::sleep(Duration::from_millis(10));
    }
}

fn kill(sig: &str, pid: u32) {
    let sent = common::command("kill")
        .args([&format!("-{sig}"), &pid.to_string()])
        .status()
        .expect("kill runs");
    assert!(sent.success());
}

/// A command that writes its `SigIgn` mask to `mask`, then touches
/// `ready`, then sleeps 0.2 s: (the script, ready, mask).
fn probe(dir: &Path) -> (String, PathBuf, PathBuf) {
    let (ready, mask) = (dir.join("ready"), dir.join("mask"));
    let script = format!(
        "grep SigIgn /proc/self/status > {}; touch {}; sleep 0.2",
        mask.display(),
        ready.display()
    );
    (script, ready, mask)
}

/// The `SigIgn` mask a command wrote to `path` (`grep SigIgn /proc/self/status`).
fn mask_in(path: &Path) -> u64 {
    let text = std::fs::read_to_string(path).expect("the command's SigIgn");
    let hex = text.trim().trim_start_matches("SigIgn:").trim();
    u64::from_str_radix(hex, 16).expect("hex mask")
}

/// tally started with SIGINT ignored: a SIGINT sent to it still stops the
/// repeated run with a report; the command, which inherited SIGINT
/// ignored as it would without tally, finishes its run.
#[test]
fn tally_started_with_sigint_ignored_still_stops_a_repeated_run_on_sigint() {
    let dir = tempfile::tempdir().expect("tempdir");
    let (script, ready, mask) = probe(dir.path());
    let child = common::command("env")
        .arg("--ignore-signal=INT")
        .arg(common::tally_bin())
        .args(["run", "-n", "1000", "--format", "json", "--"])
        .args(["sh", "-c", &script])
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("tally starts");
    wait_for(&ready, "the first run");
    std::thread::sleep(Duration::from_millis(50));
    kill("INT", child.id());
    let out = common::wait_or_kill(child, Duration::from_secs(20));
    let report: Value = serde_json::from_slice(&out.stderr).expect("the JSON report");
    assert_eq!(report["interrupted_by"], "SIGINT", "{report}");
    let runs = report["runs"].as_array().expect("runs").len();
    assert!((1..1000).contains(&runs), "{runs} runs");
    assert!(
        mask_in(&mask) & bit(libc_sig::SIGINT) != 0,
        "the command did not inherit SIGINT ignored"
    );
    // The command ignored the forwarded SIGINT and finished its run.
    assert_eq!(report["runs"][runs - 1]["exit"]["code"], 0, "{report}");
}

/// The same for compare, whose runs start from a spawner process: the
/// command inherits SIGINT ignored through it, and SIGINT stops the
/// comparison with the runs so far.
#[test]
fn compare_started_with_sigint_ignored_still_stops_on_sigint() {
    let dir = tempfile::tempdir().expect("tempdir");
    let (script, ready, mask) = probe(dir.path());
    let child = common::command("env")
        .arg("--ignore-signal=INT")
        .arg(common::tally_bin())
        .args([
            "compare",
            "-n",
            "500",
            "--format",
            "json",
            &script,
            "sleep 0.2",
        ])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("tally starts");
    wait_for(&ready, "the first run");
    std::thread::sleep(Duration::from_millis(50));
    kill("INT", child.id());
    let out = common::wait_or_kill(child, Duration::from_secs(30));
    let err = String::from_utf8_lossy(&out.stderr);
    let report: Value = serde_json::from_slice(&out.stdout)
        .unwrap_or_else(|e| panic!("the JSON report: {e}: {err}"));
    assert_eq!(report["interrupted_by"], "SIGINT", "{err}");
    let runs = report["commands"][0]["runs"]
        .as_array()
        .expect("runs")
        .len();
    assert!(runs < 500, "{runs} runs");
    assert!(
        mask_in(&mask) & bit(libc_sig::SIGINT) != 0,
        "the command did not inherit SIGINT ignored"
    );
}

/// `nohup tally run ...`: SIGHUP stays ignored by tally and by the
/// command; the run goes on and is reported in full.
#[test]
fn tally_started_with_sighup_ignored_keeps_it_ignored() {
    let dir = tempfile::tempdir().expect("tempdir");
    let ready = dir.path().join("ready");
    let script = format!("touch {}; sleep 0.5", ready.display());
    let child = common::command("env")
        .arg("--ignore-signal=HUP")
        .arg(common::tally_bin())
        .args([
            "run", "-n", "2", "--format", "json", "--", "sh", "-c", &script,
        ])
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("tally starts");
    wait_for(&ready, "the first run");
    kill("HUP", child.id());
    let out = common::wait_or_kill(child, Duration::from_secs(20));
    assert_eq!(out.status.code(), Some(0), "{out:?}");
    let report: Value = serde_json::from_slice(&out.stderr).expect("the JSON report");
    assert!(report["interrupted_by"].is_null(), "{report}");
    assert_eq!(report["runs"].as_array().expect("runs").len(), 2);
}

//! compare however many commands it is given, and however it is stopped:
//! it finishes, and on SIGTERM, SIGINT or SIGHUP it ends the command with
//! every process the command started, leaving the cut-short run out of
//! the statistics.

mod common;

use std::path::Path;
use std::process::Stdio;
use std::time::{Duration, Instant};

use serde_json::Value;

/// Regression: with about 270 commands or more, tally blocked sending its
/// requests to the spawner while the spawner waited for tally's
/// acknowledgement of the first answer, and neither moved again.
#[test]
fn compare_of_a_thousand_commands_does_not_deadlock_with_its_spawner() {
    // The report goes to a file: a pipe nobody reads until tally exits
    // would hold a report of 1,000 commands.
    let tmp = tempfile::Builder::new()
        .prefix("compare-ends-")
        .tempdir_in(env!("CARGO_TARGET_TMPDIR"))
        .expect("create scratch dir");
    let report = tmp.path().join("report.json");
    let child = common::tally_std()
        .args([
            "compare", "-n", "2", "--format", "json", "-P", "x", "1", "1000", "true {x}",
        ])
        .stdout(std::fs::File::create(&report).unwrap())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let out = common::wait_or_kill(child, Duration::from_secs(300));
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let r: Value = serde_json::from_slice(&std::fs::read(&report).unwrap()).expect("a JSON report");
    let commands = r["commands"].as_array().expect("commands");
    assert_eq!(commands.len(), 1000);
    for c in commands {
        assert_eq!(c["runs"].as_array().map(Vec::len), Some(2), "{c}");
    }
    assert!(r["interrupted_by"].is_null());
}

/// The command line of `pid`, while it exists.
fn cmdline(pid: u32) -> Option<Vec<u8>> {
    std::fs::read(format!("/proc/{pid}/cmdline")).ok()
}

/// Starts `compare` of a shell that leaves a background child and waits
/// for a foreground one, sends it `sig` once all are running, and checks
/// that it ends soon with none of them left and the run left out.
fn stop_with(sig: &str, code: i32) {
    // A number no other test sleeps for, to tell these processes apart.
    let script = "sleep 1000037 & sleep 1000037";
    let child = common::tally_std()
        .args(["compare", "-n", "3", "--format", "json", script, script])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let tally = child.id();
    let guard = common::Reaper(Vec::new());
    let start = Instant::now();
    // The spawner, the shell and both sleeps.
    let started = loop {
        let tree: Vec<(u32, Vec<u8>)> = common::descendants(tally)
            .into_iter()
            .filter_map(|p| Some((p, cmdline(p)?)))
            .collect();
        let sleeps = tree
            .iter()
            .filter(|(_, c)| c.starts_with(b"sleep\0"))
            .count();
        if sleeps == 2 {
            break tree;
        }
        assert!(
            start.elapsed() < Duration::from_secs(20),
            "the command's processes did not start: {tree:?}"
        );
        std::thread::sleep(Duration::from_millis(20));
    };
    assert!(started.len() >= 4, "{started:?}");
    let sent = common::command("kill")
        .args([&format!("-{sig}"), &tally.to_string()])
        .status()
        .unwrap();
    assert!(sent.success());
    let signalled = Instant::now();
    let out = common::wait_or_kill(child, Duration::from_secs(10));
    let took = signalled.elapsed();
    let left: Vec<_> = started
        .iter()
        .filter(|(p, c)| cmdline(*p).as_ref() == Some(c))
        .collect();
    drop(guard);
    assert!(
        left.is_empty(),
        "{sig}: still running after tally: {left:?}"
    );
    assert_eq!(
        out.status.code(),
        Some(code),
        "{sig} (after {took:?}): {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let r: Value = serde_json::from_slice(&out.stdout).expect("the report, as JSON");
    assert_eq!(r["interrupted_by"], format!("SIG{sig}"));
    // The run the signal cut short is no measurement.
    assert_eq!(r["commands"][0]["runs"].as_array().map(Vec::len), Some(0));
    assert!(
        r["warnings"].as_array().is_some_and(|w| w.iter().any(|w| w
            .as_str()
            .is_some_and(|w| w.contains("left out of the statistics")))),
        "{}",
        r["warnings"]
    );
    assert!(!Path::new(&format!("/proc/{tally}/cmdline")).exists());
}

/// Regression: SIGTERM reached only `sh`, the processes it started kept
/// running after compare had exited, and the interrupted run entered the
/// statistics.
#[test]
fn sigterm_ends_compare_and_every_process_its_command_started() {
    stop_with("TERM", 143);
}

/// A shell waiting for its foreground child does not end on SIGINT until
/// the child does: the signal goes to the command's whole process group.
#[test]
fn sigint_ends_compare_and_every_process_its_command_started() {
    stop_with("INT", 130);
}

#[test]
fn sighup_ends_compare_and_every_process_its_command_started() {
    stop_with("HUP", 129);
}

//! `tally mem` on this machine's /proc: the exact cross-check against the
//! kernel's own figures, churn, `--watch`, and an unprivileged user.

mod common;

use std::io::{BufRead, BufReader};
use std::process::{Child, Command as StdCommand, Stdio};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use common::Reaper;
use serde_json::Value;

/// The tests here start and end processes; the exact PSS cross-check
/// needs moments when no other process maps or unmaps shared pages, so
/// the tests of this file run one at a time (and, under the suite's
/// runner, alone: .config/nextest.toml).
fn serial() -> std::fs::File {
    common::exclusive("mem_live")
}

fn tally() -> StdCommand {
    common::tally_std()
}

fn sleeper(secs: &str) -> Child {
    common::command("sleep")
        .arg(secs)
        .spawn()
        .expect("sleep starts")
}

fn pss_kb(pid: u32) -> Option<u64> {
    let text = std::fs::read_to_string(format!("/proc/{pid}/smaps_rollup")).ok()?;
    text.lines()
        .find_map(|l| l.strip_prefix("Pss:"))
        .and_then(|r| r.split_whitespace().next()?.parse().ok())
}

fn u(v: &Value) -> u64 {
    v.as_u64().expect("a number")
}

#[test]
fn live_totals_equal_the_kernels_pss_to_the_kb() {
    let _serial = serial();
    let kids = Reaper((0..4).map(|_| sleeper("60")).collect());
    let pids: Vec<u32> = kids.0.iter().map(Child::id).collect();
    let list = pids
        .iter()
        .map(u32::to_string)
        .collect::<Vec<_>>()
        .join(",");
    // Shared pages' PSS moves whenever any process maps or unmaps them,
    // tally itself included (it maps libc as sleep does). So one tally
    // keeps running (--watch) while this test reads the kernel's figures
    // between its frames; a frame must equal them exactly in a window
    // where nothing else on the machine moved them.
    let mut watcher = tally()
        .args([
            "mem", "--watch", "0.05", "--by", "pid", "--format", "json", "--pid", &list,
        ])
        .stdout(Stdio::piped())
        .spawn()
        .expect("starts");
    let stdout = watcher.stdout.take().expect("stdout");
    let _watcher = Reaper(vec![watcher]);
    let frames = serde_json::Deserializer::from_reader(stdout).into_iter::<Value>();
    let mut matched = 0;
    let mut seen = 0;
    for frame in frames.take(100) {
        let frame = frame.expect("a JSON frame");
        seen += 1;
        let kernel: Vec<u64> = pids
            .iter()
            .map(|&p| pss_kb(p).expect("our own sleep is readable"))
            .collect();
        let groups = frame["groups"].as_array().expect("groups");
        assert_eq!(groups.len(), pids.len());
        assert_eq!(u(&frame["total"]["processes"]), 4);
        let rows: u64 = groups.iter().map(|g| u(&g["pss_bytes"])).sum();
        assert_eq!(rows, u(&frame["total"]["pss_bytes"]));
        let per_pid_equal = groups.iter().all(|g| {
            let pid = u(&g["pid"]) as u32;
            let i = pids.iter().position(|&p| p == pid).expect("one of ours");
            g["name"] == "sleep" && u(&g["pss_bytes"]) == kernel[i] * 1024
        });
        let kernel_bytes = kernel.iter().sum::<u64>() * 1024;
        if per_pid_equal && u(&frame["total"]["pss_bytes"]) == kernel_bytes {
            matched += 1;
            if matched >= 2 {
                return;
            }
        }
    }
    panic!("only {matched} of {seen} frames equalled the kernel's Pss to the kB");
}

#[test]
fn churn_200_runs_while_processes_come_and_go() {
    let _serial = serial();
    let stop = Arc::new(AtomicBool::new(false));
    let churner = {
        let stop = Arc::clone(&stop);
        std::thread::spawn(move || {
            let mut live: Vec<Child> = Vec::new();
            let mut started = 0u64;
            while !stop.load(Ordering::Relaxed) {
                let secs = ["0", "0.01", "0.03"][(started % 3) as usize];
                if let Ok(c) = common::command("sleep").arg(secs).spawn() {
                    live.push(c);
                    started += 1;
                }
                live.retain_mut(|c| !matches!(c.try_wait(), Ok(Some(_))));
                // A few hundred starts a second: enough to end processes
                // mid-scan, not so many that two cores do nothing else.
                std::thread::sleep(Duration::from_millis(if live.len() > 40 { 10 } else { 2 }));
            }
            for mut c in live {
                let _ = c.kill();
                let _ = c.wait();
            }
            started
        })
    };
    let variants: [&[&str]; 4] = [
        &["--format", "json"],
        &["--format", "json", "--by", "user", "--name", "comm"],
        &["--format", "json", "--by", "cgroup", "--split-args"],
        &["--format", "json", "--by", "pid", "--name", "argv0"],
    ];
    let mut ended = 0;
    for i in 0..200 {
        let args = variants[i % variants.len()];
        let out = tally().arg("mem").args(args).output().expect("runs");
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(out.status.success(), "run {i} failed: {stderr}");
        assert!(!stderr.contains("panicked"), "run {i}: {stderr}");
        let r: Value = serde_json::from_slice(&out.stdout).expect("valid JSON");
        let sum: u64 = r["groups"]
            .as_array()
            .expect("groups")
            .iter()
            .map(|g| u(&g["pss_bytes"]))
            .sum();
        assert_eq!(sum, u(&r["total"]["pss_bytes"]), "run {i}");
        ended += u(&r["skipped"]["ended"]);
    }
    stop.store(true, Ordering::Relaxed);
    let started = churner.join().expect("churner");
    eprintln!("churn: {started} processes started; {ended} ended mid-scan over 200 runs");
    assert!(started > 0);
}

/// Waits for a child up to `limit`, killing it if it does not end.
fn wait_for(child: &mut Child, limit: Duration) -> std::process::ExitStatus {
    let start = Instant::now();
    loop {
        if let Some(status) = child.try_wait().expect("wait") {
            return status;
        }
        if start.elapsed() > limit {
            let _ = child.kill();
            panic!("tally did not stop within {limit:?}");
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

#[test]
fn watch_appends_on_a_pipe_and_stops_on_sigint() {
    let _serial = serial();
    let mut child = tally()
        .args(["mem", "--watch", "0.1", "--total-only"])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("starts");
    let stdout = child.stdout.take().expect("stdout");
    let mut lines = BufReader::new(stdout).lines();
    let mut totals = 0;
    while totals < 3 {
        let line = lines.next().expect("a frame").expect("text");
        assert!(
            !line.contains('\x1b'),
            "no redraw codes on a pipe: {line:?}"
        );
        // --total-only: each frame is one figure, the RAM used.
        if line.ends_with(" MiB") {
            totals += 1;
        }
    }
    let pid = child.id().to_string();
    let killed = common::command("kill")
        .args(["-INT", &pid])
        .status()
        .expect("kill");
    assert!(killed.success());
    let status = wait_for(&mut child, Duration::from_secs(10));
    assert_eq!(status.code(), Some(0), "SIGINT ends --watch cleanly");
}

#[test]
fn watch_ends_quietly_when_the_pipe_closes() {
    let _serial = serial();
    let mut child = tally()
        .args(["mem", "--watch", "0.05", "--by", "pid"])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("starts");
    let stdout = child.stdout.take().expect("stdout");
    let mut first = String::new();
    BufReader::new(stdout)
        .read_line(&mut first)
        .expect("one line");
    assert!(first.contains("Private"), "{first}");
    // The reader is dropped here: the next frame meets a closed pipe.
    let status = wait_for(&mut child, Duration::from_secs(10));
    let mut err = String::new();
    std::io::Read::read_to_string(&mut child.stderr.take().expect("stderr"), &mut err)
        .expect("stderr");
    assert_eq!(status.code(), Some(0), "{err}");
    assert!(
        !err.contains("Broken pipe") && !err.contains("panicked"),
        "{err}"
    );
}

#[test]
fn an_ordinary_user_sees_its_own_processes_and_is_told_the_fix() {
    let _serial = serial();
    common::require!(common::can_switch_users());
    let bin = common::tally_for_others();
    let own_sleep = common::command("setpriv")
        .args([
            "--reuid=65534",
            "--regid=65534",
            "--clear-groups",
            "sleep",
            "30",
        ])
        .spawn()
        .expect("setpriv sleep");
    let own_pid = own_sleep.id();
    let _sleeps = Reaper(vec![sleeper("30"), own_sleep]);
    // setpriv changes user before it execs sleep.
    let start = std::time::Instant::now();
    while !std::fs::read_to_string(format!("/proc/{own_pid}/cmdline"))
        .is_ok_and(|c| c.starts_with("sleep"))
    {
        assert!(start.elapsed() < Duration::from_secs(10), "sleep never ran");
        std::thread::sleep(Duration::from_millis(5));
    }
    let out = common::command("setpriv")
        .args(["--reuid=65534", "--regid=65534", "--clear-groups"])
        .arg(&bin)
        .args(["mem", "--format", "json", "--by", "user"])
        .output()
        .expect("setpriv runs");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    let r: Value = serde_json::from_slice(&out.stdout).expect("valid JSON");
    assert!(
        u(&r["skipped"]["denied"]) >= 1,
        "root's sleep is not ours to read"
    );
    // nobody's sleep is visible (tally leaves itself out), and only
    // nobody's processes are.
    let groups = r["groups"].as_array().expect("groups");
    assert!(!groups.is_empty());
    assert!(groups.iter().all(|g| g["name"] == "nobody"), "{groups:?}");
    // The note is one `tally:` paragraph, wrapped at 100 columns.
    let said = stderr
        .split("tally:")
        .map(str::trim)
        .collect::<Vec<_>>()
        .join(" ");
    assert!(
        said.contains("could not be read (permission denied)"),
        "{stderr}"
    );
    assert!(
        said.contains("setcap cap_sys_ptrace,cap_dac_read_search+ep"),
        "{stderr}"
    );
}

#[test]
fn watch_redraws_in_place_on_a_terminal() {
    let _serial = serial();
    // util-linux's script(1) gives tally a pseudo-terminal.
    let bin = common::tally_bin();
    let cmd = format!("{} mem --watch 0.1 --total-only", bin.display());
    let Ok(mut child) = common::command("script")
        .args(["-qfc", &cmd, "/dev/null"])
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .spawn()
    else {
        common::skip_without_tool!("script", "Debian package bsdutils");
    };
    let mut stdout = child.stdout.take().expect("stdout");
    let _reaper = Reaper(vec![child]);
    let mut seen = Vec::new();
    let mut buf = [0u8; 4096];
    let redraw = b"\x1b[H\x1b[2J";
    let count = |s: &[u8]| s.windows(redraw.len()).filter(|w| w == redraw).count();
    while count(&seen) < 3 {
        let n = std::io::Read::read(&mut stdout, &mut buf).expect("read");
        assert!(n > 0, "ended early: {}", String::from_utf8_lossy(&seen));
        seen.extend_from_slice(buf.get(..n).expect("n <= len"));
    }
    let text = String::from_utf8_lossy(&seen);
    assert!(text.matches(" MiB").count() >= 2, "{text}");
}

#[test]
fn tally_leaves_itself_out() {
    let _serial = serial();
    let child = common::tally_std()
        .args(["mem", "--by", "pid", "--format", "json"])
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("runs");
    let me = u64::from(child.id());
    let out = child.wait_with_output().expect("waits");
    assert!(out.status.success());
    let r: Value = serde_json::from_slice(&out.stdout).expect("valid JSON");
    let pids: Vec<u64> = r["groups"]
        .as_array()
        .expect("groups")
        .iter()
        .filter_map(|g| g["pid"].as_u64())
        .collect();
    assert!(!pids.is_empty(), "other processes are listed");
    assert!(!pids.contains(&me), "tally [{me}] counted itself: {pids:?}");
}

#[test]
fn program_started_through_a_link_is_named_as_started_live() {
    let _serial = serial();
    // As Debian's redis-server, a link to redis-check-rdb.
    let dir = tempfile::tempdir().expect("tempdir");
    let link = dir.path().join("tally-test-server");
    let Ok(sleep) = which_sleep() else {
        common::skip_without_tool!("sleep", "Debian package coreutils");
    };
    std::os::unix::fs::symlink(&sleep, &link).expect("symlink");
    let child = common::command(&link).arg("30").spawn().expect("runs");
    let pid = child.id().to_string();
    let _reaper = Reaper(vec![child]);
    let start = Instant::now();
    while !std::fs::read_to_string(format!("/proc/{pid}/comm"))
        .is_ok_and(|c| c.starts_with("tally-test-serv"))
    {
        assert!(start.elapsed() < Duration::from_secs(10), "never started");
        std::thread::sleep(Duration::from_millis(5));
    }
    let out = common::tally()
        .args(["mem", "--format", "json", "--pid", &pid])
        .output()
        .expect("runs");
    let r: Value = serde_json::from_slice(&out.stdout).expect("valid JSON");
    assert_eq!(r["groups"][0]["name"], "tally-test-server");
    let out = common::tally()
        .args(["mem", "--format", "json", "--filter", "^tally-test-server$"])
        .output()
        .expect("runs");
    let r: Value = serde_json::from_slice(&out.stdout).expect("valid JSON");
    assert_eq!(r["total"]["processes"], 1);
}

/// The sleep executable itself (not a link to it).
fn which_sleep() -> std::io::Result<std::path::PathBuf> {
    ["/usr/bin/sleep", "/bin/sleep"]
        .iter()
        .map(std::path::Path::new)
        .find(|p| p.exists())
        .map(std::fs::canonicalize)
        .unwrap_or_else(|| Err(std::io::ErrorKind::NotFound.into()))
}

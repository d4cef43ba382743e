//! Bounded work for every option: what an option sizes stays within what
//! the machine has, and a bound is said with the figure.

mod common;

use std::process::Stdio;
use std::time::{Duration, Instant};

/// `VmLck` of /proc/PID/status, in KiB.
fn locked_kib(pid: u32) -> Option<u64> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    let line = status.lines().find(|l| l.starts_with("VmLck:"))?;
    line.split_whitespace().nth(1)?.parse().ok()
}

/// `cache --lock` on a sparse file locked its holes: 512 MiB of holes
/// became 524 MB more Mlocked (a 1 GiB sparse file in a 200 MB memory
/// cgroup was OOM-killed without a message). Only the data is locked.
#[test]
fn cache_lock_locked_the_holes_of_a_sparse_file() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("sparse");
    let file = std::fs::File::create(&path).expect("create");
    file.set_len(512 << 20).expect("set_len");
    use std::os::unix::fs::FileExt;
    file.write_all_at(&vec![7u8; 1 << 20], 0).expect("write");
    file.sync_all().expect("sync");
    let child = common::tally_std()
        .args(["cache", "--lock"])
        .arg(&path)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("tally");
    let pid = child.id();
    // Wait until it holds its lock.
    let start = Instant::now();
    let mut locked = None;
    while start.elapsed() < Duration::from_secs(20) {
        locked = locked_kib(pid).filter(|k| *k > 0);
        if locked.is_some() {
            break;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    let _ = common::command("kill")
        .args(["-TERM", &pid.to_string()])
        .status();
    let out = common::wait_or_kill(child, Duration::from_secs(20));
    let err = String::from_utf8_lossy(&out.stderr);
    let locked = locked.unwrap_or_else(|| panic!("never locked: {err}"));
    // 1 MiB of data (and the odd page of the binary's own), not 513 MiB.
    assert!(locked < 8 * 1024, "{locked} KiB locked: {err}");
    assert!(err.contains("holding 1.0 MiB locked"), "{err}");
}

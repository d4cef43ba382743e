//! A tally killed by SIGKILL cannot remove its run's cgroup: the next
//! tally that makes one removes the groups of dead tallies (issue 35,
//! item 13).

mod common;

use std::path::PathBuf;
use std::time::{Duration, Instant};

/// Where this process's cgroup v2 group is (tally makes its run groups
/// beside its own), or why there is none.
fn own_group() -> Result<PathBuf, String> {
    let mountinfo = std::fs::read_to_string("/proc/self/mountinfo").map_err(|e| e.to_string())?;
    let mount = mountinfo
        .lines()
        .find_map(|l| {
            let (left, right) = l.split_once(" - ")?;
            right
                .starts_with("cgroup2 ")
                .then(|| left.split(' ').nth(4))
                .flatten()
        })
        .ok_or("no cgroup v2 hierarchy is mounted")?;
    let cgroup = std::fs::read_to_string("/proc/self/cgroup").map_err(|e| e.to_string())?;
    let own = cgroup
        .lines()
        .find_map(|l| l.strip_prefix("0::"))
        .ok_or("this process has no cgroup v2 group")?;
    Ok(PathBuf::from(mount).join(own.trim_start_matches('/')))
}

/// Waits up to `limit` for `check`.
fn wait_for(limit: Duration, mut check: impl FnMut() -> bool) -> bool {
    let start = Instant::now();
    while start.elapsed() < limit {
        if check() {
            return true;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    check()
}

fn pids(procs: &std::path::Path) -> Vec<i32> {
    std::fs::read_to_string(procs)
        .unwrap_or_default()
        .split_whitespace()
        .filter_map(|p| p.parse().ok())
        .collect()
}

#[test]
fn a_tree_run_killed_by_sigkill_left_its_cgroup_behind() {
    if !common::is_root() {
        common::skip!("making cgroups beside the test's own needs root here");
    }
    let parent = match own_group() {
        Ok(p) => p,
        Err(why) => common::skip!("{why}"),
    };
    let mut tally = common::tally_std()
        .args(["run", "--tree", "--quiet-command", "--", "sleep", "30"])
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .expect("tally runs");
    let group = parent.join(format!("tally-{}-0", tally.id()));
    let procs = group.join("cgroup.procs");
    if !wait_for(Duration::from_secs(10), || !pids(&procs).is_empty()) {
        let _ = tally.kill();
        let _ = tally.wait();
        common::skip!(
            "tally made no cgroup under {} (not root of a writable cgroup v2 tree here)",
            parent.display()
        );
    }
    tally.kill().expect("SIGKILL");
    tally.wait().expect("reaped");
    // The command outlives the killed tally inside the group; end it,
    // so that the group is empty as a finished run's is.
    for pid in pids(&procs) {
        let _ = common::command("kill")
            .args(["-KILL", &pid.to_string()])
            .status();
    }
    assert!(
        wait_for(Duration::from_secs(5), || pids(&procs).is_empty()),
        "the command still runs in {}",
        group.display()
    );
    assert!(group.is_dir(), "the killed tally's group is already gone");
    let out = common::tally_std()
        .args(["run", "--tree", "--quiet-command", "--", "true"])
        .output()
        .expect("tally runs");
    let left = group.is_dir();
    if left {
        let _ = std::fs::remove_dir(&group);
    }
    assert!(out.status.success(), "{out:?}");
    assert!(!left, "the next run left the stale {}", group.display());
}

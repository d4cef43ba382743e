//! A tally killed by SIGKILL cannot remove its run's cgroup: the next
//! tally that makes one removes the groups of dead tallies (issue 35,
//! item 13). And `compare`'s keeper of its runs' group ends with it.

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

/// Whether process `pid` is gone (or a zombie, no longer in any group).
fn gone(pid: i32) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/status"))
        .map(|s| {
            s.lines()
                .any(|l| l.starts_with("State:") && l.contains('Z'))
        })
        .unwrap_or(true)
}

/// The process `compare`'s spawner keeps asleep in the runs' group, so
/// that the group is not emptied and filled again at every run: in the
/// group while the runs go on, ended with the comparison both when it
/// ends and when it stops at a failed run (the spawner then killed), and
/// the group removed after it either way, its leaving not taken for a
/// process a run left.
#[test]
fn a_comparison_keeps_one_process_asleep_in_its_group_and_ends_it_with_the_group() {
    if !common::is_root() {
        common::skip!("making cgroups beside the test's own needs root here");
    }
    let own = match own_group() {
        Ok(p) => p,
        Err(why) => common::skip!("{why}"),
    };
    let cgroup = std::fs::read_to_string("/proc/self/cgroup").expect("own cgroup");
    let rel = cgroup
        .lines()
        .find_map(|l| l.strip_prefix("0::"))
        .expect("a cgroup v2 line")
        .trim_start_matches('/')
        .to_string();
    // The hierarchy's mount: the test's group less its path below it.
    let mount = own
        .to_string_lossy()
        .strip_suffix(&rel)
        .map(|m| m.trim_end_matches('/').to_string())
        .expect("the group's path ends in its cgroup");
    let dir = tempfile::tempdir().expect("tempdir");
    let seen = dir.path().join("seen");
    // Each run writes its group, and the pids in it with their names.
    let script = format!(
        "g=$(sed -n 's/^0:://p' /proc/self/cgroup); echo \"$g\" > {s}.group; \
         for p in $(cat {mount}$g/cgroup.procs); do \
         c=$(cat /proc/$p/comm 2>/dev/null) && echo \"$p $c\"; done > {s}; true",
        s = seen.display()
    );
    for fails in [false, true] {
        let _ = std::fs::remove_file(&seen);
        let command = if fails {
            format!("{script}; exit 1")
        } else {
            script.clone()
        };
        let out = common::tally_std()
            .args(["compare", "-n", "3", &command, "true"])
            .output()
            .expect("tally runs");
        assert_eq!(out.status.code(), Some(u8::from(fails).into()), "{out:?}");
        let group = std::fs::read_to_string(seen.with_extension("group")).unwrap_or_default();
        let group = group.trim();
        if group.is_empty() || group == "/" || !group.contains("tally-") {
            common::skip!("the runs had no group of their own here: {group:?}");
        }
        let listed = std::fs::read_to_string(&seen).unwrap_or_default();
        let keepers: Vec<i32> = listed
            .lines()
            .filter_map(|l| l.split_once(' '))
            .filter(|(_, comm)| *comm == "tally-spawner")
            .filter_map(|(p, _)| p.parse().ok())
            .collect();
        assert_eq!(
            keepers.len(),
            1,
            "one process of tally's asleep beside the command, in {listed:?}"
        );
        assert!(
            wait_for(Duration::from_secs(2), || gone(keepers[0])),
            "the keeper {} outlived the comparison (a failed run: {fails})",
            keepers[0]
        );
        let path = std::path::Path::new(&mount).join(group.trim_start_matches('/'));
        assert!(
            !path.exists(),
            "the run group {} is still there (a failed run: {fails})",
            path.display()
        );
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(
            !stderr.contains("moved back"),
            "the keeper was taken for a process a run left: {stderr}"
        );
    }
}

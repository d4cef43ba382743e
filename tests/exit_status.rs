//! Exit statuses that mean what the help says.

mod common;

use std::path::{Path, PathBuf};
use std::time::Duration;

/// `tally run -n 3` exited with the last run's status: a failing first
/// run and two good ones exited 0 though the report said "1 of 3 runs
/// failed". The first failed run's status is tally's.
#[test]
fn run_n_exited_0_when_an_earlier_run_failed() {
    let dir = tempfile::tempdir().expect("tempdir");
    // Fails (with 3) the first time only, then (with 5) on the third run.
    let script = "n=$(cat count 2>/dev/null || echo 0); n=$((n+1)); echo $n > count; \
                  case $n in 1) exit 3;; 3) exit 5;; *) exit 0;; esac";
    let out = common::tally()
        .args(["run", "-n", "3", "--", "sh", "-c", script])
        .current_dir(dir.path())
        .timeout(Duration::from_secs(60))
        .output()
        .expect("tally runs");
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(3), "{err}");
    assert!(err.contains("2 of 3 runs failed"), "{err}");
    // The last run failing alone is still said.
    std::fs::remove_file(dir.path().join("count")).expect("rm");
    let out = common::tally()
        .args(["run", "-n", "4", "--", "sh", "-c"])
        .arg("n=$(cat count 2>/dev/null || echo 0); n=$((n+1)); echo $n > count; [ $n -lt 4 ]")
        .current_dir(dir.path())
        .timeout(Duration::from_secs(60))
        .output()
        .expect("tally runs");
    assert_eq!(out.status.code(), Some(1), "{out:?}");
    // Every run good: 0.
    let out = common::tally()
        .args(["run", "-n", "3", "--", "true"])
        .timeout(Duration::from_secs(60))
        .output()
        .expect("tally runs");
    assert_eq!(out.status.code(), Some(0), "{out:?}");
    // The help says so.
    let help = common::tally()
        .args(["run", "--help"])
        .output()
        .expect("tally runs");
    let help = String::from_utf8_lossy(&help.stdout);
    assert!(help.contains("first run that failed"), "{help}");
}

/// A small filesystem mounted for the life of the guard.
struct Mounted(PathBuf);

impl Drop for Mounted {
    fn drop(&mut self) {
        let _ = common::command("umount").arg(&self.0).status();
    }
}

fn mount_tiny_tmpfs(at: &Path) -> Option<Mounted> {
    let ok = common::command("mount")
        .args(["-t", "tmpfs", "-o", "size=64k", "tmpfs"])
        .arg(at)
        .status()
        .is_ok_and(|s| s.success());
    ok.then(|| Mounted(at.to_path_buf()))
}

/// `tally bench fileread --dir FULL` said "failed: write a scratch file"
/// and set the benchmark's `error`, yet exited 0, though its help
/// promises 1 when a benchmark failed. The report is still written.
#[test]
fn bench_exited_0_when_a_benchmark_failed() {
    if !common::is_root() {
        common::skip!("needs root to mount a full filesystem for --dir");
    }
    let dir = tempfile::tempdir().expect("tempdir");
    let full = dir.path().join("full");
    std::fs::create_dir(&full).expect("mkdir");
    let Some(_mounted) = mount_tiny_tmpfs(&full) else {
        common::skip!("cannot mount a tmpfs here");
    };
    let report = dir.path().join("b.json");
    let out = common::tally()
        .args(["bench", "fileread", "--quick", "--format", "json", "--dir"])
        .arg(&full)
        .arg("-o")
        .arg(&report)
        .timeout(Duration::from_secs(120))
        .output()
        .expect("tally runs");
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{err}");
    let v: serde_json::Value =
        serde_json::from_slice(&std::fs::read(&report).expect("the report was written"))
            .expect("json");
    let error = v["benchmarks"][0]["error"].as_str().unwrap_or_default();
    assert!(error.contains("No space left"), "{v}");
}

//! Helpers shared by the CLI tests. Each test file is its own crate and
//! uses only some of them.
#![allow(dead_code)]

use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output};
use std::time::{Duration, Instant};

/// The tally binary under test: `$TALLY_BIN` when set (the shipped
/// release build, which `bash tests/release.sh` and `.ci/run` build and
/// name), else the build cargo made for this test run.
pub fn tally_bin() -> PathBuf {
    match std::env::var_os("TALLY_BIN") {
        Some(p) if !p.is_empty() => PathBuf::from(p),
        _ => PathBuf::from(env!("CARGO_BIN_EXE_tally")),
    }
}

/// An assert_cmd command running the binary under test; without
/// `$COLUMNS`, so human tables are not fitted to the caller's terminal
/// (a test that wants a width sets it).
pub fn tally() -> assert_cmd::Command {
    let mut cmd = assert_cmd::Command::new(tally_bin());
    cmd.env_remove("COLUMNS");
    cmd
}

/// A command running the binary under test with every signal at its
/// default action (`env --default-signal`, coreutils 8.31+), whatever the
/// test runner inherited: a shell's background job starts with SIGINT
/// ignored, and tally rightly keeps an ignored signal ignored, so tests
/// that interrupt tally must not depend on how they were started. `env`
/// execs tally, so the child's pid is tally's.
pub fn tally_default_signals() -> Command {
    let mut cmd = Command::new("env");
    cmd.arg("--default-signal").arg(tally_bin());
    cmd
}

/// Children killed and reaped when dropped, so a failing test leaves none.
pub struct Reaper(pub Vec<Child>);

impl Drop for Reaper {
    fn drop(&mut self) {
        for c in &mut self.0 {
            let _ = c.kill();
            let _ = c.wait();
        }
    }
}

/// Whether `path` is on a tmpfs, whose page cache is the file itself and
/// cannot be evicted.
pub fn on_tmpfs(path: &Path) -> bool {
    Command::new("stat")
        .args(["-f", "-c", "%T"])
        .arg(path)
        .output()
        .map(|o| String::from_utf8_lossy(&o.stdout).trim() == "tmpfs")
        .unwrap_or(false)
}

/// Waits for `child` and returns its output; past `limit` it is killed and
/// the test fails with its stderr, so a hang never hangs the suite.
pub fn wait_or_kill(mut child: Child, limit: Duration) -> Output {
    let start = Instant::now();
    while child.try_wait().expect("try_wait").is_none() {
        if start.elapsed() > limit {
            let _ = child.kill();
            let out = child.wait_with_output().expect("wait");
            panic!(
                "still running after {limit:?}: {}",
                String::from_utf8_lossy(&out.stderr)
            );
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    child.wait_with_output().expect("wait")
}

/// The bytes of `path` as lowercase hex, as tally's JSON writes a path
/// that is not UTF-8 (`bytes_hex`).
pub fn hex_of(path: &Path) -> String {
    path.as_os_str()
        .as_bytes()
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

/// The entries of `dir`, sorted.
pub fn entries(dir: &Path) -> Vec<PathBuf> {
    let mut v: Vec<PathBuf> = std::fs::read_dir(dir)
        .expect("read_dir")
        .map(|e| e.expect("entry").path())
        .collect();
    v.sort();
    v
}

/// A static `int main(void) { return 0; }`, built with `cc -static` in
/// `dir`: a command whose own peak memory is about half a megabyte, small
/// enough to show anything tally adds to it.
#[allow(dead_code)]
pub fn tiny_static_command(dir: &Path) -> PathBuf {
    let src = dir.join("tiny.c");
    std::fs::write(&src, "int main(void) { return 0; }\n").expect("write tiny.c");
    let exe = dir.join("tiny");
    let out = Command::new("cc")
        .args(["-O2", "-static", "-o"])
        .arg(&exe)
        .arg(&src)
        .output()
        .expect("cc runs (the Rust toolchain links with it)");
    assert!(
        out.status.success(),
        "cc -static failed (install libc6-dev): {}",
        String::from_utf8_lossy(&out.stderr)
    );
    exe
}

/// Runs `promtool check metrics` on `text`: its exit status and what it
/// printed (nothing when the metrics pass).
#[allow(dead_code)]
pub fn promtool_check_metrics(promtool: &Path, text: &str) -> (std::process::ExitStatus, String) {
    use std::io::Write as _;
    use std::process::Stdio;
    let mut child = Command::new(promtool)
        .args(["check", "metrics"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("promtool starts");
    child
        .stdin
        .take()
        .expect("stdin piped")
        .write_all(text.as_bytes())
        .expect("promtool reads the metrics");
    let out = child.wait_with_output().expect("promtool ends");
    let said = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    (out.status, said)
}

//! Helpers shared by the CLI tests. Each test file is its own crate and
//! uses only some of them.
#![allow(dead_code, unused_macros)]

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

/// A command for `program`, as every process the tests start is made:
/// with every signal at its default action and an empty signal mask,
/// whatever the test runner inherited (a job started by `nohup`,
/// `trap '' INT` or a CI runner has SIGINT ignored, and exec keeps it
/// ignored, so a test's SIGINT would do nothing). Dispositions pass through
/// exec, so this holds for tally started through `setpriv`, `sh` or `env`.
/// `tests/suite_rules.rs` checks that no test starts a process otherwise.
pub fn command(program: impl AsRef<std::ffi::OsStr>) -> Command {
    let mut cmd = Command::new(program);
    tally::sys::signals::start_with_default_signals(&mut cmd);
    cmd
}

/// A `std` command running the binary under test (see [`command`]);
/// without `$COLUMNS`, so human tables are not fitted to the caller's
/// terminal (a test that wants a width sets it).
pub fn tally_std() -> Command {
    let mut cmd = command(tally_bin());
    cmd.env_remove("COLUMNS");
    cmd
}

/// [`tally_std`] as an assert_cmd command.
pub fn tally() -> assert_cmd::Command {
    assert_cmd::Command::from_std(tally_std())
}

/// Children killed and reaped when dropped, with every process they
/// started (a `sh -c 'sleep 60; :'` leaves its sleep otherwise), so a test,
/// failing or not, leaves none.
pub struct Reaper(pub Vec<Child>);

impl Drop for Reaper {
    fn drop(&mut self) {
        for c in &mut self.0 {
            let tree = descendants(c.id());
            let _ = c.kill();
            for pid in tree {
                let _ = command("kill").args(["-KILL", &pid.to_string()]).output();
            }
            let _ = c.wait();
        }
    }
}

/// The processes `pid` started, and theirs (`/proc/PID/task/*/children`).
pub fn descendants(pid: u32) -> Vec<u32> {
    let mut found = Vec::new();
    let mut queue = vec![pid];
    while let Some(p) = queue.pop() {
        let Ok(tasks) = std::fs::read_dir(format!("/proc/{p}/task")) else {
            continue;
        };
        for task in tasks.filter_map(Result::ok) {
            let children =
                std::fs::read_to_string(task.path().join("children")).unwrap_or_default();
            for child in children.split_whitespace().filter_map(|c| c.parse().ok()) {
                found.push(child);
                queue.push(child);
            }
        }
    }
    found
}

/// Whether `path` is on a tmpfs, whose page cache is the file itself and
/// cannot be evicted.
pub fn on_tmpfs(path: &Path) -> bool {
    command("stat")
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

/// `dir/NAME`, compiled from the C `source` with `cc` and `flags` (the C
/// compiler every Rust toolchain links with); a failure shows cc's errors.
#[allow(dead_code)]
pub fn compile_c(dir: &Path, name: &str, source: &str, flags: &[&str]) -> PathBuf {
    let src = dir.join(format!("{name}.c"));
    std::fs::write(&src, source).expect("write the C source");
    let exe = dir.join(name);
    let out = command("cc")
        .args(flags)
        .arg("-o")
        .arg(&exe)
        .arg(&src)
        .output()
        .expect("cc runs (the Rust toolchain links with it)");
    assert!(
        out.status.success(),
        "cc {flags:?} {name}.c failed (install libc6-dev for -static): {}",
        String::from_utf8_lossy(&out.stderr)
    );
    exe
}

/// A dynamically linked `int main(void) { return 0; }`, built with `cc`
/// in `dir`: the smallest ordinary program of a Debian system, whose
/// every program is linked against the shared C library (its own peak
/// memory about 960 KiB here).
#[allow(dead_code)]
pub fn tiny_dynamic_command(dir: &Path) -> PathBuf {
    compile_c(
        dir,
        "tiny-dynamic",
        "int main(void) { return 0; }\n",
        &["-O2"],
    )
}

/// A static `int main(void) { return 0; }`, built with `cc -static` in
/// `dir`: a command whose own peak memory is about half a megabyte, small
/// enough to show anything tally adds to it.
#[allow(dead_code)]
pub fn tiny_static_command(dir: &Path) -> PathBuf {
    compile_c(
        dir,
        "tiny",
        "int main(void) { return 0; }\n",
        &["-O2", "-static"],
    )
}

/// Runs `promtool check metrics` on `text`: its exit status and what it
/// printed (nothing when the metrics pass).
#[allow(dead_code)]
pub fn promtool_check_metrics(promtool: &Path, text: &str) -> (std::process::ExitStatus, String) {
    use std::io::Write as _;
    use std::process::Stdio;
    let mut child = command(promtool)
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

/// Ends the calling test as skipped, with the reason: `skip!("needs
/// root to switch user")`. A skip is a result, not a pass: the suite's
/// summary (`bash tests/release.sh`) counts it and lists it with its reason
/// (the record goes to the file `$TALLY_TEST_SKIPS` names). In a helper
/// it returns from the helper; the record names the test (the test
/// thread's name). For a tool the project's scripts install, use
/// [`skip_without_tool!`].
macro_rules! skip {
    ($($why:tt)+) => {{
        $crate::common::record_skip(&format!($($why)+));
        return;
    }};
}
#[allow(unused_imports)]
pub(crate) use skip;

/// `skip!` for a missing tool that `tests/install-deps.sh` installs: under
/// CI (`CI=true`, where that script ran first) the test fails instead,
/// since the tool should be there.
macro_rules! skip_without_tool {
    ($tool:expr, $($why:tt)+) => {{
        if $crate::common::in_ci() {
            panic!(
                "{} is not installed, though CI installs it first (tests/install-deps.sh): {}",
                $tool,
                format!($($why)+)
            );
        }
        $crate::common::skip!("{} is not installed: {}", $tool, format!($($why)+));
    }};
}
#[allow(unused_imports)]
pub(crate) use skip_without_tool;

/// Whether the suite runs under CI (`CI=true`, as GitHub Actions, GitLab
/// and most runners set it).
pub fn in_ci() -> bool {
    std::env::var("CI").is_ok_and(|v| v == "true" || v == "1")
}

/// Records a skip of the running test for the summary, and says it on
/// stderr. The test is named by its thread, as the test harness names it.
pub fn record_skip(why: &str) {
    use std::io::Write as _;
    let binary = env!("CARGO_CRATE_NAME");
    let test = std::thread::current()
        .name()
        .unwrap_or("(unnamed thread)")
        .to_string();
    let why = why.replace(['\n', '\t'], " ");
    eprintln!("skipped: {why}");
    if let Some(log) = std::env::var_os("TALLY_TEST_SKIPS").filter(|p| !p.is_empty()) {
        // One write of one line, appended: whole even when tests of
        // several processes skip at once.
        let line = format!("{binary}\t{test}\t{why}\n");
        let written = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(&log)
            .and_then(|mut f| f.write_all(line.as_bytes()));
        if let Err(e) = written {
            panic!("cannot record the skip in {}: {e}", log.to_string_lossy());
        }
    }
}

/// Records the skip of a part of the calling test and lets it go on: the
/// summary counts the test as skipped (not all of it ran), with the reason.
macro_rules! skip_part {
    ($($why:tt)+) => {{
        $crate::common::record_skip(&format!($($why)+));
    }};
}
#[allow(unused_imports)]
pub(crate) use skip_part;

/// Why a test cannot run here: a missing tool the project's scripts
/// install (`tool`), or something the machine, the kernel or the caller's
/// privilege cannot provide.
#[derive(Debug)]
pub struct Unable {
    pub tool: Option<&'static str>,
    pub why: String,
}

impl Unable {
    pub fn tool(tool: &'static str, why: &str) -> Unable {
        Unable {
            tool: Some(tool),
            why: why.to_string(),
        }
    }

    pub fn machine(why: impl Into<String>) -> Unable {
        Unable {
            tool: None,
            why: why.into(),
        }
    }
}

/// Skips the calling test when `$check` (a `Result<T, Unable>`) is an
/// error (see [`record_unable`]); evaluates to the `T` of `Ok`.
macro_rules! require {
    ($check:expr) => {
        match $check {
            Ok(v) => v,
            Err(unable) => {
                $crate::common::record_unable(unable);
                return;
            }
        }
    };
}
#[allow(unused_imports)]
pub(crate) use require;

/// Records the skip of the running test for `unable`, as
/// `skip_without_tool!` for a tool (a failure under CI) and as `skip!`
/// otherwise; the caller returns. For helpers that end their test early by
/// returning `None`.
pub fn record_unable(unable: Unable) {
    match unable.tool {
        Some(tool) if in_ci() => panic!(
            "{tool} is not installed, though CI installs it first (tests/install-deps.sh): {}",
            unable.why
        ),
        Some(tool) => record_skip(&format!("{tool} is not installed: {}", unable.why)),
        None => record_skip(&unable.why),
    }
}

/// Whether the tests run as root.
pub fn is_root() -> bool {
    use std::os::unix::fs::MetadataExt;
    std::fs::metadata("/proc/self").map(|m| m.uid()).ok() == Some(0)
}

/// Whether `tool --version` runs (util-linux, coreutils and most tools
/// answer it).
pub fn have(tool: &str) -> bool {
    command(tool)
        .arg("--version")
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .status()
        .is_ok()
}

/// A tool the project's scripts install, or why not.
pub fn tool(name: &'static str, package: &str) -> Result<(), Unable> {
    if have(name) {
        Ok(())
    } else {
        Err(Unable::tool(name, &format!("Debian package {package}")))
    }
}

/// Root (to become another user) and setpriv, or why not.
pub fn can_switch_users() -> Result<(), Unable> {
    if !is_root() {
        return Err(Unable::machine("needs root to run a process as user 65534"));
    }
    tool("setpriv", "util-linux")
}

/// A sysctl set for the life of the guard and restored when it drops,
/// also when the test fails. Tests that set the same sysctl take turns:
/// the guard holds an exclusive lock on a file named after it (across the
/// suite's processes) until the old value is back. The suite checks the
/// sysctls it touches before and after (tests/release.sh).
pub struct Sysctl {
    path: PathBuf,
    old: String,
    _lock: std::fs::File,
}

impl Sysctl {
    /// Sets `name` (`fs.protected_symlinks`) to `value`; the error says
    /// why it cannot be set here.
    pub fn set(name: &str, value: &str) -> Result<Sysctl, Unable> {
        let path = Path::new("/proc/sys").join(name.replace('.', "/"));
        let lock_path = std::env::temp_dir().join(format!("tally-test-sysctl-{name}.lock"));
        let lock = std::fs::OpenOptions::new()
            .create(true)
            .truncate(false)
            .write(true)
            .open(&lock_path)
            .map_err(|e| Unable::machine(format!("{}: {e}", lock_path.display())))?;
        lock.lock()
            .map_err(|e| Unable::machine(format!("lock {}: {e}", lock_path.display())))?;
        let old = std::fs::read_to_string(&path)
            .map_err(|e| Unable::machine(format!("cannot read {name}: {e}")))?;
        let old = old.trim().to_string();
        if old != value {
            std::fs::write(&path, value)
                .map_err(|e| Unable::machine(format!("cannot set {name}={value}: {e}")))?;
        }
        Ok(Sysctl {
            path,
            old,
            _lock: lock,
        })
    }
}

impl Drop for Sysctl {
    fn drop(&mut self) {
        let now = std::fs::read_to_string(&self.path).unwrap_or_default();
        if now.trim() != self.old
            && let Err(e) = std::fs::write(&self.path, &self.old)
        {
            // Not a panic in a drop that may run while unwinding: the
            // suite's before-and-after check reports the difference.
            eprintln!("cannot restore {}: {e}", self.path.display());
        }
    }
}

/// An exclusive lock named `name`, held until dropped, across the test
/// threads and processes of the suite (whichever runner started them):
/// for tests that must not overlap each other.
pub fn exclusive(name: &str) -> std::fs::File {
    let path = std::env::temp_dir().join(format!("tally-test-{name}.lock"));
    let file = std::fs::OpenOptions::new()
        .create(true)
        .truncate(false)
        .write(true)
        .open(&path)
        .unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    file.lock()
        .unwrap_or_else(|e| panic!("lock {}: {e}", path.display()));
    file
}

/// The binary under test where another user (nobody, uid 65534) can run
/// it, for as long as this lives: the binary itself when every directory
/// above it lets others through and others may execute it, else a copy
/// in a temporary directory they may enter, removed when this drops. A
/// checkout in a directory only its owner may enter (a `mktemp -d` under
/// /tmp, a home directory of mode 0700) is then no reason for a test to
/// fail: every test that runs tally as another user takes the binary from
/// [`tally_for_others`].
pub struct TallyForOthers {
    path: PathBuf,
    _copy: Option<tempfile::TempDir>,
}

impl TallyForOthers {
    /// The binary to run.
    pub fn path(&self) -> &Path {
        &self.path
    }
}

impl AsRef<std::ffi::OsStr> for TallyForOthers {
    fn as_ref(&self) -> &std::ffi::OsStr {
        self.path.as_os_str()
    }
}

/// Whether a user that is neither the owner nor in the group of any of
/// them may reach and run `bin`: every directory above it searchable by
/// others, the file executable by them.
pub fn others_may_run(bin: &Path) -> bool {
    use std::os::unix::fs::PermissionsExt;
    let others = |p: &Path| std::fs::metadata(p).is_ok_and(|m| m.permissions().mode() & 0o001 != 0);
    let Ok(bin) = std::fs::canonicalize(bin) else {
        return false;
    };
    others(&bin) && bin.ancestors().skip(1).all(others)
}

/// See [`TallyForOthers`].
pub fn tally_for_others() -> TallyForOthers {
    use std::os::unix::fs::PermissionsExt;
    let bin = tally_bin();
    if others_may_run(&bin) {
        return TallyForOthers {
            path: bin,
            _copy: None,
        };
    }
    // A directory others may enter: the temporary directory, or /tmp
    // when that is inside a private one.
    let base = [std::env::temp_dir(), PathBuf::from("/tmp")]
        .into_iter()
        .find(|d| {
            d.ancestors()
                .all(|a| std::fs::metadata(a).is_ok_and(|m| m.permissions().mode() & 0o001 != 0))
        })
        .unwrap_or_else(|| PathBuf::from("/tmp"));
    let dir = tempfile::Builder::new()
        .prefix("tally-for-others-")
        .tempdir_in(&base)
        .unwrap_or_else(|e| panic!("a directory in {}: {e}", base.display()));
    TallyForOthers {
        path: copy_for_others(dir.path(), "tally"),
        _copy: Some(dir),
    }
}

/// A copy of the binary under test named `name` in `dir`, which becomes
/// enterable by others (mode 0755), the copy executable by them (0755):
/// for a test that installs it as it needs (setuid, capabilities, a
/// private directory of its own); a test that only runs it as another
/// user takes [`tally_for_others`].
pub fn copy_for_others(dir: &Path, name: &str) -> PathBuf {
    use std::os::unix::fs::PermissionsExt;
    let copy = dir.join(name);
    // cp, not std::fs::copy: a write descriptor held here would leak into
    // children other tests fork meanwhile, and exec would fail with ETXTBSY.
    let copied = command("cp")
        .arg(tally_bin())
        .arg(&copy)
        .status()
        .expect("cp runs");
    assert!(copied.success(), "cp {} failed", tally_bin().display());
    std::fs::set_permissions(dir, std::fs::Permissions::from_mode(0o755))
        .expect("chmod the copy's directory");
    std::fs::set_permissions(&copy, std::fs::Permissions::from_mode(0o755))
        .expect("chmod the copy");
    copy
}

//! The two installs that let every user see every process's memory —
//! setuid root and file capabilities — run as user 65534. They must show
//! other users' processes, refuse every other command, ignore --procfs,
//! and hold no privilege by the time they write anything.
//!
//! Needs root (to chown, setcap and setpriv); as any other user the tests
//! say so and pass. The capability test needs setcap (libcap2-bin).

mod common;

use std::fs::OpenOptions;
use std::io::{Read, Write};
use std::os::unix::fs::{OpenOptionsExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

use common::Reaper;
use serde_json::Value;

/// Why setuid and file capabilities cannot work here, if they cannot:
/// no_new_privs (inherited, e.g. from a container runtime) or a nosuid
/// mount under `dir`.
fn installs_cannot_work(dir: &Path) -> Option<String> {
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    if status
        .lines()
        .any(|l| l.starts_with("NoNewPrivs:") && l.ends_with('1'))
    {
        return Some("no_new_privs is set: the kernel ignores setuid and file capabilities".into());
    }
    // mountinfo: id parent major:minor root mountpoint options ...
    let mountinfo = std::fs::read_to_string("/proc/self/mountinfo").unwrap_or_default();
    let best = mountinfo
        .lines()
        .filter_map(|l| {
            let mut f = l.split(' ');
            let point = f.nth(4)?;
            let options = f.next()?;
            dir.starts_with(point)
                .then(|| (point.len(), options.to_string()))
        })
        .max_by_key(|(len, _)| *len);
    match best {
        Some((_, options)) if options.split(',').any(|o| o == "nosuid") => {
            Some(format!("{} is on a nosuid mount", dir.display()))
        }
        _ => None,
    }
}

/// A copy of the binary in a directory user 65534 can enter.
fn install(dir: &Path, name: &str) -> PathBuf {
    common::copy_for_others(dir, name)
}

fn setuid_install(dir: &Path) -> PathBuf {
    let bin = install(dir, "tally-setuid");
    // Root owns the copy already (the tests run as root).
    std::fs::set_permissions(&bin, std::fs::Permissions::from_mode(0o4755)).expect("chmod u+s");
    bin
}

/// `setcap cap_sys_ptrace,cap_dac_read_search+ep`, or `None` without setcap.
fn capability_install(dir: &Path) -> Option<PathBuf> {
    let bin = install(dir, "tally-caps");
    let status = common::command("setcap")
        .args(["cap_sys_ptrace,cap_dac_read_search+ep"])
        .arg(&bin)
        .status()
        .ok()?;
    assert!(status.success(), "setcap failed");
    Some(bin)
}

fn as_nobody(bin: &Path) -> Command {
    let mut cmd = common::command("setpriv");
    cmd.args(["--reuid=65534", "--regid=65534", "--clear-groups"])
        .arg(bin);
    cmd
}

fn json(out: &Output) -> Value {
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).expect("valid JSON")
}

fn root_sleep() -> Reaper {
    Reaper(vec![
        common::command("sleep").arg("60").spawn().expect("sleep"),
    ])
}

/// What every privileged install must do, run as user 65534.
fn check_install(bin: &Path, plain: &Path) {
    let target = root_sleep();
    let pid = target.0[0].id().to_string();

    // Without the install, root's process is not readable...
    let r = json(
        &as_nobody(plain)
            .args(["mem", "--format", "json", "--pid", &pid])
            .output()
            .expect("runs"),
    );
    assert_eq!(r["total"]["processes"], 0);
    assert_eq!(r["skipped"]["denied"], 1);
    // ...with it, it is.
    let out = as_nobody(bin)
        .args(["mem", "--format", "json", "--pid", &pid])
        .output()
        .expect("runs");
    let r = json(&out);
    assert_eq!(
        r["total"]["processes"],
        1,
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(r["skipped"]["denied"], 0);
    assert_eq!(r["groups"][0]["name"], "sleep");
    assert!(r["total"]["pss_bytes"].as_u64().expect("pss") > 0);

    // --user is looked up after the drop, and still filters.
    let out = as_nobody(bin)
        .args(["mem", "--format", "json", "--user", "root", "--pid", &pid])
        .output()
        .expect("runs");
    assert_eq!(json(&out)["total"]["processes"], 1);
    let out = as_nobody(bin)
        .args(["mem", "--format", "json", "--user", "nobody", "--pid", &pid])
        .output()
        .expect("runs");
    assert_eq!(json(&out)["total"]["processes"], 0);
    let out = as_nobody(bin)
        .args(["mem", "--user", "no-such-user-tally"])
        .output()
        .expect("runs");
    assert_eq!(out.status.code(), Some(2));

    // --procfs is ignored: the fixture tree's PIDs 101-104 are not read,
    // the real /proc is.
    let fixture = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/proc/typical");
    let out = as_nobody(bin)
        .args(["mem", "--format", "json", "--by", "pid", "--procfs"])
        .arg(&fixture)
        .output()
        .expect("runs");
    let r = json(&out);
    assert!(String::from_utf8_lossy(&out.stderr).contains("--procfs ignored"));
    let pids: Vec<u64> = r["groups"]
        .as_array()
        .expect("groups")
        .iter()
        .filter_map(|g| g["pid"].as_u64())
        .collect();
    assert!(
        pids.contains(&pid.parse::<u64>().expect("pid")),
        "real /proc was read"
    );

    // Every other command is refused.
    let out = as_nobody(bin)
        .args(["run", "--", "true"])
        .output()
        .expect("runs");
    assert_eq!(out.status.code(), Some(125));
    assert!(String::from_utf8_lossy(&out.stderr).contains("runs nothing else"));
    let out = as_nobody(bin)
        .args(["completions", "bash"])
        .output()
        .expect("runs");
    assert_eq!(out.status.code(), Some(1));
    assert!(out.stdout.is_empty());
    let out = as_nobody(bin)
        .args(["mem", "--watch", "1"])
        .output()
        .expect("runs");
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("--watch is not available"));

    check_dropped_before_output(bin);
    check_hidepid(bin);
}

/// Runs the install as user 65534 in a private mount namespace whose /proc
/// is mounted with `options`; `None` when such a mount cannot be made here.
fn as_nobody_with_proc(bin: &Path, options: &str, args: &[&str]) -> Option<Output> {
    let script = r#"mount -t proc -o "$1" proc /proc || exit 97; shift; exec setpriv --reuid=65534 --regid=65534 --clear-groups "$@""#;
    let out = common::command("unshare")
        .args([
            "-m",
            "--propagation",
            "private",
            "sh",
            "-c",
            script,
            "sh",
            options,
        ])
        .arg(bin)
        .args(args)
        .output()
        .ok()?;
    (out.status.code() != Some(97)).then_some(out)
}

/// With /proc mounted `hidepid=2` (or `invisible`), the install shows no
/// process of another user and none of its command line, in any format;
/// with `hidepid=1` (`noaccess`) it counts them as denied and shows none.
/// User 65534's own process stays visible, arguments and all.
fn check_hidepid(bin: &Path) {
    if !common::have("unshare") {
        common::skip_without_tool!("unshare", "the hidepid part (Debian package util-linux)");
    }
    // Root's process with a secret in its arguments, and one of nobody's.
    let mut secret = common::command("sh")
        .args([
            "-c",
            "sleep 60; :",
            "sh",
            "--db-password=hidepid-secret-5b1e",
        ])
        .spawn()
        .expect("sh");
    let root_pid = secret.id();
    let own = common::command("setpriv")
        .args(["--reuid=65534", "--regid=65534", "--clear-groups"])
        .args(["sh", "-c", "sleep 60; :", "sh", "--own-visible-arg"])
        .spawn()
        .expect("setpriv sh");
    let own_pid = own.id();
    let _reaper = Reaper(vec![own]);
    let _ = secret.try_wait();
    let _secret = Reaper(vec![secret]);
    // Wait until both have exec'd their final command lines.
    let start = Instant::now();
    while ![root_pid, own_pid].iter().all(|p| {
        std::fs::read(format!("/proc/{p}/cmdline"))
            .is_ok_and(|c| c.ends_with(b"arg\0") || c.ends_with(b"5b1e\0"))
    }) {
        assert!(
            start.elapsed() < Duration::from_secs(10),
            "children never started"
        );
        std::thread::sleep(Duration::from_millis(10));
    }
    let root = root_pid.to_string();
    let formats: [&[&str]; 8] = [
        &["mem", "--split-args", "--by", "pid"],
        &["mem", "--split-args", "--by", "pid", "--format", "json"],
        &["mem", "--split-args", "--format", "csv"],
        &["mem", "--split-args", "--format", "markdown"],
        &[
            "mem",
            "--split-args",
            "--by",
            "pid",
            "--format",
            "prometheus",
        ],
        &[
            "mem",
            "--name",
            "argv0",
            "--split-args",
            "--by",
            "cgroup",
            "--format",
            "json",
        ],
        &["mem", "--name", "comm", "--split-args", "--by", "user"],
        &["mem", "--split-args", "--by", "pid", "--pid", &root],
    ];
    for options in ["hidepid=2", "hidepid=invisible", "hidepid=1"] {
        for args in formats {
            let Some(out) = as_nobody_with_proc(bin, options, args) else {
                common::skip!("the hidepid part: cannot mount proc in a private mount namespace");
            };
            let text = format!(
                "{}{}",
                String::from_utf8_lossy(&out.stdout),
                String::from_utf8_lossy(&out.stderr)
            );
            assert!(
                out.status.success(),
                "{options} {args:?}: exit {:?}: {text}",
                out.status
            );
            assert!(
                !text.contains("hidepid-secret"),
                "{options} {args:?} shows another user's command line:\n{text}"
            );
            if args.contains(&"--pid") {
                continue;
            }
            if args.contains(&"json") && args.contains(&"pid") {
                let r: Value = serde_json::from_slice(&out.stdout).expect("valid JSON");
                let pids: Vec<u64> = r["groups"]
                    .as_array()
                    .expect("groups")
                    .iter()
                    .filter_map(|g| g["pid"].as_u64())
                    .collect();
                assert!(
                    !pids.contains(&u64::from(root_pid)),
                    "{options}: root's process is shown: {pids:?}"
                );
                // Not vacuous: the caller's own process is there, in full.
                assert!(pids.contains(&u64::from(own_pid)), "{options}: {text}");
                assert!(text.contains("--own-visible-arg"), "{options}: {text}");
                // Other users' swap is not seen: the rest cannot be told
                // (unless no swap is in use at all).
                let rest = &r["total"]["swap_not_attributed"];
                assert!(
                    rest["bytes"].is_null() || rest["swap_used_bytes"] == 0,
                    "{options}: {rest}"
                );
                let denied = r["skipped"]["denied"].as_u64().expect("denied");
                if options == "hidepid=1" {
                    assert!(denied > 0, "{options}: listed but unreadable: denied");
                }
            }
        }
        // Asked for by PID, a hidden process does not exist for the caller.
        let args = ["mem", "--format", "json", "--pid", &root];
        let out = as_nobody_with_proc(bin, options, &args).expect("ran before");
        let r: Value = serde_json::from_slice(&out.stdout).expect("valid JSON");
        assert_eq!(r["total"]["processes"], 0, "{options}");
    }
}

/// Runs the install with stdout into a full pipe, so it blocks on its
/// first write, then reads its ids and capabilities from /proc: by then
/// it must be user 65534 through and through, with no capability left.
fn check_dropped_before_output(bin: &Path) {
    let dir = tempfile::tempdir().expect("tempdir");
    let fifo = dir.path().join("out");
    assert!(
        common::command("mkfifo")
            .arg(&fifo)
            .status()
            .expect("mkfifo")
            .success()
    );
    // Read-write and non-blocking: the open does not wait for a writer.
    let mut ours = OpenOptions::new()
        .read(true)
        .write(true)
        .custom_flags(libc::O_NONBLOCK)
        .open(&fifo)
        .expect("open fifo");
    let chunk = [b'x'; 4096];
    while ours.write(&chunk).is_ok() {}
    let theirs = OpenOptions::new()
        .write(true)
        .open(&fifo)
        .expect("writer end");
    let child = as_nobody(bin)
        .args(["mem", "--by", "pid"])
        .stdout(Stdio::from(theirs))
        .stderr(Stdio::null())
        .spawn()
        .expect("runs");
    let pid = child.id();
    let mut reaper = Reaper(vec![child]);
    let start = Instant::now();
    let mut last = String::new();
    loop {
        // setpriv execs tally in place: the pid is tally's once it runs.
        if let Ok(status) = std::fs::read_to_string(format!("/proc/{pid}/status")) {
            let field = |k: &str| {
                status
                    .lines()
                    .find_map(|l| l.strip_prefix(k))
                    .map(|v| v.split_whitespace().collect::<Vec<_>>().join(" "))
                    .unwrap_or_default()
            };
            let blocked = std::fs::read_to_string(format!("/proc/{pid}/wchan"))
                .is_ok_and(|w| w.contains("pipe"));
            last = format!(
                "Name {} Uid {} Gid {} CapPrm {} CapEff {} blocked on a pipe: {blocked}",
                field("Name:"),
                field("Uid:"),
                field("Gid:"),
                field("CapPrm:"),
                field("CapEff:")
            );
            if blocked && field("Name:").starts_with("tally") {
                assert_eq!(field("Uid:"), "65534 65534 65534 65534", "{last}");
                assert_eq!(field("Gid:"), "65534 65534 65534 65534", "{last}");
                assert_eq!(field("CapPrm:"), "0000000000000000", "{last}");
                assert_eq!(field("CapEff:"), "0000000000000000", "{last}");
                break;
            }
        }
        assert!(
            start.elapsed() < Duration::from_secs(20),
            "tally never blocked writing its report: {last}"
        );
        std::thread::sleep(Duration::from_millis(10));
    }
    // Drain so it can finish; then it must succeed.
    let mut buf = vec![0u8; 1 << 16];
    let child = &mut reaper.0[0];
    let status = loop {
        let _ = ours.read(&mut buf);
        if let Some(status) = child.try_wait().expect("wait") {
            break status;
        }
        assert!(
            start.elapsed() < Duration::from_secs(30),
            "tally did not finish"
        );
        std::thread::sleep(Duration::from_millis(5));
    };
    assert!(status.success());
}

#[test]
fn setuid_root_install() {
    common::require!(common::can_switch_users());
    let dir = tempfile::tempdir().expect("tempdir");
    if let Some(why) = installs_cannot_work(dir.path()) {
        common::skip!("{why}");
    }
    let plain = install(dir.path(), "tally");
    let bin = setuid_install(dir.path());
    check_install(&bin, &plain);
}

#[test]
fn file_capabilities_install() {
    common::require!(common::can_switch_users());
    common::require!(common::tool("setcap", "libcap2-bin"));
    let dir = tempfile::tempdir().expect("tempdir");
    if let Some(why) = installs_cannot_work(dir.path()) {
        common::skip!("{why}");
    }
    let plain = install(dir.path(), "tally");
    let Some(bin) = capability_install(dir.path()) else {
        panic!("setcap does not run");
    };
    check_install(&bin, &plain);
}

/// `mem` said "1 process not counted" on every call without naming it:
/// the note names the process it could not read, by PID and name.
#[test]
fn mem_names_the_process_it_could_not_read() {
    common::require!(common::can_switch_users());
    let dir = tempfile::tempdir().expect("tempdir");
    let plain = install(dir.path(), "tally");
    let target = root_sleep();
    let pid = target.0[0].id();
    let out = as_nobody(&plain)
        .args(["mem", "--pid", &pid.to_string()])
        .output()
        .expect("runs");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    let said: String = stderr
        .split("tally:")
        .map(str::trim)
        .collect::<Vec<_>>()
        .join(" ");
    assert!(
        said.contains(&format!(
            "1 process (PID {pid} sleep) could not be read (permission denied)"
        )),
        "{stderr}"
    );
}

/// `mem --textfile` of a file-capability install, run as user 65534 with
/// /proc mounted `hidepid=1` (root's processes denied to it), advised
/// installing tally with setcap, as it is already: the note of a
/// privileged install says what it shows and why, as `mem` says it.
#[test]
fn mem_textfile_of_a_capability_install_advised_installing_it_with_setcap() {
    common::require!(common::can_switch_users());
    common::require!(common::tool("setcap", "libcap2-bin"));
    if !common::have("unshare") {
        common::skip_without_tool!("unshare", "a /proc mounted hidepid=1 (util-linux)");
    }
    let dir = tempfile::tempdir().expect("tempdir");
    if let Some(why) = installs_cannot_work(dir.path()) {
        common::skip!("{why}");
    }
    let Some(bin) = capability_install(dir.path()) else {
        panic!("setcap does not run");
    };
    let out_dir = dir.path().join("textfile");
    std::fs::create_dir(&out_dir).expect("mkdir");
    std::fs::set_permissions(&out_dir, std::fs::Permissions::from_mode(0o777)).expect("chmod");
    let _target = root_sleep();
    let textfile = out_dir.to_str().unwrap();
    let Some(out) = as_nobody_with_proc(&bin, "hidepid=1", &["mem", "--textfile", textfile]) else {
        common::skip!("cannot mount proc in a private mount namespace");
    };
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{err}");
    assert!(
        err.contains("could not be read"),
        "no process denied: {err}"
    );
    assert!(!err.contains("setcap"), "{err}");
    assert!(err.contains("hidepid"), "{err}");
    assert!(out_dir.join("tally_mem.prom").exists(), "{err}");
}

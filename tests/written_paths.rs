//! Every path tally writes goes through one opener (src/place.rs): a
//! link another user planted is refused in every component, FIFOs and
//! devices are treated by one policy, and a FIFO nobody reads is refused
//! at once rather than waited on. Attackers run as nobody (uid 65534)
//! with `fs.protected_symlinks=1`; tests skip with the reason where they
//! cannot.

mod common;

use std::os::unix::fs::PermissionsExt;
use std::path::Path;
use std::process::Stdio;
use std::time::Duration;

/// Runs `ln -s target link` as nobody.
fn plant_as_nobody(target: &Path, link: &Path) {
    let out = common::command("setpriv")
        .args([
            "--reuid=65534",
            "--regid=65534",
            "--clear-groups",
            "ln",
            "-s",
        ])
        .arg(target)
        .arg(link)
        .output()
        .expect("setpriv");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// `compare --command-output sticky/ld/file`, where nobody planted
/// `sticky/ld -> root's directory`, truncated and wrote the file the link
/// led to: the link was a directory of the path, which the kernel's
/// `fs.protected_symlinks` does not look at, and `--command-output` was
/// opened with a plain `open`. `-o`, `--save-baseline` and `--export`
/// refused the same path; now all four go through one opener.
#[test]
fn command_output_followed_a_link_planted_as_a_directory_in_a_sticky_dir() {
    common::require!(common::can_switch_users());
    let _protected = common::require!(common::Sysctl::set("fs.protected_symlinks", "1"));
    let safe = tempfile::tempdir().expect("tempdir");
    let victim = safe.path().join("file");
    std::fs::write(&victim, b"root's file\n").expect("write");
    let sticky = tempfile::tempdir().expect("tempdir");
    std::fs::set_permissions(sticky.path(), std::fs::Permissions::from_mode(0o1777))
        .expect("chmod");
    let ld = sticky.path().join("ld");
    plant_as_nobody(safe.path(), &ld);
    let through = ld.join("file");
    let through = through.to_str().expect("utf-8 path");
    for (flag, value) in [
        ("--command-output", through.to_string()),
        ("-o", through.to_string()),
        ("--save-baseline", through.to_string()),
        ("--export", format!("json={through}")),
    ] {
        let out = common::tally()
            .args(["compare", "-n", "2", flag, &value])
            .args(["echo attacker-chosen", "true"])
            .timeout(Duration::from_secs(60))
            .output()
            .expect("tally runs");
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(1), "{flag}: {err}");
        assert!(
            err.contains("not followed") && err.contains("protected_symlinks"),
            "{flag}: {err}"
        );
        assert!(
            err.contains(flag),
            "{flag}: the message names the option: {err}"
        );
        assert_eq!(
            std::fs::read(&victim).expect("read"),
            b"root's file\n",
            "{flag} wrote through the planted link"
        );
        assert_eq!(common::entries(safe.path()).len(), 1, "{flag}");
    }
    // Root's own link there is followed, as the kernel allows.
    let mine = sticky.path().join("mine");
    std::os::unix::fs::symlink(safe.path(), &mine).expect("symlink");
    let out = common::tally()
        .args(["compare", "-n", "2", "--command-output"])
        .arg(mine.join("out"))
        .args(["echo mine", "echo mine", "-o", "/dev/null"])
        .timeout(Duration::from_secs(60))
        .output()
        .expect("tally runs");
    assert_eq!(out.status.code(), Some(0), "{out:?}");
    assert_eq!(
        std::fs::read(safe.path().join("out")).expect("read"),
        b"mine\n"
    );
}

/// `compare --command-output FIFO` with no reader blocked in `open()` for
/// ever, and SIGTERM did not end it. The one opener opens FIFOs
/// non-blocking: with no reader it refuses at once, naming the fix; with
/// a reader the commands' output reaches it. `-o FIFO` is held to the same
/// policy.
#[test]
fn command_output_to_a_fifo_with_no_reader_hung_in_open() {
    let dir = tempfile::tempdir().expect("tempdir");
    let fifo = dir.path().join("fifo");
    tally::sys::ipc::mkfifo(&fifo, 0o600).expect("mkfifo");
    // compare's own failures are 1; run keeps 1..=124 for the command's
    // and says its own with 125.
    for (code, args) in [
        (
            1,
            vec![
                "compare",
                "-n",
                "2",
                "--command-output",
                "fifo",
                "true",
                "true",
            ],
        ),
        (1, vec!["compare", "-n", "2", "-o", "fifo", "true", "true"]),
        (125, vec!["run", "-o", "fifo", "--", "true"]),
    ] {
        let child = common::tally_std()
            .args(&args)
            .current_dir(dir.path())
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("tally");
        let out = common::wait_or_kill(child, Duration::from_secs(20));
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(code), "{args:?}: {err}");
        assert!(
            err.contains("fifo: is a FIFO with no reader") && err.contains("start its reader"),
            "{args:?}: {err}"
        );
    }
    // With a reader, the output goes through and the FIFO stays a FIFO.
    let reader = common::command("cat")
        .arg(&fifo)
        .stdout(Stdio::piped())
        .spawn()
        .expect("cat");
    // The reader opens the FIFO soon after it starts.
    std::thread::sleep(Duration::from_millis(300));
    let out = common::tally()
        .args([
            "compare",
            "-n",
            "2",
            "--command-output",
            "fifo",
            "echo through",
            "echo through",
        ])
        .current_dir(dir.path())
        .timeout(Duration::from_secs(60))
        .output()
        .expect("tally runs");
    assert_eq!(out.status.code(), Some(0), "{out:?}");
    let read = common::wait_or_kill(reader, Duration::from_secs(20));
    assert!(
        String::from_utf8_lossy(&read.stdout).contains("through"),
        "{read:?}"
    );
    use std::os::unix::fs::FileTypeExt;
    assert!(
        std::fs::symlink_metadata(&fifo)
            .expect("fifo")
            .file_type()
            .is_fifo()
    );
}

/// The FIFO and device policy is one: a block device named by `-o` or
/// `--command-output` is refused (a report is not written onto a disk's
/// blocks), a character device is written, never replaced.
#[test]
fn a_block_device_named_as_an_output_is_refused_and_a_character_device_written() {
    let dir = tempfile::tempdir().expect("tempdir");
    let Some(block) = ["/dev/loop0", "/dev/sda", "/dev/vda", "/dev/nvme0n1"]
        .into_iter()
        .find(|p| {
            use std::os::unix::fs::FileTypeExt;
            std::fs::metadata(p).is_ok_and(|m| m.file_type().is_block_device())
        })
    else {
        common::skip!("no block device under /dev to name");
    };
    for (code, args) in [
        (
            1,
            vec![
                "compare",
                "-n",
                "2",
                "--command-output",
                block,
                "true",
                "true",
            ],
        ),
        (125, vec!["run", "-o", block, "--", "true"]),
    ] {
        let out = common::tally()
            .args(&args)
            .current_dir(dir.path())
            .timeout(Duration::from_secs(60))
            .output()
            .expect("tally runs");
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(code), "{args:?}: {err}");
        assert!(err.contains("is a block device"), "{args:?}: {err}");
    }
    let out = common::tally()
        .args([
            "compare",
            "-n",
            "2",
            "--command-output",
            "/dev/null",
            "true",
            "true",
        ])
        .args(["-o", "/dev/null"])
        .timeout(Duration::from_secs(60))
        .output()
        .expect("tally runs");
    assert_eq!(out.status.code(), Some(0), "{out:?}");
}

/// Two exports to one file were accepted and the last writer won
/// (`--export json=a --export csv=a`; `--export json=x --html x`; a
/// `--save-baseline` over the report). Refused before any run, however
/// the paths spell the file.
#[test]
fn two_exports_to_one_file_lost_the_first() {
    let dir = tempfile::tempdir().expect("tempdir");
    std::fs::create_dir(dir.path().join("d")).expect("mkdir");
    let cases: [&[&str]; 5] = [
        &[
            "compare", "-n", "2", "--export", "json=a", "--export", "csv=a", "true", "true",
        ],
        &[
            "compare", "-n", "2", "--export", "json=x", "--html", "x", "true", "true",
        ],
        &[
            "compare",
            "-n",
            "2",
            "-o",
            "r",
            "--export",
            "csv=d/../r",
            "true",
            "true",
        ],
        &[
            "compare",
            "-n",
            "2",
            "-o",
            "b",
            "--save-baseline",
            "./b",
            "true",
        ],
        &[
            "run", "--format", "json", "-o", "a", "--export", "csv=a", "--", "true",
        ],
    ];
    for args in cases {
        let out = common::tally()
            .args(args)
            .current_dir(dir.path())
            .timeout(Duration::from_secs(60))
            .output()
            .expect("tally runs");
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(
            out.status.code(),
            Some(if args[0] == "run" { 125 } else { 2 }),
            "{args:?}: {err}"
        );
        assert!(err.contains("name one file"), "{args:?}: {err}");
        assert_eq!(
            common::entries(dir.path()).len(),
            1,
            "{args:?}: a file was written"
        );
    }
    // Two renderings to /dev/null are no clash: nothing is replaced.
    let out = common::tally()
        .args([
            "compare",
            "-n",
            "2",
            "-o",
            "/dev/null",
            "--export",
            "csv=/dev/null",
            "true",
            "true",
        ])
        .timeout(Duration::from_secs(60))
        .output()
        .expect("tally runs");
    assert_eq!(out.status.code(), Some(0), "{out:?}");
}

//! Messages that stuttered or left something out: each names the thing
//! once, the problem once, and the fix.

mod common;

use std::path::Path;

fn stderr_of(args: &[&str], dir: &Path) -> (Option<i32>, String) {
    let out = common::tally_std()
        .args(args)
        .current_dir(dir)
        .output()
        .expect("tally runs");
    (
        out.status.code(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// How often `word` occurs in `text`.
fn count(text: &str, word: &str) -> usize {
    text.matches(word).count()
}

#[test]
fn cp_of_a_fifo_named_the_fifo_twice() {
    // Was: "tally: cp: fifo: fifo: not a regular file (device, FIFO or
    // socket); not copied".
    let dir = tempfile::tempdir().expect("tempdir");
    tally::sys::ipc::mkfifo(&dir.path().join("fifo"), 0o600).expect("mkfifo");
    let (code, err) = stderr_of(&["cp", "fifo", "x"], dir.path());
    assert_eq!(code, Some(1), "{err}");
    assert_eq!(
        err.trim_end(),
        "tally: cp: fifo is a FIFO, not a regular file: not copied; cp copies regular files, \
         links and directories (-r)"
    );
    assert_eq!(count(&err, "fifo"), 1, "{err}");
    assert!(!dir.path().join("x").exists());
    // A message that does not name its file gets the name in front, once.
    let (_, err) = stderr_of(&["cp", "gone", "x"], dir.path());
    assert!(err.starts_with("tally: cp: gone: cannot read: "), "{err}");
    std::fs::create_dir(dir.path().join("d")).expect("mkdir");
    let (_, err) = stderr_of(&["cp", "d", "x"], dir.path());
    assert_eq!(
        err.trim_end(),
        "tally: cp: d: is a directory: add -r to copy it and what is under it"
    );
}

#[test]
fn cache_of_a_fifo_said_skipped_twice() {
    // Was: "tally: fifo: skipped: not a regular file (device, FIFO or
    // socket): skipped".
    let dir = tempfile::tempdir().expect("tempdir");
    tally::sys::ipc::mkfifo(&dir.path().join("fifo"), 0o600).expect("mkfifo");
    let (code, err) = stderr_of(&["cache", "fifo", "/dev/null"], dir.path());
    assert_eq!(code, Some(1), "{err}");
    assert!(
        err.contains(
            "tally: fifo: skipped: a FIFO, not a regular file: it has no page cache of its \
             own; name regular files, or directories with -r\n"
        ),
        "{err}"
    );
    assert!(
        err.contains("tally: /dev/null: skipped: a character device, not a regular file"),
        "{err}"
    );
    for line in err.lines().filter(|l| l.contains("skipped:")) {
        assert_eq!(count(line, "skipped"), 1, "{line}");
    }
}

#[test]
fn a_report_to_a_full_disk_names_what_could_not_be_written_and_the_fix() {
    // Was: "No space left on device" alone.
    if !Path::new("/dev/full").exists() {
        common::skip!("no /dev/full");
    }
    let dir = tempfile::tempdir().expect("tempdir");
    let (code, err) = stderr_of(
        &[
            "bench",
            "timer",
            "--quick",
            "--format",
            "json",
            "-o",
            "/dev/full",
        ],
        dir.path(),
    );
    assert_eq!(code, Some(1), "{err}");
    assert!(
        err.contains("cannot write the json report to /dev/full: No space left on device"),
        "{err}"
    );
    assert!(
        err.contains("free space there, or write elsewhere"),
        "the fix: {err}"
    );
    // A real full filesystem: a 64 KiB tmpfs in a private mount namespace,
    // filled; the report's file cannot even be begun there.
    if !common::is_root() || !common::have("unshare") {
        common::skip_part!("the full tmpfs part: needs root and unshare");
        return;
    }
    let script = r#"mount -t tmpfs -o size=64k tmpfs "$1" || exit 97
dd if=/dev/zero of="$1/fill" bs=4k count=100 2>/dev/null
shift; exec "$@""#;
    let mnt = dir.path().join("mnt");
    std::fs::create_dir(&mnt).expect("mkdir");
    let report = mnt.join("report.json");
    let out = common::command("unshare")
        .args(["-m", "--propagation", "private", "sh", "-c", script, "sh"])
        .arg(&mnt)
        .arg(common::tally_bin())
        .args(["bench", "timer", "--quick", "--format", "json", "-o"])
        .arg(&report)
        .output()
        .expect("unshare");
    if out.status.code() == Some(97) {
        common::skip_part!("the full tmpfs part: no tmpfs mount here");
        return;
    }
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(
        err.contains(&format!("{}", report.display())),
        "names the report: {err}"
    );
    assert!(err.contains("No space left on device"), "{err}");
    assert!(
        err.contains("its filesystem is full: free space there, or write elsewhere"),
        "{err}"
    );
    assert!(
        !err.contains("check the directory exists"),
        "a wrong fix: {err}"
    );
}

/// `-P x 1 9223372036854775807` said "not an integer" and `-D 1e308` "not
/// a number above 0": each now says what is wrong with the number.
#[test]
fn a_scan_bound_too_long_or_with_an_exponent_was_called_not_a_number() {
    let dir = tempfile::tempdir().expect("tempdir");
    let (code, err) = stderr_of(
        &["compare", "-P", "x", "1", "9223372036854775807", "true {x}"],
        dir.path(),
    );
    assert_eq!(code, Some(2), "{err}");
    assert!(err.contains("has more than 18 digits"), "{err}");
    let (code, err) = stderr_of(
        &["compare", "-P", "x", "1", "5", "-D", "1e308", "true {x}"],
        dir.path(),
    );
    assert_eq!(code, Some(2), "{err}");
    assert!(err.contains("is written with an exponent"), "{err}");
    let (code, err) = stderr_of(
        &["compare", "-P", "x", "1", "5", "-D", "0", "true {x}"],
        dir.path(),
    );
    assert_eq!(code, Some(2), "{err}");
    assert!(err.contains("\"0\" is not above 0"), "{err}");
}

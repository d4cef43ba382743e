//! Files a user can name or a process can change, made hostile: `/dev/zero`
//! (endless), a FIFO (a reader that opens it waits for a writer), a 1 GB
//! sparse file. Every input tally reads whole must end at once with an
//! error naming the cap or the file's type, in bounded memory. Each
//! command runs under `tally run` (its peak memory is the report's
//! `max_rss_bytes`) and `prlimit --as` (a regression fails here instead of
//! filling the machine's memory).

mod common;

use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::Duration;

/// What a hostile run ended with.
struct Ended {
    code: Option<i32>,
    stdout: String,
    stderr: String,
    peak_rss_bytes: u64,
}

/// Most a refusal may hold in memory (the bound).
const PEAK_LIMIT_BYTES: u64 = 100_000_000;

/// Runs `tally ARGS` with `stdin`, under `tally run` and a 2 GB address
/// space limit; a run past 5 s is killed and fails the test.
fn hostile(args: &[OsString], stdin: Stdio) -> Ended {
    let dir = tempfile::tempdir().expect("tempdir");
    let report = dir.path().join("run.json");
    let child = common::tally_std()
        .args(["run", "--format", "json", "-o"])
        .arg(&report)
        .args(["--", "prlimit", "--as=2000000000"])
        .arg(common::tally_bin())
        .args(args)
        .stdin(stdin)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("tally run");
    let out = common::wait_or_kill(child, Duration::from_secs(5));
    let v: serde_json::Value =
        serde_json::from_slice(&std::fs::read(&report).expect("run report")).expect("json");
    Ended {
        code: out.status.code(),
        stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
        peak_rss_bytes: v["runs"][0]["max_rss_bytes"].as_u64().expect("peak"),
    }
}

fn os(args: &[&str]) -> Vec<OsString> {
    args.iter().map(OsString::from).collect()
}

/// A 1 GB sparse file, a FIFO (no writer) and `/dev/zero`, with the words
/// a refusal of each must hold.
fn hostile_files(dir: &Path) -> Vec<(PathBuf, &'static str)> {
    let sparse = dir.join("sparse");
    std::fs::File::create(&sparse)
        .and_then(|f| f.set_len(1 << 30))
        .expect("sparse file");
    let fifo = dir.join("fifo");
    tally::sys::ipc::mkfifo(&fifo, 0o600).expect("mkfifo");
    vec![
        (
            PathBuf::from("/dev/zero"),
            "is a character device, not a regular file",
        ),
        (fifo, "is a FIFO, not a regular file"),
        (sparse, "is 1.0 GiB (1,073,741,824 bytes), over the"),
    ]
}

fn assert_refused(what: &str, e: &Ended, words: &str) {
    assert!(
        e.code.is_some_and(|c| c != 0),
        "{what}: exit {:?}, {}",
        e.code,
        e.stderr
    );
    assert!(e.stderr.contains(words), "{what}: {}", e.stderr);
    assert!(
        e.peak_rss_bytes < PEAK_LIMIT_BYTES,
        "{what}: peak {} bytes",
        e.peak_rss_bytes
    );
}

#[test]
fn bench_baseline_of_dev_zero_a_fifo_or_a_huge_file_is_refused_unread() {
    common::require!(common::tool("prlimit", "util-linux"));
    let dir = tempfile::tempdir().expect("tempdir");
    for (file, words) in hostile_files(dir.path()) {
        let mut args = os(&["bench", "timer", "--baseline"]);
        args.push(file.clone().into());
        let e = hostile(&args, Stdio::null());
        assert_refused(&format!("--baseline {}", file.display()), &e, words);
        assert!(e.stderr.contains("the baseline"), "{}", e.stderr);
        assert!(
            e.stderr.contains("tally bench --format json"),
            "the fix: {}",
            e.stderr
        );
        if words.contains("GiB") {
            assert!(e.stderr.contains("64.0 MiB cap"), "{}", e.stderr);
        }
    }
}

#[test]
fn serve_config_of_dev_zero_a_fifo_or_a_huge_file_is_refused_unread() {
    common::require!(common::tool("prlimit", "util-linux"));
    let dir = tempfile::tempdir().expect("tempdir");
    for (file, words) in hostile_files(dir.path()) {
        let mut args = os(&["serve", "--listen", "127.0.0.1:0", "--config"]);
        args.push(file.clone().into());
        let e = hostile(&args, Stdio::null());
        assert_refused(&format!("--config {}", file.display()), &e, words);
        assert!(e.stderr.contains("the serve configuration"), "{}", e.stderr);
        assert!(
            e.stderr.contains("give a TOML file"),
            "the fix: {}",
            e.stderr
        );
        if words.contains("GiB") {
            assert!(e.stderr.contains("1.0 MiB cap"), "{}", e.stderr);
        }
    }
}

#[test]
fn cache_path_list_from_dev_zero_or_a_huge_file_ends_at_its_cap() {
    common::require!(common::tool("prlimit", "util-linux"));
    let dir = tempfile::tempdir().expect("tempdir");
    let sparse = dir.path().join("sparse");
    std::fs::File::create(&sparse)
        .and_then(|f| f.set_len(1 << 30))
        .expect("sparse file");
    for input in [Path::new("/dev/zero"), &sparse] {
        // Newline-separated: the first NUL is refused, with the fix.
        let e = hostile(
            &os(&["cache", "-"]),
            std::fs::File::open(input).expect("open").into(),
        );
        assert_refused(
            &format!("cache - <{}", input.display()),
            &e,
            "the path list on stdin holds a NUL byte at byte 0",
        );
        assert!(e.stderr.contains("needs -0"), "{}", e.stderr);
        // NUL-separated: endless empty entries, ended by the byte cap.
        let e = hostile(
            &os(&["cache", "-0", "-"]),
            std::fs::File::open(input).expect("open").into(),
        );
        assert_refused(
            &format!("cache -0 - <{}", input.display()),
            &e,
            "the path list on stdin passed 64.0 MiB, over the 64.0 MiB cap",
        );
    }
}

#[test]
fn cache_path_list_from_a_fifo_is_read_as_a_stream() {
    // A FIFO is what a pipe into `tally cache -` is: read, not refused.
    let dir = tempfile::tempdir().expect("tempdir");
    let file = dir.path().join("data");
    std::fs::write(&file, b"x").expect("write");
    let fifo = dir.path().join("fifo");
    tally::sys::ipc::mkfifo(&fifo, 0o600).expect("mkfifo");
    let writer = {
        let (fifo, file) = (fifo.clone(), file.clone());
        std::thread::spawn(move || {
            use std::io::Write;
            let mut w = std::fs::OpenOptions::new()
                .write(true)
                .open(&fifo)
                .expect("open for writing");
            w.write_all(file.as_os_str().as_encoded_bytes())
                .and_then(|()| w.write_all(b"\n"))
                .expect("write");
        })
    };
    let reader = std::fs::File::open(&fifo).expect("open for reading");
    let child = common::tally_std()
        .args(["cache", "--format", "csv", "-"])
        .stdin(reader)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("tally cache");
    let out = common::wait_or_kill(child, Duration::from_secs(30));
    writer.join().expect("writer");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let csv = String::from_utf8_lossy(&out.stdout);
    assert_eq!(csv.lines().count(), 2, "a header and the file: {csv}");
}

/// A fixture tree shaped like /proc with one process (pid 100), whose
/// `name` file is replaced by `target` (a link, or a FIFO when `None`).
fn proc_tree(dir: &Path, name: &str, target: Option<&Path>) -> PathBuf {
    let root = dir.join(format!("proc-{name}"));
    let pid = root.join("100");
    std::fs::create_dir_all(&pid).expect("mkdir");
    std::fs::write(
        pid.join("smaps_rollup"),
        "00400000-7fff0000 ---p 00000000 00:00 0 [rollup]\nRss: 100 kB\nPss: 80 kB\n\
         Private_Clean: 10 kB\nPrivate_Dirty: 20 kB\nSwap: 0 kB\nSwapPss: 0 kB\n",
    )
    .expect("rollup");
    std::fs::write(
        pid.join("status"),
        "Name:\tsleep\nState:\tS (sleeping)\nTgid:\t100\n",
    )
    .expect("status");
    std::fs::write(pid.join("cmdline"), b"sleep\x0060\x00").expect("cmdline");
    std::os::unix::fs::symlink("/usr/bin/sleep", pid.join("exe")).expect("exe");
    std::fs::write(root.join("meminfo"), "SwapTotal: 0 kB\nSwapFree: 0 kB\n").expect("meminfo");
    let file = if name == "meminfo" {
        root.join(name)
    } else {
        pid.join(name)
    };
    let _ = std::fs::remove_file(&file);
    match target {
        Some(t) => std::os::unix::fs::symlink(t, &file).expect("link"),
        None => tally::sys::ipc::mkfifo(&file, 0o600).expect("mkfifo"),
    }
    root
}

#[test]
fn mem_procfs_tree_linking_to_dev_zero_a_fifo_or_a_huge_file_is_read_in_bounded_memory() {
    common::require!(common::tool("prlimit", "util-linux"));
    let dir = tempfile::tempdir().expect("tempdir");
    let sparse = dir.path().join("sparse");
    std::fs::File::create(&sparse)
        .and_then(|f| f.set_len(1 << 30))
        .expect("sparse file");
    for name in ["smaps_rollup", "status", "cmdline", "meminfo"] {
        for (target, words) in [
            (
                Some(Path::new("/dev/zero")),
                "is a character device, not a regular file",
            ),
            (None, "is a FIFO, not a regular file"),
            (Some(sparse.as_path()), "cap of a kernel file"),
        ] {
            let root = proc_tree(dir.path(), name, target);
            let mut args = os(&["mem", "--name", "argv0", "--user", "0", "--procfs"]);
            args.push(root.clone().into());
            let e = hostile(&args, Stdio::null());
            let what = format!("mem with {name} -> {target:?}");
            // One process that cannot be read is counted, not fatal: mem
            // ends at once and says why (a meminfo that cannot be read
            // makes the swap figure unavailable, in the report).
            // A note is one `tally:` paragraph, wrapped at 100 columns:
            // read with its continued lines joined.
            let said = format!("{}{}", e.stdout, e.stderr).replace("\ntally:   ", " ");
            assert!(e.code.is_some(), "{what}: {said}");
            assert!(said.contains(words), "{what}: {said}");
            assert!(
                said.contains(&format!("{}", root.display())) || name == "meminfo",
                "{what}: names the file: {said}"
            );
            assert!(
                e.peak_rss_bytes < PEAK_LIMIT_BYTES,
                "{what}: peak {} bytes",
                e.peak_rss_bytes
            );
            std::fs::remove_dir_all(&root).expect("clean");
        }
    }
}

#[test]
fn mem_names_a_literal_backslash_and_a_raw_byte_apart() {
    // A program named with the four characters `a\xffb` used to print as
    // one whose name holds the byte 0xff: one user could disguise a
    // program in another's view. Two copies of sleep, so named, run.
    use std::os::unix::ffi::OsStrExt;
    let dir = tempfile::tempdir().expect("tempdir");
    let sleep = common::command("sh")
        .args(["-c", "command -v sleep"])
        .output()
        .expect("sh");
    let sleep = PathBuf::from(String::from_utf8_lossy(&sleep.stdout).trim());
    let literal = dir.path().join("a\\xffb");
    let raw = dir.path().join(std::ffi::OsStr::from_bytes(b"a\xffb"));
    let mut reaper = common::Reaper(Vec::new());
    for exe in [&literal, &raw] {
        std::fs::copy(&sleep, exe).expect("copy sleep");
        reaper
            .0
            .push(common::command(exe).arg("60").spawn().expect("start"));
    }
    let pids: Vec<String> = reaper.0.iter().map(|c| c.id().to_string()).collect();
    // Both must have exec'd (their exe link named) before the scan.
    for pid in &pids {
        let link = format!("/proc/{pid}/exe");
        let deadline = std::time::Instant::now() + Duration::from_secs(10);
        while std::fs::read_link(&link).map_or(true, |t| !t.starts_with(dir.path())) {
            assert!(
                std::time::Instant::now() < deadline,
                "{link} never named the copy"
            );
            std::thread::sleep(Duration::from_millis(10));
        }
    }
    let mem = |format: &str| {
        let mut cmd = common::tally();
        cmd.args(["mem", "--format", format]);
        for pid in &pids {
            cmd.args(["--pid", pid]);
        }
        let out = cmd.output().expect("tally mem");
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8(out.stdout).expect("escaped output is UTF-8")
    };
    let human = mem("human");
    let rows: Vec<&str> = human.lines().filter(|l| l.ends_with("b (1)")).collect();
    assert_eq!(
        rows.len(),
        2,
        "two programs, not one of two processes: {human}"
    );
    assert!(
        human.lines().any(|l| l.ends_with("  a\\\\xffb (1)")),
        "{human}"
    );
    assert!(
        human.lines().any(|l| l.ends_with("  a\\xffb (1)")),
        "{human}"
    );
    let csv = mem("csv");
    let mut names: Vec<String> = csv
        .lines()
        .skip(1)
        .filter_map(|l| l.split(',').find(|f| f.starts_with('a')).map(String::from))
        .collect();
    names.sort();
    assert_eq!(names, ["a\\\\xffb", "a\\xffb"], "{csv}");
}

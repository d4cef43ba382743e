//! `tally cache`: residency, evict, warm, lock, and the unknown case.

use std::ffi::OsStr;
use std::io::{BufRead, BufReader, Write};
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::PermissionsExt;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::Duration;

use assert_cmd::assert::OutputAssertExt;
use serde_json::Value;

mod common;
use common::on_tmpfs;

fn tally() -> Command {
    common::tally_std()
}

fn json_of(args: &[&str], paths: &[&Path]) -> (Value, i32) {
    let out = tally()
        .arg("cache")
        .args(args)
        .args(["--format", "json"])
        .args(paths)
        .output()
        .expect("run");
    let v: Value = serde_json::from_slice(&out.stdout).unwrap_or_else(|e| {
        panic!(
            "not JSON ({e}): {}\n{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        )
    });
    (v, out.status.code().unwrap_or(-1))
}

fn write_file(path: &Path, bytes: usize) {
    let mut f = std::fs::File::create(path).expect("create");
    let block: Vec<u8> = (0..65536u32).map(|i| (i * 7 + 3) as u8).collect();
    let mut left = bytes;
    while left > 0 {
        let n = left.min(block.len());
        f.write_all(&block[..n]).expect("write");
        left -= n;
    }
}

fn cached_pages(v: &Value, i: usize) -> Option<u64> {
    v["files"][i]["residency"]["cached_pages"].as_u64()
}

#[test]
fn a_fresh_file_is_evicted_verified_and_warmed_again() {
    // On the filesystem of the system temporary directory (tmpfs cannot
    // evict: its page cache is the file itself).
    let dir = tempfile::tempdir().expect("tempdir");
    let f = dir.path().join("data");
    write_file(&f, 8 << 20);
    let pages = (8u64 << 20) / 4096;

    let (v, code) = json_of(&[], &[&f]);
    assert_eq!(code, 0);
    assert_eq!(v["schema_version"], 2);
    assert_eq!(v["action"], "status");
    assert_eq!(v["files"].as_array().map(Vec::len), Some(1));
    assert_eq!(v["files"][0]["size_bytes"], 8 << 20);
    if on_tmpfs(dir.path()) {
        common::skip!("the eviction part: the temporary directory is on tmpfs");
    }
    // All but a few: this machine's proactive reclaim (DAMON pageout of
    // pages idle for a moment) may take one before the count.
    let most = |n: Option<u64>| n.is_some_and(|n| n <= pages && n >= pages - pages / 100);
    assert!(most(cached_pages(&v, 0)), "just written: all cached: {v}");

    let (v, code) = json_of(&["--evict"], &[&f]);
    assert_eq!(code, 0);
    assert_eq!(v["action"], "evict");
    assert!(
        most(v["files"][0]["before"]["cached_pages"].as_u64()),
        "{v}"
    );
    assert_eq!(cached_pages(&v, 0), Some(0), "{v}");
    assert_eq!(v["files"][0]["residency"]["dirty_pages"], 0);
    assert!(v["files"][0]["stayed_reason"].is_null());

    let (v, _) = json_of(&[], &[&f]);
    assert_eq!(cached_pages(&v, 0), Some(0), "a separate check agrees");

    let (v, code) = json_of(&["--warm"], &[&f]);
    assert_eq!(code, 0);
    assert_eq!(v["files"][0]["before"]["cached_pages"], 0);
    // Readahead may bring in chunks before warm reaches them; those are
    // then skipped, so warm reads at most the file.
    let read = v["files"][0]["read_bytes"].as_u64().expect("read_bytes");
    assert!(read > 0 && read <= 8 << 20, "read {read}");
    assert!(most(cached_pages(&v, 0)), "warmed: all cached: {v}");

    // Warming a cached file reads nothing; what this machine's proactive
    // reclaim (DAMON pageout) took meanwhile is read back, a window of at
    // most 2 MiB per page missing.
    let (v, _) = json_of(&["--warm"], &[&f]);
    let before = v["files"][0]["before"]["cached_pages"]
        .as_u64()
        .expect("cached before");
    let read = v["files"][0]["read_bytes"].as_u64().expect("read_bytes");
    assert!(
        read <= (pages - before.min(pages)) * (2 << 20),
        "{before} of {pages} pages cached, yet {read} bytes read: {v}"
    );
}

#[test]
fn a_sparse_file_warms_its_data_only() {
    let dir = tempfile::tempdir().expect("tempdir");
    let f = dir.path().join("sparse");
    write_file(&f, 1 << 20);
    let file = std::fs::OpenOptions::new()
        .write(true)
        .open(&f)
        .expect("open");
    file.set_len(64 << 30).expect("64 GiB sparse");
    drop(file);
    if on_tmpfs(dir.path()) {
        common::skip!("the temporary directory is on tmpfs");
    }
    let (v, _) = json_of(&["--evict"], &[&f]);
    assert_eq!(v["files"][0]["size_bytes"], 64u64 << 30);
    let (v, code) = json_of(&["--warm", "-v"], &[&f]);
    assert_eq!(code, 0);
    let read = v["files"][0]["read_bytes"].as_u64().expect("read_bytes");
    assert!(read > 0, "data read: {read}");
    assert!(read < 1 << 30, "holes were read: {read}");
    let map = v["files"][0]["map_percent"].as_array().expect("map");
    assert_eq!(map.len(), 64);
    assert!(map[0].as_u64().is_some_and(|p| p > 0), "first range cached");
    assert!(
        map[1..].iter().all(|p| p == 0),
        "holes stay uncached: {map:?}"
    );
}

#[test]
fn unreadable_residency_is_unknown_for_an_unprivileged_user() {
    common::require!(common::can_switch_users());
    let dir = tempfile::tempdir().expect("tempdir");
    std::fs::set_permissions(dir.path(), std::fs::Permissions::from_mode(0o755)).expect("chmod");
    let f = dir.path().join("roots");
    write_file(&f, 1 << 20);
    std::fs::set_permissions(&f, std::fs::Permissions::from_mode(0o644)).expect("chmod");
    let bin = common::tally_for_others();
    let out = common::command("setpriv")
        .args(["--reuid=65534", "--regid=65534", "--clear-groups"])
        .arg(&bin)
        .args(["cache", "--format", "json"])
        .arg(&f)
        .output()
        .expect("setpriv");
    let v: Value = serde_json::from_slice(&out.stdout).expect("json");
    assert_eq!(out.status.code(), Some(0));
    assert_eq!(v["files"][0]["residency"]["state"], "unknown", "{v}");
    assert!(v["files"][0]["residency"]["cached_pages"].is_null());
    assert_eq!(v["total"]["unknown_files"], 1);
    assert_eq!(v["total"]["cached_bytes"], 0);

    let out = common::command("setpriv")
        .args(["--reuid=65534", "--regid=65534", "--clear-groups"])
        .arg(&bin)
        .arg("cache")
        .arg(&f)
        .output()
        .expect("setpriv");
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("unknown"), "{text}");
    assert!(!text.contains("100%"), "{text}");
}

#[test]
fn directories_need_r_and_paths_come_from_stdin() {
    let dir = tempfile::tempdir().expect("tempdir");
    let d = dir.path();
    write_file(&d.join("a"), 4096);
    std::fs::create_dir(d.join("sub")).expect("mkdir");
    write_file(&d.join("sub/b"), 100);
    std::os::unix::fs::symlink(d, d.join("sub/loop")).expect("symlink");

    let (v, code) = json_of(&[], &[d]);
    assert_eq!(code, 1, "a directory without -r is skipped");
    assert_eq!(v["problems"].as_array().map(Vec::len), Some(1));
    assert!(
        v["problems"][0]["error"]
            .as_str()
            .is_some_and(|e| e.contains("-r"))
    );

    let (v, code) = json_of(&["-r"], &[d]);
    assert_eq!(code, 0);
    assert_eq!(v["total"]["files"], 2);
    assert_eq!(v["total"]["size_bytes"], 4196);

    let mut child = tally()
        .args(["cache", "-0", "--format", "csv", "-"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("spawn");
    let mut input = Vec::new();
    for p in [d.join("a"), d.join("sub/b"), d.join("missing")] {
        input.extend_from_slice(p.as_os_str().as_encoded_bytes());
        input.push(0);
    }
    child
        .stdin
        .take()
        .expect("stdin")
        .write_all(&input)
        .expect("write");
    let out = child.wait_with_output().expect("wait");
    assert_eq!(out.status.code(), Some(1), "a missing path exits 1");
    let text = String::from_utf8_lossy(&out.stdout);
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(lines.len(), 4, "header, two files, one problem: {text}");
    assert!(lines[0].starts_with("path,size_bytes,state,cached_bytes"));
    assert!(lines[3].contains("no such file"));
}

#[test]
fn bad_usage_exits_2() {
    tally()
        .args(["cache", "--evict", "--warm", "x"])
        .assert()
        .code(2);
    tally().args(["cache"]).assert().code(2);
}

#[test]
fn lock_holds_the_file_until_interrupted() {
    let dir = tempfile::tempdir().expect("tempdir");
    let f = dir.path().join("locked");
    write_file(&f, 2 << 20);
    let _ = json_of(&["--evict"], &[&f]);
    let mut child = tally()
        .args(["cache", "--lock", "--format", "json"])
        .arg(&f)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn");
    let stderr = child.stderr.take().expect("stderr");
    let mut line = String::new();
    BufReader::new(stderr).read_line(&mut line).expect("read");
    if !line.contains("holding") {
        // Without the privilege to lock, stderr says why and tally fails.
        let out = child.wait_with_output().expect("wait");
        assert!(line.contains("mlock failed"), "{line}");
        assert_eq!(out.status.code(), Some(1), "{line}");
        return;
    }
    let (v, _) = json_of(&[], &[&f]);
    assert_eq!(cached_pages(&v, 0), Some(512), "locked pages are cached");
    let (v, _) = json_of(&["--evict"], &[&f]);
    assert_eq!(cached_pages(&v, 0), Some(512), "locked pages stay");
    let reason = v["files"][0]["stayed_reason"].as_str().unwrap_or("");
    assert!(reason.contains("locked (mlock) by process"), "{reason}");
    let pid = child.id().to_string();
    common::command("kill")
        .args(["-TERM", &pid])
        .status()
        .expect("kill");
    let out = child.wait_with_output().expect("wait");
    assert_eq!(out.status.code(), Some(0));
    let v: Value = serde_json::from_slice(&out.stdout).expect("json");
    assert_eq!(cached_pages(&v, 0), Some(512));
}

/// A temporary directory user nobody may enter.
fn open_tempdir() -> tempfile::TempDir {
    let dir = tempfile::tempdir().expect("tempdir");
    std::fs::set_permissions(dir.path(), std::fs::Permissions::from_mode(0o755)).expect("chmod");
    dir
}

#[test]
fn cache_escapes_escape_sequences_and_newlines_in_file_names() {
    let dir = tempfile::tempdir().expect("tempdir");
    let name = OsStr::from_bytes(b"evil\x1b[31mred\nsecond line");
    let f = dir.path().join(name);
    write_file(&f, 4096);
    let missing = dir
        .path()
        .join(OsStr::from_bytes(b"gone\x1b]0;title\x07\n"));
    let out = tally()
        .arg("cache")
        .arg(&f)
        .arg(&missing)
        .output()
        .expect("run");
    assert_eq!(out.status.code(), Some(1), "one path is missing");
    for (stream, bytes) in [("stdout", &out.stdout), ("stderr", &out.stderr)] {
        assert!(
            !bytes.iter().any(|b| *b == 0x1b || *b == 0x07),
            "raw control bytes on {stream}: {:?}",
            String::from_utf8_lossy(bytes)
        );
    }
    let text = String::from_utf8_lossy(&out.stdout);
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(lines.len(), 2, "a header and one row: {text}");
    assert!(
        lines[1].ends_with("evil\\x1b[31mred\\x0asecond line"),
        "{text}"
    );
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(err.lines().count(), 1, "one message: {err}");
    assert!(
        err.contains("gone\\x1b]0;title\\x07\\x0a: skipped"),
        "{err}"
    );
}

#[test]
fn cache_prints_skipped_paths_on_stderr_not_in_the_report() {
    let dir = tempfile::tempdir().expect("tempdir");
    let good = dir.path().join("good");
    write_file(&good, 8192);
    let dangling = dir.path().join("dangling");
    std::os::unix::fs::symlink(dir.path().join("nowhere"), &dangling).expect("symlink");
    let out = tally()
        .arg("cache")
        .arg(&good)
        .arg(&dangling)
        .output()
        .expect("run");
    assert_eq!(out.status.code(), Some(1));
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        !text.contains("skipped") && !text.contains("dangling"),
        "{text}"
    );
    assert_eq!(text.lines().count(), 2, "a header and one row: {text}");
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("dangling: skipped: no such file or directory"),
        "{err}"
    );

    // An unreadable file, as an unprivileged user.
    common::require!(common::can_switch_users());
    let dir = open_tempdir();
    let secret = dir.path().join("secret");
    write_file(&secret, 4096);
    std::fs::set_permissions(&secret, std::fs::Permissions::from_mode(0o600)).expect("chmod");
    let bin = common::tally_for_others();
    let out = common::command("setpriv")
        .args(["--reuid=65534", "--regid=65534", "--clear-groups"])
        .arg(&bin)
        .arg("cache")
        .arg(&secret)
        .output()
        .expect("setpriv");
    assert_eq!(out.status.code(), Some(1));
    assert_eq!(
        String::from_utf8_lossy(&out.stdout),
        "no regular files found (1 path skipped)\n"
    );
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("secret: skipped: cannot open: permission denied"),
        "{err}"
    );
}

#[test]
fn cache_with_nothing_to_list_says_so_instead_of_a_bare_header() {
    let dir = tempfile::tempdir().expect("tempdir");
    let out = tally()
        .args(["cache", "-r"])
        .arg(dir.path())
        .output()
        .expect("run");
    assert_eq!(out.status.code(), Some(0), "an empty directory is no error");
    assert_eq!(
        String::from_utf8_lossy(&out.stdout),
        "no regular files found\n"
    );
    let out = tally()
        .arg("cache")
        .arg(dir.path().join("missing"))
        .output()
        .expect("run");
    assert_eq!(out.status.code(), Some(1));
    assert_eq!(
        String::from_utf8_lossy(&out.stdout),
        "no regular files found (1 path skipped)\n"
    );
    // Machine formats keep their structure.
    let (v, code) = json_of(&["-r"], &[dir.path()]);
    assert_eq!(code, 0);
    assert_eq!(v["files"].as_array().map(Vec::len), Some(0));
}

#[test]
fn cache_lock_fails_when_the_locked_memory_limit_allows_nothing() {
    common::require!(common::can_switch_users());
    common::require!(common::tool("prlimit", "util-linux"));
    let dir = open_tempdir();
    let f = dir.path().join("model.bin");
    write_file(&f, 1 << 20);
    std::fs::set_permissions(&f, std::fs::Permissions::from_mode(0o644)).expect("chmod");
    // 64 KiB may be locked; the file needs 1 MiB.
    let bin = common::tally_for_others();
    let child = common::command("prlimit")
        .arg("--memlock=65536:65536")
        .args([
            "setpriv",
            "--reuid=65534",
            "--regid=65534",
            "--clear-groups",
        ])
        .arg(&bin)
        .args(["cache", "--lock"])
        .arg(&f)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("prlimit");
    // Nothing locked: tally must not wait for Ctrl-C to hold nothing.
    let out = common::wait_or_kill(child, Duration::from_secs(60));
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(err.contains("model.bin: not locked: mlock failed"), "{err}");
    assert!(
        err.contains("RLIMIT_MEMLOCK") && err.contains("64.0 KiB"),
        "{err}"
    );
    assert!(err.contains("nothing locked"), "{err}");
    assert!(!err.contains("holding"), "{err}");
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        !text.contains("mlock"),
        "errors stay off the report: {text}"
    );
}

#[test]
fn cache_json_keeps_non_utf8_file_names_whole() {
    let dir = tempfile::tempdir().expect("tempdir");
    let f = dir.path().join(OsStr::from_bytes(b"caf\xe9.bin"));
    write_file(&f, 4096);
    let missing = dir.path().join(OsStr::from_bytes(b"gone\xff"));
    for action in [&[][..], &["--evict"], &["--warm"]] {
        let (v, code) = json_of(action, &[&f, &missing]);
        assert_eq!(code, 1, "one path is missing");
        let hex: String = common::hex_of(&f);
        assert_eq!(v["files"][0]["path"]["bytes_hex"], hex, "{v}");
        assert!(
            v["files"][0]["path"]["lossy"]
                .as_str()
                .is_some_and(|s| s.ends_with("caf\u{fffd}.bin"))
        );
        assert!(
            v["problems"][0]["path"]["bytes_hex"]
                .as_str()
                .is_some_and(|h| h.ends_with("676f6e65ff")),
            "{v}"
        );
        assert_eq!(v["total"]["files"], 1);
    }
    // The other text formats escape the name rather than lose the row.
    let out = tally()
        .args(["cache", "--format", "csv"])
        .arg(&f)
        .output()
        .expect("run");
    assert_eq!(out.status.code(), Some(0));
    let text = String::from_utf8(out.stdout).expect("CSV is UTF-8");
    assert!(text.contains("caf\\xe9.bin"), "{text}");
}

#[test]
fn cache_keeps_its_exit_codes_when_stderr_is_unwritable() {
    let dir = tempfile::tempdir().expect("tempdir");
    let good = dir.path().join("good");
    write_file(&good, 4096);
    let missing = dir.path().join("missing");
    let full = std::fs::OpenOptions::new().write(true).open("/dev/full");
    if let Ok(full) = full {
        let out = tally()
            .arg("cache")
            .arg(&good)
            .arg(&missing)
            .stderr(full)
            .output()
            .expect("run");
        assert_eq!(out.status.code(), Some(1), "2>/dev/full");
        assert_eq!(String::from_utf8_lossy(&out.stdout).lines().count(), 2);
        let full = std::fs::OpenOptions::new()
            .write(true)
            .open("/dev/full")
            .expect("full");
        let out = tally().arg("cache").stderr(full).output().expect("run");
        assert_eq!(out.status.code(), Some(2), "usage error, 2>/dev/full");
    } else {
        common::skip_part!("the /dev/full part: no /dev/full");
    }
    // A closed pipe: the reader of stderr went away before tally wrote.
    let mut child = tally()
        .arg("cache")
        .arg(&good)
        .arg(&missing)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn");
    drop(child.stderr.take());
    let out = child.wait_with_output().expect("wait");
    assert_eq!(out.status.code(), Some(1), "stderr a closed pipe");
}

/// cachestat(2) (Linux 6.5+) answers in one call; mincore(2) is the
/// fallback on older kernels. Both must give the same residency: a file
/// half cached is measured both ways (`--mincore` takes the fallback).
#[test]
fn residency_by_mincore_matches_cachestat() {
    let dir = tempfile::tempdir().expect("tempdir");
    if on_tmpfs(dir.path()) {
        common::skip!("tmpfs cannot evict: its page cache is the file itself");
    }
    let f = dir.path().join("half");
    write_file(&f, 4 << 20);
    let (_, code) = json_of(&["--evict"], &[&f]);
    assert_eq!(code, 0);
    // Read the first half back into the cache.
    let mut file = std::fs::File::open(&f).expect("open");
    let mut buf = vec![0u8; 2 << 20];
    std::io::Read::read_exact(&mut file, &mut buf).expect("read");
    let (by_cachestat, _) = json_of(&[], &[&f]);
    let (by_mincore, _) = json_of(&["--mincore"], &[&f]);
    assert_eq!(by_cachestat["files"][0]["residency"]["method"], "cachestat");
    assert_eq!(by_mincore["files"][0]["residency"]["method"], "mincore");
    let (a, b) = (cached_pages(&by_cachestat, 0), cached_pages(&by_mincore, 0));
    assert!(a.is_some_and(|p| p >= 512), "{by_cachestat}");
    assert_eq!(a, b, "cachestat {by_cachestat} mincore {by_mincore}");
    // Eviction verified by the fallback too.
    let (evicted, code) = json_of(&["--evict", "--mincore"], &[&f]);
    assert_eq!(code, 0);
    assert_eq!(evicted["files"][0]["residency"]["method"], "mincore");
    assert_eq!(cached_pages(&evicted, 0), Some(0), "{evicted}");
}

/// `cache -r` of a tree held every row until the end and printed every one
/// in human text; now human text shows the 20 files with the most cached
/// and the totals over all (`--all` every file), while the machine formats
/// list every file.
#[test]
fn cache_human_shows_the_top_20_and_machine_formats_every_file() {
    let dir = tempfile::tempdir().expect("tempdir");
    for d in 0..4 {
        std::fs::create_dir(dir.path().join(format!("d{d}"))).expect("mkdir");
        for i in 0..500 {
            std::fs::write(dir.path().join(format!("d{d}/f{i}")), b"x").expect("write");
        }
    }
    let out = tally()
        .args(["cache", "-r"])
        .arg(dir.path())
        .output()
        .expect("run");
    assert_eq!(out.status.code(), Some(0));
    let text = String::from_utf8_lossy(&out.stdout);
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(lines.len(), 1 + 20 + 2, "{text}");
    assert!(lines[21].contains("total of 2,000 files"), "{text}");
    assert!(lines[22].starts_with("20 of 2,000 files shown"), "{text}");
    let out = tally()
        .args(["cache", "-r", "--top", "5"])
        .arg(dir.path())
        .output()
        .expect("run");
    assert_eq!(
        String::from_utf8_lossy(&out.stdout).lines().count(),
        1 + 5 + 2
    );
    let out = tally()
        .args(["cache", "-r", "--all"])
        .arg(dir.path())
        .output()
        .expect("run");
    let text = String::from_utf8_lossy(&out.stdout);
    assert_eq!(text.lines().count(), 1 + 2_000 + 1, "{text}");
    let (v, code) = json_of(&["-r"], &[dir.path()]);
    assert_eq!(code, 0);
    assert_eq!(v["files"].as_array().expect("files").len(), 2_000);
    assert_eq!(v["total"]["files"], 2_000);
    let out = tally()
        .args(["cache", "-r", "--format", "csv"])
        .arg(dir.path())
        .output()
        .expect("run");
    assert_eq!(
        String::from_utf8_lossy(&out.stdout).lines().count(),
        1 + 2_000
    );
    let out = tally()
        .args(["cache", "-r", "--format", "prometheus"])
        .arg(dir.path())
        .output()
        .expect("run");
    let prom = String::from_utf8_lossy(&out.stdout);
    assert_eq!(
        prom.lines()
            .filter(|l| l.starts_with("tally_cache_size_bytes{"))
            .count(),
        2_000
    );
    assert_eq!(
        prom.lines()
            .filter(|l| l.starts_with("tally_cache_cached_bytes{"))
            .count(),
        2_000
    );
    // Each family's samples together, as the exposition format requires.
    let first_cached = prom.find("tally_cache_cached_bytes{").expect("cached");
    assert!(
        prom[first_cached..]
            .find("tally_cache_size_bytes{")
            .is_none()
    );
}

/// Counts of `syscalls` made by `tally ARGS` (and its threads), from
/// `strace -c`.
fn syscall_counts(args: &[&std::ffi::OsStr]) -> std::collections::HashMap<String, u64> {
    let dir = tempfile::tempdir().expect("tempdir");
    let log = dir.path().join("strace");
    let out = common::command("strace")
        .args(["-f", "-c", "-U", "name,calls", "-o"])
        .arg(&log)
        .arg(common::tally_bin())
        .args(args)
        .stdout(Stdio::null())
        .output()
        .expect("strace");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let text = std::fs::read_to_string(&log).expect("strace -c output");
    text.lines()
        .filter_map(|l| {
            let mut f = l.split_whitespace();
            let name = f.next()?;
            let calls = f.next()?.parse().ok()?;
            Some((name.to_string(), calls))
        })
        .collect()
}

/// Rust's stdout is line-buffered even into a pipe or a file: `cache -r`
/// made one write() per line (100,002 for 100,000 files), and two stat
/// calls per file. Now a report goes out through one buffered writer, and
/// each file is opened and stat'ed once.
#[test]
fn cache_of_20000_files_writes_in_blocks_and_stats_each_file_once() {
    common::require!(common::tool("strace", "strace"));
    let dir = tempfile::tempdir().expect("tempdir");
    let files = 20_000u64;
    for d in 0..20 {
        std::fs::create_dir(dir.path().join(format!("d{d}"))).expect("mkdir");
        for i in 0..files / 20 {
            std::fs::write(dir.path().join(format!("d{d}/f{i}")), b"x").expect("write");
        }
    }
    for format in ["human", "csv", "json"] {
        let counts = syscall_counts(&[
            "cache".as_ref(),
            "-r".as_ref(),
            "--all".as_ref(),
            "--format".as_ref(),
            format.as_ref(),
            dir.path().as_os_str(),
        ]);
        let writes = counts.get("write").copied().unwrap_or(0);
        // 20,000 lines of 30 to 400 bytes: at most a few hundred blocks.
        assert!(
            (1..=300).contains(&writes),
            "{format}: {writes} write() calls"
        );
        let stats: u64 = ["statx", "newfstatat", "fstat", "stat", "lstat"]
            .iter()
            .map(|s| counts.get(*s).copied().unwrap_or(0))
            .sum();
        assert!(
            stats as f64 <= files as f64 * 1.1,
            "{format}: {stats} stat calls for {files} files"
        );
        let opens = counts.get("openat").copied().unwrap_or(0);
        assert!(
            opens as f64 <= files as f64 * 1.1,
            "{format}: {opens} opens for {files} files"
        );
    }
}

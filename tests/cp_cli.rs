//! `tally cp`: contents, holes, modes, the page cache left behind, and
//! failures that leave nothing half-written.

use std::io::Write;
use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::path::Path;
use std::process::{Command, Output};

use serde_json::Value;

mod common;
use common::on_tmpfs;

fn tally() -> Command {
    common::tally_std()
}

fn cp(args: &[&str], paths: &[&Path]) -> Output {
    tally()
        .arg("cp")
        .args(args)
        .args(paths)
        .output()
        .expect("run")
}

fn cp_json(args: &[&str], paths: &[&Path]) -> Value {
    let mut all = vec!["--format", "json"];
    all.extend_from_slice(args);
    let out = cp(&all, paths);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).expect("json")
}

/// Deterministic non-repeating bytes.
fn pattern(len: usize, seed: u64) -> Vec<u8> {
    let mut x = seed | 1;
    (0..len)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x as u8
        })
        .collect()
}

fn write(path: &Path, data: &[u8]) {
    let mut f = std::fs::File::create(path).expect("create");
    f.write_all(data).expect("write");
    f.sync_all().expect("sync");
}

#[test]
fn empty_and_small_files_copy_with_their_mode() {
    let dir = tempfile::tempdir().expect("tempdir");
    let d = dir.path();
    write(&d.join("empty"), b"");
    write(&d.join("small"), b"hello, page cache\n");
    std::fs::set_permissions(d.join("small"), std::fs::Permissions::from_mode(0o640))
        .expect("chmod");

    let out = cp(&[], &[&d.join("empty"), &d.join("empty.copy")]);
    assert_eq!(out.status.code(), Some(0));
    assert!(out.stdout.is_empty() && out.stderr.is_empty(), "quiet");
    assert_eq!(
        std::fs::metadata(d.join("empty.copy")).expect("copy").len(),
        0
    );

    let v = cp_json(&[], &[&d.join("small"), &d.join("small.copy")]);
    assert_eq!(v["files"][0]["size_bytes"], 18);
    assert_eq!(v["files"][0]["data_bytes"], 18);
    assert_eq!(
        std::fs::read(d.join("small.copy")).expect("read"),
        b"hello, page cache\n"
    );
    let mode = std::fs::metadata(d.join("small.copy"))
        .expect("meta")
        .mode();
    assert_eq!(mode & 0o777, 0o640);
    // No temporary file is left beside the copies.
    let names: Vec<String> = common::entries(d)
        .iter()
        .filter_map(|p| p.file_name().map(|n| n.to_string_lossy().into_owned()))
        .collect();
    assert_eq!(names, ["empty", "empty.copy", "small", "small.copy"]);
}

#[test]
fn a_sparse_file_keeps_its_holes() {
    let dir = tempfile::tempdir().expect("tempdir");
    let src = dir.path().join("sparse");
    let data = pattern(1 << 20, 7);
    {
        let f = std::fs::File::create(&src).expect("create");
        use std::os::unix::fs::FileExt;
        f.write_all_at(&data, 0).expect("write");
        f.write_all_at(&data, 32 << 20).expect("write");
        f.set_len(256 << 20).expect("set_len");
        f.sync_all().expect("sync");
    }
    let dst = dir.path().join("sparse.copy");
    let v = cp_json(&[], &[&src, &dst]);
    assert_eq!(v["files"][0]["size_bytes"], 256 << 20);
    let a = std::fs::read(&src).expect("read");
    let b = std::fs::read(&dst).expect("read");
    assert_eq!(a.len(), b.len());
    assert!(a == b, "contents differ");
    let src_blocks = std::fs::metadata(&src).expect("meta").blocks();
    let dst_blocks = std::fs::metadata(&dst).expect("meta").blocks();
    // 512-byte blocks: the data is 2 MiB; allow allocation slack, far
    // below the 256 MiB a hole-filling copy would allocate.
    assert!(
        dst_blocks <= src_blocks + 8192,
        "holes filled: {dst_blocks} blocks vs {src_blocks}"
    );
    assert!(v["files"][0]["data_bytes"].as_u64().unwrap_or(0) < 64 << 20);
}

/// Waits (up to 5 s) until the cached pages of `path` read the same three
/// times in a row, 20 ms apart.
fn settle_cache(path: &Path) {
    let cached = || {
        let out = tally()
            .args(["cache", "--format", "json"])
            .arg(path)
            .output()
            .expect("tally cache");
        let v: serde_json::Value = serde_json::from_slice(&out.stdout).expect("JSON");
        v["files"][0]["residency"]["cached_pages"].as_u64()
    };
    let start = std::time::Instant::now();
    let (mut last, mut same) = (cached(), 0);
    while same < 2 && start.elapsed() < std::time::Duration::from_secs(5) {
        std::thread::sleep(std::time::Duration::from_millis(20));
        let now = cached();
        same = if now == last { same + 1 } else { 0 };
        last = now;
    }
}

#[test]
fn a_large_copy_leaves_the_page_cache_as_it_found_it() {
    let dir = tempfile::tempdir().expect("tempdir");
    let src = dir.path().join("large");
    write(&src, &pattern(48 << 20, 3));
    let evict = tally()
        .args(["cache", "--evict"])
        .arg(&src)
        .output()
        .expect("evict");
    assert!(evict.status.success());
    let dst = dir.path().join("large.copy");
    let v = cp_json(&[], &[&src, &dst]);
    let f = &v["files"][0];
    assert!(std::fs::read(&src).expect("read") == std::fs::read(&dst).expect("read"));
    if on_tmpfs(dir.path()) {
        common::skip!("the cache part: the temporary directory is on tmpfs");
    }
    if f["source_cached_before_pages"].is_null() {
        common::skip!("the cache part: no cachestat on this kernel (6.5+)");
    }
    if f["method"] == "reflink" {
        common::skip!("the cache part: the filesystem made a reflink, no data was copied");
    }
    assert_eq!(f["source_cached_before_pages"], 0);
    assert_eq!(f["source_cached_after_pages"], 0, "{f}");
    assert_eq!(f["destination_cached_pages"], 0, "{f}");

    // Part cached before: that part stays, the rest leaves again.
    let _ = tally()
        .args(["cache", "--evict"])
        .arg(&src)
        .arg(&dst)
        .output();
    {
        use std::os::unix::fs::FileExt;
        let file = std::fs::File::open(&src).expect("open");
        let mut buf = vec![0u8; 8 << 20];
        file.read_exact_at(&mut buf, 0).expect("read");
    }
    // That read starts asynchronous readahead past 8 MiB. A block still in
    // flight when cp looks is empty to it, and cp then rightly drops what
    // lands there during the copy: wait until the cache is quiet, so
    // "before" means the same to the test and to cp.
    settle_cache(&src);
    let dst2 = dir.path().join("large.copy2");
    let v = cp_json(&[], &[&src, &dst2]);
    let f = &v["files"][0];
    let before = f["source_cached_before_pages"].as_u64().expect("before");
    let after = f["source_cached_after_pages"].as_u64().expect("after");
    assert!(before >= 2048, "the first 8 MiB were read: {before}");
    assert!(
        after >= before,
        "cached pages were dropped: {before} -> {after}"
    );
    assert!(
        after <= before + 512,
        "copy left pages: {before} -> {after}"
    );

    // --keep-cache keeps what the copy brought in (all but a few pages the
    // kernel may reclaim meanwhile on a busy machine; without the flag cp
    // drops the 40 MiB it read).
    let dst3 = dir.path().join("large.copy3");
    let v = cp_json(&["--keep-cache"], &[&src, &dst3]);
    let kept = v["files"][0]["source_cached_after_pages"]
        .as_u64()
        .expect("after");
    let whole = 48u64 << 8;
    assert!(
        kept <= whole && kept >= whole - whole / 100,
        "--keep-cache kept {kept} of {whole} pages"
    );
}

#[test]
fn across_filesystems_to_tmpfs() {
    let shm = Path::new("/dev/shm");
    let is_tmpfs = std::fs::read_to_string("/proc/mounts")
        .map(|m| m.lines().any(|l| l.contains(" /dev/shm tmpfs ")))
        .unwrap_or(false);
    if !is_tmpfs {
        common::skip!("/dev/shm is not a tmpfs here");
    }
    let dir = tempfile::tempdir().expect("tempdir");
    let src = dir.path().join("to-tmpfs");
    let data = pattern(3 << 20, 11);
    write(&src, &data);
    let target = tempfile::tempdir_in(shm).expect("tempdir in /dev/shm");
    let dst = target.path().join("copy");
    let v = cp_json(&["--sync"], &[&src, &dst]);
    assert!(std::fs::read(&dst).expect("read") == data);
    let method = v["files"][0]["method"].as_str().unwrap_or("");
    assert!(
        ["copy_file_range", "read_write", "read_write_dontcache"].contains(&method),
        "{method}"
    );
}

#[test]
fn copying_a_file_onto_itself_is_refused() {
    let dir = tempfile::tempdir().expect("tempdir");
    let f = dir.path().join("self");
    write(&f, b"precious");
    std::fs::hard_link(&f, dir.path().join("link")).expect("link");
    for dst in [f.clone(), dir.path().join("link"), dir.path().to_path_buf()] {
        let out = cp(&[], &[&f, &dst]);
        assert_eq!(out.status.code(), Some(1), "{}", dst.display());
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(err.contains("same file"), "{err}");
        assert_eq!(std::fs::read(&f).expect("read"), b"precious");
    }
    assert_eq!(
        common::entries(dir.path()).len(),
        2,
        "no temporary file left"
    );
}

/// A 1 MiB tmpfs mounted for one test, unmounted on drop.
struct SmallTmpfs {
    dir: tempfile::TempDir,
}

impl SmallTmpfs {
    fn mount() -> Option<SmallTmpfs> {
        let dir = tempfile::tempdir().ok()?;
        let ok = common::command("mount")
            .args(["-t", "tmpfs", "-o", "size=1m", "tally-test"])
            .arg(dir.path())
            .status()
            .ok()?
            .success();
        ok.then_some(SmallTmpfs { dir })
    }
}

impl Drop for SmallTmpfs {
    fn drop(&mut self) {
        let _ = common::command("umount").arg(self.dir.path()).status();
    }
}

#[test]
fn a_full_filesystem_leaves_no_partial_file_and_the_source_intact() {
    if !common::is_root() {
        common::skip!("mounting a small tmpfs needs root");
    }
    let Some(small) = SmallTmpfs::mount() else {
        common::skip!("cannot mount a tmpfs here (a container without CAP_SYS_ADMIN?)");
    };
    let dir = tempfile::tempdir().expect("tempdir");
    let src = dir.path().join("big");
    let data = pattern(4 << 20, 5);
    write(&src, &data);
    let dst = small.dir.path().join("big");
    let out = cp(&[], &[&src, &dst]);
    assert_eq!(out.status.code(), Some(1));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("full"), "{err}");
    assert!(err.contains("no partial file"), "{err}");
    assert!(
        common::entries(small.dir.path()).is_empty(),
        "something was left"
    );
    assert!(std::fs::read(&src).expect("read") == data, "source changed");
}

#[test]
fn directories_need_r_and_keep_their_shape() {
    let dir = tempfile::tempdir().expect("tempdir");
    let src = dir.path().join("tree");
    std::fs::create_dir_all(src.join("a/b")).expect("mkdir");
    write(&src.join("top"), b"top");
    write(&src.join("a/b/deep"), b"deep");
    std::os::unix::fs::symlink("top", src.join("link")).expect("symlink");
    let dst = dir.path().join("copy");

    let out = cp(&[], &[&src, &dst]);
    assert_eq!(out.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&out.stderr).contains("-r"));
    assert!(!dst.exists());

    let v = cp_json(&["-r", "-p"], &[&src, &dst]);
    assert_eq!(v["files"].as_array().map(Vec::len), Some(2));
    assert_eq!(v["directories"], 3);
    assert_eq!(v["symlinks"], 1);
    assert_eq!(std::fs::read(dst.join("a/b/deep")).expect("read"), b"deep");
    assert_eq!(
        std::fs::read_link(dst.join("link")).expect("link"),
        Path::new("top")
    );
    let m1 = std::fs::metadata(src.join("top")).expect("meta");
    let m2 = std::fs::metadata(dst.join("top")).expect("meta");
    assert_eq!(m1.mtime(), m2.mtime(), "-p keeps times");

    // Into itself is refused.
    let out = cp(&["-r"], &[&src, &src.join("a")]);
    assert_eq!(out.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&out.stderr).contains("into itself"));
}

#[test]
fn several_sources_need_a_directory() {
    let dir = tempfile::tempdir().expect("tempdir");
    write(&dir.path().join("a"), b"a");
    write(&dir.path().join("b"), b"b");
    let out = cp(
        &[],
        &[
            &dir.path().join("a"),
            &dir.path().join("b"),
            &dir.path().join("nope"),
        ],
    );
    assert_eq!(out.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&out.stderr).contains("not a directory"));
    tally()
        .args(["cp", "only-one"])
        .output()
        .map(|o| {
            assert_eq!(o.status.code(), Some(2));
        })
        .expect("run");
}

#[test]
fn proc_files_are_copied_by_reading() {
    let dir = tempfile::tempdir().expect("tempdir");
    let dst = dir.path().join("status");
    let v = cp_json(&[], &[Path::new("/proc/self/status"), &dst]);
    assert_eq!(v["files"][0]["method"], "read_write");
    let text = std::fs::read_to_string(&dst).expect("read");
    assert!(text.starts_with("Name:"), "{text}");
}

#[test]
fn an_unwritable_destination_is_explained_and_left_clean() {
    common::require!(common::can_switch_users());
    let dir = tempfile::tempdir().expect("tempdir");
    std::fs::set_permissions(dir.path(), std::fs::Permissions::from_mode(0o755)).expect("chmod");
    let src = dir.path().join("readable");
    write(&src, b"data");
    std::fs::set_permissions(&src, std::fs::Permissions::from_mode(0o644)).expect("chmod");
    let bin = common::tally_for_others();
    let out = common::command("setpriv")
        .args(["--reuid=65534", "--regid=65534", "--clear-groups"])
        .arg(&bin)
        .arg("cp")
        .arg(&src)
        .arg(dir.path().join("copy"))
        .output()
        .expect("setpriv");
    assert_eq!(out.status.code(), Some(1));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("ermission denied"), "{err}");
    assert!(err.contains("writable"), "{err}");
    assert_eq!(common::entries(dir.path()), std::slice::from_ref(&src));
    assert_eq!(std::fs::read(&src).expect("read"), b"data");
}

#[test]
fn devices_are_not_replaced_and_links_are_followed() {
    let dir = tempfile::tempdir().expect("tempdir");
    let src = dir.path().join("src");
    write(&src, b"new");
    let out = cp(&[], &[&src, Path::new("/dev/null")]);
    assert_eq!(out.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&out.stderr).contains("regular files only"));
    let null = std::fs::metadata("/dev/null").expect("meta");
    assert!(!null.is_file(), "/dev/null must stay a device");

    let target = dir.path().join("target");
    write(&target, b"old");
    let link = dir.path().join("link");
    std::os::unix::fs::symlink(&target, &link).expect("symlink");
    let out = cp(&[], &[&src, &link]);
    assert_eq!(out.status.code(), Some(0));
    assert!(
        std::fs::symlink_metadata(&link)
            .expect("meta")
            .file_type()
            .is_symlink()
    );
    assert_eq!(std::fs::read(&target).expect("read"), b"new");

    std::os::unix::fs::symlink(dir.path().join("nowhere"), dir.path().join("dangling"))
        .expect("symlink");
    let out = cp(&[], &[&src, &dir.path().join("dangling")]);
    assert_eq!(out.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&out.stderr).contains("link to nothing"));
}

/// A source of `len` bytes, written fast (a repeated pattern, no holes).
fn big_file(path: &Path, len: usize) {
    let block = pattern(1 << 20, 13);
    let mut f = std::io::BufWriter::new(std::fs::File::create(path).expect("create"));
    for _ in 0..len >> 20 {
        f.write_all(&block).expect("write");
    }
    f.flush().expect("flush");
}

/// Waits until `pid` holds a file open in `dir` (the copy's output, named
/// or not): the copy has begun moving data.
fn wait_for_output_in(pid: u32, dir: &Path) -> bool {
    for _ in 0..20_000 {
        let Ok(fds) = std::fs::read_dir(format!("/proc/{pid}/fd")) else {
            return false;
        };
        for fd in fds.flatten() {
            if let Ok(target) = std::fs::read_link(fd.path())
                && target.parent() == Some(dir)
            {
                return true;
            }
        }
        std::thread::sleep(std::time::Duration::from_micros(200));
    }
    false
}

/// SIGINT, SIGTERM or SIGHUP during the copy of a large file left a hidden
/// `.NAME.XXXXXX.tally-cp` of hundreds of MB; a crash too. Both ways of
/// writing the copy are tried: the unnamed `O_TMPFILE` file (nothing to
/// leave even on SIGKILL) and the named fallback (removed by the signal
/// handler).
#[test]
fn cp_interrupted_by_a_signal_leaves_no_temp_file() {
    use std::os::unix::process::ExitStatusExt;
    let dir = tempfile::tempdir().expect("tempdir");
    let src = dir.path().join("big");
    big_file(&src, 1 << 30);
    let out_dir = dir.path().join("out");
    std::fs::create_dir(&out_dir).expect("mkdir");
    let dst = out_dir.join("big.copy");
    std::fs::write(&dst, b"the old copy").expect("write");
    let runs = [
        (libc::SIGINT, false),
        (libc::SIGTERM, false),
        (libc::SIGHUP, false),
        (libc::SIGKILL, false),
        (libc::SIGINT, true),
        (libc::SIGTERM, true),
        (libc::SIGHUP, true),
        (libc::SIGSEGV, true), // as a crash would
    ];
    for (sig, named) in runs {
        let mut cmd = common::tally_std();
        cmd.arg("cp");
        if named {
            cmd.arg("--named-temp");
        }
        let child = cmd
            .arg(&src)
            .arg(&dst)
            .stderr(std::process::Stdio::null())
            .spawn()
            .expect("spawn");
        let mut reaper = common::Reaper(vec![child]);
        let pid = reaper.0[0].id();
        assert!(wait_for_output_in(pid, &out_dir), "the copy never began");
        // SAFETY: signalling our own child, still unreaped.
        assert_eq!(unsafe { libc::kill(pid as i32, sig) }, 0);
        let status = reaper.0[0].wait().expect("wait");
        assert_eq!(
            status.signal(),
            Some(sig),
            "signal {sig} (named {named}): the copy ended first or differently: {status:?}"
        );
        assert_eq!(
            common::entries(&out_dir),
            std::slice::from_ref(&dst),
            "signal {sig} (named {named}) left a file"
        );
        assert_eq!(std::fs::read(&dst).expect("read"), b"the old copy");
    }
}

/// A file truncated while it was copied: tally reported success and set the
/// copy's length to the old size, filling the end with stale data (GNU cp
/// copies up to the new end and says nothing). tally now refuses the copy
/// and leaves nothing; a file that only claims more than it has (sysfs,
/// size and time unchanged) still copies what it has.
#[test]
fn cp_of_a_file_that_shrinks_mid_copy_fails_and_leaves_nothing() {
    let dir = tempfile::tempdir().expect("tempdir");
    let src = dir.path().join("shrinking");
    big_file(&src, 1 << 30);
    let out_dir = dir.path().join("out");
    std::fs::create_dir(&out_dir).expect("mkdir");
    let dst = out_dir.join("copy");
    let child = tally()
        .arg("cp")
        .arg(&src)
        .arg(&dst)
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("spawn");
    let mut reaper = common::Reaper(vec![child]);
    let pid = reaper.0[0].id() as i32;
    assert!(
        wait_for_output_in(pid as u32, &out_dir),
        "the copy never began"
    );
    // Stopped mid-copy, so the truncation lands before the copy ends.
    // SAFETY: signalling our own child, still unreaped.
    assert_eq!(unsafe { libc::kill(pid, libc::SIGSTOP) }, 0);
    std::fs::OpenOptions::new()
        .write(true)
        .open(&src)
        .expect("open")
        .set_len(1 << 20)
        .expect("truncate");
    // SAFETY: as above.
    assert_eq!(unsafe { libc::kill(pid, libc::SIGCONT) }, 0);
    let child = reaper.0.remove(0);
    let out = child.wait_with_output().expect("wait");
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(err.contains("changed while it was copied"), "{err}");
    assert!(
        common::entries(&out_dir).is_empty(),
        "a copy or temporary file was left"
    );

    // sysfs files claim 4096 bytes and end sooner: copied as they read.
    let sys = Path::new("/sys/kernel/mm/transparent_hugepage/enabled");
    if let (Ok(text), Ok(meta)) = (std::fs::read(sys), std::fs::metadata(sys))
        && meta.len() as usize > text.len()
    {
        let copy = out_dir.join("thp");
        let out = cp(&[], &[sys, &copy]);
        assert_eq!(
            out.status.code(),
            Some(0),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        assert_eq!(std::fs::read(&copy).expect("read"), text);
    }
}

/// A destination name of 239-255 bytes failed: the temporary name
/// `.NAME.XXXXXX.tally-cp` was longer than NAME_MAX (255).
#[test]
fn cp_to_a_255_byte_name_works() {
    let dir = tempfile::tempdir().expect("tempdir");
    let src = dir.path().join("s");
    write(&src, b"long names");
    for (len, named) in [(255, false), (239, true), (255, true)] {
        let out_dir = tempfile::tempdir_in(dir.path()).expect("tempdir");
        let name = "n".repeat(len);
        let dst = out_dir.path().join(&name);
        let args: &[&str] = if named { &["--named-temp"] } else { &[] };
        let out = cp(args, &[&src, &dst]);
        assert_eq!(
            out.status.code(),
            Some(0),
            "{len} bytes: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        assert_eq!(std::fs::read(&dst).expect("read"), b"long names");
        assert_eq!(common::entries(out_dir.path()), std::slice::from_ref(&dst));
        // Over an existing file too (the rename path).
        let out = cp(args, &[&src, &dst]);
        assert_eq!(out.status.code(), Some(0));
        assert_eq!(common::entries(out_dir.path()), [dst]);
    }
    // A 255-byte source copied into a directory.
    let long_src = dir.path().join("m".repeat(255));
    write(&long_src, b"into");
    let into = tempfile::tempdir_in(dir.path()).expect("tempdir");
    let out = cp(&[], &[&long_src, into.path()]);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(
        std::fs::read(into.path().join("m".repeat(255))).expect("read"),
        b"into"
    );
}

/// `tally cp file nodir/` copied everything and only then failed on the
/// rename; now it fails first, saying what is missing.
#[test]
fn cp_into_a_missing_directory_fails_before_copying() {
    let dir = tempfile::tempdir().expect("tempdir");
    let src = dir.path().join("src");
    write(&src, b"data");
    let mut nodir = dir.path().join("nodir").into_os_string();
    nodir.push("/");
    let out = cp(&[], &[&src, Path::new(&nodir)]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(err.contains("not an existing directory"), "{err}");
    assert!(!err.contains("rename"), "{err}");
    let out = cp(&[], &[&src, &dir.path().join("nodir/deeper")]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(err.contains("destination's directory"), "{err}");
    assert!(err.contains("nothing was copied"), "{err}");
    assert_eq!(common::entries(dir.path()), [src]);
}

/// `tally cp file nodir/.` created a file named `nodir` (Path drops the
/// trailing `.`); like `nodir/`, it names a directory that is missing.
#[test]
fn cp_to_missing_dir_dot_creates_no_file_named_after_the_dir() {
    let dir = tempfile::tempdir().expect("tempdir");
    let src = dir.path().join("src");
    write(&src, b"data");
    for tail in ["/.", "/.."] {
        let mut nodir = dir.path().join("nodir").into_os_string();
        nodir.push(tail);
        let out = cp(&[], &[&src, Path::new(&nodir)]);
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(1), "{tail}: {err}");
        assert!(err.contains("not an existing directory"), "{tail}: {err}");
        assert_eq!(
            common::entries(dir.path()),
            std::slice::from_ref(&src),
            "{tail}"
        );
    }
    // Into an existing directory, `d/.` still copies into it.
    let d = dir.path().join("d");
    std::fs::create_dir(&d).expect("mkdir");
    let mut into = d.clone().into_os_string();
    into.push("/.");
    let out = cp(&[], &[&src, Path::new(&into)]);
    assert_eq!(out.status.code(), Some(0), "{out:?}");
    assert_eq!(std::fs::read(d.join("src")).expect("copied"), b"data");
}

fn from_hex(hex: &str) -> Vec<u8> {
    (0..hex.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(&hex[i..i + 2], 16).expect("hex"))
        .collect()
}

/// Non-UTF-8 file names cut cp's JSON mid-document; they are now written
/// as {"lossy", "bytes_hex"} objects.
#[test]
fn cp_json_keeps_non_utf8_names() {
    use std::ffi::OsStr;
    use std::os::unix::ffi::OsStrExt;
    let dir = tempfile::tempdir().expect("tempdir");
    let src = dir.path().join(OsStr::from_bytes(b"caf\xe9"));
    write(&src, b"bytes");
    let missing = dir.path().join(OsStr::from_bytes(b"gone\xff"));
    let into = dir.path().join("into");
    std::fs::create_dir(&into).expect("mkdir");
    let out = cp(&["--format", "json"], &[&src, &missing, &into]);
    assert_eq!(
        out.status.code(),
        Some(1),
        "the missing source is a problem"
    );
    let v: Value = serde_json::from_slice(&out.stdout).expect("complete JSON");
    let f = &v["files"][0];
    assert_eq!(
        from_hex(f["source"]["bytes_hex"].as_str().expect("hex")),
        src.as_os_str().as_bytes()
    );
    assert_eq!(
        from_hex(f["destination"]["bytes_hex"].as_str().expect("hex")),
        into.join(OsStr::from_bytes(b"caf\xe9"))
            .as_os_str()
            .as_bytes()
    );
    assert_eq!(
        from_hex(v["problems"][0]["path"]["bytes_hex"].as_str().expect("hex")),
        missing.as_os_str().as_bytes()
    );
    // The human message escapes the bytes.
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("gone\\xff"), "{err}");
}

/// With stderr unwritable (`2>/dev/full`, a closed pipe) cp panicked (exit
/// 101); the documented codes hold: 0 ok, 1 not copied, 2 bad usage. The
/// report `-v` asks for goes to stderr: on `/dev/full` it is lost, and
/// that is a failure (1), as for any report; a reader that went away is
/// none.
#[test]
fn cp_with_unwritable_stderr_keeps_its_exit_codes() {
    let dir = tempfile::tempdir().expect("tempdir");
    let src = dir.path().join("src");
    write(&src, b"data");
    let cases: [(Vec<std::ffi::OsString>, i32, i32); 4] = [
        (
            vec![
                "-v".into(),
                src.clone().into(),
                dir.path().join("ok").into(),
            ],
            1,
            0,
        ),
        (
            vec![src.clone().into(), dir.path().join("quiet").into()],
            0,
            0,
        ),
        (
            vec![
                dir.path().join("missing").into(),
                dir.path().join("x").into(),
            ],
            1,
            1,
        ),
        (vec!["only-one".into()], 2, 2),
    ];
    for (args, code, piped) in &cases {
        let full = std::fs::OpenOptions::new()
            .write(true)
            .open("/dev/full")
            .expect("/dev/full");
        let out = tally()
            .arg("cp")
            .args(args)
            .stderr(full)
            .output()
            .expect("run");
        assert_eq!(out.status.code(), Some(*code), "/dev/full: {args:?}");
        // A pipe whose reader is gone.
        let (reader, writer) = std::io::pipe().expect("pipe");
        drop(reader);
        let out = tally()
            .arg("cp")
            .args(args)
            .stderr(writer)
            .output()
            .expect("run");
        assert_eq!(out.status.code(), Some(*piped), "closed pipe: {args:?}");
    }
}

/// `tally cp -r -p` kept the owner of every file but made each directory
/// root's; it now gives directories their source's owner and group too.
#[test]
fn cp_r_p_keeps_the_owner_of_directories() {
    if !common::is_root() {
        common::skip!("needs root to give files away");
    }
    use std::os::unix::fs::{MetadataExt, PermissionsExt};
    let dir = tempfile::tempdir().expect("tempdir");
    let src = dir.path().join("s");
    std::fs::create_dir_all(src.join("sub")).expect("mkdir");
    write(&src.join("sub/f"), b"x");
    for p in [src.join("sub/f"), src.join("sub"), src.clone()] {
        std::os::unix::fs::chown(&p, Some(65534), Some(65534)).expect("chown");
    }
    std::fs::set_permissions(src.join("sub"), std::fs::Permissions::from_mode(0o750))
        .expect("chmod");
    let dst = dir.path().join("d");
    let out = cp(&["-r", "-p"], &[&src, &dst]);
    assert_eq!(out.status.code(), Some(0), "{out:?}");
    for p in [dst.clone(), dst.join("sub"), dst.join("sub/f")] {
        let m = std::fs::metadata(&p).expect("copied");
        assert_eq!((m.uid(), m.gid()), (65534, 65534), "{}", p.display());
    }
    let sub = std::fs::metadata(dst.join("sub")).expect("sub");
    assert_eq!(sub.permissions().mode() & 0o7777, 0o750);
}

/// Waits until `pid` holds open, in `dir`, a file already past `bytes`
/// (a large copy under way).
fn wait_for_copy_past(pid: u32, dir: &Path, bytes: u64) -> bool {
    for _ in 0..50_000 {
        let Ok(fds) = std::fs::read_dir(format!("/proc/{pid}/fd")) else {
            return false;
        };
        for fd in fds.flatten() {
            if let Ok(target) = std::fs::read_link(fd.path())
                && target.parent() == Some(dir)
                && std::fs::metadata(fd.path()).is_ok_and(|m| m.len() > bytes)
            {
                return true;
            }
        }
        std::thread::sleep(std::time::Duration::from_micros(200));
    }
    false
}

/// An interrupted `cp -r` left its directories 0755 (or 0700) instead of
/// the source's modes, and said nothing of what it had copied. Now a first
/// SIGINT or SIGTERM stops the copy: the file in flight is removed, every
/// directory made gets its mode, the report and stderr say how many files
/// and bytes were copied and where it stopped, and tally ends by the
/// signal.
#[test]
fn interrupted_cp_r_sets_directory_modes_and_says_what_was_copied() {
    use std::os::unix::process::ExitStatusExt;
    let dir = tempfile::tempdir().expect("tempdir");
    let src = dir.path().join("src");
    std::fs::create_dir_all(src.join("ro")).expect("mkdir");
    std::fs::create_dir_all(src.join("w/deep")).expect("mkdir");
    for i in 0..50 {
        std::fs::write(src.join(format!("w/f{i}")), pattern(4096, i)).expect("write");
    }
    std::fs::write(src.join("ro/small"), b"small").expect("write");
    std::fs::write(src.join("w/deep/d"), b"deep").expect("write");
    big_file(&src.join("big"), 1 << 30);
    let modes = [("", 0o750), ("ro", 0o555), ("w", 0o711), ("w/deep", 0o700)];
    for (d, mode) in modes {
        std::fs::set_permissions(src.join(d), std::fs::Permissions::from_mode(mode))
            .expect("chmod");
    }
    for sig in [libc::SIGINT, libc::SIGTERM] {
        let dst = dir.path().join(format!("copy-{sig}"));
        let child = tally()
            .args(["cp", "-r", "--format", "json"])
            .arg(&src)
            .arg(&dst)
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .expect("spawn");
        let mut reaper = common::Reaper(vec![child]);
        let pid = reaper.0[0].id();
        // The big file is copied last or among the first: either way its
        // copy is under way, 8 MiB in, when the signal comes.
        let started = std::time::Instant::now();
        while !dst.is_dir() && started.elapsed() < std::time::Duration::from_secs(30) {
            std::thread::sleep(std::time::Duration::from_millis(1));
        }
        assert!(
            wait_for_copy_past(pid, &dst, 8 << 20),
            "the big copy never began"
        );
        // SAFETY: signalling our own child, still unreaped.
        assert_eq!(unsafe { libc::kill(pid as i32, sig) }, 0);
        let child = reaper.0.remove(0);
        let out = child.wait_with_output().expect("wait");
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.signal(), Some(sig), "{err}");
        let name = if sig == libc::SIGINT {
            "SIGINT"
        } else {
            "SIGTERM"
        };
        let report: Value = serde_json::from_slice(&out.stdout).expect("a whole JSON report");
        let files = report["files"].as_array().expect("files").len();
        let bytes: u64 = report["files"]
            .as_array()
            .expect("files")
            .iter()
            .map(|f| f["size_bytes"].as_u64().expect("size"))
            .sum();
        assert_eq!(report["interrupted"]["signal"], name, "{report}");
        let big = src.join("big");
        let stopped: Vec<&str> = report["interrupted"]["stopped_at"]
            .as_array()
            .expect("stopped_at")
            .iter()
            .filter_map(Value::as_str)
            .collect();
        assert!(stopped.contains(&big.to_str().expect("utf-8")), "{report}");
        let said = format!(
            "tally: cp: interrupted by {name}: {} ({}) copied, ",
            tally::units::count(files as u64, "file", "files"),
            tally::units::human_bytes(bytes)
        );
        assert!(err.contains(&said), "{err}");
        assert!(
            err.contains("stopped at ") && err.contains(&big.display().to_string()),
            "{err}"
        );
        // Nothing of the big file, no temporary file; every directory made
        // has the source's mode.
        assert!(!dst.join("big").exists(), "a partial copy was left");
        let mut stack = vec![dst.clone()];
        while let Some(d) = stack.pop() {
            for e in std::fs::read_dir(&d).expect("read_dir").flatten() {
                let n = e.file_name().to_string_lossy().to_string();
                assert!(!n.ends_with(".tally-cp"), "a temporary file was left: {n}");
                if e.file_type().expect("type").is_dir() {
                    stack.push(e.path());
                }
            }
        }
        for (d, mode) in modes {
            if let Ok(m) = std::fs::metadata(dst.join(d)) {
                assert_eq!(m.mode() & 0o7777, mode, "{d} of {}", dst.display());
            }
        }
        assert_eq!(
            std::fs::metadata(&dst).expect("the root").mode() & 0o7777,
            0o750
        );
    }
}

//! Trees deeper than PATH_MAX. `tally cp -r`, `tally cache -r` and
//! `--cold` (of `run` and `compare`) failed with ENAMETOOLONG ("File name
//! too long") on a tree 5,000 levels deep and on one of 20 levels of
//! 250-byte names: they walked with whole paths, which the kernel refuses
//! past 4,096 bytes, and `cp -r` left a skeleton 2,045 levels deep. Each
//! test builds its tree, runs tally under the default soft limit of 1,024
//! open files, and checks the result through `/proc/self/fd/N/NAME`:
//! never a path longer than one name below an open directory. Deep trees
//! are removed with `rm -rf`, which walks relative to descriptors.

mod common;

use std::ffi::{OsStr, OsString};
use std::fs::File;
use std::io::Write;
use std::os::fd::AsRawFd;
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::process::Output;

use serde_json::Value;

/// A chain of directories: how deep, and the name of each level's.
struct Shape {
    depth: usize,
    name: fn(usize) -> OsString,
}

/// 5,000 levels of `d`: 10,000 bytes of path.
const DEEP: Shape = Shape {
    depth: 5000,
    name: |_| OsString::from("d"),
};

/// 20 levels of 250-byte names: 5,020 bytes of path.
const LONG_NAMES: Shape = Shape {
    depth: 20,
    name: |i| OsString::from(format!("{i:03}{}", "n".repeat(247))),
};

/// `name` in the open directory `dir`, as a short path.
fn at(dir: &File, name: &OsStr) -> PathBuf {
    PathBuf::from(format!("/proc/self/fd/{}", dir.as_raw_fd())).join(name)
}

fn open(dir: &File, name: &OsStr) -> File {
    File::open(at(dir, name)).unwrap_or_else(|e| panic!("open {}: {e}", name.to_string_lossy()))
}

fn chmod(path: &Path, mode: u32) {
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(mode)).expect("chmod");
}

/// A scratch directory that may hold deep trees: removed with `rm -rf`
/// (std's removal keeps a descriptor per level).
struct Scratch(tempfile::TempDir);

impl Scratch {
    fn new() -> Scratch {
        let dir = tempfile::tempdir().expect("tempdir");
        chmod(dir.path(), 0o755);
        Scratch(dir)
    }

    fn path(&self) -> &Path {
        self.0.path()
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        let _ = common::command("rm").arg("-rf").arg(self.0.path()).status();
    }
}

/// What a tree built holds.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
struct Counts {
    dirs: usize,
    files: usize,
    links: usize,
}

/// The bytes of the file at `level` (`big` files every 1,000 levels and
/// at the bottom: 100 KiB, so their pages count).
fn content(level: usize, big: bool) -> Vec<u8> {
    if big {
        (0..100 << 10)
            .map(|i| (i % 251) as u8 ^ level as u8)
            .collect()
    } else {
        format!("level {level}\n").into_bytes()
    }
}

/// Builds `root` (made here) as `shape` says: at every level a file `f`
/// and the next level's directory; a file `big` every 1,000 levels and at
/// the bottom; a link `l -> f` halfway; some directories 0750 and some
/// files 0600. `mode` (for a read-only tree) is given to every directory
/// once it is filled. Returns what it holds.
fn build(root: &Path, shape: &Shape, mode: Option<u32>) -> Counts {
    std::fs::create_dir(root).expect("mkdir");
    let mut dir = File::open(root).expect("open");
    let mut n = Counts {
        dirs: 1,
        ..Counts::default()
    };
    for level in 0..=shape.depth {
        let mut write = |name: &str, big: bool, file_mode: u32| {
            let path = at(&dir, OsStr::new(name));
            std::fs::write(&path, content(level, big)).expect("write");
            chmod(&path, mode.map_or(file_mode, |_| 0o444));
            n.files += 1;
        };
        write("f", false, if level % 3 == 0 { 0o600 } else { 0o644 });
        if level % 1000 == 0 && level > 0 || level == shape.depth {
            write("big", true, 0o644);
        }
        if level == shape.depth / 2 {
            std::os::unix::fs::symlink("f", at(&dir, OsStr::new("l"))).expect("symlink");
            n.links += 1;
        }
        let here = at(&dir, OsStr::new(""));
        if level < shape.depth {
            let name = (shape.name)(level);
            std::fs::create_dir(at(&dir, &name)).expect("mkdir");
            n.dirs += 1;
            let next = open(&dir, &name);
            chmod(
                &here,
                mode.unwrap_or(if level % 7 == 3 { 0o750 } else { 0o755 }),
            );
            dir = next;
        } else {
            chmod(&here, mode.unwrap_or(0o755));
        }
    }
    n
}

/// The names in `dir`, sorted.
fn names(dir: &File) -> Vec<OsString> {
    let mut v: Vec<OsString> = std::fs::read_dir(at(dir, OsStr::new("")))
        .expect("read_dir")
        .map(|e| e.expect("entry").file_name())
        .collect();
    v.sort();
    v
}

/// Walks `a` and `b` side by side and checks they hold the same: names,
/// types, modes, link targets and every byte (and, with `owner`, that
/// `b`'s directories are that user's). What `a` holds.
fn same_trees(a: &Path, b: &Path, owner: Option<u32>) -> Counts {
    let mut n = Counts {
        dirs: 1,
        ..Counts::default()
    };
    let mut stack = vec![(
        File::open(a).expect("open a"),
        File::open(b).expect("open b"),
        0usize,
    )];
    while let Some((da, db, depth)) = stack.pop() {
        let (na, nb) = (names(&da), names(&db));
        assert_eq!(na, nb, "the names at level {depth}");
        for name in na {
            let (pa, pb) = (at(&da, &name), at(&db, &name));
            let ma = std::fs::symlink_metadata(&pa).expect("stat a");
            let mb = std::fs::symlink_metadata(&pb).expect("stat b");
            let what = format!("{} at level {depth}", name.to_string_lossy());
            assert_eq!(ma.file_type(), mb.file_type(), "{what}");
            if ma.file_type().is_symlink() {
                n.links += 1;
                let target = std::fs::read_link(&pa).expect("readlink");
                assert_eq!(target, std::fs::read_link(&pb).expect("readlink"), "{what}");
                continue;
            }
            assert_eq!(ma.mode() & 0o7777, mb.mode() & 0o7777, "the mode of {what}");
            if ma.is_dir() {
                n.dirs += 1;
                if let Some(uid) = owner {
                    assert_eq!(mb.uid(), uid, "the owner of {what}");
                }
                stack.push((open(&da, &name), open(&db, &name), depth + 1));
            } else {
                n.files += 1;
                let bytes = std::fs::read(&pa).expect("read a");
                assert!(
                    bytes == std::fs::read(&pb).expect("read b"),
                    "{what} differs"
                );
            }
        }
    }
    n
}

/// The directory `depth` levels down `root` along `shape`, open.
fn down(root: &Path, shape: &Shape, depth: usize) -> File {
    let mut dir = File::open(root).expect("open");
    for level in 0..depth {
        dir = open(&dir, &(shape.name)(level));
    }
    dir
}

/// The path of `name` at the bottom of `root`, as tally names it.
fn deepest(root: &Path, shape: &Shape, name: &str) -> PathBuf {
    let mut p = root.to_path_buf();
    for level in 0..shape.depth {
        p.push((shape.name)(level));
    }
    p.join(name)
}

/// `tally ARGS` under the default soft limit of 1,024 open files (this
/// machine's may be higher): a descriptor kept per level would run out.
fn tally_limited(args: &[&OsStr]) -> Output {
    tally_as(&[], args)
}

/// As [`tally_limited`], started through `setpriv PRIV` when given (then
/// the binary is one the other user can reach: see
/// [`common::tally_for_others`]).
fn tally_as(privilege: &[&str], args: &[&OsStr]) -> Output {
    let reachable = common::tally_for_others();
    let (mut cmd, bin) = if privilege.is_empty() {
        (common::command("sh"), common::tally_bin())
    } else {
        let mut c = common::command("setpriv");
        c.args(privilege).arg("sh");
        (c, reachable.path().to_path_buf())
    };
    cmd.arg("-c")
        .arg("ulimit -Sn 1024 && exec \"$@\"")
        .arg("sh")
        .arg(bin)
        .args(args)
        .env_remove("COLUMNS");
    cmd.output().expect("tally runs")
}

fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).chars().take(2000).collect()
}

/// `tally cp -r` of a tree 5,000 levels deep stopped 2,045 levels down
/// ("cannot read: File name too long") and left that skeleton; 20 levels
/// of 250-byte names failed the same way. Now both copy whole: every
/// file byte for byte, every link, every directory's mode.
#[test]
fn cp_r_of_a_tree_deeper_than_path_max_failed_with_enametoolong() {
    for shape in [&DEEP, &LONG_NAMES] {
        let scratch = Scratch::new();
        let src = scratch.path().join("src");
        let built = build(&src, shape, None);
        let dst = scratch.path().join("copy");
        let out = tally_limited(&[
            "cp".as_ref(),
            "-r".as_ref(),
            "--format".as_ref(),
            "json".as_ref(),
            src.as_os_str(),
            dst.as_os_str(),
        ]);
        let err = text(&out.stderr);
        assert_eq!(out.status.code(), Some(0), "{err}");
        assert!(err.is_empty(), "{err}");
        assert_eq!(same_trees(&src, &dst, None), built);
        let report: Value = serde_json::from_slice(&out.stdout).expect("JSON");
        let files = report["files"].as_array().expect("files");
        assert_eq!(files.len(), built.files, "a row per file");
        assert_eq!(report["directories"], built.dirs, "{}", report["problems"]);
        assert_eq!(report["symlinks"], built.links);
        let bottom = deepest(&dst, shape, "big");
        assert!(
            files
                .iter()
                .any(|f| f["destination"].as_str() == bottom.to_str()),
            "the deepest file's row names it whole"
        );
    }
}

/// As nobody, a read-only tree (directories 0555, files 0444) deeper
/// than PATH_MAX copies whole: each directory is filled while it is
/// still the copy's own 0700 and given 0555 once everything under it is
/// in, deepest first.
#[test]
fn cp_r_as_nobody_of_a_read_only_tree_deeper_than_path_max_fills_it_then_sets_modes() {
    common::require!(common::can_switch_users());
    let scratch = Scratch::new();
    let src = scratch.path().join("src");
    let built = build(&src, &DEEP, Some(0o555));
    let out_dir = scratch.path().join("out");
    std::fs::create_dir(&out_dir).expect("mkdir");
    chmod(&out_dir, 0o777);
    let dst = out_dir.join("copy");
    let nobody = ["--reuid=65534", "--regid=65534", "--clear-groups"];
    let out = tally_as(
        &nobody,
        &[
            "cp".as_ref(),
            "-r".as_ref(),
            src.as_os_str(),
            dst.as_os_str(),
        ],
    );
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    assert_eq!(same_trees(&src, &dst, Some(65534)), built);
}

/// A link planted where a directory of the copy goes, 2,500 levels down
/// an existing destination, is not followed: that part of the copy stops
/// with an error, nothing is written through it, and the rest is copied.
#[test]
fn cp_r_into_a_tree_deeper_than_path_max_follows_no_link_where_a_directory_goes() {
    let scratch = Scratch::new();
    let src = scratch.path().join("src");
    build(&src, &DEEP, None);
    let elsewhere = scratch.path().join("elsewhere");
    std::fs::create_dir(&elsewhere).expect("mkdir");
    // The destination's tree down to the link: copy/src/d/…/d -> elsewhere.
    let dst = scratch.path().join("copy");
    let planted = Shape {
        depth: 2500,
        name: DEEP.name,
    };
    std::fs::create_dir(&dst).expect("mkdir");
    let mut dir = File::open(&dst).expect("open");
    for name in std::iter::once(OsString::from("src")).chain((0..planted.depth).map(planted.name)) {
        std::fs::create_dir(at(&dir, &name)).expect("mkdir");
        dir = open(&dir, &name);
    }
    std::os::unix::fs::symlink(&elsewhere, at(&dir, OsStr::new("d"))).expect("symlink");
    let out = tally_limited(&[
        "cp".as_ref(),
        "-r".as_ref(),
        src.as_os_str(),
        dst.as_os_str(),
    ]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{}", text(&out.stderr));
    assert!(err.contains("not followed"), "{}", text(&out.stderr));
    assert!(common::entries(&elsewhere).is_empty(), "written through");
    let meta = std::fs::symlink_metadata(at(&dir, OsStr::new("d"))).expect("the link");
    assert!(meta.file_type().is_symlink());
    // Above the link, the copy is there.
    let above = down(&dst.join("src"), &DEEP, planted.depth);
    assert_eq!(
        std::fs::read(at(&above, OsStr::new("f"))).expect("f"),
        content(planted.depth, false)
    );
}

/// A process's open file at least `bytes` long with no name: the copy's
/// unnamed file, under way (its path, too long, cannot be read back).
fn copying_past(pid: u32, bytes: u64) -> bool {
    let Ok(fds) = std::fs::read_dir(format!("/proc/{pid}/fd")) else {
        return false;
    };
    fds.flatten().any(|fd| {
        std::fs::metadata(fd.path()).is_ok_and(|m| m.is_file() && m.nlink() == 0 && m.len() > bytes)
    })
}

/// SIGINT during the copy of a file 5,000 levels down stops the copy as
/// anywhere else: the file in flight leaves nothing, every directory made
/// gets its mode, and tally ends by the signal saying where it stopped.
#[test]
fn interrupted_cp_r_of_a_tree_deeper_than_path_max_leaves_no_partial_file() {
    use std::os::unix::process::ExitStatusExt;
    let scratch = Scratch::new();
    let src = scratch.path().join("src");
    build(&src, &DEEP, None);
    let bottom = down(&src, &DEEP, DEEP.depth);
    let mut big = File::create(at(&bottom, OsStr::new("huge"))).expect("create");
    let block: Vec<u8> = (0..1 << 20).map(|i| (i % 253) as u8).collect();
    for _ in 0..1024 {
        big.write_all(&block).expect("write");
    }
    drop(big);
    let dst = scratch.path().join("copy");
    let child = common::command("sh")
        .arg("-c")
        .arg("ulimit -Sn 1024 && exec \"$@\"")
        .arg("sh")
        .arg(common::tally_bin())
        .args(["cp", "-r"])
        .arg(&src)
        .arg(&dst)
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("spawn");
    let mut reaper = common::Reaper(vec![child]);
    let pid = reaper.0[0].id();
    let started = std::time::Instant::now();
    while !copying_past(pid, 8 << 20) {
        assert!(
            started.elapsed().as_secs() < 120,
            "the big copy never began"
        );
        std::thread::sleep(std::time::Duration::from_micros(200));
    }
    // SAFETY: signalling our own child, still unreaped.
    assert_eq!(unsafe { libc::kill(pid as i32, libc::SIGINT) }, 0);
    let out = reaper.0.remove(0).wait_with_output().expect("wait");
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(
        out.status.signal(),
        Some(libc::SIGINT),
        "{}",
        text(&out.stderr)
    );
    assert!(
        err.contains("interrupted by SIGINT"),
        "{}",
        text(&out.stderr)
    );
    assert!(
        err.contains("stopped at ") && err.contains("/huge"),
        "{}",
        text(&out.stderr)
    );
    let copy_bottom = down(&dst, &DEEP, DEEP.depth);
    let left: Vec<OsString> = names(&copy_bottom)
        .into_iter()
        .filter(|n| n.as_bytes() == b"huge" || n.as_bytes().ends_with(b".tally-cp"))
        .collect();
    assert!(left.is_empty(), "left behind: {left:?}");
    // Every directory made has the source's mode.
    let (mut a, mut b) = (
        File::open(&src).expect("open"),
        File::open(&dst).expect("open"),
    );
    for level in 0..=DEEP.depth {
        let (ma, mb) = (a.metadata().expect("stat"), b.metadata().expect("stat"));
        assert_eq!(ma.mode() & 0o7777, mb.mode() & 0o7777, "level {level}");
        if level < DEEP.depth {
            let name = (DEEP.name)(level);
            (a, b) = (open(&a, &name), open(&b, &name));
        }
    }
}

/// `tally cache -r` of a tree deeper than PATH_MAX listed the files within
/// it and skipped the rest ("skipped: File name too long", exit 1). Now
/// every file is listed once, by its whole path.
#[test]
fn cache_r_of_a_tree_deeper_than_path_max_skipped_files_with_enametoolong() {
    for shape in [&DEEP, &LONG_NAMES] {
        let scratch = Scratch::new();
        let src = scratch.path().join("src");
        let built = build(&src, shape, None);
        let out = tally_limited(&[
            "cache".as_ref(),
            "-r".as_ref(),
            "--format".as_ref(),
            "json".as_ref(),
            src.as_os_str(),
        ]);
        assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
        assert!(out.stderr.is_empty(), "{}", text(&out.stderr));
        let report: Value = serde_json::from_slice(&out.stdout).expect("JSON");
        let files = report["files"].as_array().expect("files");
        assert_eq!(files.len(), built.files, "a row per file");
        let paths: std::collections::HashSet<&str> =
            files.iter().filter_map(|f| f["path"].as_str()).collect();
        assert_eq!(paths.len(), built.files, "each file once, by a path");
        let bottom = deepest(&src, shape, "big");
        assert!(paths.contains(bottom.to_str().expect("utf-8")));
        let sizes: u64 = files.iter().filter_map(|f| f["size_bytes"].as_u64()).sum();
        let big = (shape.depth / 1000 + usize::from(shape.depth % 1000 != 0)) as u64;
        assert!(sizes > big * (100 << 10), "{sizes}");
    }
}

/// The pages of a file's residency, the file open.
fn cached_pages(file: &File, what: &Path) -> u64 {
    let size = file.metadata().expect("stat").len();
    tally::pagecache::residency(file, what, size)
        .cached_pages()
        .expect("residency known for one's own file")
}

/// `run --cold` and `compare --cold` of a tree deeper than PATH_MAX
/// refused to run ("File name too long — a file under it cannot be
/// evicted"). Now every file is evicted, the deepest too, and checked.
#[test]
fn cold_runs_of_a_tree_deeper_than_path_max_failed_with_enametoolong() {
    let scratch = Scratch::new();
    let src = scratch.path().join("src");
    let built = build(&src, &DEEP, None);
    let bottom = down(&src, &DEEP, DEEP.depth);
    let big = File::open(at(&bottom, OsStr::new("big"))).expect("open");
    let warm = |f: &File| {
        let mut buf = vec![0u8; f.metadata().expect("stat").len() as usize];
        std::os::unix::fs::FileExt::read_exact_at(f, &mut buf, 0).expect("read");
    };
    warm(&big);
    assert!(cached_pages(&big, Path::new("big")) > 0, "read, so cached");
    let report = scratch.path().join("run.json");
    let out = tally_limited(&[
        "run".as_ref(),
        "--cold".as_ref(),
        src.as_os_str(),
        "--format".as_ref(),
        "json".as_ref(),
        "-o".as_ref(),
        report.as_os_str(),
        "--".as_ref(),
        "true".as_ref(),
    ]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let run: Value =
        serde_json::from_slice(&std::fs::read(&report).expect("report")).expect("JSON");
    let cold = &run["runs"][0]["cold"];
    assert_eq!(cold["file_count"], built.files, "{cold}");
    assert_eq!(cold["cached_after_bytes"], 0, "{cold}");
    assert_eq!(
        cached_pages(&big, Path::new("big")),
        0,
        "the deepest file left the cache"
    );

    warm(&big);
    let out = tally_limited(&[
        "compare".as_ref(),
        "-n".as_ref(),
        "2".as_ref(),
        "--cold".as_ref(),
        src.as_os_str(),
        "--format".as_ref(),
        "json".as_ref(),
        "true".as_ref(),
        "true".as_ref(),
    ]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let cmp: Value = serde_json::from_slice(&out.stdout).expect("JSON");
    let colds: Vec<&Value> = cmp["commands"]
        .as_array()
        .expect("commands")
        .iter()
        .flat_map(|c| c["runs"].as_array().into_iter().flatten())
        .map(|r| &r["cold"])
        .filter(|c| !c.is_null())
        .collect();
    assert!(!colds.is_empty(), "{cmp}");
    for cold in colds {
        assert_eq!(cold["file_count"], built.files, "{cold}");
        assert_eq!(cold["cached_after_bytes"], 0, "{cold}");
    }
    assert_eq!(cached_pages(&big, Path::new("big")), 0);
}

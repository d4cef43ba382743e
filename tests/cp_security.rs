//! `tally cp` where another user can plant a link, and as an unprivileged
//! user: each test runs the attacker or the copy as nobody (uid 65534)
//! through `setpriv`, and skips with the reason when it cannot.

use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::path::Path;
use std::process::Output;

mod common;

const NOBODY: [&str; 3] = ["--reuid=65534", "--regid=65534", "--clear-groups"];

fn as_nobody(program: &Path, args: &[&std::ffi::OsStr]) -> Output {
    common::command("setpriv")
        .args(NOBODY)
        .arg(program)
        .args(args)
        .output()
        .expect("setpriv")
}

fn chmod(path: &Path, mode: u32) {
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(mode)).expect("chmod");
}

/// The attack: in a sticky world-writable directory (as /tmp), nobody
/// plants `foo -> victim`; root copies to `DIR/foo`. GNU cp (coreutils
/// 9.x) with `fs.protected_symlinks=1` says "cp: cannot stat 'DIR/foo':
/// Permission denied" and exits 1, the victim untouched: the kernel refuses
/// root to follow another user's link there. tally resolved the
/// destination with `canonicalize()` (readlink, then the target's path), a
/// walk the kernel's check never sees, and replaced the victim.
#[test]
fn cp_refuses_symlink_planted_in_sticky_dir() {
    common::require!(common::can_switch_users());
    // Most distributions' default; restored when the test ends.
    let _protected = common::require!(common::Sysctl::set("fs.protected_symlinks", "1"));
    let safe = tempfile::tempdir().expect("tempdir");
    let victim = safe.path().join("victim");
    std::fs::write(&victim, b"root's secret\n").expect("write");
    let victim_dir = safe.path().join("victim.d");
    std::fs::create_dir(&victim_dir).expect("mkdir");
    let src = safe.path().join("src");
    std::fs::write(&src, b"attacker-chosen contents\n").expect("write");

    let sticky = tempfile::tempdir().expect("tempdir");
    chmod(sticky.path(), 0o1777);
    let plant = |name: &str, target: &Path| {
        let out = as_nobody(
            Path::new("ln"),
            &[
                "-s".as_ref(),
                target.as_os_str(),
                sticky.path().join(name).as_os_str(),
            ],
        );
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
    };
    plant("foo", &victim);
    plant("src", &victim); // for `cp src DIR/`: the name the copy will take
    plant("dir", &victim_dir);

    let reachable = common::tally_for_others();
    let tally = reachable.path().to_path_buf();
    let (foo, into, to_dir) = (
        sticky.path().join("foo"),
        sticky.path().to_path_buf(),
        sticky.path().join("dir"),
    );
    let runs: [(&str, Vec<&Path>); 3] = [
        ("a link named as the destination", vec![&src, &foo]),
        (
            "a link at the name a copy into the directory takes",
            vec![&src, &into],
        ),
        ("a link to a directory", vec![&src, &to_dir]),
    ];
    for (what, paths) in runs {
        let out = common::command(&tally)
            .arg("cp")
            .args(&paths)
            .output()
            .expect("run");
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(1), "{what}: {err}");
        assert!(
            err.contains("not followed") && err.contains("protected_symlinks"),
            "{what}: {err}"
        );
        assert_eq!(
            std::fs::read(&victim).expect("read"),
            b"root's secret\n",
            "{what}"
        );
        assert!(
            common::entries(&victim_dir).is_empty(),
            "{what}: written into the linked directory"
        );
    }
    // The links are still links, and nothing else appeared beside them.
    for name in ["dir", "foo", "src"] {
        let m = std::fs::symlink_metadata(sticky.path().join(name)).expect("meta");
        assert!(m.file_type().is_symlink(), "{name} was replaced");
    }
    assert_eq!(common::entries(sticky.path()).len(), 3);

    // Root's own link in the same directory is followed, as the kernel
    // allows (and as cp does).
    let mine = safe.path().join("mine");
    std::fs::write(&mine, b"old").expect("write");
    let link = sticky.path().join("mine");
    std::os::unix::fs::symlink(&mine, &link).expect("symlink");
    let out = common::command(&tally)
        .arg("cp")
        .arg(&src)
        .arg(&link)
        .output()
        .expect("run");
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(
        std::fs::read(&mine).expect("read"),
        b"attacker-chosen contents\n"
    );
    assert!(
        std::fs::symlink_metadata(&link)
            .expect("meta")
            .file_type()
            .is_symlink()
    );
}

/// GNU `cp -p` as a user who cannot keep the owner clears setuid and
/// setgid (coreutils copy.c: a failed chown drops S_ISUID|S_ISGID|S_ISVTX);
/// tally made a setuid-nobody copy of a setuid-root program.
#[test]
fn cp_p_as_nobody_clears_setuid_it_cannot_own() {
    common::require!(common::can_switch_users());
    let dir = tempfile::tempdir().expect("tempdir");
    chmod(dir.path(), 0o777);
    // A setuid and setgid root file, as /usr/bin/su (which may be missing).
    let su = dir.path().join("su");
    std::fs::write(&su, b"#!/bin/sh\nid\n").expect("write");
    chmod(&su, 0o6755);
    let copy = dir.path().join("copy");
    let tally = common::tally_for_others();
    let out = as_nobody(
        tally.path(),
        &[
            "cp".as_ref(),
            "-p".as_ref(),
            "-v".as_ref(),
            su.as_os_str(),
            copy.as_os_str(),
        ],
    );
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{err}");
    let m = std::fs::metadata(&copy).expect("copy");
    assert_eq!(m.uid(), 65534);
    assert_eq!(
        m.mode() & 0o7777,
        0o755,
        "setuid/setgid kept: {:o}",
        m.mode()
    );
    assert!(
        err.contains("ownership not kept") && err.contains("cleared"),
        "{err}"
    );
    assert_eq!(std::fs::read(&copy).expect("read"), b"#!/bin/sh\nid\n");

    // Root keeps the owner, so the bits stay.
    let kept = dir.path().join("kept");
    let out = common::tally_std()
        .args(["cp", "-p"])
        .arg(&su)
        .arg(&kept)
        .output()
        .expect("run");
    assert_eq!(out.status.code(), Some(0));
    let m = std::fs::metadata(&kept).expect("copy");
    assert_eq!((m.uid(), m.mode() & 0o7777), (0, 0o6755));
}

/// `cp -r` of a read-only tree (directories 555) as an ordinary user
/// created each directory 555 first and then could not fill it.
#[test]
fn cp_r_of_read_only_tree_as_nobody_fills_it_then_sets_modes() {
    common::require!(common::can_switch_users());
    let dir = tempfile::tempdir().expect("tempdir");
    chmod(dir.path(), 0o755);
    let src = dir.path().join("tree");
    std::fs::create_dir_all(src.join("a/b")).expect("mkdir");
    std::fs::write(src.join("top"), b"top").expect("write");
    std::fs::write(src.join("a/b/deep"), b"deep").expect("write");
    for f in ["top", "a/b/deep"] {
        chmod(&src.join(f), 0o444);
    }
    for d in ["a/b", "a", ""] {
        chmod(&src.join(d), 0o555);
    }
    let out_dir = dir.path().join("out");
    std::fs::create_dir(&out_dir).expect("mkdir");
    chmod(&out_dir, 0o777);
    let dst = out_dir.join("copy");
    let tally = common::tally_for_others();
    let out = as_nobody(
        tally.path(),
        &[
            "cp".as_ref(),
            "-r".as_ref(),
            src.as_os_str(),
            dst.as_os_str(),
        ],
    );
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(std::fs::read(dst.join("a/b/deep")).expect("read"), b"deep");
    assert_eq!(std::fs::read(dst.join("top")).expect("read"), b"top");
    for d in ["", "a", "a/b"] {
        let m = std::fs::metadata(dst.join(d)).expect("meta");
        assert_eq!(m.mode() & 0o7777, 0o555, "{d}");
        assert_eq!(m.uid(), 65534);
    }
    assert_eq!(
        std::fs::metadata(dst.join("top")).expect("meta").mode() & 0o777,
        0o444
    );
}

/// Runs `program args` as user `uid` (and group `uid`).
fn as_user(uid: u32, program: &Path, args: &[&std::ffi::OsStr]) -> Output {
    common::command("setpriv")
        .args([
            format!("--reuid={uid}"),
            format!("--regid={uid}"),
            "--clear-groups".to_string(),
        ])
        .arg(program)
        .args(args)
        .output()
        .expect("setpriv")
}

/// The kernel's `fs.protected_symlinks` judges only a path's last
/// component: another user's link named as a directory of the destination
/// (`cp -r d STICKY/theirlink/x`) was followed, and tally wrote the copy
/// into the link's target. Now every link on the destination's way is
/// judged as the kernel would judge a last component, and every directory
/// below the destination is opened without following links: nothing is
/// written through the link, as nobody (the link another user's) and as
/// root (the link nobody's).
#[test]
fn cp_r_through_a_directory_link_planted_in_a_sticky_dir_writes_nothing() {
    common::require!(common::can_switch_users());
    let _protected = common::require!(common::Sysctl::set("fs.protected_symlinks", "1"));
    let base = tempfile::tempdir().expect("tempdir");
    chmod(base.path(), 0o755);
    // What nobody copies: a small tree.
    let src = base.path().join("d");
    std::fs::create_dir_all(src.join("sub")).expect("mkdir");
    std::fs::write(src.join("f"), b"copied\n").expect("write");
    std::fs::write(src.join("sub/g"), b"copied too\n").expect("write");
    // The victims: a directory each copier may write, where the links lead.
    let victim_of_nobody = base.path().join("nobodys");
    std::fs::create_dir(&victim_of_nobody).expect("mkdir");
    std::os::unix::fs::chown(&victim_of_nobody, Some(65534), Some(65534)).expect("chown");
    chmod(&victim_of_nobody, 0o700);
    let victim_of_root = base.path().join("roots");
    std::fs::create_dir(&victim_of_root).expect("mkdir");
    chmod(&victim_of_root, 0o700);
    // A sticky world-writable directory (as /tmp) of root's.
    let sticky = base.path().join("sticky");
    std::fs::create_dir(&sticky).expect("mkdir");
    chmod(&sticky, 0o1777);
    let plant = |uid: u32, name: &str, target: &Path| {
        let out = as_user(
            uid,
            Path::new("ln"),
            &[
                "-s".as_ref(),
                target.as_os_str(),
                sticky.join(name).as_os_str(),
            ],
        );
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
    };
    // Another user (uid 4242) plants one for nobody, nobody one for root.
    plant(4242, "theirlink", &victim_of_nobody);
    plant(65534, "nobodyslink", &victim_of_root);
    let reachable = common::tally_for_others();
    let tally = reachable.path().to_path_buf();

    let into = sticky.join("theirlink/x");
    let out = as_nobody(
        &tally,
        &[
            "cp".as_ref(),
            "-r".as_ref(),
            src.as_os_str(),
            into.as_os_str(),
        ],
    );
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "as nobody: {err}");
    assert!(
        err.contains("theirlink") && err.contains("protected_symlinks"),
        "as nobody: {err}"
    );
    assert!(
        common::entries(&victim_of_nobody).is_empty(),
        "as nobody: written through the link"
    );

    let into = sticky.join("nobodyslink/x");
    let out = common::command(&tally)
        .args(["cp", "-r"])
        .arg(&src)
        .arg(&into)
        .output()
        .expect("run");
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "as root: {err}");
    assert!(err.contains("protected_symlinks"), "as root: {err}");
    assert!(
        common::entries(&victim_of_root).is_empty(),
        "as root: written through the link"
    );
    // A plain copy of one file through the same link is refused too.
    let out = as_nobody(
        &tally,
        &[
            "cp".as_ref(),
            src.join("f").as_os_str(),
            sticky.join("theirlink/f").as_os_str(),
        ],
    );
    assert_eq!(out.status.code(), Some(1));
    assert!(common::entries(&victim_of_nobody).is_empty());
    // The links are still there, and nothing else beside them.
    assert_eq!(common::entries(&sticky).len(), 2);

    // Nobody's own link in the sticky directory is followed, as the kernel
    // follows it: the copy lands in the link's target.
    let own = base.path().join("own");
    std::fs::create_dir(&own).expect("mkdir");
    std::os::unix::fs::chown(&own, Some(65534), Some(65534)).expect("chown");
    plant(65534, "ownlink", &own);
    let into = sticky.join("ownlink/x");
    let out = as_nobody(
        &tally,
        &[
            "cp".as_ref(),
            "-r".as_ref(),
            src.as_os_str(),
            into.as_os_str(),
        ],
    );
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(
        std::fs::read(own.join("x/sub/g")).expect("copied"),
        b"copied too\n"
    );
}

/// A link planted inside the destination tree, where a directory of the
/// copy goes, while the copy merges into it: not followed, nothing written
/// under it, the rest copied.
#[test]
fn cp_r_into_a_tree_does_not_follow_a_link_where_a_directory_goes() {
    let base = tempfile::tempdir().expect("tempdir");
    let src = base.path().join("d");
    std::fs::create_dir_all(src.join("sub")).expect("mkdir");
    std::fs::write(src.join("f"), b"f").expect("write");
    std::fs::write(src.join("sub/g"), b"g").expect("write");
    let elsewhere = base.path().join("elsewhere");
    std::fs::create_dir(&elsewhere).expect("mkdir");
    let dst = base.path().join("copy");
    std::fs::create_dir_all(dst.join("d")).expect("mkdir");
    std::os::unix::fs::symlink(&elsewhere, dst.join("d/sub")).expect("symlink");
    let out = common::tally_std()
        .args(["cp", "-r"])
        .arg(&src)
        .arg(&dst)
        .output()
        .expect("run");
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(err.contains("not followed"), "{err}");
    assert!(common::entries(&elsewhere).is_empty(), "written through");
    assert_eq!(std::fs::read(dst.join("d/f")).expect("f"), b"f");
    assert!(
        std::fs::symlink_metadata(dst.join("d/sub"))
            .expect("the link")
            .file_type()
            .is_symlink()
    );
}

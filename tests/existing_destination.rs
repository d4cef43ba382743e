//! The rule for a destination that already holds a regular file (issue 35,
//! item 15; docs/DESIGN.md, "An existing destination"): cp and every
//! report write into it as coreutils' cp does. A file the caller may not
//! write is refused ("Permission denied"), not replaced by a rename the
//! directory would allow; its mode and owner stay; its hard links stay
//! attached.

mod common;

use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::path::Path;
use std::process::Output;

fn as_nobody(dir: &Path, args: &[&str]) -> Output {
    let bin = common::tally_for_others();
    common::command("setpriv")
        .args(["--reuid=65534", "--regid=65534", "--clear-groups", "--"])
        .arg(&bin)
        .args(args)
        .current_dir(dir)
        .output()
        .expect("setpriv runs")
}

/// A directory nobody owns, with `src` (nobody's) in it.
fn nobodys_dir() -> tempfile::TempDir {
    let dir = tempfile::tempdir().expect("tempdir");
    std::fs::set_permissions(dir.path(), std::fs::Permissions::from_mode(0o755)).unwrap();
    std::fs::write(dir.path().join("src"), "new content\n").unwrap();
    for p in [dir.path().to_path_buf(), dir.path().join("src")] {
        std::os::unix::fs::chown(&p, Some(65534), Some(65534)).unwrap();
    }
    dir
}

#[test]
fn a_read_only_destination_was_replaced_silently() {
    common::require!(common::can_switch_users());
    let dir = nobodys_dir();
    let ro = dir.path().join("ro");
    std::fs::write(&ro, "old\n").unwrap();
    std::os::unix::fs::chown(&ro, Some(65534), Some(65534)).unwrap();
    std::fs::set_permissions(&ro, std::fs::Permissions::from_mode(0o444)).unwrap();
    let ino = std::fs::metadata(&ro).unwrap().ino();
    let out = as_nobody(dir.path(), &["cp", "src", "ro"]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(err.contains("Permission denied"), "{err}");
    assert_eq!(std::fs::read_to_string(&ro).unwrap(), "old\n");
    assert_eq!(std::fs::metadata(&ro).unwrap().ino(), ino);
    // A report over it is refused the same way.
    let out = as_nobody(dir.path(), &["run", "-o", "ro", "--format", "json", "true"]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert_ne!(out.status.code(), Some(0), "{err}");
    assert!(err.contains("Permission denied"), "{err}");
    assert_eq!(std::fs::read_to_string(&ro).unwrap(), "old\n");
}

#[test]
fn a_root_owned_file_in_nobodys_directory_was_replaced_by_nobody() {
    common::require!(common::can_switch_users());
    let dir = nobodys_dir();
    let roots = dir.path().join("roots");
    std::fs::write(&roots, "root's\n").unwrap();
    std::fs::set_permissions(&roots, std::fs::Permissions::from_mode(0o644)).unwrap();
    for args in [
        &["cp", "src", "roots"][..],
        &["run", "-o", "roots", "--format", "json", "true"][..],
    ] {
        let out = as_nobody(dir.path(), args);
        let err = String::from_utf8_lossy(&out.stderr);
        assert_ne!(out.status.code(), Some(0), "{args:?}: {err}");
        assert!(err.contains("Permission denied"), "{args:?}: {err}");
        let meta = std::fs::metadata(&roots).unwrap();
        assert_eq!((meta.uid(), meta.mode() & 0o7777), (0, 0o644), "{args:?}");
        assert_eq!(std::fs::read_to_string(&roots).unwrap(), "root's\n");
    }
}

#[test]
fn an_existing_reports_mode_and_owner_were_lost() {
    if !common::is_root() {
        common::skip!("giving the report to another owner needs root");
    }
    let dir = tempfile::tempdir().expect("tempdir");
    let report = dir.path().join("report.json");
    std::fs::write(&report, "{}").unwrap();
    std::os::unix::fs::chown(&report, Some(65534), Some(65534)).unwrap();
    std::fs::set_permissions(&report, std::fs::Permissions::from_mode(0o600)).unwrap();
    let out = common::tally_std()
        .args(["run", "-o", "report.json", "--format", "json", "true"])
        .current_dir(dir.path())
        .output()
        .expect("tally runs");
    assert!(out.status.success(), "{out:?}");
    let meta = std::fs::metadata(&report).unwrap();
    assert_eq!(meta.mode() & 0o7777, 0o600);
    assert_eq!((meta.uid(), meta.gid()), (65534, 65534));
    assert!(
        std::fs::read_to_string(&report)
            .unwrap()
            .contains("\"runs\"")
    );
}

#[test]
fn hard_links_to_a_destination_detached() {
    let dir = tempfile::tempdir().expect("tempdir");
    std::fs::write(dir.path().join("src"), "new content\n").unwrap();
    for args in [
        &["cp", "src", "dest"][..],
        &["run", "-o", "dest", "--format", "json", "true"][..],
    ] {
        let dest = dir.path().join("dest");
        let link = dir.path().join("link");
        let _ = std::fs::remove_file(&dest);
        let _ = std::fs::remove_file(&link);
        std::fs::write(&dest, "old\n").unwrap();
        std::fs::hard_link(&dest, &link).unwrap();
        let ino = std::fs::metadata(&dest).unwrap().ino();
        let out = common::tally_std()
            .args(args)
            .current_dir(dir.path())
            .output()
            .expect("tally runs");
        assert!(out.status.success(), "{args:?}: {out:?}");
        assert_eq!(std::fs::metadata(&dest).unwrap().ino(), ino, "{args:?}");
        let via_link = std::fs::read_to_string(&link).unwrap();
        assert_eq!(
            via_link,
            std::fs::read_to_string(&dest).unwrap(),
            "{args:?}"
        );
        assert_ne!(via_link, "old\n", "{args:?}");
    }
}

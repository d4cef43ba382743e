//! `/proc/PID/cgroup`: which control group (container, systemd unit) a
//! process belongs to.
//!
//! Lines read `hierarchy-id:controllers:path`. The unified (v2) line
//! `0::/path` is the answer where it exists; on v1-only machines the
//! `name=systemd` line names the unit; else the first line's path.

use std::path::{Path, PathBuf};
use std::sync::OnceLock;

/// The cgroup path of a process (`/system.slice/ssh.service`), escaped as
/// every name tally prints ([`crate::text::escape_name`]), or `None` for
/// text without any cgroup line.
pub fn parse(text: &[u8]) -> Option<String> {
    let mut systemd = None;
    let mut first = None;
    for line in text.split(|&b| b == b'\n') {
        let mut parts = line.splitn(3, |&b| b == b':');
        let (Some(id), Some(controllers), Some(path)) = (parts.next(), parts.next(), parts.next())
        else {
            continue;
        };
        if id == b"0" && controllers.is_empty() {
            return Some(crate::text::escape_name(path));
        }
        if controllers == b"name=systemd" && systemd.is_none() {
            systemd = Some(path);
        }
        if first.is_none() {
            first = Some(path);
        }
    }
    systemd.or(first).map(crate::text::escape_name)
}

/// The text of /proc/self/cgroup, read once per process: every part of
/// tally that needs its own groups (the run's group, the CPU quotas over
/// it, `load`'s memory limit) reads it from here. A process moved to
/// another group later (`tally serve` under a manager that moves it) keeps
/// the groups it started in, as the quotas found once did before.
fn own_text() -> Option<&'static str> {
    static TEXT: OnceLock<Option<String>> = OnceLock::new();
    TEXT.get_or_init(|| super::ProcRoot::default().read("self/cgroup").ok())
        .as_deref()
}

/// This process's cgroup v2 path (see [`parse_unified`]).
pub fn own_unified() -> Option<String> {
    parse_unified(own_text()?)
}

/// This process's path in the v1 hierarchy of `controller` (see
/// [`parse_v1`]).
pub fn own_v1(controller: &str) -> Option<String> {
    parse_v1(own_text()?, controller)
}

/// Whether `path` names a group below the root of its hierarchy (the
/// root holds no limits of its own).
pub fn below_root(path: &str) -> bool {
    path.split('/')
        .any(|p| !p.is_empty() && p != "." && p != "..")
}

/// Where the cgroup v2 hierarchy is mounted: where systemd mounts it
/// (unified, or beside v1 controllers), checked with one `statfs` each;
/// else as /proc/self/mountinfo says. Found once per process.
pub fn v2_mount() -> Option<&'static Path> {
    static MOUNT: OnceLock<Option<PathBuf>> = OnceLock::new();
    MOUNT
        .get_or_init(|| {
            ["/sys/fs/cgroup", "/sys/fs/cgroup/unified"]
                .into_iter()
                .map(Path::new)
                .find(|p| crate::sys::file::is_cgroup_mount(p, true))
                .map(Path::to_path_buf)
                .or_else(|| {
                    let mounts = super::ProcRoot::default().read("self/mountinfo").ok()?;
                    super::mountinfo::cgroup2_mount(&mounts)
                })
        })
        .as_deref()
}

/// Where the cgroup v1 hierarchy that carries `controller` is mounted:
/// where systemd mounts it (`/sys/fs/cgroup/` and the controllers this
/// process's line names with it, `cpu,cpuacct`), when a v1 cgroup
/// filesystem is there with `probe`, a file only that controller makes
/// (`cpu.cfs_period_us`), at its root; else as /proc/self/mountinfo says.
pub fn v1_mount(controller: &str, probe: &str) -> Option<PathBuf> {
    let conventional = v1_line(own_text()?, controller)
        .filter(|(controllers, _)| !controllers.contains('/'))
        .map(|(controllers, _)| Path::new("/sys/fs/cgroup").join(controllers));
    conventional
        .filter(|dir| crate::sys::file::is_cgroup_mount(dir, false) && dir.join(probe).exists())
        .or_else(|| {
            let mounts = super::ProcRoot::default().read("self/mountinfo").ok()?;
            super::mountinfo::cgroup1_mount(&mounts, controller)
        })
}

/// The cgroup v2 path alone (the `0::` line), `None` on a v1-only
/// machine: where a new v2 cgroup can be created beside this process.
pub fn parse_unified(text: &str) -> Option<String> {
    super::lines(text).find_map(|l| l.strip_prefix("0::").map(str::to_string))
}

/// The path of this process in the cgroup v1 hierarchy of `controller`
/// (the `N:…memory…:/path` line), `None` when no v1 line names it.
pub fn parse_v1(text: &str, controller: &str) -> Option<String> {
    v1_line(text, controller).map(|(_, path)| path.to_string())
}

/// The controllers and path of the v1 line naming `controller`.
fn v1_line<'t>(text: &'t str, controller: &str) -> Option<(&'t str, &'t str)> {
    super::lines(text).find_map(|l| {
        let (_, rest) = super::split_once_byte(l, b':')?;
        let (controllers, path) = super::split_once_byte(rest, b':')?;
        controllers
            .split(',')
            .any(|c| c == controller)
            .then_some((controllers, path))
    })
}

/// Why a cgroup v2 group could not be made under `parent` (`mkdir`'s
/// `error`), in words a user can act on: a limit on groups that is
/// reached (EAGAIN), a read-only cgroupfs (EROFS, where not even root may
/// write), or no right to write there (root is not told to become root).
pub fn mkdir_failure(parent: &std::path::Path, error: &std::io::Error, root: bool) -> String {
    let shown = crate::text::path::display(parent);
    let fix = match error.raw_os_error() {
        Some(libc::EAGAIN) => format!(
            ": a limit on the number of groups is reached (cgroup.max.descendants or \
             cgroup.max.depth of {shown} or a group above it): raise it, or remove the \
             groups left there"
        ),
        Some(libc::EROFS) => ": the cgroup filesystem is mounted read-only here (a container \
             without write access to it): not even root can make a group"
            .to_string(),
        Some(libc::EACCES) | Some(libc::EPERM) if root => ": root may not write there (a \
             container's cgroupfs, or a user namespace): run in a group delegated to it"
            .to_string(),
        Some(libc::EACCES) | Some(libc::EPERM) => {
            ": run as root or in a delegated group".to_string()
        }
        _ => String::new(),
    };
    format!("cannot create a cgroup v2 group under {shown} ({error}){fix}")
}

#[cfg(test)]
mod tests {
    use std::io::Error;
    use std::path::Path;

    /// Regression: `cgroup.max.descendants` reached was a bare "Resource
    /// temporarily unavailable (os error 11)", and a read-only cgroupfs
    /// told root to "run as root".
    #[test]
    fn a_group_that_cannot_be_made_says_which_limit_and_never_tells_root_to_be_root() {
        let parent = Path::new("/sys/fs/cgroup/unified/job");
        let eagain = super::mkdir_failure(parent, &Error::from_raw_os_error(libc::EAGAIN), true);
        assert!(
            eagain.contains(
                "cgroup.max.descendants or cgroup.max.depth of /sys/fs/cgroup/unified/job"
            ),
            "{eagain}"
        );
        for errno in [libc::EROFS, libc::EACCES, libc::EPERM] {
            let said = super::mkdir_failure(parent, &Error::from_raw_os_error(errno), true);
            assert!(!said.contains("run as root"), "{said}");
        }
        let rofs = super::mkdir_failure(parent, &Error::from_raw_os_error(libc::EROFS), false);
        assert!(
            rofs.contains("read-only") && !rofs.contains("run as root"),
            "{rofs}"
        );
        let denied = super::mkdir_failure(parent, &Error::from_raw_os_error(libc::EACCES), false);
        assert!(
            denied.ends_with(": run as root or in a delegated group"),
            "{denied}"
        );
    }

    use super::*;

    #[test]
    fn finds_the_v1_path_of_a_controller() {
        let text = "9:name=systemd:/\n4:memory:/jobs/7\n2:cpu,cpuacct:/\n0::/\n";
        assert_eq!(parse_v1(text, "memory").as_deref(), Some("/jobs/7"));
        assert_eq!(parse_v1(text, "cpuacct").as_deref(), Some("/"));
        assert_eq!(parse_v1(text, "pids"), None);
    }

    #[test]
    fn prefers_the_unified_line() {
        let text = "9:name=systemd:/\n4:memory:/docker/abc\n0::/system.slice/ssh.service\n";
        assert_eq!(
            parse(text.as_bytes()).as_deref(),
            Some("/system.slice/ssh.service")
        );
    }

    #[test]
    fn falls_back_to_systemd_then_first() {
        let text = "4:memory:/a\n1:name=systemd:/user.slice/x.scope\n";
        assert_eq!(
            parse(text.as_bytes()).as_deref(),
            Some("/user.slice/x.scope")
        );
        assert_eq!(parse(b"4:memory:/a:b\n").as_deref(), Some("/a:b"));
        assert_eq!(parse(b""), None);
        assert_eq!(parse(b"garbage"), None);
    }

    #[test]
    fn unified_takes_only_the_v2_line() {
        let text = "9:name=systemd:/\n0::/user.slice/session-1.scope\n";
        assert_eq!(
            parse_unified(text).as_deref(),
            Some("/user.slice/session-1.scope")
        );
        assert_eq!(parse_unified("1:name=systemd:/user.slice/x.scope\n"), None);
        assert_eq!(parse_unified(""), None);
    }

    proptest::proptest! {
        #[test]
        fn never_panics(bytes in proptest::collection::vec(proptest::num::u8::ANY, 0..256)) {
            let _ = parse(&bytes);
        }
    }
}

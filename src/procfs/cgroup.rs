//! `/proc/PID/cgroup`: which control group (container, systemd unit) a
//! process belongs to.
//!
//! Lines read `hierarchy-id:controllers:path`. The unified (v2) line
//! `0::/path` is the answer where it exists; on v1-only machines the
//! `name=systemd` line names the unit; else the first line's path.

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

/// The cgroup v2 path alone (the `0::` line), `None` on a v1-only
/// machine: where a new v2 cgroup can be created beside this process.
pub fn parse_unified(text: &str) -> Option<String> {
    text.lines()
        .find_map(|l| l.strip_prefix("0::").map(str::to_string))
}

/// The path of this process in the cgroup v1 hierarchy of `controller`
/// (the `N:…memory…:/path` line), `None` when no v1 line names it.
pub fn parse_v1(text: &str, controller: &str) -> Option<String> {
    text.lines().find_map(|l| {
        let mut parts = l.splitn(3, ':');
        let (_, controllers, path) = (parts.next()?, parts.next()?, parts.next()?);
        controllers
            .split(',')
            .any(|c| c == controller)
            .then(|| path.to_string())
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

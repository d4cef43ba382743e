//! `/proc/PID/mountinfo`: where filesystems are mounted.
//!
//! Lines read `id parent major:minor root mount-point options [tags] -
//! fstype source super-options`; the optional tags end at ` - `.

use std::path::{Path, PathBuf};

/// The mount point of the first cgroup v2 filesystem, if any.
pub fn cgroup2_mount(text: &str) -> Option<PathBuf> {
    text.lines().find_map(|line| {
        let (left, right) = line.split_once(" - ")?;
        let fstype = right.split_whitespace().next()?;
        if fstype != "cgroup2" {
            return None;
        }
        left.split_whitespace().nth(4).map(PathBuf::from)
    })
}

/// The mount point of the cgroup v1 hierarchy that carries `controller`
/// (`memory`) among its super options, if any.
pub fn cgroup1_mount(text: &str, controller: &str) -> Option<PathBuf> {
    text.lines().find_map(|line| {
        let (left, right) = line.split_once(" - ")?;
        let mut r = right.split_whitespace();
        if r.next()? != "cgroup" {
            return None;
        }
        let options = r.nth(1)?;
        if !options.split(',').any(|o| o == controller) {
            return None;
        }
        left.split_whitespace().nth(4).map(PathBuf::from)
    })
}

/// Whether a proc filesystem is mounted at `point` with `hidepid` other
/// than 0/off (`1`, `2`, `noaccess`, `invisible`): other users' processes
/// are hidden there.
pub fn proc_hides_processes(text: &str, point: &Path) -> bool {
    text.lines().any(|line| {
        let Some((left, right)) = line.split_once(" - ") else {
            return false;
        };
        let mut r = right.split(' ');
        let (fstype, options) = (r.next(), r.nth(1));
        left.split(' ')
            .nth(4)
            .is_some_and(|p| Path::new(p) == point)
            && fstype == Some("proc")
            && options.is_some_and(|o| {
                o.split(',').any(|opt| {
                    opt.strip_prefix("hidepid=")
                        .is_some_and(|v| v != "0" && v != "off")
                })
            })
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hidepid_is_read_from_the_proc_mount_at_that_point_only() {
        let text = "\
25 1 0:23 / /proc rw,nosuid shared:12 - proc proc rw,hidepid=invisible
26 1 0:24 / /mnt/p rw - proc proc rw,hidepid=0
27 1 0:25 / /mnt/t rw - tmpfs tmpfs rw,hidepid=2
";
        assert!(proc_hides_processes(text, Path::new("/proc")));
        assert!(
            !proc_hides_processes(text, Path::new("/mnt/p")),
            "hidepid=0"
        );
        assert!(!proc_hides_processes(text, Path::new("/mnt/t")), "not proc");
        assert!(!proc_hides_processes(text, Path::new("/srv")), "no mount");
    }

    #[test]
    fn finds_the_v1_hierarchy_of_a_controller() {
        let text = "\
40 35 0:34 / /sys/fs/cgroup/cpu rw - cgroup cgroup rw,cpu
41 35 0:35 / /sys/fs/cgroup/memory rw shared:7 - cgroup cgroup rw,memory
42 35 0:36 / /sys/fs/cgroup/unified rw - cgroup2 cgroup2 rw
";
        assert_eq!(
            cgroup1_mount(text, "memory"),
            Some(PathBuf::from("/sys/fs/cgroup/memory"))
        );
        assert_eq!(cgroup1_mount(text, "pids"), None);
        assert_eq!(cgroup1_mount("", "memory"), None);
    }

    #[test]
    fn finds_the_cgroup2_mount_after_optional_tags() {
        let text = "\
22 1 259:2 / / rw,relatime shared:1 - ext4 /dev/root rw
35 22 0:30 / /sys/fs/cgroup rw,nosuid,nodev,noexec,relatime shared:9 - cgroup2 cgroup2 rw,nsdelegate
";
        assert_eq!(cgroup2_mount(text), Some(PathBuf::from("/sys/fs/cgroup")));
    }

    #[test]
    fn no_cgroup2_line_is_none() {
        let v1 = "40 35 0:34 / /sys/fs/cgroup/memory rw - cgroup cgroup rw,memory\n";
        assert_eq!(cgroup2_mount(v1), None);
        assert_eq!(cgroup2_mount(""), None);
        assert_eq!(cgroup2_mount("garbage - cgroup2"), None);
    }
}

//! `/proc/PID/mountinfo`: where filesystems are mounted.
//!
//! Lines read `id parent major:minor root mount-point options [tags] -
//! fstype source super-options`; the optional tags end at ` - `.

use std::path::PathBuf;

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

#[cfg(test)]
mod tests {
    use super::*;

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

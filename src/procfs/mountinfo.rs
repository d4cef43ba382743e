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

#[cfg(test)]
mod tests {
    use super::*;

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

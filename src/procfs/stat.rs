//! `/proc/PID/stat`: parent, cpu time, resident set and state of a process.

/// What the tree sampler needs of one process, all from /proc/PID/stat.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Stat {
    pub ppid: u32,
    /// User and system time, in clock ticks.
    pub utime: u64,
    pub stime: u64,
    /// Resident set, in pages (field 24).
    pub rss_pages: u64,
    /// State `Z`: exited, not yet reaped.
    pub zombie: bool,
}

/// Parses the text of /proc/PID/stat; `None` when a field is missing or
/// not a number.
pub fn parse(text: &str) -> Option<Stat> {
    // The command name may hold spaces and parentheses: fields start
    // after the last ')'.
    let rest = text.get(text.rfind(')')? + 1..)?;
    let fields: Vec<&str> = rest.split_whitespace().collect();
    Some(Stat {
        zombie: fields.first().is_some_and(|s| *s == "Z"),
        ppid: fields.get(1)?.parse().ok()?,
        utime: fields.get(11)?.parse().ok()?,
        stime: fields.get(12)?.parse().ok()?,
        rss_pages: fields.get(21)?.parse().ok()?,
    })
}

/// Field 42, `delayacct_blkio_ticks`: clock ticks the task waited for
/// block I/O, counted only while delay accounting is on
/// (`kernel.task_delayacct`); `None` when the field is missing.
pub fn blkio_ticks(text: &str) -> Option<u64> {
    let rest = text.get(text.rfind(')')? + 1..)?;
    rest.split_whitespace().nth(42 - 3)?.parse().ok()
}

/// The stat of `pid` under `root`; `None` when the process is gone, refuses,
/// or its file does not parse.
pub fn read(root: &super::ProcRoot, pid: u32) -> Option<Stat> {
    parse(&root.read_pid(pid, "stat").ok()?)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stat_with_parens_and_spaces_in_the_name() {
        let t = "42 (a) b (c)) S 7 42 42 0 -1 4194304 100 0 0 0 15 3 0 0 20 0 1 0 100 1000 50";
        assert_eq!(
            parse(t).map(|s| (s.ppid, s.utime, s.stime, s.rss_pages, s.zombie)),
            Some((7, 15, 3, 50, false))
        );
        assert_eq!(parse("garbage"), None);
        assert_eq!(parse("1 (x) Z 0"), None);
    }

    #[test]
    fn field_42_is_the_block_io_delay() {
        let mut t = String::from("9 (a b) S");
        for i in 4..=52 {
            t.push_str(&format!(" {i}"));
        }
        assert_eq!(blkio_ticks(&t), Some(42));
        assert_eq!(blkio_ticks("9 (a) S 1 2 3"), None);
    }

    #[test]
    fn a_zombie_is_seen_as_one() {
        let t = "9 (sh) Z 1 9 9 0 -1 4194304 0 0 0 0 2 1 0 0 20 0 1 0 5 0 0";
        assert_eq!(parse(t).map(|s| s.zombie), Some(true));
    }

    #[test]
    fn read_takes_the_root_as_given() {
        let dir = tempfile::tempdir().expect("tempdir");
        std::fs::create_dir(dir.path().join("42")).expect("mkdir");
        std::fs::write(
            dir.path().join("42/stat"),
            "42 (a) S 7 42 42 0 -1 0 0 0 0 0 15 3 0 0 20 0 1 0 100 1000 50\n",
        )
        .expect("write");
        let root = super::super::ProcRoot::new(dir.path());
        assert_eq!(read(&root, 42).map(|s| s.ppid), Some(7));
        assert_eq!(read(&root, 43), None);
    }
}

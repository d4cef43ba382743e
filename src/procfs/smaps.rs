//! `/proc/PID/smaps`: per-mapping memory figures. Each mapping starts with
//! its maps line (`start-end perms offset dev inode path`), followed by
//! `Key: value kB` lines.

/// Sums `Locked:` (KiB) over the sections whose header maps the file
/// `dev`:`ino` (`dev` as [`super::maps::dev_field`] writes it, `ino` in
/// decimal).
pub fn locked_kib(text: &str, dev: &str, ino: &str) -> u64 {
    file_kib(text, dev, ino, "Locked")
}

/// Sums the `key:` lines (`Pss`, `Rss`, `Locked`…, in KiB) over the
/// sections whose header maps the file `dev`:`ino`.
pub fn file_kib(text: &str, dev: &str, ino: &str, key: &str) -> u64 {
    let mut in_file = false;
    let mut total = 0u64;
    for line in text.lines() {
        let mut f = line.split_whitespace();
        let first = f.next().unwrap_or("");
        // A section header starts with an address range `a-b`.
        if first.contains('-') && !first.ends_with(':') {
            let d = f.nth(2);
            let i = f.next();
            in_file = d == Some(dev) && i == Some(ino);
        } else if in_file && first.strip_suffix(':') == Some(key) {
            total = total.saturating_add(f.next().and_then(|n| n.parse().ok()).unwrap_or(0));
        }
    }
    total
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn locked_pages_are_found_in_smaps_sections_of_the_file() {
        let smaps = "\
7f00-7f10 r--s 00000000 fd:00 1234 /data/model.bin
Size:               64 kB
Locked:             64 kB
7f20-7f30 r--p 00000000 fd:00 999 /usr/lib/libc.so
Locked:             16 kB
7f40-7f50 r--s 00000000 fd:00 1234 /data/model.bin
Locked:              8 kB
VmFlags: rd sh mr mw me ms lo
";
        assert_eq!(locked_kib(smaps, "fd:00", "1234"), 72);
        assert_eq!(locked_kib(smaps, "fd:00", "999"), 16);
        assert_eq!(locked_kib(smaps, "fd:01", "1234"), 0);
        assert_eq!(locked_kib("", "fd:00", "1"), 0);
        assert_eq!(locked_kib("Locked: x kB\n", "fd:00", "1"), 0);
        assert_eq!(file_kib(smaps, "fd:00", "1234", "Size"), 64);
        assert_eq!(file_kib(smaps, "fd:00", "1234", "Pss"), 0);
    }
}

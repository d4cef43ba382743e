//! Parsers of /proc files. The /proc root is a parameter ([`ProcRoot`]), so
//! tests run the same code on fixture trees under `tests/fixtures/proc`.
//!
//! Parsers take the file's text and return typed data; reading is separate,
//! so a process that vanishes between two reads is an ordinary `ENOENT` or
//! `ESRCH` for the caller to skip.

pub mod cgroup;
pub mod cpuinfo;
pub mod io;
pub mod kernel_stat;
pub mod limits;
pub mod loadavg;
pub mod maps;
pub mod meminfo;
pub mod mountinfo;
pub mod pressure;
pub mod schedstat;
pub mod smaps;
pub mod smaps_rollup;
pub mod stat;
pub mod status;
pub mod sysctl;

use std::path::{Path, PathBuf};

/// Where /proc is mounted (or a fixture tree shaped like it).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ProcRoot(PathBuf);

impl Default for ProcRoot {
    fn default() -> Self {
        ProcRoot(PathBuf::from("/proc"))
    }
}

impl ProcRoot {
    pub fn new(path: impl Into<PathBuf>) -> Self {
        ProcRoot(path.into())
    }

    pub fn path(&self) -> &Path {
        &self.0
    }

    /// The numeric entries of the root: every process, in directory order.
    /// Fails only when the root itself cannot be listed; entries that
    /// vanish while listing are skipped.
    pub fn pids(&self) -> std::io::Result<impl Iterator<Item = u32> + use<>> {
        Ok(std::fs::read_dir(&self.0)?.flatten().filter_map(|entry| {
            entry
                .file_name()
                .to_str()
                .and_then(|s| s.parse::<u32>().ok())
        }))
    }

    /// `<root>/<pid>/<file>`.
    pub fn pid_file(&self, pid: u32, file: &str) -> PathBuf {
        self.0.join(pid.to_string()).join(file)
    }

    /// The text of `<root>/<rel>` (`rel` such as `"cpuinfo"` or
    /// `"self/mountinfo"`): the one way readers here fetch a /proc file
    /// whose size they cannot bound beforehand (hot paths that can use
    /// [`read_small`]). Read up to the cap of its kind
    /// ([`crate::input::read_proc`]); a FIFO or device in a fixture tree
    /// is refused.
    pub fn read(&self, rel: impl AsRef<Path>) -> std::io::Result<String> {
        Ok(crate::input::read_proc_text(&self.0.join(rel))?)
    }

    /// The text of `<root>/<pid>/<file>`, as [`ProcRoot::read`].
    pub fn read_pid(&self, pid: u32, file: &str) -> std::io::Result<String> {
        Ok(crate::input::read_proc_text(&self.pid_file(pid, file))?)
    }
}

/// Reads a small /proc file with one `read` into `buf` (sized by the
/// caller to hold the whole file) and returns its text. /proc files report
/// size 0, so `read_to_string` would probe with many small reads.
pub fn read_small<'a>(path: &Path, buf: &'a mut [u8]) -> std::io::Result<&'a str> {
    use std::io::Read;
    let mut file = std::fs::File::open(path)?;
    let mut len = 0;
    while len < buf.len() {
        match file.read(&mut buf[len..]) {
            Ok(0) => break,
            Ok(n) => len += n,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(e),
        }
    }
    std::str::from_utf8(&buf[..len])
        .map_err(|e| std::io::Error::new(std::io::ErrorKind::InvalidData, e))
}

/// The lines of `text`, as [`str::lines`] gives them, found with
/// `memchr`'s word-at-a-time search: the files read around every run are
/// parsed with it, where `str::lines` costs a generic searcher call per
/// line. Not the crate's default search, which picks a vector version at
/// its first use by asking the CPU (`cpuid`, each a VM exit on a virtual
/// machine: some 10 µs of every `tally run`).
pub fn lines(text: &str) -> Lines<'_> {
    Lines(text)
}

/// See [`lines`].
pub struct Lines<'a>(&'a str);

impl<'a> Iterator for Lines<'a> {
    type Item = &'a str;

    fn next(&mut self) -> Option<&'a str> {
        if self.0.is_empty() {
            return None;
        }
        let Some(i) = find_byte(b'\n', self.0.as_bytes()) else {
            // The last line, without `\n`: kept whole, `\r` and all.
            return Some(std::mem::take(&mut self.0));
        };
        let line = &self.0[..i];
        self.0 = &self.0[i + 1..];
        Some(line.strip_suffix('\r').unwrap_or(line))
    }
}

/// The first `byte` in `haystack`, without asking the CPU what it can do
/// (see [`lines`]).
fn find_byte(byte: u8, haystack: &[u8]) -> Option<usize> {
    memchr::arch::all::memchr::One::new(byte).find(haystack)
}

/// `text` split at its first `sep` (an ASCII byte), found as [`lines`]
/// finds line ends.
pub fn split_once_byte(text: &str, sep: u8) -> Option<(&str, &str)> {
    let i = find_byte(sep, text.as_bytes())?;
    Some((&text[..i], &text[i + 1..]))
}

/// Parses the `key: value` lines shared by several /proc files, calling
/// `each` with the key and the first number after it (units such as `kB`
/// are ignored). Lines without a number are skipped.
pub fn for_each_key_number(text: &str, mut each: impl FnMut(&str, u64)) {
    for line in lines(text) {
        let Some((key, rest)) = split_once_byte(line, b':') else {
            continue;
        };
        let Some(word) = rest.split_ascii_whitespace().next() else {
            continue;
        };
        if let Ok(n) = word.parse::<u64>() {
            each(key.trim(), n);
        }
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn lines_are_those_str_lines_gives() {
        for text in [
            "",
            "\n",
            "a",
            "a\n",
            "a\nb",
            "a\n\nb\n\n",
            "cpu  1 2\r\ncpu0 1\n",
            "é:ü\nß\r",
            "\r\n\r\n",
        ] {
            let ours: Vec<&str> = super::lines(text).collect();
            let std: Vec<&str> = text.lines().collect();
            assert_eq!(ours, std, "{text:?}");
        }
        assert_eq!(super::split_once_byte("a:b:c", b':'), Some(("a", "b:c")));
        assert_eq!(super::split_once_byte("abc", b':'), None);
    }
}

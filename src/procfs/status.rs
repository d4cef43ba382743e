//! `/proc/PID/status`: the few fields naming and grouping need.
//!
//! `Name` is the kernel's `comm` (15 bytes at most), printed with newlines
//! and backslashes escaped (`a\nb`), so one line always holds it; the
//! parser undoes that escaping, so the name is the comm's exact bytes.

/// Fields of a status file.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Status {
    /// `Name`: the comm's bytes (the kernel's escaping undone).
    pub name: Vec<u8>,
    /// `Tgid`: the process a thread belongs to (its own PID for a process).
    pub tgid: Option<u32>,
    /// `State` letter (`S`, `R`, `Z`...).
    pub state: Option<char>,
    /// First field of `Uid`: the real user id.
    pub real_uid: Option<u32>,
    /// Second field of `Uid`: the effective user id.
    pub effective_uid: Option<u32>,
    /// `Kthread` (kernel 6.10+): whether this is a kernel thread.
    pub kernel_thread: Option<bool>,
}

/// Parses the text of a status file; `None` without a `Name` line.
pub fn parse(text: &[u8]) -> Option<Status> {
    let mut status = Status::default();
    let mut named = false;
    for line in text.split(|&b| b == b'\n') {
        let Some(colon) = line.iter().position(|&b| b == b':') else {
            continue;
        };
        let (key, rest) = line.split_at(colon);
        let value = trim_blanks(rest.get(1..).unwrap_or_default());
        match key {
            b"Name" => {
                // The name starts after the one tab: blanks are its own.
                let raw = rest.get(1..).unwrap_or_default();
                status.name = unescape_name(raw.strip_prefix(b"\t").unwrap_or(raw));
                named = true;
            }
            b"Tgid" => status.tgid = parse_u32(value),
            b"State" => status.state = value.first().map(|&b| char::from(b)),
            b"Uid" => {
                let mut ids = value
                    .split(|b| b.is_ascii_whitespace())
                    .filter(|w| !w.is_empty())
                    .map(parse_u32);
                status.real_uid = ids.next().flatten();
                status.effective_uid = ids.next().flatten();
            }
            b"Kthread" => status.kernel_thread = Some(value == b"1"),
            _ => {}
        }
    }
    named.then_some(status)
}

/// A `Name` as the kernel escapes it (`\\` a backslash, `\n` a newline;
/// every other byte as it is) back to the comm's bytes.
fn unescape_name(text: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(text.len());
    let mut rest = text;
    while let Some((&b, tail)) = rest.split_first() {
        match (b, tail) {
            (b'\\', [b'\\', more @ ..]) => {
                out.push(b'\\');
                rest = more;
            }
            (b'\\', [b'n', more @ ..]) => {
                out.push(b'\n');
                rest = more;
            }
            _ => {
                out.push(b);
                rest = tail;
            }
        }
    }
    out
}

/// `VmRSS` in kB: the resident set of a process (absent for kernel
/// threads and zombies).
pub fn vm_rss_kb(text: &str) -> Option<u64> {
    let mut rss = None;
    super::for_each_key_number(text, |k, v| {
        if k == "VmRSS" && rss.is_none() {
            rss = Some(v);
        }
    });
    rss
}

/// `Threads`: the number of threads in the process.
pub fn threads(text: &str) -> Option<u64> {
    let mut threads = None;
    super::for_each_key_number(text, |k, v| {
        if k == "Threads" && threads.is_none() {
            threads = Some(v);
        }
    });
    threads
}

fn trim_blanks(mut b: &[u8]) -> &[u8] {
    while let [b' ' | b'\t', rest @ ..] = b {
        b = rest;
    }
    while let [rest @ .., b' ' | b'\t' | b'\r'] = b {
        b = rest;
    }
    b
}

fn parse_u32(word: &[u8]) -> Option<u32> {
    std::str::from_utf8(word).ok()?.parse().ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn vm_rss_is_read_in_kb() {
        let text = "Name:\tcat\nVmPeak:\t  9000 kB\nVmRSS:\t    1840 kB\nRssAnon:\t 100 kB\n";
        assert_eq!(vm_rss_kb(text), Some(1840));
        assert_eq!(vm_rss_kb("Name:\tkworker/0:1\nState:\tI (idle)\n"), None);
        assert_eq!(vm_rss_kb(""), None);
    }

    #[test]
    fn threads_are_counted() {
        let text = "Name:\ttally\nSigQ:\t0/1\nThreads:\t3\nVmRSS:\t 10 kB\n";
        assert_eq!(threads(text), Some(3));
        assert_eq!(threads("Name:\tx\n"), None);
        assert_eq!(threads("Threads:\tmany\n"), None);
    }

    #[test]
    fn reads_a_real_status() {
        let text = "Name:\tprocess_api\nUmask:\t0022\nState:\tS (sleeping)\nTgid:\t1\nNgid:\t0\nPid:\t1\nPPid:\t0\nTracerPid:\t0\nUid:\t1000\t1001\t1002\t1003\nGid:\t0\t0\t0\t0\n";
        let s = parse(text.as_bytes()).expect("status");
        assert_eq!(s.name, b"process_api");
        assert_eq!(s.state, Some('S'));
        assert_eq!(s.tgid, Some(1));
        assert_eq!(s.real_uid, Some(1000));
        assert_eq!(s.effective_uid, Some(1001));
        assert_eq!(s.kernel_thread, None);
    }

    #[test]
    fn undoes_the_kernels_escaping_and_keeps_spaces() {
        let text = "Name:\tmy prog (x)\\nevil\nKthread:\t1\nState:\tZ (zombie)\n";
        let s = parse(text.as_bytes()).expect("status");
        assert_eq!(s.name, b"my prog (x)\nevil");
        assert_eq!(s.kernel_thread, Some(true));
        assert_eq!(s.state, Some('Z'));
        assert_eq!(s.real_uid, None);
        // As the kernel writes a comm of `a\b`, a newline, 0xff, a tab and
        // a leading space.
        let s = parse(b"Name:\t a\\\\b\\nc\xff\td\n").expect("status");
        assert_eq!(s.name, b" a\\b\nc\xff\td");
    }

    #[test]
    fn rejects_text_without_a_name() {
        assert_eq!(parse(b""), None);
        assert_eq!(parse(b"Uid: 1 2 3 4\n"), None);
    }

    proptest::proptest! {
        #[test]
        fn never_panics(bytes in proptest::collection::vec(proptest::num::u8::ANY, 0..512)) {
            let _ = parse(&bytes);
        }
    }
}

//! `/proc/PID/io`: bytes a task passed through read/write calls and bytes
//! it made the storage layer fetch or send.

use serde::{Deserialize, Serialize};

/// The counters of `/proc/PID/io` (kernel `task_io_accounting`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct IoCounters {
    /// `rchar`: bytes returned by read-like calls (cache hits included).
    pub read_call_bytes: u64,
    /// `wchar`: bytes passed to write-like calls.
    pub write_call_bytes: u64,
    /// `syscr`: read-like calls.
    pub read_calls: u64,
    /// `syscw`: write-like calls.
    pub write_calls: u64,
    /// `read_bytes`: bytes the task caused to be fetched from storage.
    pub storage_read_bytes: u64,
    /// `write_bytes`: bytes the task caused to be sent to storage.
    pub storage_write_bytes: u64,
    /// `cancelled_write_bytes`: written bytes that never reached storage
    /// (the file was truncated or deleted while dirty).
    pub cancelled_write_bytes: u64,
}

/// Parses the text of `/proc/PID/io`. Missing keys stay zero; `None` when no
/// key at all was found (not an io file).
pub fn parse(text: &str) -> Option<IoCounters> {
    let mut io = IoCounters::default();
    let mut seen = 0;
    super::for_each_key_number(text, |key, n| {
        let slot = match key {
            "rchar" => &mut io.read_call_bytes,
            "wchar" => &mut io.write_call_bytes,
            "syscr" => &mut io.read_calls,
            "syscw" => &mut io.write_calls,
            "read_bytes" => &mut io.storage_read_bytes,
            "write_bytes" => &mut io.storage_write_bytes,
            "cancelled_write_bytes" => &mut io.cancelled_write_bytes,
            _ => return,
        };
        *slot = n;
        seen += 1;
    });
    (seen > 0).then_some(io)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_a_real_io_file() {
        let text = "rchar: 4326\nwchar: 12\nsyscr: 9\nsyscw: 1\nread_bytes: 8192\nwrite_bytes: 4096\ncancelled_write_bytes: 0\n";
        let io = parse(text).expect("io file");
        assert_eq!(io.read_call_bytes, 4326);
        assert_eq!(io.write_call_bytes, 12);
        assert_eq!(io.read_calls, 9);
        assert_eq!(io.write_calls, 1);
        assert_eq!(io.storage_read_bytes, 8192);
        assert_eq!(io.storage_write_bytes, 4096);
    }

    #[test]
    fn rejects_text_that_is_not_an_io_file() {
        assert_eq!(parse(""), None);
        assert_eq!(parse("garbage without colons"), None);
    }

    proptest::proptest! {
        #[test]
        fn never_panics(text in ".*") {
            let _ = parse(&text);
        }
    }
}

//! `/proc/PID/smaps_rollup` and `/proc/PID/smaps`: the memory figures of a
//! process, in kB exactly as the kernel prints them.
//!
//! The rollup holds each key once; the full `smaps` repeats the keys once
//! per mapping, so one parser that sums every occurrence reads both. The
//! parser works on bytes, allocates nothing and ignores keys it does not
//! know (`THPeligible`, `ProtectionKey`, `VmFlags`, future ones). Mapping
//! headers cannot pose as keys: the kernel escapes newlines in file names.

use serde::{Deserialize, Serialize};

/// The figures tally needs from one process, in kB.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct MemFigures {
    pub rss_kb: u64,
    /// Proportional set size: each page divided by the processes mapping it.
    pub pss_kb: u64,
    pub private_clean_kb: u64,
    pub private_dirty_kb: u64,
    pub swap_kb: u64,
    /// `SwapPss` (kernel 4.3+); `None` when the kernel does not print it.
    pub swap_pss_kb: Option<u64>,
}

impl MemFigures {
    /// Private pages (clean and dirty), in kB.
    pub fn private_kb(&self) -> u64 {
        self.private_clean_kb.saturating_add(self.private_dirty_kb)
    }

    /// PSS minus private: this process's share of pages it shares.
    pub fn shared_kb(&self) -> u64 {
        self.pss_kb.saturating_sub(self.private_kb())
    }

    /// `SwapPss` where the kernel has it, else `Swap`.
    pub fn swap_best_kb(&self) -> u64 {
        self.swap_pss_kb.unwrap_or(self.swap_kb)
    }
}

/// Parses the text of `smaps_rollup` or `smaps`. `None` when there is no
/// `Pss` line at all: the file of a kernel thread or a zombie, which have no
/// memory of their own, or text that is not an smaps file.
pub fn parse(text: &[u8]) -> Option<MemFigures> {
    let mut m = MemFigures::default();
    let mut seen_pss = false;
    sum_into(text, &mut m, &mut seen_pss);
    seen_pss.then_some(m)
}

/// Adds every figure of `text` to `m`; sets `seen_pss` on a `Pss` line.
fn sum_into(text: &[u8], m: &mut MemFigures, seen_pss: &mut bool) {
    for line in text.split(|&b| b == b'\n') {
        let Some(colon) = line.iter().position(|&b| b == b':') else {
            continue;
        };
        let (key, rest) = line.split_at(colon);
        let slot = match key {
            b"Rss" => &mut m.rss_kb,
            b"Pss" => {
                *seen_pss = true;
                &mut m.pss_kb
            }
            b"Private_Clean" => &mut m.private_clean_kb,
            b"Private_Dirty" => &mut m.private_dirty_kb,
            b"Swap" => &mut m.swap_kb,
            b"SwapPss" => m.swap_pss_kb.get_or_insert(0),
            _ => continue,
        };
        if let Some(n) = leading_number(rest.get(1..).unwrap_or_default()) {
            *slot = slot.saturating_add(n);
        }
    }
}

/// A line of an smaps text longer than any the kernel writes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[error("a line longer than any smaps line")]
pub struct LineTooLong;

/// [`parse`] of text that comes in pieces (a full `smaps`, read a buffer
/// at a time so that its size does not matter): feed the pieces in order,
/// then [`Summer::finish`]. A line split between two pieces is kept until
/// its end arrives; a line longer than `max_line_bytes` is an error (no
/// smaps line is longer than a mapping's path, PATH_MAX).
#[derive(Debug, Default)]
pub struct Summer {
    sum: MemFigures,
    seen_pss: bool,
    partial: Vec<u8>,
}

impl Summer {
    /// Adds the complete lines of `piece` (and of the line left over from
    /// the piece before); `Err(LineTooLong)` when a line grows past
    /// `max_line_bytes`.
    pub fn feed(&mut self, piece: &[u8], max_line_bytes: usize) -> Result<(), LineTooLong> {
        let (whole, rest) = match piece.iter().rposition(|&b| b == b'\n') {
            Some(at) => piece.split_at(at + 1),
            None => (&piece[..0], piece),
        };
        if !whole.is_empty() {
            if self.partial.is_empty() {
                self.add(whole);
            } else {
                let mut line = std::mem::take(&mut self.partial);
                line.extend_from_slice(whole);
                self.add(&line);
            }
        }
        self.partial.extend_from_slice(rest);
        if self.partial.len() > max_line_bytes {
            return Err(LineTooLong);
        }
        Ok(())
    }

    fn add(&mut self, text: &[u8]) {
        sum_into(text, &mut self.sum, &mut self.seen_pss);
    }

    /// The sums, as [`parse`] of the whole text would give them.
    pub fn finish(mut self) -> Option<MemFigures> {
        let rest = std::mem::take(&mut self.partial);
        self.add(&rest);
        self.seen_pss.then_some(self.sum)
    }
}

/// `AnonHugePages` of a `smaps_rollup` text, in bytes: anonymous memory
/// backed by transparent huge pages.
pub fn anon_huge_pages_bytes(text: &str) -> Option<u64> {
    let mut v = None;
    super::for_each_key_number(text, |k, n| {
        if k == "AnonHugePages" && v.is_none() {
            v = Some(n.saturating_mul(1024));
        }
    });
    v
}

/// The decimal number after leading blanks, if any (saturating).
fn leading_number(bytes: &[u8]) -> Option<u64> {
    let start = bytes.iter().position(|b| !matches!(b, b' ' | b'\t'))?;
    let digits = bytes.get(start..)?;
    let mut n: u64 = 0;
    let mut any = false;
    for &b in digits {
        if !b.is_ascii_digit() {
            break;
        }
        any = true;
        n = n.saturating_mul(10).saturating_add(u64::from(b - b'0'));
    }
    any.then_some(n)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn anon_huge_pages_are_read_in_bytes() {
        let text = "55d0-7ffd ---p 00000000 00:00 0 [rollup]\nRss: 4096 kB\nAnonHugePages:  2048 kB\nShmemHugePages: 0 kB\n";
        assert_eq!(anon_huge_pages_bytes(text), Some(2048 * 1024));
        assert_eq!(anon_huge_pages_bytes("Rss: 1 kB\n"), None);
        assert_eq!(anon_huge_pages_bytes(""), None);
    }

    const ROLLUP: &str =
        "55f58a89b000-7ffe5db05000 ---p 00000000 00:00 0                          [rollup]
Rss:                1768 kB
Pss:                 262 kB
Pss_Dirty:           112 kB
Pss_Anon:            112 kB
Pss_File:            150 kB
Pss_Shmem:             0 kB
Shared_Clean:       1616 kB
Shared_Dirty:          0 kB
Private_Clean:        40 kB
Private_Dirty:       112 kB
Referenced:         1768 kB
Anonymous:           112 kB
KSM:                   0 kB
LazyFree:              0 kB
AnonHugePages:         0 kB
ShmemPmdMapped:        0 kB
FilePmdMapped:         0 kB
Shared_Hugetlb:        0 kB
Private_Hugetlb:       0 kB
Swap:                  8 kB
SwapPss:               5 kB
Locked:                0 kB
";

    #[test]
    fn pieces_sum_as_the_whole_text_wherever_it_is_cut() {
        let text = format!("{ROLLUP}{ROLLUP}7f00-7f01 r--p 0 00:00 0 /x\nRss: 3 kB\nPss: 1 kB\n");
        let whole = parse(text.as_bytes());
        for cut in [1usize, 2, 7, 64, 100, 4096] {
            let mut s = Summer::default();
            for piece in text.as_bytes().chunks(cut) {
                s.feed(piece, 4096).expect("short lines");
            }
            assert_eq!(s.finish(), whole, "pieces of {cut}");
        }
        let mut s = Summer::default();
        assert!(
            s.feed(&[b'0'; 100], 64).is_err(),
            "a line longer than the limit"
        );
        assert_eq!(Summer::default().finish(), None);
    }

    #[test]
    fn reads_a_real_rollup() {
        let m = parse(ROLLUP.as_bytes()).expect("figures");
        assert_eq!(m.rss_kb, 1768);
        assert_eq!(m.pss_kb, 262, "Pss_Dirty/Pss_Anon/... must not be added");
        assert_eq!(m.private_kb(), 152);
        assert_eq!(m.shared_kb(), 110);
        assert_eq!(m.swap_kb, 8);
        assert_eq!(m.swap_pss_kb, Some(5));
        assert_eq!(m.swap_best_kb(), 5);
    }

    #[test]
    fn sums_every_mapping_of_a_full_smaps() {
        let text = "00400000-0040b000 r-xp 00000000 08:01 123 /usr/bin/Pss: 99 kB
Size:                 44 kB
Rss:                  40 kB
Pss:                  20 kB
Private_Clean:         4 kB
Private_Dirty:         0 kB
Swap:                  0 kB
THPeligible:    0
ProtectionKey:         0
VmFlags: rd ex mr mw me dw
7fff6b915000-7fff6b937000 rw-p 00000000 00:00 0                  [stack]
Rss:                  12 kB
Pss:                  12 kB
Private_Clean:         0 kB
Private_Dirty:        12 kB
Swap:                  4 kB
THPeligible:    1
ProtectionKey:         0
VmFlags: rd wr mr mw me gd ac
";
        let m = parse(text.as_bytes()).expect("figures");
        assert_eq!(m.rss_kb, 52);
        assert_eq!(m.pss_kb, 32);
        assert_eq!(m.private_kb(), 16);
        assert_eq!(m.swap_kb, 4);
        assert_eq!(m.swap_pss_kb, None, "no SwapPss line: unknown, not zero");
        assert_eq!(m.swap_best_kb(), 4);
    }

    #[test]
    fn no_pss_means_no_memory() {
        assert_eq!(parse(b""), None);
        assert_eq!(parse(b"Rss: 4 kB\n"), None);
        assert_eq!(parse(b"not smaps at all"), None);
    }

    #[test]
    fn huge_values_saturate() {
        let m = parse(b"Pss: 99999999999999999999999 kB\nPss: 5 kB\n").expect("figures");
        assert_eq!(m.pss_kb, u64::MAX);
    }

    proptest::proptest! {
        #[test]
        fn never_panics(bytes in proptest::collection::vec(proptest::num::u8::ANY, 0..512)) {
            let _ = parse(&bytes);
        }

        #[test]
        fn pss_is_the_sum_of_pss_lines(values in proptest::collection::vec(0u64..1_000_000, 1..50)) {
            let text: String = values.iter().map(|v| format!("Pss:   {v} kB\nPss_Anon: 7 kB\n")).collect();
            let m = parse(text.as_bytes()).expect("figures");
            proptest::prop_assert_eq!(m.pss_kb, values.iter().sum::<u64>());
        }
    }
}

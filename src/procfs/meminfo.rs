//! `/proc/meminfo`: the machine's memory (`MemTotal`, `MemAvailable`) and
//! swap, for the swap no process accounts for.

/// Swap of the whole machine, in kB.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Swap {
    pub total_kb: u64,
    pub free_kb: u64,
}

impl Swap {
    /// Swap in use: `SwapTotal − SwapFree`.
    pub fn used_kb(&self) -> u64 {
        self.total_kb.saturating_sub(self.free_kb)
    }
}

/// The `SwapTotal` and `SwapFree` lines; `None` without both.
pub fn parse_swap(text: &str) -> Option<Swap> {
    let (mut total, mut free) = (None, None);
    super::for_each_key_number(text, |key, n| match key {
        "SwapTotal" => total = Some(n),
        "SwapFree" => free = Some(n),
        _ => {}
    });
    Some(Swap {
        total_kb: total?,
        free_kb: free?,
    })
}

/// The value of the `key` line (`MemTotal`, `MemAvailable`…), given in kB,
/// in bytes; `None` without that line.
pub fn bytes(text: &str, key: &str) -> Option<u64> {
    let mut v = None;
    super::for_each_key_number(text, |k, n| {
        if k == key && v.is_none() {
            v = Some(n.saturating_mul(1024));
        }
    });
    v
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_a_line_in_bytes() {
        let text = "MemTotal:       24000000 kB\nMemFree:        20000000 kB\nMemAvailable:   22000000 kB\n";
        assert_eq!(bytes(text, "MemAvailable"), Some(22_000_000 * 1024));
        assert_eq!(bytes(text, "MemTotal"), Some(24_000_000 * 1024));
        assert_eq!(bytes("MemTotal: 1 kB\n", "MemAvailable"), None);
        assert_eq!(bytes("MemAvailable: lots\n", "MemAvailable"), None);
        assert_eq!(bytes("", "MemTotal"), None);
    }

    #[test]
    fn reads_swap_lines() {
        let text =
            "MemTotal:  2014532 kB\nSwapCached: 4 kB\nSwapTotal: 1048572 kB\nSwapFree: 611324 kB\n";
        let s = parse_swap(text).expect("swap");
        assert_eq!(s.used_kb(), 437_248);
        assert_eq!(parse_swap("MemTotal: 1 kB\n"), None);
    }
}

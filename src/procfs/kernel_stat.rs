//! `/proc/stat`: the kernel's counters for the whole machine (not
//! `/proc/PID/stat`, which is [`super::stat`]). The `cpu` line sums the
//! time of every CPU in clock ticks: user nice system idle iowait irq
//! softirq steal guest guest_nice.

/// (steal, total) ticks from the `cpu` line; `None` without one. Guest
/// time is already inside user, so the total stops at steal.
pub fn parse_steal(text: &str) -> Option<(u64, u64)> {
    let line = text.lines().find(|l| l.starts_with("cpu "))?;
    let nums: Vec<u64> = line
        .split_whitespace()
        .skip(1)
        .map(|w| w.parse().unwrap_or(0))
        .collect();
    let total: u64 = nums.iter().take(8).fold(0u64, |a, b| a.saturating_add(*b));
    Some((nums.get(7).copied().unwrap_or(0), total))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn steal_parses_and_tolerates_short_lines() {
        assert_eq!(
            parse_steal("cpu  10 0 5 80 1 0 0 4 0 0\ncpu0 1 2\n"),
            Some((4, 100))
        );
        assert_eq!(parse_steal("cpu  1 2\n"), Some((0, 3)));
        assert_eq!(parse_steal("intr 5\n"), None);
        assert_eq!(parse_steal("cpu0 1 2 3\n"), None);
    }
}

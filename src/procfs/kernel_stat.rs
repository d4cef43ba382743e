//! `/proc/stat`: the kernel's counters for the whole machine (not
//! `/proc/PID/stat`, which is [`super::stat`]). The `cpu` line sums the
//! time of every CPU in clock ticks: user nice system idle iowait irq
//! softirq steal guest guest_nice.

/// (steal, total) ticks from the `cpu` line; `None` without one. Guest
/// time is already inside user, so the total stops at steal.
pub fn parse_steal(text: &str) -> Option<(u64, u64)> {
    let nums = cpu_fields(text)?;
    let total: u64 = nums.iter().take(8).fold(0u64, |a, b| a.saturating_add(*b));
    Some((nums.get(7).copied().unwrap_or(0), total))
}

/// The numbers of the `cpu` line, in order; a field that is not a number
/// counts 0. `None` without the line.
fn cpu_fields(text: &str) -> Option<Vec<u64>> {
    let line = super::lines(text).find(|l| l.starts_with("cpu "))?;
    Some(
        line.split_ascii_whitespace()
            .skip(1)
            .map(|w| w.parse().unwrap_or(0))
            .collect(),
    )
}

/// The machine's CPU time from the `cpu` line, in clock ticks.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct CpuTicks {
    /// user + nice + system + irq + softirq: every CPU's busy time (guest
    /// time is inside user).
    pub busy: u64,
    /// idle + iowait.
    pub idle: u64,
    /// Time the hypervisor ran something else while a CPU wanted to run.
    pub steal: u64,
}

impl CpuTicks {
    /// Every tick counted: busy, idle and stolen.
    pub fn total(&self) -> u64 {
        self.busy
            .saturating_add(self.idle)
            .saturating_add(self.steal)
    }
}

/// The `cpu` line's ticks; `None` without one. Missing fields count 0.
pub fn parse_cpu(text: &str) -> Option<CpuTicks> {
    let nums = cpu_fields(text)?;
    let at = |i: usize| nums.get(i).copied().unwrap_or(0);
    let sum = |ix: &[usize]| ix.iter().fold(0u64, |a, i| a.saturating_add(at(*i)));
    Some(CpuTicks {
        busy: sum(&[0, 1, 2, 5, 6]),
        idle: sum(&[3, 4]),
        steal: at(7),
    })
}

/// `procs_running`: tasks runnable at this instant, on every CPU (the
/// reader itself among them).
pub fn procs_running(text: &str) -> Option<u64> {
    super::lines(text)
        .find_map(|l| l.strip_prefix("procs_running "))
        .and_then(|v| v.trim().parse().ok())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cpu_ticks_split_busy_idle_and_steal() {
        let text = "cpu  10 1 5 80 2 3 4 6 7 0\ncpu0 1 2\nprocs_running 3\nprocs_blocked 0\n";
        let t = parse_cpu(text).unwrap();
        assert_eq!(
            t,
            CpuTicks {
                busy: 10 + 1 + 5 + 3 + 4,
                idle: 82,
                steal: 6
            }
        );
        assert_eq!(t.total(), 111);
        assert_eq!(procs_running(text), Some(3));
        assert_eq!(parse_cpu("cpu  1 2\n").unwrap().busy, 3);
        assert_eq!(parse_cpu("intr 5\n"), None);
        assert_eq!(procs_running("procs_running x\n"), None);
        assert_eq!(procs_running(""), None);
    }

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

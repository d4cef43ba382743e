//! `/proc/PID/schedstat` (and `/proc/PID/task/TID/schedstat`): what the
//! scheduler saw of one task: `on_cpu_ns run_delay_ns timeslices`, the
//! time it ran, the time it waited on a run queue while runnable, and how
//! many times it was put on a CPU. Readable by anyone, for a zombie too
//! until it is reaped.

/// One task's scheduler figures.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct SchedStat {
    /// Time on a CPU (`se.sum_exec_runtime`), in ns.
    pub on_cpu_ns: u64,
    /// Time runnable but waiting for a CPU (`sched_info.run_delay`), in ns.
    pub run_delay_ns: u64,
    /// Times put on a CPU (`sched_info.pcount`).
    pub timeslices: u64,
}

/// Parses the file's one line; `None` unless it is three numbers.
pub fn parse(text: &str) -> Option<SchedStat> {
    let mut words = text.split_whitespace().map(|w| w.parse::<u64>().ok());
    let stat = SchedStat {
        on_cpu_ns: words.next()??,
        run_delay_ns: words.next()??,
        timeslices: words.next()??,
    };
    words.next().is_none().then_some(stat)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn three_numbers_and_nothing_else() {
        assert_eq!(
            parse("234176 2810292 2\n"),
            Some(SchedStat {
                on_cpu_ns: 234_176,
                run_delay_ns: 2_810_292,
                timeslices: 2
            })
        );
        assert_eq!(parse(""), None);
        assert_eq!(parse("1 2\n"), None);
        assert_eq!(parse("1 2 3 4\n"), None);
        assert_eq!(parse("1 -2 3\n"), None);
        assert_eq!(parse("1 2 99999999999999999999999\n"), None);
    }
}

//! Pressure stall information: `/proc/pressure/{cpu,io,memory}` for the
//! machine and `cpu.pressure`, `io.pressure`, `memory.pressure` in every
//! cgroup v2 group. Two lines, `some` (time at least one task of the
//! group was stalled) and `full` (time every non-idle task was), each
//! with averages and `total=` in µs since the group was made.

/// The `total=` of the `some` and `full` lines, in µs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Pressure {
    pub some_us: u64,
    /// Absent from the machine-wide `cpu` file of older kernels.
    pub full_us: Option<u64>,
}

/// Parses a pressure file; `None` without a `some` line with a total.
pub fn parse(text: &str) -> Option<Pressure> {
    let total = |kind: &str| {
        super::lines(text).find_map(|l| {
            let rest = l.strip_prefix(kind)?.strip_prefix(' ')?;
            rest.split_ascii_whitespace()
                .find_map(|w| w.strip_prefix("total="))
                .and_then(|v| v.parse::<u64>().ok())
        })
    };
    Some(Pressure {
        some_us: total("some")?,
        full_us: total("full"),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_both_totals() {
        let text = "some avg10=26.51 avg60=15.45 avg300=5.60 total=25196740\nfull avg10=0.00 avg60=0.00 avg300=0.00 total=7\n";
        assert_eq!(
            parse(text),
            Some(Pressure {
                some_us: 25_196_740,
                full_us: Some(7)
            })
        );
        assert_eq!(
            parse("some avg10=0.00 total=5\n"),
            Some(Pressure {
                some_us: 5,
                full_us: None
            })
        );
        assert_eq!(parse("full avg10=0.00 total=5\n"), None);
        assert_eq!(parse("some total=x\n"), None);
        assert_eq!(parse("something total=3\n"), None);
        assert_eq!(parse(""), None);
    }
}

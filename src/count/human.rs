//! Counted work for people: the source, a single run's figures as
//! sentences, where the instructions went, and the notes. Lines without
//! the `tally: ` prefix; the caller prints them as its report does.

use super::{CountReport, CountState, Counted, Kind};
use crate::units::thousands;

/// Functions listed under "where the instructions went".
pub const WHERE_LINES: usize = 10;

/// The source in one line.
pub fn source_line(s: &super::Source) -> String {
    match s.kind {
        Kind::Sim => format!(
            "counted by {} on simulated caches ({})",
            crate::text::escape_text(&s.tool),
            crate::text::escape_text(&s.machine)
        ),
        Kind::Hw => format!(
            "counted by the CPU's counters ({}, {}), user space",
            crate::text::escape_text(&s.tool),
            crate::text::escape_text(&s.machine)
        ),
    }
}

/// One run's counted figures in a sentence or two.
pub fn figures(c: &Counted) -> Vec<String> {
    let n = |v: Option<u64>| v.map(thousands);
    let mut out = Vec::new();
    match c.source {
        Kind::Sim => {
            if let Some(ir) = n(c.instructions) {
                out.push(format!(
                    "{ir} instructions, {} data reads, {} data writes",
                    n(c.data_reads).unwrap_or_default(),
                    n(c.data_writes).unwrap_or_default()
                ));
            }
            if let (Some(l1), Some(ll), Some(cycles)) =
                (n(c.l1_misses), n(c.ll_misses), n(c.estimated_cycles))
            {
                out.push(format!(
                    "{l1} L1 misses, {ll} last-level misses: {cycles} estimated cycles (L1 hits \
                     + 5 x last-level hits + 35 x memory accesses)"
                ));
            }
            if c.processes > 1 {
                out.push(format!(
                    "in {} processes",
                    thousands(u64::from(c.processes))
                ));
            }
        }
        Kind::Hw => {
            match (c.instructions, c.cycles) {
                (Some(i), Some(cy)) if cy > 0 => out.push(format!(
                    "{} instructions, {} cycles ({:.2} instructions a cycle)",
                    thousands(i),
                    thousands(cy),
                    i as f64 / cy as f64
                )),
                _ => {
                    let all: Vec<String> = c
                        .events
                        .iter()
                        .map(|e| format!("{} {}", thousands(e.value), e.event))
                        .collect();
                    out.push(all.join(", "));
                }
            }
            if let (Some(e), Some(r)) = (c.time_enabled_ns, c.time_running_ns)
                && r < e
            {
                out.push(format!(
                    "the counters ran {:.0}% of the time (shared with other counters) and are \
                     scaled to the whole",
                    r as f64 / e.max(1) as f64 * 100.0
                ));
            }
        }
    }
    out
}

/// Why a run's counts are missing.
pub fn unavailable(state: &CountState) -> Option<String> {
    state
        .unavailable_reason()
        .map(|reason| format!("counts unavailable: {reason}"))
}

/// Where the instructions went: a heading and a line per function, most
/// first, with its share; nothing without a profile.
pub fn where_lines(r: &CountReport) -> Vec<String> {
    let Some(p) = &r.profile else {
        return Vec::new();
    };
    let total = p.total_instructions.max(1) as f64;
    let mut out = vec![match r.profile_run {
        Some(i) if i > 0 => format!("where the instructions went (run {}):", i + 1),
        _ => "where the instructions went:".to_string(),
    }];
    let width = p
        .functions
        .iter()
        .take(WHERE_LINES)
        .map(|f| thousands(f.instructions).len())
        .max()
        .unwrap_or(0);
    for f in p.functions.iter().take(WHERE_LINES) {
        out.push(format!(
            "  {:>5.1}%  {:>width$}  {}",
            f.instructions as f64 / total * 100.0,
            thousands(f.instructions),
            f.describe()
        ));
    }
    let shown: u64 = p
        .functions
        .iter()
        .take(WHERE_LINES)
        .map(|f| f.instructions)
        .sum();
    let rest = p.total_instructions.saturating_sub(shown);
    if rest > 0 {
        out.push(format!(
            "  {:>5.1}%  {:>width$}  in the other functions",
            rest as f64 / total * 100.0,
            thousands(rest),
        ));
    }
    out
}

/// Functions named in a change's line: the largest parts, down to this
/// share of the change.
const CHANGE_SHARE_SAID: f64 = 0.01;

/// Which functions a change of instructions is in, in a line: `+6,000,000
/// instructions (+49.5%): 99.9% of the change in work_a (two.c), 0.1% in
/// main (two.c)`. `whole` is the reference's instructions.
pub fn change_line(a: &super::Attribution, whole: u64) -> String {
    let sign = if a.change >= 0 { "+" } else { "-" };
    let relative = if whole > 0 {
        format!(
            " ({sign}{:.1}%)",
            a.change.unsigned_abs() as f64 / whole as f64 * 100.0
        )
    } else {
        String::new()
    };
    let mut parts = Vec::new();
    for f in a
        .functions
        .iter()
        .filter(|f| f.share.abs() >= CHANGE_SHARE_SAID)
        .take(5)
    {
        let share = format!("{:.1}%", f.share * 100.0);
        parts.push(if parts.is_empty() {
            format!("{share} of the change in {}", f.function.describe())
        } else {
            format!("{share} in {}", f.function.describe())
        });
    }
    // Said where it is a share worth saying, as a function's is.
    let unattributed = a.unattributed as f64 / a.change as f64;
    if a.change != 0 && unattributed.abs() >= CHANGE_SHARE_SAID {
        parts.push(format!(
            "{:.1}% in functions too small to keep",
            unattributed * 100.0
        ));
    }
    let head = format!(
        "{sign}{} instructions{relative}",
        thousands(a.change.unsigned_abs())
    );
    if parts.is_empty() {
        head
    } else {
        format!("{head}: {}", parts.join(", "))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::count::profile::{Attribution, FunctionChange, FunctionCost};

    fn attribution(unattributed: i64) -> Attribution {
        Attribution {
            change: 698_642,
            functions: vec![FunctionChange {
                function: FunctionCost {
                    function: "deflate".into(),
                    file: "deflate.c".into(),
                    object: None,
                    instructions: 5_000_000,
                },
                reference_instructions: 4_301_358 + unattributed as u64,
                change: 698_642 - unattributed,
                share: (698_642 - unattributed) as f64 / 698_642.0,
            }],
            unattributed,
        }
    }

    /// Regression: 12 instructions of a change of 698,642 in functions
    /// neither profile kept read "0.0% in functions too small to keep".
    #[test]
    fn a_share_too_small_to_say_was_said_as_zero() {
        let line = change_line(&attribution(12), 4_785_982);
        assert!(!line.contains("too small to keep"), "{line}");
        assert!(
            line.starts_with(
                "+698,642 instructions (+14.6%): 100.0% of the change in deflate (deflate.c)"
            ),
            "{line}"
        );
        let line = change_line(&attribution(70_000), 4_785_982);
        assert!(
            line.ends_with("10.0% in functions too small to keep"),
            "{line}"
        );
    }
}

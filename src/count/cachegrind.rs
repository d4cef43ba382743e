//! Cachegrind's output file, read and checked.
//!
//! The grammar (Valgrind's manual, "Cachegrind output file format"): a
//! header of `desc:` lines, a `cmd:` line and an `events:` line naming
//! the columns; then `fl=FILE` and `fn=FUNCTION` lines, each followed by
//! cost lines (`LINE COST COST…`, fewer costs than events meaning zeros
//! after them, `.` a zero); last a `summary:` line with the total of each
//! event. The same function may appear more than once: its costs add.
//!
//! Costs are kept per function, keyed by (file, function) with line
//! numbers dropped, as `cg_diff` keys them ("because line numbers move"),
//! and the file is refused unless its summary equals the sum of its cost
//! lines: a file cut short (a process killed while Valgrind wrote it) or
//! damaged is never taken for a count.

use std::collections::HashMap;

/// The events tally asks Cachegrind for (`--cache-sim=yes`), in the
/// order of its `events:` line.
pub const EVENTS: [&str; 9] = [
    "Ir", "I1mr", "ILmr", "Dr", "D1mr", "DLmr", "Dw", "D1mw", "DLmw",
];

/// The longest line read; a longer one is refused (a function name of
/// 64 KiB is not one Cachegrind wrote).
const MAX_LINE: usize = 64 * 1024;

/// The costs of one function of one file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FunctionCosts {
    pub file: String,
    pub function: String,
    /// One per event of the file's `events:` line.
    pub costs: Vec<u64>,
}

/// One output file, read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CgFile {
    /// The `cmd:` line: the process's command as Valgrind saw it.
    pub cmd: String,
    /// The `events:` line's names.
    pub events: Vec<String>,
    /// The `summary:` line: one total per event, checked against the
    /// cost lines.
    pub totals: Vec<u64>,
    /// Per (file, function), costs summed over its lines, in the order
    /// first seen.
    pub functions: Vec<FunctionCosts>,
}

impl CgFile {
    /// The total of event `name`, if the file counted it.
    pub fn total(&self, name: &str) -> Option<u64> {
        let i = self.events.iter().position(|e| e == name)?;
        self.totals.get(i).copied()
    }
}

/// Why a file is not a Cachegrind output file tally can use.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ParseError {
    #[error("line {line}: {what}")]
    Line { line: usize, what: String },
    #[error("no `events:` line")]
    NoEvents,
    #[error("no `summary:` line (the process was stopped while Valgrind wrote the file?)")]
    NoSummary,
    #[error("the summary's {event} is {summary}, but its cost lines add up to {sum}")]
    SummaryDiffers {
        event: String,
        summary: u64,
        sum: u64,
    },
}

/// Reads a whole output file.
pub fn parse(text: &str) -> Result<CgFile, ParseError> {
    let mut cmd = String::new();
    let mut events: Option<Vec<String>> = None;
    let mut summary: Option<Vec<u64>> = None;
    let mut index: HashMap<(String, String), usize> = HashMap::new();
    let mut functions: Vec<FunctionCosts> = Vec::new();
    let mut sums: Vec<u64> = Vec::new();
    let mut file = String::from("???");
    let mut current: Option<usize> = None;
    for (n, line) in text.lines().enumerate() {
        let line_no = n + 1;
        let bad = |what: String| ParseError::Line {
            line: line_no,
            what,
        };
        if line.len() > MAX_LINE {
            return Err(bad(format!("a line of {} bytes", line.len())));
        }
        if line.is_empty() || line.starts_with('#') || line.starts_with("desc:") {
            continue;
        }
        if let Some(rest) = line.strip_prefix("cmd:") {
            cmd = rest.trim().to_string();
        } else if let Some(rest) = line.strip_prefix("events:") {
            let names: Vec<String> = rest.split_whitespace().map(str::to_string).collect();
            if names.is_empty() || names.len() > 64 {
                return Err(bad(format!("{} events", names.len())));
            }
            sums = vec![0; names.len()];
            events = Some(names);
        } else if let Some(rest) = line.strip_prefix("fl=") {
            file = rest.to_string();
            current = None;
        } else if let Some(rest) = line.strip_prefix("fn=") {
            let key = (file.clone(), rest.to_string());
            let width = events.as_ref().ok_or(ParseError::NoEvents)?.len();
            let at = *index.entry(key).or_insert_with(|| {
                functions.push(FunctionCosts {
                    file: file.clone(),
                    function: rest.to_string(),
                    costs: vec![0; width],
                });
                functions.len() - 1
            });
            current = Some(at);
        } else if let Some(rest) = line.strip_prefix("summary:") {
            let width = events.as_ref().ok_or(ParseError::NoEvents)?.len();
            let values = numbers(rest, width).map_err(bad)?;
            summary = Some(values);
        } else if line.starts_with(|c: char| c.is_ascii_digit()) {
            let width = events.as_ref().ok_or(ParseError::NoEvents)?.len();
            let (_, costs) = line
                .split_once(char::is_whitespace)
                .ok_or_else(|| bad("a line number without costs".into()))?;
            let values = numbers(costs, width).map_err(bad)?;
            let Some(f) = current.and_then(|i| functions.get_mut(i)) else {
                return Err(bad("costs before any `fn=` line".into()));
            };
            for ((c, s), v) in f.costs.iter_mut().zip(sums.iter_mut()).zip(&values) {
                *c = c.saturating_add(*v);
                *s = s.saturating_add(*v);
            }
        } else if line.starts_with("totals:") {
            // Written by other tools of the format; the summary decides.
        } else {
            let shown: String = line.chars().take(40).collect();
            return Err(bad(format!(
                "not a line of Cachegrind's format: {}",
                crate::text::escape_text(&shown)
            )));
        }
    }
    let events = events.ok_or(ParseError::NoEvents)?;
    let totals = summary.ok_or(ParseError::NoSummary)?;
    for ((event, total), sum) in events.iter().zip(&totals).zip(&sums) {
        if total != sum {
            return Err(ParseError::SummaryDiffers {
                event: event.clone(),
                summary: *total,
                sum: *sum,
            });
        }
    }
    Ok(CgFile {
        cmd,
        events,
        totals,
        functions,
    })
}

/// Up to `width` costs (`.` is 0; fewer mean zeros after them).
fn numbers(text: &str, width: usize) -> Result<Vec<u64>, String> {
    let mut out = vec![0u64; width];
    for (i, word) in text.split_whitespace().enumerate() {
        let slot = out
            .get_mut(i)
            .ok_or_else(|| format!("more than {width} costs"))?;
        *slot = match word {
            "." => 0,
            w => w
                .parse()
                .map_err(|_| format!("{} is not a count", crate::text::escape_text(w)))?,
        };
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    const SMALL: &str = "desc: I1 cache:         32768 B, 64 B, 8-way associative
cmd: ./two 3
events: Ir Dr Dw
fl=two.c
fn=main
3 10 2 1
4 5 . 1
fn=work
9 100 40
fl=???
fn=???
0 7 1 1
fl=two.c
fn=main
5 1
summary: 123 43 3
";

    #[test]
    fn costs_add_per_function_without_lines() {
        let f = parse(SMALL).expect("parses");
        assert_eq!(f.cmd, "./two 3");
        assert_eq!(f.events, ["Ir", "Dr", "Dw"]);
        assert_eq!(f.totals, [123, 43, 3]);
        assert_eq!(f.total("Ir"), Some(123));
        assert_eq!(f.total("Bc"), None);
        let main = &f.functions[0];
        assert_eq!(
            (main.file.as_str(), main.function.as_str()),
            ("two.c", "main")
        );
        // Two stretches of main's lines, the second after other files.
        assert_eq!(main.costs, [16, 2, 2]);
        assert_eq!(f.functions[1].costs, [100, 40, 0]);
        assert_eq!(f.functions[2].function, "???");
        assert_eq!(f.functions.len(), 3);
    }

    #[test]
    fn a_summary_that_is_not_the_sum_is_refused() {
        let text = SMALL.replace("summary: 123 43 3", "summary: 124 43 3");
        assert_eq!(
            parse(&text),
            Err(ParseError::SummaryDiffers {
                event: "Ir".into(),
                summary: 124,
                sum: 123
            })
        );
    }

    #[test]
    fn a_file_cut_short_has_no_summary() {
        let cut = &SMALL[..SMALL.find("summary").unwrap()];
        assert_eq!(parse(cut), Err(ParseError::NoSummary));
        assert!(matches!(
            parse("cmd: x\nfn=main\n1 2\n"),
            Err(ParseError::NoEvents)
        ));
    }

    #[test]
    fn damaged_lines_are_named() {
        for (bad, says) in [
            (
                "events: Ir\nfn=f\n1 2 3\nsummary: 2\n",
                "line 3: more than 1 costs",
            ),
            (
                "events: Ir\nfn=f\n1 x\nsummary: 0\n",
                "line 3: x is not a count",
            ),
            (
                "events: Ir\n1 2\nsummary: 2\n",
                "line 2: costs before any `fn=` line",
            ),
            (
                "events: Ir\nhello\n",
                "line 2: not a line of Cachegrind's format: hello",
            ),
            (
                "events: Ir\nfn=f\n1 99999999999999999999999\nsummary: 0\n",
                "not a count",
            ),
        ] {
            let e = parse(bad).expect_err(bad).to_string();
            assert!(e.contains(says), "{bad:?}: {e}");
        }
    }
}

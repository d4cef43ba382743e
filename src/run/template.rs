//! `tally run -f TEMPLATE` (`--template`): the report as one line per run,
//! made from a template as GNU time's `-f FORMAT` makes it. GNU time's `%`
//! letters mean what they mean there (`%e` elapsed seconds, `%M` peak
//! memory in KiB, …), `%{KEY}` is any figure of tally's by its JSON key
//! (`%{io_wait_ns}`, `%{max_rss_bytes}`), `%%` is `%`, and `\n`, `\t` and
//! `\\` are escapes, as GNU time reads them. A letter whose figure Linux
//! does not give (`%K`, `%D`: GNU time prints 0 for them) is refused when
//! the template is read, with the reason and what to use instead.

use super::report::{FIGURES, RunRecord};

/// One piece of a template.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Piece {
    Text(String),
    /// A GNU time letter.
    Letter(char),
    /// A figure of [`FIGURES`], by its index.
    Figure(usize),
}

/// A template read and checked.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Template {
    pieces: Vec<Piece>,
}

/// GNU time's letters and what each is, as its manual says.
const LETTERS: &[(char, &str)] = &[
    ('C', "the command and its arguments"),
    ('E', "elapsed wall time, [hours:]minutes:seconds"),
    ('e', "elapsed wall time, seconds"),
    ('U', "user cpu, seconds"),
    ('S', "kernel (system) cpu, seconds"),
    ('P', "cpu over wall time, percent"),
    ('M', "peak resident memory, KiB"),
    ('F', "major page faults"),
    ('R', "minor page faults"),
    ('w', "voluntary context switches"),
    ('c', "involuntary context switches"),
    ('I', "file system inputs (512-byte blocks)"),
    ('O', "file system outputs (512-byte blocks)"),
    ('x', "exit status"),
    ('Z', "page size, bytes"),
];

/// GNU time's letters whose figures Linux's rusage does not fill (GNU time
/// prints 0): refused, with what to use.
const UNMEASURED: &[(char, &str)] = &[
    ('D', "average unshared data"),
    ('K', "average total memory"),
    ('X', "average shared text"),
    ('p', "average unshared stack"),
    ('t', "average resident memory"),
    ('k', "signals delivered"),
    ('r', "socket messages received"),
    ('s', "socket messages sent"),
    ('W', "times swapped out"),
];

impl Template {
    /// Reads `text`; the error names the piece that is wrong and the fix.
    pub fn parse(text: &str) -> Result<Template, String> {
        let mut pieces = Vec::new();
        let mut literal = String::new();
        let mut chars = text.chars().peekable();
        while let Some(c) = chars.next() {
            match c {
                '\\' => match chars.next() {
                    Some('n') => literal.push('\n'),
                    Some('t') => literal.push('\t'),
                    Some('\\') => literal.push('\\'),
                    Some(other) => {
                        literal.push('\\');
                        literal.push(other);
                    }
                    None => literal.push('\\'),
                },
                '%' => {
                    let piece = match chars.next() {
                        Some('%') => {
                            literal.push('%');
                            continue;
                        }
                        Some('{') => {
                            let key: String = chars.by_ref().take_while(|c| *c != '}').collect();
                            let at =
                                FIGURES.iter().position(|f| f.key == key).ok_or_else(|| {
                                    format!(
                                        "-f: no figure %{{{key}}}; tally's figures are {}",
                                        FIGURES
                                            .iter()
                                            .map(|f| format!("%{{{}}}", f.key))
                                            .collect::<Vec<_>>()
                                            .join(", ")
                                    )
                                })?;
                            Piece::Figure(at)
                        }
                        Some(l) if LETTERS.iter().any(|(c, _)| *c == l) => Piece::Letter(l),
                        Some(l) => {
                            return Err(match UNMEASURED.iter().find(|(c, _)| *c == l) {
                                Some((_, what)) => format!(
                                    "-f: %{l} ({what}) is not measured by Linux (GNU time \
                                     prints 0 for it); %M is the peak resident memory, \
                                     %{{KEY}} any figure of tally's"
                                ),
                                None => format!(
                                    "-f: %{l} is no GNU time letter; use {}, %{{KEY}} for a \
                                     figure of tally's, %% for %",
                                    LETTERS
                                        .iter()
                                        .map(|(c, what)| format!("%{c} ({what})"))
                                        .collect::<Vec<_>>()
                                        .join(", ")
                                ),
                            });
                        }
                        None => return Err("-f: the template ends in `%`; write %% for %".into()),
                    };
                    if !literal.is_empty() {
                        pieces.push(Piece::Text(std::mem::take(&mut literal)));
                    }
                    pieces.push(piece);
                }
                c => literal.push(c),
            }
        }
        if !literal.is_empty() {
            pieces.push(Piece::Text(literal));
        }
        Ok(Template { pieces })
    }

    /// The line of `run` of `command`, without its newline.
    pub fn render(&self, command: &[String], run: &RunRecord) -> String {
        let mut out = String::new();
        for p in &self.pieces {
            match p {
                Piece::Text(t) => out.push_str(t),
                Piece::Letter(l) => out.push_str(&letter(*l, command, run)),
                Piece::Figure(i) => out.push_str(
                    &FIGURES
                        .get(*i)
                        .and_then(|f| f.value(run))
                        .map_or_else(|| "unavailable".to_string(), |v| v.to_string()),
                ),
            }
        }
        out
    }
}

/// GNU time's letter `l` of `run`, written as GNU time writes it.
fn letter(l: char, command: &[String], run: &RunRecord) -> String {
    let secs = |us: u64| us as f64 / 1e6;
    let wall = run.wall_ns as f64 / 1e9;
    match l {
        'C' => crate::text::escape_text(&command.join(" ")),
        'e' => format!("{wall:.2}"),
        'E' => {
            let h = (wall / 3600.0).floor();
            let m = ((wall - h * 3600.0) / 60.0).floor();
            let s = wall - h * 3600.0 - m * 60.0;
            if h > 0.0 {
                format!("{h}:{m:02}:{s:05.2}")
            } else {
                format!("{m}:{s:05.2}")
            }
        }
        'U' => format!("{:.2}", secs(run.user_us)),
        'S' => format!("{:.2}", secs(run.system_us)),
        'P' => {
            if run.wall_ns == 0 {
                "?%".into()
            } else {
                let cpu_ns = run.cpu_us().saturating_mul(1000) as f64;
                format!("{:.0}%", cpu_ns / run.wall_ns as f64 * 100.0)
            }
        }
        'M' => (run.max_rss_bytes / 1024).to_string(),
        'F' => run.major_faults.to_string(),
        'R' => run.minor_faults.to_string(),
        'w' => run.voluntary_switches.to_string(),
        'c' => run.involuntary_switches.to_string(),
        'I' => run.block_input_ops.to_string(),
        'O' => run.block_output_ops.to_string(),
        'x' => match (run.exit.code, run.exit.signal_number) {
            (Some(code), _) => code.to_string(),
            (None, Some(sig)) => (128 + sig).to_string(),
            (None, None) => "?".into(),
        },
        'Z' => crate::sys::page_size().to_string(),
        _ => String::new(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run() -> RunRecord {
        RunRecord {
            wall_ns: 1_234_000_000,
            user_us: 500_000,
            system_us: 250_000,
            max_rss_bytes: 217_320 * 1024,
            minor_faults: 10,
            major_faults: 2,
            ..RunRecord::bare(0)
        }
    }

    #[test]
    fn gnu_time_letters_and_tally_names_make_the_line() {
        let t = Template::parse("%e %M %U %S %P %E %x %%\\t%{wall_ns}").unwrap();
        assert_eq!(
            t.render(&["x".into()], &run()),
            "1.23 217320 0.50 0.25 61% 0:01.23 0 %\t1234000000"
        );
        assert_eq!(
            Template::parse("%C: %R/%F")
                .unwrap()
                .render(&["ls".into(), "-l".into()], &run()),
            "ls -l: 10/2"
        );
    }

    #[test]
    fn letters_linux_does_not_measure_and_unknown_names_are_refused_with_the_fix() {
        let e = Template::parse("%K").unwrap_err();
        assert!(
            e.contains("not measured by Linux") && e.contains("%M"),
            "{e}"
        );
        let e = Template::parse("%{peak}").unwrap_err();
        assert!(e.contains("%{max_rss_bytes}"), "{e}");
        let e = Template::parse("%q").unwrap_err();
        assert!(e.contains("%e (elapsed wall time, seconds)"), "{e}");
        assert!(Template::parse("50%").is_err());
    }
}

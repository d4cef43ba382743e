//! Progress drawn on stderr from the events a command emits
//! (`tally::progress::Event`): counted steps as a bar, bytes as a bar of
//! bytes (or a spinner when the total is not known), other work as a
//! spinner. Every command's progress is drawn here, so they look alike and
//! none draws into a pipe or a file: off a terminal, only the lines an
//! event asks to be said are.

use std::io::{self, IsTerminal};

use indicatif::{ProgressBar, ProgressStyle};
use tally::progress::Event;

/// Below this many bytes a copy draws nothing: it is over before a bar
/// would tell anything.
const LARGE_BYTES: u64 = 256 << 20;
/// A copy of a tree draws a spinner from this many files on.
const MANY_FILES: u64 = 1000;

/// What is drawn of a command's progress; cleared when dropped.
pub(super) struct Drawn {
    /// Whether stderr is a terminal, looked at on the first event (a
    /// single `tally run` has none, and pays nothing).
    terminal: Option<bool>,
    bar: Option<ProgressBar>,
}

impl Drawn {
    /// Draws on stderr when it is a terminal; else says only what events
    /// ask to be said.
    pub(super) fn new() -> Drawn {
        Drawn {
            terminal: None,
            bar: None,
        }
    }

    /// Draws `event`.
    pub(super) fn event(&mut self, event: Event<'_>) {
        let terminal = *self
            .terminal
            .get_or_insert_with(|| tally::report::text::escapes(io::stderr().is_terminal()));
        match event {
            Event::Say(line) => self.say(&line.to_string()),
            Event::Busy { what, log } => {
                if terminal {
                    // No steady tick: indicatif ticks from a thread of its
                    // own, and a second thread in a measuring process slows
                    // what it measures. The spinner moves on events.
                    let bar = self.bar("tally: {spinner} [{elapsed}] {msg}", None);
                    bar.set_message(what.to_string());
                    bar.tick();
                } else if log {
                    tally::diag!("tally: {what}");
                }
            }
            Event::Step { what, done, of } if terminal => {
                let bar = self.bar("tally: {msg} {bar:30} {pos}/{len} eta {eta}", Some(0));
                bar.set_message(what.to_string());
                if let Some(of) = of {
                    bar.set_length(of);
                }
                bar.set_position(done);
            }
            Event::Bytes { done, total, files } if terminal => match total {
                Some(total) if total >= LARGE_BYTES => {
                    let template = "tally: {bar:30} {binary_bytes}/{binary_total_bytes} \
                                    {binary_bytes_per_sec} eta {eta}";
                    self.bar(template, Some(total)).set_position(done);
                }
                None if files >= MANY_FILES || done >= LARGE_BYTES => {
                    let template = "tally: {spinner} {binary_bytes} {binary_bytes_per_sec}, {msg}";
                    let bar = self.bar(template, None);
                    bar.set_position(done);
                    bar.set_message(tally::units::count(files, "file", "files"));
                }
                _ => {}
            },
            Event::Step { .. } | Event::Bytes { .. } => {}
        }
    }

    /// A line on stderr, above the bar.
    fn say(&self, line: &str) {
        match &self.bar {
            Some(bar) => bar.suspend(|| tally::diag!("tally: {line}")),
            None => tally::diag!("tally: {line}"),
        }
    }

    /// The bar, made at the first event with `template`: of `len` steps,
    /// or a spinner.
    fn bar(&mut self, template: &str, len: Option<u64>) -> &ProgressBar {
        self.bar.get_or_insert_with(|| {
            let bar = match len {
                Some(len) => ProgressBar::new(len),
                None => ProgressBar::new_spinner(),
            };
            let style = ProgressStyle::with_template(template).unwrap_or_else(|_| match len {
                Some(_) => ProgressStyle::default_bar(),
                None => ProgressStyle::default_spinner(),
            });
            bar.set_style(style);
            bar
        })
    }
}

impl Drop for Drawn {
    fn drop(&mut self) {
        if let Some(bar) = &self.bar {
            bar.finish_and_clear();
        }
    }
}

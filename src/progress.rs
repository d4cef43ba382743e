//! Progress of long work: events the library emits while a command works,
//! drawn by the binary in one place (bars and spinners on a terminal's
//! stderr, nothing elsewhere). Measurement code never draws or prints: it
//! says what it is doing through a [`Progress`], which may listen to
//! nothing at all.
//!
//! A report written row by row (`tally cache`'s files, `tally cp`'s
//! copies) hands each row over the same way, as it is made
//! ([`Progress::row`]): the caller writes it out, and memory does not grow
//! with the rows.

use std::fmt::Display;

/// One thing the work says about itself.
#[derive(Clone, Copy)]
pub enum Event<'a> {
    /// Counted steps: `done` of `of` (`None` while the count is not known
    /// yet), `what` naming the one under way (`warm-up`, `cold read`).
    Step {
        what: &'a dyn Display,
        done: u64,
        of: Option<u64>,
    },
    /// Bytes moved: `done` of `total` (`None`: not known without a second
    /// walk), over `files` files.
    Bytes {
        done: u64,
        total: Option<u64>,
        files: u64,
    },
    /// Work of unknown length under way: `what`. With `log`, it is also
    /// said as a line where no spinner can be drawn (a long run's
    /// benchmarks, one by one).
    Busy { what: &'a dyn Display, log: bool },
    /// A line to say on stderr whether or not anything is drawn (the plan
    /// of a long run).
    Say(&'a dyn Display),
}

/// Takes a row of a streamed report with the report as it stands; `false`
/// when nobody takes rows any more.
pub type RowSink<'a, Head, Row> = dyn FnMut(&Head, &Row) -> bool + 'a;

/// Where a command's events go (and, for a streamed report, its rows:
/// `Head` is the report as it stands, `Row` one row).
pub struct Progress<'a, Head = (), Row = ()> {
    events: Option<&'a mut dyn FnMut(Event<'_>)>,
    rows: Option<&'a mut RowSink<'a, Head, Row>>,
}

impl<'a, Head, Row> Progress<'a, Head, Row> {
    /// Listens to nothing: the work goes on silently, its rows dropped.
    pub fn none() -> Progress<'a, Head, Row> {
        Progress {
            events: None,
            rows: None,
        }
    }

    /// Events go to `events`.
    pub fn new(events: &'a mut dyn FnMut(Event<'_>)) -> Progress<'a, Head, Row> {
        Progress {
            events: Some(events),
            rows: None,
        }
    }

    /// Rows go to `rows` as they are made, with the report as it stands;
    /// `rows` returning `false` says nobody takes them any more (a reader
    /// that went away), so the work may stop.
    pub fn rows(mut self, rows: &'a mut RowSink<'a, Head, Row>) -> Self {
        self.rows = Some(rows);
        self
    }

    /// Says `event`.
    pub fn event(&mut self, event: Event<'_>) {
        if let Some(f) = &mut self.events {
            f(event);
        }
    }

    /// [`Event::Step`].
    pub fn step(&mut self, what: &dyn Display, done: u64, of: Option<u64>) {
        self.event(Event::Step { what, done, of });
    }

    /// [`Event::Bytes`].
    pub fn bytes(&mut self, done: u64, total: Option<u64>, files: u64) {
        self.event(Event::Bytes { done, total, files });
    }

    /// [`Event::Busy`].
    pub fn busy(&mut self, what: &dyn Display, log: bool) {
        self.event(Event::Busy { what, log });
    }

    /// [`Event::Say`].
    pub fn say(&mut self, line: &dyn Display) {
        self.event(Event::Say(line));
    }

    /// Hands `row` over with `head`, the report as it stands; `false` when
    /// nobody takes rows any more.
    pub fn row(&mut self, head: &Head, row: &Row) -> bool {
        match &mut self.rows {
            Some(f) => f(head, row),
            None => true,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn events_and_rows_reach_their_listeners_and_none_listens_to_nothing() {
        let mut said = Vec::new();
        let mut events = |e: Event<'_>| {
            said.push(match e {
                Event::Step { what, done, of } => format!("{what} {done}/{of:?}"),
                Event::Bytes { done, total, files } => format!("{done}/{total:?} {files}"),
                Event::Busy { what, log } => format!("{what} {log}"),
                Event::Say(line) => line.to_string(),
            })
        };
        let mut taken = Vec::new();
        let mut rows = |head: &u32, row: &u32| {
            taken.push(head + row);
            taken.len() < 2
        };
        let mut p = Progress::new(&mut events).rows(&mut rows);
        p.step(&"runs", 1, Some(3));
        p.bytes(5, None, 1);
        p.busy(&format_args!("{} (1/2)", "timer"), true);
        p.say(&"plan");
        assert!(p.row(&10, &1));
        assert!(!p.row(&10, &2));
        assert_eq!(
            said,
            ["runs 1/Some(3)", "5/None 1", "timer (1/2) true", "plan"]
        );
        assert_eq!(taken, [11, 12]);
        let mut quiet: Progress<'_, u32, u32> = Progress::none();
        quiet.step(&"runs", 1, None);
        assert!(quiet.row(&1, &1), "with no listener the work goes on");
    }
}

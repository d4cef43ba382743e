//! The one text-table writer of the human reports.
//!
//! A [`TextTable`] has columns, each declared with a header and an
//! alignment ([`Column::number`] is right-aligned, [`Column::text`] is
//! left-aligned), and rows of cells. Widths come from the cells (headers
//! included, even when the header line is not shown); columns are
//! separated by two spaces; a left-aligned last column is not padded, and
//! no line ends in spaces. Widths count characters, not terminal cells.
//!
//! # Fitting the terminal
//!
//! [`Style::width`] is the room a line has (see [`Style::stdout`]): the
//! terminal's or `$COLUMNS`; `None` (a file, a pipe: nothing to fit)
//! means no limit, so a table written to a file is never cut. When a line
//! would be wider:
//! 1. the column declared [`Column::cut_end`], [`Column::cut_start`] or
//!    [`Column::cut_middle`] (a program name, a path) is cut to fit, with
//!    an ellipsis `…` at the end, start or middle, down to [`MIN_CUT`]
//!    characters; rows added with [`TextTable::whole_row`] (totals) are
//!    not cut;
//! 2. if that is not enough, columns declared [`Column::droppable`] are
//!    left out, lowest rank first, until the table fits (the cut column
//!    grows back into the room they leave);
//! 3. if it still does not fit, the lines are written as they are, and
//!    the terminal wraps them: no figure is ever cut.
//!
//! Columns left out are said below the table, by name, with the fix.
//!
//! Figures are never cut: only a declared text column is, and only on
//! output with a width.
//!
//! # Colour
//!
//! With [`Style::color`] the header line is bold; nothing else is
//! coloured, and nothing but the header carries escape codes.

use std::ffi::OsStr;
use std::io::{self, IsTerminal, Write};

use super::Style;

/// The width prose (paragraphs, `tally:` lines) is wrapped at with no
/// terminal (and no `$COLUMNS`) behind it: a pipe, a file, a CI log.
/// Tables there are not fitted to any width.
pub const NO_TERMINAL_WIDTH: usize = 100;

/// The narrowest a cut column becomes, ellipsis included.
pub const MIN_CUT: usize = 20;

/// Columns apart.
const GAP: usize = 2;
const GAP_TEXT: &str = "  ";

const BOLD: &str = "\x1b[1m";
const RESET: &str = "\x1b[0m";

impl Style {
    /// For human output with no terminal behind it (a file): no colour,
    /// no width to fit (nothing is cut).
    pub const PLAIN: Style = Style {
        color: false,
        width: None,
    };

    /// For a report written to standard output.
    pub fn stdout() -> Style {
        Style::detect(
            io::stdout().is_terminal(),
            crate::sys::tty::columns(libc::STDOUT_FILENO),
        )
    }

    /// For a report written to standard error (`tally run`).
    pub fn stderr() -> Style {
        Style::detect(
            io::stderr().is_terminal(),
            crate::sys::tty::columns(libc::STDERR_FILENO),
        )
    }

    fn detect(terminal: bool, tty_columns: Option<u16>) -> Style {
        let style = Style::decide(
            terminal,
            tty_columns,
            std::env::var_os("COLUMNS").as_deref(),
            std::env::var_os("NO_COLOR").as_deref(),
        );
        Style {
            color: style.color && escapes(terminal),
            ..style
        }
    }

    /// The style for an output that is a `terminal` (of `tty_columns`)
    /// or not, given `$COLUMNS` and `$NO_COLOR`:
    /// - colour only on a terminal, and only when `NO_COLOR` is unset or
    ///   empty (<https://no-color.org>);
    /// - the width from `$COLUMNS` when it is a positive number (also on
    ///   a pipe: the caller asked for it), else the terminal's, else none:
    ///   a file or a pipe gets every column, uncut.
    pub fn decide(
        terminal: bool,
        tty_columns: Option<u16>,
        columns: Option<&OsStr>,
        no_color: Option<&OsStr>,
    ) -> Style {
        let color = terminal && no_color.is_none_or(OsStr::is_empty);
        let from_env = columns
            .and_then(OsStr::to_str)
            .and_then(|c| c.trim().parse::<usize>().ok())
            .filter(|w| *w > 0);
        let width = from_env.or_else(|| {
            if terminal {
                tty_columns.filter(|c| *c > 0).map(usize::from)
            } else {
                None
            }
        });
        Style { color, width }
    }
}

/// Whether escape sequences (bold, a progress bar's cursor moves, a
/// screen clear) may go to an output that `terminal` says is one: not
/// when `$TERM` is `dumb` (Emacs' shell, some CI logs), which prints them
/// raw. Every escape tally writes asks this first.
pub fn escapes(terminal: bool) -> bool {
    terminal && std::env::var_os("TERM").is_none_or(|t| t != "dumb")
}

/// Writes `text`, a paragraph of a report, in lines of at most `width`
/// characters, continued two spaces in. A report's lines carry no
/// `tally: `: that marks a diagnostic (see [`tally_lines`]).
pub fn paragraph(out: &mut dyn io::Write, text: &str, width: usize) -> io::Result<()> {
    let text = crate::text::controls_escaped(text, true);
    for line in wrap(&text, "", "  ", width) {
        writeln!(out, "{line}")?;
    }
    Ok(())
}

/// Writes `text` (a `tally: ` line) in lines of at most `width` characters,
/// broken at spaces and continued under `tally:   `: a diagnostic or
/// warning stays one prefixed paragraph however narrow the output. A line
/// break in it continues under `tally:   ` too, and no control character
/// reaches the terminal ([`crate::text::controls_escaped`]).
pub fn tally_lines(out: &mut dyn io::Write, text: &str, width: usize) -> io::Result<()> {
    let text = text.strip_prefix("tally: ").unwrap_or(text);
    let text = crate::text::controls_escaped(text, true);
    for (i, part) in text.split('\n').enumerate() {
        let first = if i == 0 { "tally: " } else { "tally:   " };
        for line in wrap(part, first, "tally:   ", width) {
            writeln!(out, "{line}")?;
        }
    }
    Ok(())
}

/// `text` broken at spaces into lines of at most `width` characters, the
/// one word-wrapper of the human reports:
/// first starting with `first`, the rest with `rest`. A word longer than a
/// line stays whole.
pub fn wrap(text: &str, first: &str, rest: &str, width: usize) -> Vec<String> {
    // No control character reaches the terminal, whoever calls.
    let text = crate::text::controls_escaped(text, true);
    let text = text.as_ref();
    // A line that fits keeps its own spacing (aligned columns).
    if first.chars().count() + text.chars().count() <= width {
        return vec![format!("{first}{text}")];
    }
    let mut lines = Vec::new();
    let mut line = first.to_string();
    let mut empty = true;
    for word in text.split(' ').filter(|w| !w.is_empty()) {
        let len = line.chars().count();
        if !empty && len + 1 + word.chars().count() > width {
            lines.push(line);
            line = rest.to_string();
            empty = true;
        }
        if !empty {
            line.push(' ');
        }
        line.push_str(word);
        empty = false;
    }
    if !empty || lines.is_empty() {
        lines.push(line);
    }
    lines
}

/// A writer that fits every line of a human report to a terminal's
/// `width`: a line that fits passes as it is; a longer one is broken at
/// spaces ([`wrap`]) and continued under `tally:   ` (a diagnostic's
/// line) or two spaces further in than it began, so the terminal never
/// breaks a word. Every human report written to a terminal goes through
/// one (see `super::human`); a file or a pipe (no width) keeps whole
/// lines. Regression: `run`'s report was wrapped near 100 columns
/// whatever the terminal, and broke "50% o / n a CPU" at 80.
pub struct Fit<W: Write> {
    inner: W,
    width: usize,
    pending: Vec<u8>,
}

impl<W: Write> Fit<W> {
    pub fn new(inner: W, width: usize) -> Fit<W> {
        Fit {
            inner,
            width: width.max(20),
            pending: Vec::new(),
        }
    }

    /// Writes the complete lines held (and, with `all`, the rest).
    fn drain(&mut self, all: bool) -> io::Result<()> {
        while let Some(end) = self.pending.iter().position(|&b| b == b'\n') {
            let line: Vec<u8> = self.pending.drain(..=end).collect();
            let text = String::from_utf8_lossy(&line[..line.len() - 1]).into_owned();
            for part in fit_line(&text, self.width) {
                writeln!(self.inner, "{part}")?;
            }
        }
        if all && !self.pending.is_empty() {
            let text = String::from_utf8_lossy(&self.pending).into_owned();
            self.pending.clear();
            let parts = fit_line(&text, self.width);
            let last = parts.len().saturating_sub(1);
            for (i, part) in parts.iter().enumerate() {
                if i == last {
                    write!(self.inner, "{part}")?;
                } else {
                    writeln!(self.inner, "{part}")?;
                }
            }
        }
        Ok(())
    }

    /// Writes what is held, a last line without its line break too.
    pub fn finish(&mut self) -> io::Result<()> {
        self.drain(true)?;
        self.inner.flush()
    }
}

impl<W: Write> Write for Fit<W> {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        self.pending.extend_from_slice(buf);
        self.drain(false)?;
        Ok(buf.len())
    }

    fn flush(&mut self) -> io::Result<()> {
        self.drain(false)?;
        self.inner.flush()
    }
}

impl<W: Write> Drop for Fit<W> {
    fn drop(&mut self) {
        let _ = self.drain(true);
        let _ = self.inner.flush();
    }
}

/// The characters a terminal shows of `line`: escape sequences (bold)
/// take no column.
fn shown_chars(line: &str) -> usize {
    let mut n = 0;
    let mut escape = false;
    for c in line.chars() {
        match (escape, c) {
            (false, '\x1b') => escape = true,
            (true, c) if c.is_ascii_alphabetic() => escape = false,
            (true, _) => {}
            (false, _) => n += 1,
        }
    }
    n
}

/// `line` in lines of at most `width` shown characters (see [`Fit`]).
pub fn fit_line(line: &str, width: usize) -> Vec<String> {
    if shown_chars(line) <= width {
        return vec![line.to_string()];
    }
    let (first, rest, body) = match line.strip_prefix("tally: ") {
        Some(body) => {
            let lead = body.len() - body.trim_start().len();
            let indent = format!("tally: {}", " ".repeat(lead));
            (indent.clone(), format!("{indent}  "), body.trim_start())
        }
        None => {
            let lead = line.len() - line.trim_start().len();
            let indent = " ".repeat(lead);
            (indent.clone(), format!("{indent}  "), line.trim_start())
        }
    };
    // `wrap` counts every character; escapes are few (a bold header).
    let extra = body.chars().count() - shown_chars(body);
    wrap(body, &first, &rest, width + extra)
}

/// Cells as one line each, with no control character
/// ([`crate::text::controls_escaped`]): a cell's text may come from a
/// name or a file.
fn one_line(cells: Vec<String>) -> Vec<String> {
    cells
        .into_iter()
        .map(|c| match crate::text::controls_escaped(&c, false) {
            std::borrow::Cow::Borrowed(_) => c,
            std::borrow::Cow::Owned(o) => o,
        })
        .collect()
}

/// Where a column's cells sit.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Align {
    Left,
    Right,
}

/// Which end of a too-long cell gives way.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Cut {
    /// `firefox-web…`: names, whose start says most.
    End,
    /// `…/dir/file.txt`: paths, whose end says most.
    Start,
    /// `firefox-w…er (12)`: a name followed by what counts it.
    Middle,
}

/// One column: its header, alignment and how it gives way to a narrow
/// terminal.
#[derive(Debug, Clone)]
pub struct Column {
    header: String,
    align: Align,
    cut: Option<Cut>,
    drop_rank: Option<u8>,
}

impl Column {
    /// A right-aligned column (figures).
    pub fn number(header: impl Into<String>) -> Column {
        Column {
            header: header.into(),
            align: Align::Right,
            cut: None,
            drop_rank: None,
        }
    }

    /// A left-aligned column (names, paths, words).
    pub fn text(header: impl Into<String>) -> Column {
        Column {
            align: Align::Left,
            ..Column::number(header)
        }
    }

    /// Cut with `…` at the end when the table is too wide (at most one
    /// column of a table is cut: the last declared).
    pub fn cut_end(mut self) -> Column {
        self.cut = Some(Cut::End);
        self
    }

    /// Cut with `…` at the start when the table is too wide (paths).
    pub fn cut_start(mut self) -> Column {
        self.cut = Some(Cut::Start);
        self
    }

    /// Cut with `…` in the middle when the table is too wide (a name
    /// followed by a count or an id).
    pub fn cut_middle(mut self) -> Column {
        self.cut = Some(Cut::Middle);
        self
    }

    /// May be left out when the table is too wide, lowest `rank` first.
    pub fn droppable(mut self, rank: u8) -> Column {
        self.drop_rank = Some(rank);
        self
    }
}

#[derive(Debug, Clone)]
enum Row {
    Cells(Vec<String>),
    /// Cells never cut (a total, whose words are figures too).
    Whole(Vec<String>),
    /// Leading cells, then one text over the remaining columns.
    Span(Vec<String>, String),
    /// Dashes under the padded columns.
    Rule,
    /// A line of its own, written as it is.
    Line(String),
}

/// A table for people; see the module documentation.
#[derive(Debug, Clone)]
pub struct TextTable {
    columns: Vec<Column>,
    rows: Vec<Row>,
    prefix: String,
    header: bool,
}

fn chars(s: &str) -> usize {
    s.chars().count()
}

/// `s` in at most `width` characters, the ellipsis included.
fn cut(s: &str, width: usize, how: Cut) -> String {
    let n = chars(s);
    if n <= width {
        return s.to_string();
    }
    let keep = width.saturating_sub(1);
    match how {
        Cut::End => s.chars().take(keep).chain(['…']).collect(),
        Cut::Start => ['…']
            .into_iter()
            .chain(s.chars().skip(n.saturating_sub(keep)))
            .collect(),
        Cut::Middle => {
            let tail = keep / 2;
            s.chars()
                .take(keep - tail)
                .chain(['…'])
                .chain(s.chars().skip(n.saturating_sub(tail)))
                .collect()
        }
    }
}

impl TextTable {
    pub fn new(columns: Vec<Column>) -> TextTable {
        TextTable {
            columns,
            rows: Vec::new(),
            prefix: String::new(),
            header: true,
        }
    }

    /// Text before every line (`tally: `), counted in the width.
    pub fn prefix(mut self, prefix: impl Into<String>) -> TextTable {
        self.prefix = prefix.into();
        self
    }

    /// Leaves the header line out; headers still count in the widths.
    pub fn without_header(mut self) -> TextTable {
        self.header = false;
        self
    }

    /// A row; missing cells are empty, extra cells are ignored.
    pub fn row(&mut self, cells: Vec<String>) {
        self.rows.push(Row::Cells(one_line(cells)));
    }

    /// A row whose cells are never cut, even if it runs past the width
    /// (a total line whose text holds figures).
    pub fn whole_row(&mut self, cells: Vec<String>) {
        self.rows.push(Row::Whole(one_line(cells)));
    }

    /// A row of `lead` cells, then `rest` unpadded over the remaining
    /// columns (a failure in place of figures); `rest` is not counted in
    /// the widths.
    pub fn span(&mut self, lead: Vec<String>, rest: String) {
        let rest = crate::text::controls_escaped(&rest, false).into_owned();
        self.rows.push(Row::Span(one_line(lead), rest));
    }

    /// A line of dashes under every padded column.
    pub fn rule(&mut self) {
        self.rows.push(Row::Rule);
    }

    /// A line of its own under the last row, written as it is (no prefix,
    /// not cut, not counted in the widths).
    pub fn line(&mut self, text: String) {
        let text = crate::text::controls_escaped(&text, false).into_owned();
        self.rows.push(Row::Line(text));
    }

    /// The natural width of each column.
    fn natural(&self) -> Vec<usize> {
        let mut widths: Vec<usize> = self.columns.iter().map(|c| chars(&c.header)).collect();
        for row in &self.rows {
            let (cells, whole) = match row {
                Row::Cells(c) | Row::Span(c, _) => (c, false),
                Row::Whole(c) => (c, true),
                Row::Rule | Row::Line(_) => continue,
            };
            for ((w, c), col) in widths.iter_mut().zip(cells).zip(&self.columns) {
                // A whole row runs past a cut column rather than widen it.
                if !(whole && col.cut.is_some()) {
                    *w = (*w).max(chars(c));
                }
            }
        }
        widths
    }

    /// Which columns show and how wide, for a line of at most `limit`.
    fn layout(&self, limit: Option<usize>) -> (Vec<bool>, Vec<usize>) {
        let natural = self.natural();
        let mut shown = vec![true; self.columns.len()];
        let mut widths = natural.clone();
        let Some(limit) = limit else {
            return (shown, widths);
        };
        let cut_col = self.columns.iter().rposition(|c| c.cut.is_some());
        let mut drops: Vec<usize> = (0..self.columns.len())
            .filter(|i| self.columns[*i].drop_rank.is_some())
            .collect();
        drops.sort_by_key(|i| self.columns[*i].drop_rank);
        let mut drops = drops.into_iter();
        loop {
            let total = |widths: &[usize], shown: &[bool]| {
                let cols: Vec<usize> = widths
                    .iter()
                    .zip(shown)
                    .filter(|(_, s)| **s)
                    .map(|(w, _)| *w)
                    .collect();
                chars(&self.prefix)
                    + cols.iter().sum::<usize>()
                    + GAP * cols.len().saturating_sub(1)
            };
            if let Some(c) = cut_col {
                widths[c] = natural[c];
                let over = total(&widths, &shown).saturating_sub(limit);
                let floor = MIN_CUT.min(natural[c]);
                widths[c] = natural[c].saturating_sub(over).max(floor);
            }
            if total(&widths, &shown) <= limit {
                break;
            }
            match drops.next() {
                Some(d) => shown[d] = false,
                None => break,
            }
        }
        (shown, widths)
    }

    /// The lines, without line ends.
    pub fn lines(&self, style: Style) -> Vec<String> {
        let (shown, widths) = self.layout(style.width);
        let last = shown.iter().rposition(|s| *s);
        let unpadded_last = last.filter(|l| self.columns[*l].align == Align::Left);
        // The first `upto` columns of `cells`; `pad_last` pads even an
        // unpadded last column (a span follows it).
        let render = |cells: &[String], upto: usize, pad_last: bool, whole: bool| -> Vec<String> {
            let mut parts = Vec::new();
            for (i, col) in self.columns.iter().enumerate().take(upto) {
                if !shown[i] {
                    continue;
                }
                let raw = cells.get(i).map(String::as_str).unwrap_or("");
                let w = widths[i];
                let text = match col.cut {
                    Some(how) if !whole => cut(raw, w, how),
                    _ => raw.to_string(),
                };
                let pad = " ".repeat(w.saturating_sub(chars(&text)));
                parts.push(match col.align {
                    _ if Some(i) == unpadded_last && !pad_last => text,
                    Align::Left => format!("{text}{pad}"),
                    Align::Right => format!("{pad}{text}"),
                });
            }
            parts
        };
        let n = self.columns.len();
        let mut lines = Vec::new();
        if self.header {
            let headers: Vec<String> = self.columns.iter().map(|c| c.header.clone()).collect();
            let h = render(&headers, n, false, false).join(GAP_TEXT);
            let h = h.trim_end();
            lines.push(if style.color && !h.trim().is_empty() {
                let indent = h.len() - h.trim_start().len();
                let (lead, rest) = h.split_at(indent);
                format!("{}{lead}{BOLD}{rest}{RESET}", self.prefix)
            } else {
                format!("{}{h}", self.prefix)
            });
        }
        for row in &self.rows {
            let text = match row {
                Row::Cells(cells) => {
                    let parts = render(cells, n, false, false);
                    let text = parts.join(GAP_TEXT);
                    let long = |limit: usize| chars(&self.prefix) + chars(text.trim_end()) > limit;
                    match (style.width, unpadded_last, parts.split_last()) {
                        // Still too wide with every column fitted: the
                        // last (words) wraps at its spaces, under itself,
                        // never mid-word at the terminal's edge.
                        (Some(limit), Some(_), Some((words, head)))
                            if long(limit) && !head.is_empty() =>
                        {
                            let head = format!("{}{}{GAP_TEXT}", self.prefix, head.join(GAP_TEXT));
                            let indent = format!(
                                "{}{}",
                                self.prefix,
                                " ".repeat(chars(&head) - chars(&self.prefix))
                            );
                            lines.extend(wrap(words, &head, &indent, limit));
                            continue;
                        }
                        _ => text,
                    }
                }
                Row::Whole(cells) => render(cells, n, false, true).join(GAP_TEXT),
                Row::Span(lead, rest) => {
                    let mut parts = render(lead, lead.len().min(n), true, false);
                    parts.push(rest.clone());
                    parts.join(GAP_TEXT)
                }
                Row::Rule => {
                    let padded: Vec<usize> = (0..self.columns.len())
                        .filter(|i| shown[*i] && Some(*i) != unpadded_last)
                        .map(|i| widths[i])
                        .collect();
                    let n = padded.iter().sum::<usize>() + GAP * padded.len().saturating_sub(1);
                    "-".repeat(n)
                }
                Row::Line(l) => {
                    lines.push(l.clone());
                    continue;
                }
            };
            lines.push(format!("{}{}", self.prefix, text.trim_end()));
        }
        let hidden: Vec<&str> = (0..n)
            .filter(|i| !shown[*i])
            .map(|i| self.columns[i].header.trim())
            .collect();
        if let (false, Some(limit)) = (hidden.is_empty(), style.width) {
            let note = format!(
                "{} column{} hidden ({}): widen the terminal, or --format csv or json for every \
                 column",
                hidden.len(),
                if hidden.len() == 1 { "" } else { "s" },
                hidden.join(", ")
            );
            let rest = format!("{}  ", self.prefix);
            lines.extend(wrap(&note, &self.prefix, &rest, limit));
        }
        lines
    }

    /// Writes the lines, each ending in `\n`.
    pub fn write(&self, out: &mut dyn Write, style: Style) -> io::Result<()> {
        for line in self.lines(style) {
            writeln!(out, "{line}")?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn os(v: &str) -> Option<&OsStr> {
        Some(OsStr::new(v))
    }

    fn s(v: &[&str]) -> Vec<String> {
        v.iter().map(|c| c.to_string()).collect()
    }

    fn sample() -> TextTable {
        let mut t = TextTable::new(vec![
            Column::number("size"),
            Column::number("cached").droppable(1),
            Column::text("path").cut_start(),
        ]);
        t.row(s(&["8.0 KiB", "4.0 KiB", "/a"]));
        t.row(s(&[
            "12.0 KiB",
            "0 B",
            "/var/lib/some/long/directory/file.txt",
        ]));
        t
    }

    #[test]
    fn numbers_right_text_left_last_unpadded() {
        let lines = sample().lines(Style::PLAIN);
        assert_eq!(
            lines,
            [
                "    size   cached  path",
                " 8.0 KiB  4.0 KiB  /a",
                "12.0 KiB      0 B  /var/lib/some/long/directory/file.txt",
            ]
        );
    }

    #[test]
    fn left_columns_pad_and_no_line_ends_in_spaces() {
        let mut t = TextTable::new(vec![
            Column::text("mode"),
            Column::text("method"),
            Column::number("µs"),
        ]);
        t.row(s(&["cold", "read", "1,000"]));
        t.span(s(&["warm", "mmap"]), "unavailable: ENOSYS".into());
        t.row(s(&["warm", "", ""]));
        assert_eq!(
            t.lines(Style::PLAIN),
            [
                "mode  method     µs",
                "cold  read    1,000",
                "warm  mmap    unavailable: ENOSYS",
                "warm",
            ]
        );
    }

    #[test]
    fn too_wide_cuts_the_declared_column_with_an_ellipsis() {
        let style = Style {
            color: false,
            width: Some(40),
        };
        let lines = sample().lines(style);
        assert!(lines.iter().all(|l| chars(l) <= 40), "{lines:#?}");
        assert_eq!(lines[2], "12.0 KiB      0 B  …g/directory/file.txt");
        assert_eq!(lines[1], " 8.0 KiB  4.0 KiB  /a");
    }

    #[test]
    fn too_wide_after_cutting_drops_columns_by_rank() {
        let style = Style {
            color: false,
            width: Some(30),
        };
        let lines = sample().lines(style);
        assert!(lines.iter().all(|l| chars(l) <= 30), "{lines:#?}");
        assert_eq!(lines[0], "    size  path");
        assert_eq!(lines[2], "12.0 KiB  …/directory/file.txt");
    }

    #[test]
    fn figures_are_never_cut_when_nothing_can_give() {
        let mut t = TextTable::new(vec![Column::number("a"), Column::number("b")]);
        t.row(s(&["1,234,567", "7,654,321"]));
        let lines = t.lines(Style {
            color: false,
            width: Some(5),
        });
        assert_eq!(lines[1], "1,234,567  7,654,321");
    }

    #[test]
    fn prefix_counts_in_the_width_and_rule_spans_padded_columns() {
        let mut t = TextTable::new(vec![
            Column::number("Private"),
            Column::text("Program").cut_end(),
        ])
        .prefix("tally: ");
        t.row(s(&["1,024", "a-very-long-program-name-indeed"]));
        t.rule();
        t.whole_row(s(&["2", "TOTAL (1 process, 1 program)"]));
        t.line("  [# ]".into());
        let lines = t.lines(Style {
            color: false,
            width: Some(36),
        });
        assert_eq!(
            lines,
            [
                "tally: Private  Program",
                "tally:   1,024  a-very-long-program…",
                "tally: -------",
                "tally:       2  TOTAL (1 process, 1 program)",
                "  [# ]",
            ]
        );
    }

    #[test]
    fn hidden_header_still_sets_widths() {
        let mut t =
            TextTable::new(vec![Column::number("Private KiB"), Column::text("")]).without_header();
        t.row(s(&["1", "TOTAL"]));
        assert_eq!(t.lines(Style::PLAIN), ["          1  TOTAL"]);
    }

    #[test]
    fn colour_makes_the_header_bold_and_nothing_else() {
        let style = Style {
            color: true,
            width: None,
        };
        let lines = sample().prefix("tally: ").lines(style);
        assert_eq!(lines[0], "tally:     \x1b[1msize   cached  path\x1b[0m");
        assert!(lines[1..].iter().all(|l| !l.contains('\x1b')));
    }

    #[test]
    fn columns_env_sets_the_width_even_off_a_terminal() {
        assert_eq!(Style::decide(false, None, os("60"), None).width, Some(60));
        assert_eq!(
            Style::decide(true, Some(100), os("60"), None).width,
            Some(60)
        );
        assert_eq!(Style::decide(true, Some(100), None, None).width, Some(100));
        // Not a number, or zero: the terminal's width, or none off a
        // terminal (a pipe, a file, a CI log): nothing there is cut.
        assert_eq!(
            Style::decide(true, Some(100), os("wide"), None).width,
            Some(100)
        );
        assert_eq!(
            Style::decide(true, Some(100), os("0"), None).width,
            Some(100)
        );
        assert_eq!(Style::decide(false, Some(80), os(""), None).width, None);
        assert_eq!(Style::decide(false, None, None, None).width, None);
    }

    /// Regression: a table written to a file was fitted to 100 columns,
    /// and the columns left out (peak RSS, faults, block-in) vanished
    /// without a word. Off a terminal nothing is fitted; on one, the
    /// columns left out are named with the fix.
    #[test]
    fn output_to_a_file_is_never_cut_and_hidden_columns_are_said() {
        let whole = sample().lines(Style::PLAIN);
        assert!(whole.iter().all(|l| !l.contains('…')), "{whole:#?}");
        assert!(whole[0].contains("cached"), "{whole:#?}");
        assert!(!whole.iter().any(|l| l.contains("hidden")), "{whole:#?}");
        let narrow = sample().lines(Style {
            color: false,
            width: Some(30),
        });
        assert!(narrow.iter().all(|l| chars(l) <= 30), "{narrow:#?}");
        let note: Vec<&str> = narrow[3..].iter().map(|l| l.trim()).collect();
        assert_eq!(
            note.join(" "),
            "1 column hidden (cached): widen the terminal, or --format csv or json for every column"
        );
    }

    #[test]
    fn no_color_set_and_not_empty_turns_colour_off() {
        assert!(Style::decide(true, None, None, None).color);
        assert!(Style::decide(true, None, None, os("")).color);
        assert!(!Style::decide(true, None, None, os("1")).color);
        assert!(!Style::decide(false, None, None, None).color);
    }

    #[test]
    fn cut_keeps_the_end_or_the_start() {
        assert_eq!(cut("abcdefgh", 5, Cut::End), "abcd…");
        assert_eq!(cut("abcdefgh", 5, Cut::Start), "…efgh");
        assert_eq!(cut("abc", 5, Cut::Start), "abc");
        assert_eq!(cut("firefox-web (12)", 9, Cut::Middle), "fire…(12)");
    }

    /// At 80 columns compare's rows ran past the edge and the terminal
    /// broke them mid-word ("no significant differe/nce"). A row still too
    /// wide wraps its last column at spaces, under that column.
    #[test]
    fn rows_never_wrap_mid_word() {
        let mut t = TextTable::new(vec![
            Column::text("").cut_end(),
            Column::number("median"),
            Column::text("verdict"),
        ])
        .prefix("tally: ");
        t.row(s(&[
            "#2",
            "14.80ms ±22.8%",
            "undecided (about 22253 runs of each would decide)",
        ]));
        let lines = t.lines(Style {
            color: false,
            width: Some(50),
        });
        assert!(lines.iter().all(|l| l.chars().count() <= 50), "{lines:#?}");
        assert!(lines.iter().all(|l| l.starts_with("tally: ")), "{lines:#?}");
        // The header's `verdict` starts the column, in characters.
        let column = lines[0].find("verdict").unwrap();
        let from = |l: &String, a: usize| l.chars().skip(a).collect::<String>();
        let words: Vec<String> = lines[1..].iter().map(|l| from(l, column)).collect();
        assert_eq!(
            words.join(" "),
            "undecided (about 22253 runs of each would decide)",
            "{lines:#?}"
        );
        for l in &lines[2..] {
            let lead: String = l.chars().take(column).skip(7).collect();
            assert!(lead.trim().is_empty(), "{lines:#?}");
        }
    }
}

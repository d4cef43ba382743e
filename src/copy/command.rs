//! `tally cp` as a command: its configuration from the arguments, its
//! progress on a terminal, the copy streamed into its report, and what it
//! says on stderr at the end.

use std::io::{self, IsTerminal, Write};

use super::args::CpArgs;
use super::report::{CopyStream, Tail};
use super::{Config, CopyError, Interrupted, Progress};
use crate::report::{Format, Output, OutputError, Stream};
use crate::text::path::display;
use crate::units::{count, human_bytes};

/// Where the report goes without `-o`: quiet by default, as cp: the human
/// report only with `-v`, on stderr; another format on stdout.
pub fn default_stream(args: &CpArgs) -> Option<Stream> {
    match (args.out.format == Format::HUMAN, args.verbose) {
        (true, true) => Some(Stream::Stderr),
        (true, false) => None,
        (false, _) => Some(Stream::Stdout),
    }
}

/// The copy `args` ask for: every path but the last to the last; `None`
/// without a path.
pub fn config(args: CpArgs) -> Option<Config> {
    let mut paths = args.paths;
    let destination = paths.pop()?;
    Some(Config {
        sources: paths,
        destination,
        recursive: args.recursive,
        preserve: args.preserve,
        sync: args.sync,
        keep_cache: args.keep_cache,
        via: args.via,
        named_temp: args.named_temp,
    })
}

/// A copy written to its report as it went.
pub struct Copied {
    /// The report's head and tail.
    pub report: CopyStream,
    /// Files copied.
    pub files: u64,
    /// The bytes of the files copied.
    pub bytes: u64,
    /// Where the report could not be written.
    pub failures: Vec<OutputError>,
}

/// Copies as configured, each copied file's row going to `output` as it
/// is made, with a progress bar on a terminal's stderr for large copies.
/// A first SIGINT, SIGTERM or SIGHUP stops the copy at its next step: what
/// is in flight is removed, the directories made get their modes, and the
/// report says what was copied and where it stopped.
pub fn copy(cfg: &Config, output: Output) -> Result<Copied, CopyError> {
    crate::sys::cleanup::catch_stops();
    let mut bar: Option<indicatif::ProgressBar> = None;
    let tty = io::stderr().is_terminal();
    let mut on_progress = |p: Progress| {
        if !tty {
            return;
        }
        match p.total_bytes {
            Some(total) if total < (256 << 20) => {}
            Some(total) => {
                let b = bar.get_or_insert_with(|| {
                    let b = indicatif::ProgressBar::new(total);
                    b.set_style(
                        indicatif::ProgressStyle::with_template(
                            "tally: cp {bar:30} {binary_bytes}/{binary_total_bytes} {binary_bytes_per_sec} eta {eta}",
                        )
                        .unwrap_or_else(|_| indicatif::ProgressStyle::default_bar()),
                    );
                    b
                });
                b.set_position(p.done_bytes);
            }
            // A directory: not walked twice to know its size.
            None if p.files >= 1000 || p.done_bytes >= (256 << 20) => {
                let b = bar.get_or_insert_with(|| {
                    let b = indicatif::ProgressBar::new_spinner();
                    b.set_style(
                        indicatif::ProgressStyle::with_template(
                            "tally: cp {spinner} {binary_bytes} {binary_bytes_per_sec}, {msg}",
                        )
                        .unwrap_or_else(|_| indicatif::ProgressStyle::default_spinner()),
                    );
                    b
                });
                b.set_position(p.done_bytes);
                b.set_message(count(p.files, "file", "files"));
            }
            None => {}
        }
    };
    let mut report = CopyStream::default();
    let mut stream = output.stream(&report);
    let mut files = 0u64;
    let mut bytes = 0u64;
    let result = super::execute_streaming(cfg, &mut on_progress, &mut |f| {
        files += 1;
        bytes = bytes.saturating_add(f.size_bytes);
        stream.row(&report, &f);
    });
    if let Some(b) = &bar {
        b.finish_and_clear();
    }
    let outcome = result?;
    report.tail = Tail {
        directories: outcome.directories,
        symlinks: outcome.symlinks,
        problems: outcome.problems,
        interrupted: outcome.interrupted,
    };
    let failures = stream.finish(&report);
    Ok(Copied {
        report,
        files,
        bytes,
        failures,
    })
}

/// Says on stderr, in one write, the files not copied and, when a signal
/// stopped the copy, what was copied and where it stopped.
pub fn say_problems(copied: &Copied) {
    let tail = &copied.report.tail;
    let mut text = String::new();
    for p in &tail.problems {
        // Most errors name their file themselves: the name once.
        let path = display(&p.path);
        if names(&p.error, &path) {
            text.push_str(&format!("tally: cp: {}\n", p.error));
        } else {
            text.push_str(&format!("tally: cp: {path}: {}\n", p.error));
        }
    }
    if let Some(stop) = &tail.interrupted {
        text.push_str(&interrupted_text(stop, copied.files, copied.bytes, tail));
    }
    if !text.is_empty() {
        let _ = io::stderr().lock().write_all(text.as_bytes());
    }
}

/// What an interrupted copy says: what was copied, and where it stopped.
fn interrupted_text(stop: &Interrupted, files: u64, bytes: u64, tail: &Tail) -> String {
    let mut text = format!(
        "tally: cp: interrupted by {}: {} ({}) copied, {} made and given their modes",
        stop.signal,
        count(files, "file", "files"),
        human_bytes(bytes),
        count(tail.directories, "directory", "directories"),
    );
    match stop.stopped_at.as_slice() {
        [] => text.push_str("; stopped between files\n"),
        at => {
            let names: Vec<String> = at.iter().map(|p| display(p)).collect();
            text.push_str(&format!(
                "; stopped at {} (not copied: nothing of {} was left)\n",
                names.join(", "),
                if at.len() == 1 { "it" } else { "them" }
            ));
        }
    }
    text
}

/// Whether `message` names `path` as a whole word (`cannot open d: …`, not
/// the `d` of `directory`).
fn names(message: &str, path: &str) -> bool {
    !path.is_empty()
        && message.match_indices(path).any(|(at, _)| {
            let before = message.get(..at).and_then(|s| s.chars().next_back());
            let after = message
                .get(at + path.len()..)
                .and_then(|s| s.chars().next());
            matches!(before, None | Some(' ' | '('))
                && matches!(after, None | Some(' ' | ':' | ')' | ',' | ';'))
        })
}

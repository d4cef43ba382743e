//! `tally cp` as a command: the copy with its rows streamed and its
//! progress told ([`execute`]), and what it says on stderr at the end.

use std::io::{self, Write};

use super::report::{CopyStream, FileCopy, Tail};
use super::{Config, CopyError, Interrupted};
use crate::failure::Outcome;
use crate::progress::Progress;
use crate::text::path::display;
use crate::units::{count, human_bytes};

/// A copy written to its report as it went.
pub struct Copied {
    /// The report's head and tail.
    pub report: CopyStream,
    /// Files copied.
    pub files: u64,
    /// The bytes of the files copied.
    pub bytes: u64,
}

impl Outcome for CopyStream {
    /// 1 when a file was not copied.
    fn exit_code(&self) -> u8 {
        u8::from(!self.tail.problems.is_empty())
    }
}

/// Copies as configured, each copied file's row handed to `progress` as
/// it is made, with the bytes done as they move. A first SIGINT, SIGTERM
/// or SIGHUP stops the copy at its next step: what is in flight is
/// removed, the directories made get their modes, and the report says what
/// was copied and where it stopped.
pub fn execute(
    cfg: &Config,
    progress: &mut Progress<'_, CopyStream, FileCopy>,
) -> Result<Copied, CopyError> {
    crate::sys::cleanup::catch_stops();
    let outcome = super::execute_streaming(cfg, progress)?;
    let report = CopyStream {
        tail: Tail {
            directories: outcome.directories,
            symlinks: outcome.symlinks,
            problems: outcome.problems,
            interrupted: outcome.interrupted,
        },
        ..CopyStream::default()
    };
    Ok(Copied {
        report,
        files: outcome.files,
        bytes: outcome.bytes,
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

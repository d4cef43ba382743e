//! How a command ends: the exit status a failure calls for
//! ([`Failure`]), a bad usage found after clap's own checks ([`Usage`]),
//! and the status a finished report calls for ([`Outcome`]). Errors are
//! typed where they happen and say what failed and the fix; the binary
//! prints them, in one place, and exits with their status.

use std::fmt::Display;

/// An error a command ends with: its text (after `tally: `) and status.
pub trait Failure: Display {
    /// The exit status it calls for.
    fn exit_code(&self) -> u8;

    /// Whether it is only a reader that went away (a closed pipe): then
    /// nothing is said and the command ends as if it had written all.
    fn is_broken_pipe(&self) -> bool {
        false
    }
}

/// Arguments that cannot be used as given, found before any work (exit
/// status 2): what is wrong, and the fix.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct Usage(pub String);

impl Usage {
    pub fn new(message: impl Into<String>) -> Usage {
        Usage(message.into())
    }
}

impl Failure for Usage {
    fn exit_code(&self) -> u8 {
        2
    }
}

/// What a finished report says about how the command ends (a gate that
/// failed, paths that were skipped); 0 for a report that calls for
/// nothing. A report that could not be written fails before this counts.
pub trait Outcome {
    fn exit_code(&self) -> u8;
}

/// A failure said with the command's name first (`cp: …`), as the
/// commands whose own messages do not name them are.
#[derive(Debug)]
pub struct In<E>(pub &'static str, pub E);

impl<E: Display> Display for In<E> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}: {}", self.0, self.1)
    }
}

impl<E: Failure> Failure for In<E> {
    fn exit_code(&self) -> u8 {
        self.1.exit_code()
    }

    fn is_broken_pipe(&self) -> bool {
        self.1.is_broken_pipe()
    }
}

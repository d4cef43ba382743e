//! Messages to standard error that never cost the exit code.
//!
//! `eprintln!` panics when standard error cannot be written (`2>/dev/full`,
//! a closed pipe), which turned a documented exit code into 101 and, in
//! `tally run`, lost the measured command's own. [`diag!`](crate::diag!)
//! writes the same line and drops the error: a message that cannot be shown
//! is lost, the outcome is not.

/// Writes one line to standard error, like `eprintln!`, but never panics.
/// What a message quotes (a name, a command, a string from a file) cannot
/// reach the terminal: every control character but the line break goes
/// through [`crate::text::controls_escaped`].
#[macro_export]
macro_rules! diag {
    ($($arg:tt)*) => {{
        use ::std::io::Write as _;
        let line = ::std::format!($($arg)*);
        let _ = ::std::writeln!(
            ::std::io::stderr().lock(),
            "{}",
            $crate::text::controls_escaped(&line, true)
        );
    }};
}

//! Progress on stderr while a command works: a bar (or a spinner when the
//! length is unknown) on a terminal, nothing otherwise. Every command that
//! shows progress makes it here, so they look alike and none draws into a
//! pipe or a file.

use std::io::{self, IsTerminal};

use indicatif::{ProgressBar, ProgressStyle};

/// A bar of `total` steps on a terminal's stderr; `None` without a
/// terminal or without steps to count.
pub(super) fn bar(total: Option<u64>) -> Option<ProgressBar> {
    let total = total?;
    io::stderr().is_terminal().then(|| {
        let bar = ProgressBar::new(total);
        bar.set_style(
            ProgressStyle::with_template("tally: {msg} {bar:30} {pos}/{len} eta {eta}")
                .unwrap_or_else(|_| ProgressStyle::default_bar()),
        );
        bar
    })
}

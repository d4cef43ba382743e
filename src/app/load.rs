//! `tally load`: the loads with a progress bar (see `tally::load::command`).

use std::io::{self, IsTerminal};

use tally::load::args::LoadArgs;
use tally::load::command;

pub(super) fn load_command(args: LoadArgs) -> u8 {
    if let Some(code) = command::child(&args) {
        return code;
    }
    let (plan, output) = match command::prepare(&args) {
        Ok(p) => p,
        Err(code) => return code,
    };
    let bar = progress_bar();
    let measured = plan.execute(&mut |done, of, what| {
        if let Some(b) = &bar {
            b.set_length(u64::from(of));
            b.set_position(u64::from(done));
            b.set_message(what());
        }
    });
    if let Some(b) = &bar {
        b.finish_and_clear();
    }
    command::output(output, measured)
}

/// The progress bar, on a terminal's stderr only.
fn progress_bar() -> Option<indicatif::ProgressBar> {
    io::stderr().is_terminal().then(|| {
        let b = indicatif::ProgressBar::new(0);
        b.set_style(
            indicatif::ProgressStyle::with_template("tally: load {msg} {bar:30} {pos}/{len}")
                .unwrap_or_else(|_| indicatif::ProgressStyle::default_bar()),
        );
        b
    })
}

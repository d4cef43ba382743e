//! `tally run`: spawn progress bar, report file, exit code of the command.

use std::io::{self, IsTerminal, Write};

use tally::cli;
use tally::report::{self, Style};
use tally::run;

use super::{Exports, RUN_OWN_FAILURE, Sink};

pub(super) fn run_command(args: cli::run::RunArgs) -> u8 {
    let cfg = args.config;
    // Open the report file first: a bad -o path should fail before the
    // command runs, not after. `-o -` is stdout.
    let mut file = match &args.output {
        Some(path) => match Sink::open(path) {
            Ok(f) => Some(f),
            Err(e) => {
                tally::diag!("tally: {e:#}");
                return RUN_OWN_FAILURE;
            }
        },
        None => None,
    };
    let exports = match Exports::open_with(&args.export, "run", &|_| true) {
        Ok(e) => e,
        Err((msg, _)) => {
            tally::diag!("tally: {msg}");
            return RUN_OWN_FAILURE;
        }
    };
    let total = cfg.warmup.saturating_add(cfg.runs);
    let bar = (total > 1 && io::stderr().is_terminal()).then(|| {
        let bar = indicatif::ProgressBar::new(u64::from(total));
        bar.set_style(
            indicatif::ProgressStyle::with_template("tally: {msg} {bar:30} {pos}/{len} eta {eta}")
                .unwrap_or_else(|_| indicatif::ProgressStyle::default_bar()),
        );
        bar
    });
    let mut on_progress = |p: run::Progress| {
        if let Some(bar) = &bar {
            match p {
                run::Progress::Warmup { done, .. } => {
                    bar.set_message("warm-up");
                    bar.set_position(u64::from(done));
                }
                run::Progress::Run { done, .. } => {
                    bar.set_message("runs");
                    bar.set_position(u64::from(cfg.warmup) + u64::from(done));
                }
            }
        }
    };
    let result = run::execute(&cfg, &mut on_progress);
    if let Some(bar) = &bar {
        bar.finish_and_clear();
    }
    let report = match result {
        Ok(r) => r,
        Err(e) => {
            tally::diag!("tally: {e}");
            return e.exit_code();
        }
    };
    // A report file gets plain text; stderr gets what its terminal can
    // show.
    let style = if file.is_some() {
        Style::PLAIN
    } else {
        Style::stderr()
    };
    // Rendered whole, then written at once: stderr is unbuffered, and one
    // write keeps the report's lines together.
    let mut text = Vec::with_capacity(4096);
    let written = report::render(&report, args.format, style, &mut text).and_then(|()| {
        match file.as_mut() {
            Some(f) => f.write_all(&text),
            None => io::stderr().lock().write_all(&text),
        }
        .map_err(report::RenderError::Io)
    });
    // The command ran: from here on its exit code is the outcome, whatever
    // becomes of the report. A reader that went away (`… 2>&1 | head`)
    // is no failure at all; anything else is said on stderr, if stderr can
    // be written (with `2>/dev/full` it cannot, and nothing is lost but
    // the report).
    match written {
        Ok(()) => {}
        Err(e) if e.is_broken_pipe() => {}
        Err(e) => match &args.output {
            Some(path) => tally::diag!(
                "tally: cannot write the report to {}: {e}",
                report::path::display(path)
            ),
            None => tally::diag!("tally: cannot write the report: {e}"),
        },
    }
    // A failed export is said on stderr; the command's exit code stays.
    exports.write(&report);
    run::exit_code(&report)
}

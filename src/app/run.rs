//! `tally run`: spawn progress bar, report file, exit code of the command.

use tally::cli;
use tally::report::{Output, Stream};
use tally::run;

use super::{RUN_OWN_FAILURE, progress};

pub(super) fn run_command(args: cli::run::RunArgs) -> u8 {
    let cfg = args.config;
    // Every place the report goes is checked and opened first: a bad
    // format or path fails before the command runs, not after.
    let output = match Output::open::<run::report::RunReport>(
        &args.out.request(),
        "run",
        Some(Stream::Stderr),
    ) {
        Ok(o) => o,
        Err(e) => {
            tally::diag!("tally: {e}");
            return RUN_OWN_FAILURE;
        }
    };
    // Stdout carries one stream: with the report there, the command's
    // output goes to stderr.
    let mut cfg = cfg;
    cfg.stdout_to_stderr = output.uses_stdout() && !cfg.quiet_command;
    let bar = progress::bar(
        (cfg.warmup.saturating_add(cfg.runs) > 1)
            .then(|| u64::from(cfg.warmup.saturating_add(cfg.runs))),
    );
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
    // The command ran; a report asked for that cannot be written is
    // tally's failure (stderr that cannot be written is none, see
    // `OutputError::exit_code`).
    if super::said(output.write(&report)) != 0 {
        return RUN_OWN_FAILURE;
    }
    run::exit_code(&report)
}

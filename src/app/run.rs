//! `tally run`: spawn progress bar, report file, exit code of the command.

use super::{RUN_OWN_FAILURE, progress};
use tally::run;

pub(super) fn run_command(args: run::args::RunArgs) -> u8 {
    let mut cfg = args.config;
    // Checked and opened first: a bad format or path fails before the run.
    let output = match run::open_output(&mut cfg, &args.out.request()) {
        Ok(o) => o,
        Err(e) => {
            tally::diag!("tally: {e}");
            return RUN_OWN_FAILURE;
        }
    };
    let bar = progress::bar(run::progress_steps(&cfg));
    let result = run::execute(&cfg, &mut |p| {
        if let Some(bar) = &bar {
            let (phase, done) = p.shown(cfg.warmup);
            bar.set_message(phase);
            bar.set_position(done);
        }
    });
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
    // The command ran: a report that cannot be written is tally's failure
    // (stderr that cannot be written is none, see `OutputError::exit_code`).
    if super::said(output.write(&report)) != 0 {
        return RUN_OWN_FAILURE;
    }
    run::exit_code(&report)
}

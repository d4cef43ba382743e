//! `tally run`: the arguments made a run, the report's places opened, the
//! runs measured with their progress drawn, the report written; the exit
//! code is the command's own.

use super::{RUN_OWN_FAILURE, progress::Drawn};
use tally::failure::Outcome;
use tally::progress::Progress;
use tally::run::{self, args::RunArgs};

pub(super) fn run_command(args: RunArgs) -> u8 {
    tally::units::set_time_unit(args.time_unit);
    let request = args.out.request();
    let why_table = args.why;
    let record = args.record.clone();
    let mut cfg = match args.config() {
        Ok(cfg) => cfg,
        Err(e) => return super::fail_as(&e, RUN_OWN_FAILURE),
    };
    // Checked and opened first: a bad format or path fails before the run.
    let output = match run::open_output(&mut cfg, &request) {
        Ok(o) => o,
        Err(e) => return super::fail_as(&e, RUN_OWN_FAILURE),
    };
    let recorder = match super::recorder(&record, Some(RUN_OWN_FAILURE)) {
        Ok(r) => r,
        Err(code) => return code,
    };
    let mut drawn = Drawn::new();
    let result = run::execute(&cfg, &mut Progress::new(&mut |e| drawn.event(e)));
    drop(drawn);
    let mut report = match result {
        Ok(r) => r,
        Err(e) => return super::fail(&e),
    };
    report.why_table = why_table;
    // The command ran: a report that cannot be written is tally's failure
    // (stderr that cannot be written is none, see `OutputError::exit_code`).
    if super::said(output.write(&report)) != 0 {
        return RUN_OWN_FAILURE;
    }
    super::record(recorder, &report);
    report.exit_code()
}

//! `tally cp`: the copy and its report.

use tally::copy::{command, report::CopyReport};

pub(super) fn cp_command(args: tally::copy::args::CpArgs) -> u8 {
    // Where the report goes is checked before a byte is copied.
    let default = command::default_stream(&args);
    let output = match super::open_output::<CopyReport>(&args.out, "cp", default) {
        Ok(o) => o,
        Err(code) => return code,
    };
    let Some(cfg) = command::config(args) else {
        tally::diag!("tally: cp needs a source and a destination");
        return 2;
    };
    let copied = match command::copy(&cfg, output) {
        Ok(c) => c,
        Err(e) => {
            tally::diag!("tally: cp: {e}");
            return 1;
        }
    };
    command::say_problems(&copied);
    let code = super::said(copied.failures);
    if let Some(stop) = &copied.report.tail.interrupted {
        // Ends as the signal would have: the caller sees which.
        tally::sys::cleanup::die_of(stop.signal_number);
    }
    if code != 0 {
        return code;
    }
    u8::from(!copied.report.tail.problems.is_empty())
}

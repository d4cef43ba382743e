//! `tally cp`: the arguments made a copy, the report's places opened
//! before a byte is copied, the copy with its progress drawn and each row
//! written as it comes, what was not copied said after the report; a copy
//! a signal stopped ends as the signal would have.

use super::progress::Drawn;
use tally::copy::report::{CopyReport, CopyStream, FileCopy};
use tally::copy::{self, args::CpArgs, command};
use tally::failure::{In, Outcome};
use tally::progress::Progress;

pub(super) fn cp_command(args: CpArgs) -> u8 {
    let output = match super::open_output::<CopyReport>(&args.out, "cp", args.default_stream()) {
        Ok(o) => o,
        Err(code) => return code,
    };
    let cfg = match args.config() {
        Ok(cfg) => cfg,
        Err(e) => return super::fail(&e),
    };
    let mut stream = output.stream();
    let mut rows = |report: &CopyStream, row: &FileCopy| {
        stream.row(report, row);
        true
    };
    let mut drawn = Drawn::new();
    let result = copy::execute(
        &cfg,
        &mut Progress::new(&mut |e| drawn.event(e)).rows(&mut rows),
    );
    drop(drawn);
    let copied = match result {
        Ok(c) => c,
        Err(e) => return super::fail(&In("cp", e)),
    };
    let failures = stream.finish(&copied.report);
    command::say_problems(&copied);
    let code = super::said(failures);
    if let Some(stop) = &copied.report.tail.interrupted {
        // Ends as the signal would have: the caller sees which.
        tally::sys::cleanup::die_of(stop.signal_number);
    }
    match code {
        0 => copied.report.exit_code(),
        code => code,
    }
}

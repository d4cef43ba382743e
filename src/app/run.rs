//! `tally run`: the arguments made a run, the report's places opened, the
//! runs measured with their progress drawn, the report written; the exit
//! code is the command's own.

use super::{RUN_OWN_FAILURE, progress::Drawn};
use tally::failure::Outcome;
use tally::progress::Progress;
use tally::run::{self, args::RunArgs};

pub(super) fn run_command(args: RunArgs) -> u8 {
    tally::units::set_time_unit(args.time_unit);
    let mut request = args.out.request_timed();
    request.append = args.append;
    let why_table = args.why;
    let record = args.record.clone();
    let template = args.template.clone();
    // A machine format asked for without -o goes where a human report
    // goes, stderr (stdout is the command's): said once when stdout is a
    // pipe, where the user waits for it (`tally run --format json -- cmd
    // | jq` read nothing), and stderr a terminal: stderr taken by a file or
    // a pipe is where the report was wanted, and gets it alone.
    if request.format != tally::report::Format::HUMAN
        && request.output.is_none()
        && tally::sys::file::stdout_is_pipe()
        && std::io::IsTerminal::is_terminal(&std::io::stderr())
    {
        tally::diag!(
            "tally: note: the {} report goes to stderr, not to the pipe (stdout is the \
             command's): -o - puts it on stdout, -o FILE in a file",
            request.format
        );
    }
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
    let measurer = match run::Measurer::new(&cfg) {
        Ok(m) => m,
        Err(e) => return super::fail(&e),
    };
    let mut drawn = Drawn::new();
    let result = run::execute_with(&measurer, &cfg, &mut Progress::new(&mut |e| drawn.event(e)));
    drop(drawn);
    let mut report = match result {
        Ok(r) => r,
        Err(e) => {
            let code = super::fail(&e);
            super::say_lines(measurer.finish().into_iter().map(|n| format!("note: {n}")));
            return code;
        }
    };
    report.why_table = why_table;
    report.template = template;
    // The command ran: a report that cannot be written (to a file, to
    // stdout, to stderr: `2>/dev/full`) is tally's failure.
    let written = super::said(output.write(&report));
    // The run's group goes after the report: its removal need not delay it.
    super::say_lines(measurer.finish().into_iter().map(|n| format!("note: {n}")));
    if written != 0 {
        return RUN_OWN_FAILURE;
    }
    super::record(recorder, &report);
    report.exit_code()
}

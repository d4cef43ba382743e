//! `tally bench`: list, run, baseline, HTML.

use tally::bench::{BenchReport, command};
use tally::report::Stream;

pub(super) fn bench_command(args: tally::bench::args::BenchArgs) -> u8 {
    if args.list {
        return super::quiet_pipe(|out| Ok(command::list(out)?));
    }
    command::fix_layout();
    let cfg = command::config(&args);
    // Bad inputs fail before minutes of measuring, not after.
    let old = match command::baseline(&args) {
        Ok(old) => old,
        Err(e) => {
            tally::diag!("tally: {e}");
            return e.exit_code();
        }
    };
    let output = match super::open_output::<BenchReport>(&args.out, "bench", Some(Stream::Stdout)) {
        Ok(o) => o,
        Err(code) => return code,
    };
    let mut report = match command::execute(&cfg) {
        Ok(r) => r,
        Err(e) => {
            tally::diag!("tally: {e}");
            return 1;
        }
    };
    command::compare(&mut report, old, &args);
    let code = super::said(output.write(&report));
    command::exit_status(&report, code)
}

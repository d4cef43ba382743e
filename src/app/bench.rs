//! `tally bench`: `--list`, or the arguments made a run, its report's
//! places opened, the benchmarks run with their progress drawn, the report
//! written; the gate's status is the exit code.

use super::progress::Drawn;
use tally::bench::{self, BenchReport, args::BenchArgs, command};
use tally::progress::Progress;
use tally::report::Stream;

pub(super) fn bench_command(args: BenchArgs) -> u8 {
    tally::units::set_time_unit(args.time_unit);
    if args.list {
        return super::quiet_pipe(|out| Ok(command::list(out)?));
    }
    command::fix_layout();
    let cfg = match args.config() {
        Ok(cfg) => cfg,
        Err(e) => return super::fail(&e),
    };
    let output = match super::open_output::<BenchReport>(&args.out, "bench", Some(Stream::Stdout)) {
        Ok(o) => o,
        Err(code) => return code,
    };
    let recorder = match super::recorder(&args.record, None) {
        Ok(r) => r,
        Err(code) => return code,
    };
    let mut drawn = Drawn::new();
    let result = bench::execute(&cfg, &mut Progress::new(&mut |e| drawn.event(e)));
    drop(drawn);
    if let Ok(report) = &result {
        super::record(recorder, report);
    }
    super::finish(output, result)
}

//! `tally compare`: the arguments made a comparison, its outputs opened,
//! the runs measured with their progress drawn, the report written (see
//! `tally::compare::command`).

use super::progress::Drawn;
use tally::compare::{self, args::CompareArgs, command};
use tally::progress::Progress;

pub(super) fn compare_command(args: CompareArgs) -> u8 {
    tally::units::set_time_unit(args.time_unit);
    let cfg = match args.config() {
        Ok(cfg) => cfg,
        Err(e) => return super::fail(&e),
    };
    let outputs = match command::open(&args.out.request_timed(), &cfg) {
        Ok(o) => o,
        Err(e) => return super::fail(&e),
    };
    let mut drawn = Drawn::new();
    let result = compare::execute(&cfg, &mut Progress::new(&mut |e| drawn.event(e)));
    drop(drawn);
    match result {
        Ok(report) => command::output(outputs, &report, &cfg),
        Err(e) => super::fail(&e),
    }
}

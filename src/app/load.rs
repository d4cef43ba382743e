//! `tally load`: a load for a parent `tally load`, or the arguments made a
//! plan, its report's places opened before any load, the loads made with
//! their progress drawn, the report written (see `tally::load::command`).

use super::progress::Drawn;
use tally::failure::In;
use tally::load::{args::LoadArgs, command};
use tally::progress::Progress;

pub(super) fn load_command(args: LoadArgs) -> u8 {
    tally::units::set_time_unit(args.time_unit);
    if let Some(child) = args.child() {
        return child.run();
    }
    let plan = match args.config() {
        Ok(plan) => plan,
        Err(e) => return super::fail(&e),
    };
    let output = match plan.open(&args.out.request()) {
        Ok(o) => o,
        Err(e) => return super::fail(&e),
    };
    let mut drawn = Drawn::new();
    let result = command::execute(&plan, &mut Progress::new(&mut |e| drawn.event(e)));
    drop(drawn);
    super::finish(output, result.map_err(|e| In("load", e)))
}

//! `tally history`: the arguments made a query (or an import), its
//! outputs opened before the store is read, the report written; `check`'s
//! verdict is the exit code.

use tally::history::{
    self, Action, args::HistoryArgs, import::ImportReport, report::HistoryReport,
};
use tally::report::Stream;

pub(super) fn history_command(args: HistoryArgs) -> u8 {
    tally::units::set_time_unit(args.time_unit());
    tally::sys::mem::keep_freed_memory();
    let cfg = match args.config() {
        Ok(cfg) => cfg,
        Err(e) => return super::fail(&e),
    };
    if let Action::Import(import) = &cfg.action {
        let output = match super::open_output::<ImportReport>(
            args.out(),
            "history import",
            Some(Stream::Stdout),
        ) {
            Ok(o) => o,
            Err(code) => return code,
        };
        return super::finish(output, history::import::import(&cfg.target, import));
    }
    let output =
        match super::open_output::<HistoryReport>(args.out(), "history", Some(Stream::Stdout)) {
            Ok(o) => o,
            Err(code) => return code,
        };
    super::finish(output, history::execute(&cfg))
}

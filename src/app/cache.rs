//! `tally cache`: residency, evict, warm, lock.

use std::io;

use tally::cli;

use super::{quiet_pipe, render_to};

pub(super) fn cache_command(args: cli::cache::CacheArgs) -> u8 {
    use tally::cache::{command, report::Action};
    let action = if args.evict {
        Action::Evict
    } else if args.warm {
        Action::Warm
    } else if args.lock {
        Action::Lock
    } else {
        Action::Status
    };
    let cfg = command::Config {
        action,
        paths: args.paths,
        recursive: args.recursive,
        null_separated: args.null,
        map: args.verbose,
        map_buckets: command::map_buckets(tally::sys::tty::stdout_columns()),
    };
    let (report, held) = match command::execute(&cfg, &mut io::stdin().lock()) {
        Ok(r) => r,
        Err(e) => {
            tally::diag!("tally: {e}");
            return 1;
        }
    };
    let code = quiet_pipe(|out| render_to(&report, args.format, out));
    if code != 0 {
        return code;
    }
    if let Some(held) = held {
        if !held.mappings.is_empty() {
            tally::diag!(
                "tally: holding {} locked in memory ({} files); interrupt (Ctrl-C) to release",
                tally::units::human_bytes(held.bytes),
                held.mappings.len()
            );
            if let Err(e) = tally::sys::mem::wait_for_stop_signal() {
                tally::diag!("tally: cannot wait for a signal: {e}");
                return 1;
            }
        }
    }
    u8::from(report.has_problems())
}

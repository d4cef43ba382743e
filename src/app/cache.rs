//! `tally cache`: residency, evict, warm, lock.

use tally::cache::report::{CacheReport, Shown};
use tally::cache::{command, textfile};
use tally::report::Stream;

pub(super) fn cache_command(args: tally::cache::args::CacheArgs) -> u8 {
    let cfg = command::Config::from(&args);
    if let Some(dir) = &args.textfile {
        let mut metrics = textfile::metrics(&cfg);
        return tally::serve::textfile::textfile_loop(
            dir,
            textfile::FILE,
            args.every,
            &mut metrics,
        );
    }
    if args.mincore {
        tally::pagecache::use_mincore_only(true);
    }
    // Checked before any page is evicted, warmed or locked.
    let output = match super::open_output::<CacheReport>(&args.out, "cache", Some(Stream::Stdout)) {
        Ok(o) => o,
        Err(code) => return code,
    };
    let shown = Shown {
        top: args.top,
        all: args.all,
    };
    let streamed = match command::stream(&cfg, shown, output) {
        Ok(s) => s,
        Err(e) => {
            tally::diag!("tally: {e}");
            return 1;
        }
    };
    let code = super::said(streamed.failures);
    if code != 0 {
        return code;
    }
    command::hold(&streamed.report, streamed.held)
}

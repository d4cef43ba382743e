//! `tally cache`: the arguments made a configuration, the report's places
//! opened before any page is evicted, warmed or locked, the files walked
//! with each row written as it comes, what was skipped said after the
//! report, and with `--lock` the files held until a signal.

use tally::cache::report::{CacheReport, CacheStream, FileReport};
use tally::cache::{args::CacheArgs, command, textfile};
use tally::progress::Progress;
use tally::report::Stream;

pub(super) fn cache_command(args: CacheArgs) -> u8 {
    let cfg = match args.config() {
        Ok(cfg) => cfg,
        Err(e) => return super::fail(&e),
    };
    if let Some(dir) = &args.textfile {
        let mut metrics = textfile::metrics(&cfg);
        return tally::serve::textfile::textfile_loop(
            dir,
            textfile::FILE,
            args.every,
            &mut metrics,
        );
    }
    let output = match super::open_output::<CacheReport>(&args.out, "cache", Some(Stream::Stdout)) {
        Ok(o) => o,
        Err(code) => return code,
    };
    let mut stream = output.stream();
    let mut rows = |report: &CacheStream, row: &FileReport| {
        stream.row(report, row);
        !stream.all_stopped()
    };
    let result = command::execute(&cfg, &mut Progress::none().rows(&mut rows));
    let (report, held) = match result {
        Ok(done) => done,
        Err(e) => return super::fail(&e),
    };
    let failures = stream.finish(&report);
    super::say_lines(report.diagnostics());
    match super::said(failures) {
        0 => command::hold(&report, held),
        code => code,
    }
}

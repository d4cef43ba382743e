//! `tally cache`: residency, evict, warm, lock.

use std::io::{self, Write};

use tally::cli;
use tally::report::Stream;

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
    if let Some(dir) = &args.textfile {
        return super::serve::cache_textfile(&cfg, dir, args.every);
    }
    if args.mincore {
        tally::pagecache::use_mincore_only(true);
    }
    // Checked before any page is evicted, warmed or locked.
    let output = match super::open_output::<tally::cache::report::CacheReport>(
        &args.out,
        "cache",
        Some(Stream::Stdout),
    ) {
        Ok(o) => o,
        Err(code) => return code,
    };
    // A pipe that sends nothing for a minute ends the list of `-`.
    let mut stdin = match tally::input::Stdin::new(tally::input::STDIN_IDLE) {
        Ok(s) => s,
        Err(e) => {
            tally::diag!("tally: cannot read stdin: {e}");
            return 1;
        }
    };
    let shown = tally::cache::report::Shown {
        top: args.top,
        all: args.all,
    };
    let mut report = tally::cache::report::CacheStream::new(action, tally::sys::page_size(), shown);
    let mut stream = output.stream(&report);
    // Each file's row goes out as it is made; the walk stops when no
    // output is left to take the rows (a reader that went away).
    let outcome = command::execute_streaming(&cfg, &mut stdin, &mut |row| {
        report.add(&row);
        stream.row(&report, &row);
        !stream.all_stopped()
    });
    let outcome = match outcome {
        Ok(o) => o,
        Err(e) => {
            tally::diag!("tally: {e}");
            return 1;
        }
    };
    report.tail.problems = outcome.problems;
    let failures = stream.finish(&report);
    // Errors (skipped paths, files not locked) go to stderr, after the
    // report; stdout holds the report alone. One buffered write for all.
    let diagnostics = report.diagnostics();
    if !diagnostics.is_empty() {
        let mut text = String::new();
        for line in diagnostics {
            text.push_str("tally: ");
            text.push_str(&line);
            text.push('\n');
        }
        let _ = io::stderr().lock().write_all(text.as_bytes());
    }
    let code = super::said(failures);
    if code != 0 {
        return code;
    }
    let failed = u8::from(report.has_problems());
    let Some(held) = outcome.held else {
        return failed;
    };
    let not_locked = report.lock_failures();
    if held.mappings.is_empty() {
        if not_locked > 0 {
            tally::diag!(
                "tally: nothing locked: {} could not be locked (the reason is above)",
                files(not_locked)
            );
            return 1;
        }
        if report.tail.total.files > 0 {
            tally::diag!("tally: nothing to lock: the files are empty");
        }
        return failed;
    }
    tally::diag!(
        "tally: holding {} locked in memory ({}); interrupt (Ctrl-C) to release",
        tally::units::human_bytes(held.bytes),
        files(held.mappings.len())
    );
    if not_locked > 0 {
        tally::diag!(
            "tally: {} could not be locked: exit status 1 when released",
            files(not_locked)
        );
    }
    if let Err(e) = tally::sys::mem::wait_for_stop_signal() {
        tally::diag!("tally: cannot wait for a signal: {e}");
        return 1;
    }
    failed.max(u8::from(not_locked > 0))
}

fn files(n: usize) -> String {
    tally::units::count(n as u64, "file", "files")
}

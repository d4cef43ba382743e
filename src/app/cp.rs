//! `tally cp`: the copy and its report.

use std::io::{self, IsTerminal};

use tally::cli;
use tally::report::{self, Format, Stream};

pub(super) fn cp_command(args: cli::cp::CpArgs) -> u8 {
    use tally::copy;
    // Quiet by default, as cp: the human report only with -v, on stderr;
    // another format on stdout. Checked before a byte is copied.
    let default = match (args.out.format == Format::HUMAN, args.verbose) {
        (true, true) => Some(Stream::Stderr),
        (true, false) => None,
        (false, _) => Some(Stream::Stdout),
    };
    let output = match super::open_output::<copy::report::CopyReport>(&args.out, "cp", default) {
        Ok(o) => o,
        Err(code) => return code,
    };
    let mut paths = args.paths;
    let Some(destination) = paths.pop() else {
        tally::diag!("tally: cp needs a source and a destination");
        return 2;
    };
    let cfg = copy::Config {
        sources: paths,
        destination,
        recursive: args.recursive,
        preserve: args.preserve,
        sync: args.sync,
        keep_cache: args.keep_cache,
        via: args.via,
        named_temp: args.named_temp,
    };
    // A first SIGINT, SIGTERM or SIGHUP stops the copy at its next step:
    // what is in flight is removed, the directories made get their modes,
    // and the report says what was copied and where it stopped.
    tally::sys::cleanup::catch_stops();
    let mut bar: Option<indicatif::ProgressBar> = None;
    let tty = io::stderr().is_terminal();
    let mut on_progress = |p: copy::Progress| {
        if !tty {
            return;
        }
        match p.total_bytes {
            Some(total) if total < (256 << 20) => {}
            Some(total) => {
                let b = bar.get_or_insert_with(|| {
                    let b = indicatif::ProgressBar::new(total);
                    b.set_style(
                        indicatif::ProgressStyle::with_template(
                            "tally: cp {bar:30} {binary_bytes}/{binary_total_bytes} {binary_bytes_per_sec} eta {eta}",
                        )
                        .unwrap_or_else(|_| indicatif::ProgressStyle::default_bar()),
                    );
                    b
                });
                b.set_position(p.done_bytes);
            }
            // A directory: not walked twice to know its size.
            None if p.files >= 1000 || p.done_bytes >= (256 << 20) => {
                let b = bar.get_or_insert_with(|| {
                    let b = indicatif::ProgressBar::new_spinner();
                    b.set_style(
                        indicatif::ProgressStyle::with_template(
                            "tally: cp {spinner} {binary_bytes} {binary_bytes_per_sec}, {msg}",
                        )
                        .unwrap_or_else(|_| indicatif::ProgressStyle::default_spinner()),
                    );
                    b
                });
                b.set_position(p.done_bytes);
                b.set_message(tally::units::count(p.files, "file", "files"));
            }
            None => {}
        }
    };
    let mut report = copy::report::CopyStream::default();
    let mut stream = output.stream(&report);
    let mut copied_files = 0u64;
    let mut copied_bytes = 0u64;
    let result = copy::execute_streaming(&cfg, &mut on_progress, &mut |f| {
        copied_files += 1;
        copied_bytes = copied_bytes.saturating_add(f.size_bytes);
        stream.row(&report, &f);
    });
    if let Some(b) = &bar {
        b.finish_and_clear();
    }
    let outcome = match result {
        Ok(r) => r,
        Err(e) => {
            tally::diag!("tally: cp: {e}");
            return 1;
        }
    };
    report.tail = copy::report::Tail {
        directories: outcome.directories,
        symlinks: outcome.symlinks,
        problems: outcome.problems,
        interrupted: outcome.interrupted,
    };
    let failures = stream.finish(&report);
    let mut text = String::new();
    for p in &report.tail.problems {
        // Most errors name their file themselves: the name once.
        let path = report::path::display(&p.path);
        if names(&p.error, &path) {
            text.push_str(&format!("tally: cp: {}\n", p.error));
        } else {
            text.push_str(&format!("tally: cp: {path}: {}\n", p.error));
        }
    }
    if let Some(stop) = &report.tail.interrupted {
        text.push_str(&interrupted_text(
            stop,
            copied_files,
            copied_bytes,
            &report.tail,
        ));
    }
    if !text.is_empty() {
        use std::io::Write;
        let _ = io::stderr().lock().write_all(text.as_bytes());
    }
    let code = super::said(failures);
    if let Some(stop) = &report.tail.interrupted {
        // Ends as the signal would have: the caller sees which.
        tally::sys::cleanup::die_of(stop.signal_number);
    }
    if code != 0 {
        return code;
    }
    u8::from(!report.tail.problems.is_empty())
}

/// What an interrupted copy says: what was copied, and where it stopped.
fn interrupted_text(
    stop: &tally::copy::Interrupted,
    files: u64,
    bytes: u64,
    tail: &tally::copy::report::Tail,
) -> String {
    use tally::units::{count, human_bytes};
    let mut text = format!(
        "tally: cp: interrupted by {}: {} ({}) copied, {} made and given their modes",
        stop.signal,
        count(files, "file", "files"),
        human_bytes(bytes),
        count(tail.directories, "directory", "directories"),
    );
    match stop.stopped_at.as_slice() {
        [] => text.push_str("; stopped between files\n"),
        at => {
            let names: Vec<String> = at.iter().map(|p| report::path::display(p)).collect();
            text.push_str(&format!(
                "; stopped at {} (not copied: nothing of {} was left)\n",
                names.join(", "),
                if at.len() == 1 { "it" } else { "them" }
            ));
        }
    }
    text
}

/// Whether `message` names `path` as a whole word (`cannot open d: …`, not
/// the `d` of `directory`).
fn names(message: &str, path: &str) -> bool {
    !path.is_empty()
        && message.match_indices(path).any(|(at, _)| {
            let before = message.get(..at).and_then(|s| s.chars().next_back());
            let after = message
                .get(at + path.len()..)
                .and_then(|s| s.chars().next());
            matches!(before, None | Some(' ' | '('))
                && matches!(after, None | Some(' ' | ':' | ')' | ',' | ';'))
        })
}

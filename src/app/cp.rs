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
    let mut bar: Option<indicatif::ProgressBar> = None;
    let tty = io::stderr().is_terminal();
    let mut on_progress = |p: copy::Progress| {
        if !tty || p.total_bytes < (256 << 20) {
            return;
        }
        let b = bar.get_or_insert_with(|| {
            let b = indicatif::ProgressBar::new(p.total_bytes);
            b.set_style(
                indicatif::ProgressStyle::with_template(
                    "tally: cp {bar:30} {binary_bytes}/{binary_total_bytes} {binary_bytes_per_sec} eta {eta}",
                )
                .unwrap_or_else(|_| indicatif::ProgressStyle::default_bar()),
            );
            b
        });
        b.set_position(p.done_bytes);
    };
    let result = copy::execute(&cfg, &mut on_progress);
    if let Some(b) = &bar {
        b.finish_and_clear();
    }
    let report = match result {
        Ok(r) => r,
        Err(e) => {
            tally::diag!("tally: cp: {e}");
            return 1;
        }
    };
    for p in &report.problems {
        // Most errors name their file themselves: the name once.
        let path = report::path::display(&p.path);
        if names(&p.error, &path) {
            tally::diag!("tally: cp: {}", p.error);
        } else {
            tally::diag!("tally: cp: {path}: {}", p.error);
        }
    }
    let code = super::said(output.write(&report));
    if code != 0 {
        return code;
    }
    u8::from(!report.problems.is_empty())
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

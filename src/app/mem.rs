//! `tally mem`: the arguments checked against the install's privilege,
//! then the report files opened with the caller's rights only, one
//! measurement (or `--watch`'s frames, or `--textfile`'s files), the report
//! written and the notes on what was left out.

use tally::mem::{self, args::MemArgs, command, privilege::Privilege, report::MemReport, textfile};
use tally::report::Stream;

pub(super) fn mem_command(args: MemArgs, mut privilege: Privilege) -> u8 {
    let elevated = privilege.is_elevated();
    let cfg = match args.config(privilege) {
        Ok(cfg) => cfg,
        Err(e) => return super::fail(&e),
    };
    for note in &cfg.notes {
        tally::diag!("tally: {note}");
    }
    // Report files are created with the caller's rights only: before the
    // scan when unprivileged, after the privilege is dropped otherwise.
    let open = || super::open_output::<MemReport>(&args.out, "mem", Some(Stream::Stdout));
    let early = match (!elevated).then(open).transpose() {
        Ok(o) => o,
        Err(code) => return code,
    };
    if let Some(dir) = &args.textfile {
        let mut metrics = textfile::metrics(&cfg, privilege);
        return tally::serve::textfile::textfile_loop(
            dir,
            textfile::FILE,
            args.every,
            &mut metrics,
        );
    }
    let result = match args.watch {
        Some(interval) => command::watch_stdout(&cfg, interval, args.out.format),
        None => {
            // On a terminal a person waits: a long wait says for what.
            let terminal = std::io::IsTerminal::is_terminal(&std::io::stderr());
            let mut say = |what: &str| {
                if terminal {
                    tally::diag!("tally: {what}");
                }
            };
            mem::measure_saying(&cfg, &mut privilege, &mut say)
        }
    };
    let report = match result {
        Ok(report) => report,
        Err(e) => return super::fail(&e),
    };
    let output = match early.map_or_else(open, Ok) {
        Ok(o) => o,
        Err(code) => return code,
    };
    // With --watch, the frames went out; the exports hold the last one.
    let code = super::said(match args.watch {
        Some(_) => output.write_exports(&report),
        None => output.write(&report),
    });
    // Each note one `tally:` paragraph, wrapped as every diagnostic is.
    let width = tally::report::Style::stderr()
        .width
        .unwrap_or(tally::report::text::NO_TERMINAL_WIDTH)
        .min(tally::report::text::NO_TERMINAL_WIDTH);
    for msg in mem::closing_notes(&report, elevated, tally::sys::geteuid() == 0) {
        // A note that cannot be written is lost, not the exit code.
        let _ = tally::report::text::tally_lines(
            &mut std::io::stderr().lock(),
            &format!("tally: {msg}"),
            width,
        );
    }
    code
}

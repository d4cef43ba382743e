//! `tally mem`: privilege handling, configuration, one scan or `--watch`.

use tally::mem::{command, privilege::Privilege, report::MemReport, textfile};
use tally::report::Stream;

pub(super) fn mem_command(args: tally::mem::args::MemArgs, privilege: Privilege) -> u8 {
    let elevated = privilege.is_elevated();
    let mut cfg = match command::config(&args, elevated) {
        Ok(cfg) => cfg,
        Err(code) => return code,
    };
    // Report files are created with the caller's rights only: before the
    // scan when unprivileged, after the privilege is dropped otherwise.
    let open = || super::open_output::<MemReport>(&args.out, "mem", Some(Stream::Stdout));
    let output = match (!elevated).then(open).transpose() {
        Ok(o) => o,
        Err(code) => return code,
    };
    if let Some(dir) = &args.textfile {
        let mut metrics = textfile::metrics(&mut cfg, privilege, args.user.as_deref());
        return tally::serve::textfile::textfile_loop(
            dir,
            textfile::FILE,
            args.every,
            &mut metrics,
        );
    }
    let (report, output) = match command::measure(&mut cfg, privilege, &args, output, &open) {
        Ok(measured) => measured,
        Err(code) => return code,
    };
    command::finish(report, elevated, |report| match output {
        // With --watch, the frames went out; the exports hold the last
        // snapshot.
        Some(o) if args.watch.is_some() => super::said(o.write_exports(report)),
        Some(o) => super::said(o.write(report)),
        None => 0,
    })
}

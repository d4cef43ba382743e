//! `tally bench` as a command, besides its run ([`super::execute`]):
//! `--list`, and the re-execution with a fixed memory layout.

use std::io::{self, Write};

use super::registry;

/// Writes `--list`: every benchmark's name, section and help line.
pub fn list(out: &mut dyn Write) -> io::Result<()> {
    for b in registry::BENCHMARKS {
        writeln!(
            out,
            "{:<10} {:<18} {}{}",
            b.name,
            b.section.title().split(' ').next().unwrap_or(""),
            b.about,
            if b.heavy {
                " (heavy: --full or by name)"
            } else {
                ""
            }
        )?;
    }
    Ok(())
}

/// Runs tally again with address-space randomisation off (as `setarch
/// -R`), so that every run lays memory out alike (see
/// `crate::sys::personality`); returns only where that cannot be done, and
/// the report's machine line then says the layout is randomised.
pub fn fix_layout() {
    use crate::sys::personality;
    use std::os::unix::process::CommandExt;
    if personality::layout_fixed() || personality::fix_layout_at_exec().is_err() {
        return;
    }
    let mut args = crate::sys::entry::args_os().into_iter();
    let argv0 = args.next().unwrap_or_else(|| "tally".into());
    // Replaces this process; returns only on failure (no /proc/self/exe).
    let _ = std::process::Command::new("/proc/self/exe")
        .arg0(argv0)
        .args(args)
        .exec();
}

//! `tally mem` as a command: its configuration from the arguments under
//! the install's privilege, one scan or `--watch`, and the notes at the
//! end. What ends it early is said on stderr, and is the exit code.

use std::io::{self, IsTerminal};

use super::args::MemArgs;
use super::privilege::Privilege;
use super::report::{MemReport, Unit, View};
use super::{Config, MemError, closing_notes, group, scan, summarize, watch};
use crate::report::{Format, Output, Style};

fn note(msg: &str) {
    crate::diag!("tally: {msg}");
}

/// The uid of `user`, a login name or a number; unknown, it is said and
/// is exit status 2.
fn resolve(user: &str) -> Result<u32, u8> {
    crate::sys::user::uid_of(user)
        .or_else(|| user.parse().ok())
        .ok_or_else(|| {
            note(&format!(
                "no user named `{user}`: give a login name or a numeric uid"
            ));
            2
        })
}

/// Checks `args` against the install (`elevated`: setuid or file
/// capabilities) and builds the configuration. A user name is looked up
/// with the caller's rights only: here when not privileged, after the
/// scan otherwise ([`measure`]).
pub fn config(args: &MemArgs, elevated: bool) -> Result<Config, u8> {
    if elevated && args.watch.is_some() {
        note(
            "--watch is not available in a setuid or capability install, which keeps its \
              privilege for one scan only; run `watch tally mem` instead",
        );
        return Err(2);
    }
    if elevated && args.procfs.is_some() {
        note("--procfs ignored: this install reads /proc only");
    }
    let uid = match args.user.as_deref() {
        Some(user) if !elevated => Some(resolve(user)?),
        _ => None,
    };
    let machine = matches!(
        args.out.format,
        Format::CSV | Format::JSON | Format::PROMETHEUS
    );
    let cfg = Config {
        procfs: match &args.procfs {
            Some(path) if !elevated => crate::procfs::ProcRoot::new(path),
            _ => crate::procfs::ProcRoot::default(),
        },
        pids: (!args.pids.is_empty()).then(|| {
            let mut pids = args.pids.clone();
            pids.sort_unstable();
            pids.dedup();
            pids
        }),
        grouping: group::Grouping {
            by: args.group_by,
            name: args.name,
            split_args: args.split_args,
            filter: args.filter.clone(),
            uid,
            sort: args.sort,
            reverse: args.reverse,
            top: args.top.map(|n| usize::try_from(n).unwrap_or(usize::MAX)),
            check_replaced: !elevated,
        },
        view: View {
            unit: args.unit.unwrap_or(if machine { Unit::B } else { Unit::M }),
            human_sizes: args.human,
            total_only: args.total_only,
        },
        threads: args.threads,
        read_status: args.user.is_some(),
    };
    let request = args.out.request();
    if args.watch.is_some()
        && request
            .output
            .as_ref()
            .is_some_and(|p| p.as_os_str() != "-")
    {
        note(
            "--watch writes its frames to stdout: drop -o, or use --textfile DIR for a file \
              kept current",
        );
        return Err(2);
    }
    if elevated && args.textfile.is_some() && args.every.is_some() {
        note(
            "--every is not available in a setuid or capability install, which keeps its \
              privilege for one scan only; run tally mem --textfile from a timer instead",
        );
        return Err(2);
    }
    Ok(cfg)
}

/// Measures: `--watch`'s frames on stdout until a signal, or one scan
/// with `privilege`, which ends with it whatever its outcome, so that
/// naming, user lookups and output run with the caller's rights only.
/// `output` is where the report goes, when opened already; else `open`
/// opens it, after the privilege is dropped. Returns the report (or why
/// there is none) and where it goes.
pub fn measure(
    cfg: &mut Config,
    mut privilege: Privilege,
    args: &MemArgs,
    mut output: Option<Output>,
    open: &dyn Fn() -> Result<Output, u8>,
) -> Result<(Result<MemReport, MemError>, Option<Output>), u8> {
    if let Some(interval) = args.watch {
        let signals = crate::sys::signals::Forwarder::install().map_err(|e| {
            note(&format!("cannot install signal handlers for --watch: {e}"));
            1
        })?;
        let terminal = io::stdout().is_terminal();
        // A frame goes out whole (render flushes it), not a write per
        // line, before the wait for the next.
        let mut out = crate::report::output::Sink::stdout_by_screen().map_err(|e| {
            note(&format!("cannot write to stdout: {e}"));
            1
        })?;
        let stop = || signals.pending().is_some();
        let format = args.out.format;
        let report = watch(
            cfg,
            interval,
            format,
            Style::stdout(),
            terminal,
            &mut out,
            &stop,
        )
        .map(|r| r.unwrap_or_default());
        return Ok((report, output));
    }
    let snap = scan(cfg, privilege);
    if let Err(e) = privilege.drop_to_caller() {
        note(&MemError::DropPrivileges(e).to_string());
        return Err(1);
    }
    if let (Some(user), None) = (args.user.as_deref(), cfg.grouping.uid) {
        cfg.grouping.uid = Some(resolve(user)?);
    }
    if output.is_none() {
        output = Some(open()?);
    }
    cfg.grouping.check_replaced = true;
    Ok((snap.map(|snap| summarize(&snap, cfg)), output))
}

/// The end of `tally mem`: `write` writes the report and returns its exit
/// status, then the notes on what was left out follow. A failure is said
/// and is exit status 1; a closed stdout ends quietly.
pub fn finish(
    report: Result<MemReport, MemError>,
    elevated: bool,
    write: impl FnOnce(&MemReport) -> u8,
) -> u8 {
    match report {
        Ok(report) => {
            let code = write(&report);
            for msg in closing_notes(&report, elevated, crate::sys::geteuid() == 0) {
                note(&msg);
            }
            code
        }
        Err(e) if e.is_broken_pipe() => 0,
        Err(e) => {
            note(&e.to_string());
            1
        }
    }
}

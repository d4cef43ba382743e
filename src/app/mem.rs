//! `tally mem`: privilege handling, configuration, one scan or `--watch`.

use std::io::{self, IsTerminal};

use tally::cli;
use tally::report::{Format, Stream, Style};

pub(super) fn mem_command(
    args: cli::mem::MemArgs,
    mut privilege: tally::mem::privilege::Privilege,
) -> u8 {
    use tally::mem::{self, report::Unit};
    let elevated = privilege.is_elevated();
    let note = |msg: &str| tally::diag!("tally: {msg}");
    if elevated && args.watch.is_some() {
        note(
            "--watch is not available in a setuid or capability install, which keeps its \
              privilege for one scan only; run `watch tally mem` instead",
        );
        return 2;
    }
    if elevated && args.procfs.is_some() {
        note("--procfs ignored: this install reads /proc only");
    }
    // A user name is looked up with the caller's rights only: after the
    // scan when privileged, before it otherwise.
    let user = args.user.clone();
    let resolve = |user: &str| -> Result<u32, u8> {
        tally::sys::user::uid_of(user)
            .or_else(|| user.parse().ok())
            .ok_or_else(|| {
                note(&format!(
                    "no user named `{user}`: give a login name or a numeric uid"
                ));
                2
            })
    };
    let uid = match user.as_deref() {
        Some(user) if !elevated => match resolve(user) {
            Ok(uid) => Some(uid),
            Err(code) => return code,
        },
        _ => None,
    };
    let format = args.out.format;
    let machine = matches!(format, Format::CSV | Format::JSON | Format::PROMETHEUS);
    let mut cfg = mem::Config {
        procfs: match &args.procfs {
            Some(path) if !elevated => tally::procfs::ProcRoot::new(path),
            _ => tally::procfs::ProcRoot::default(),
        },
        pids: (!args.pids.is_empty()).then(|| {
            let mut pids = args.pids;
            pids.sort_unstable();
            pids.dedup();
            pids
        }),
        grouping: mem::group::Grouping {
            by: args.group_by,
            name: args.name,
            split_args: args.split_args,
            filter: args.filter,
            uid,
            sort: args.sort,
            reverse: args.reverse,
            top: args.top.map(|n| usize::try_from(n).unwrap_or(usize::MAX)),
            check_replaced: !elevated,
        },
        view: mem::report::View {
            unit: args.unit.unwrap_or(if machine { Unit::B } else { Unit::M }),
            human_sizes: args.human,
            total_only: args.total_only,
        },
        threads: args.threads,
        read_status: user.is_some(),
    };
    // Report files are created with the caller's rights only: before the
    // scan when unprivileged, after the privilege is dropped otherwise.
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
        return 2;
    }
    let open_output =
        || super::open_output::<mem::report::MemReport>(&args.out, "mem", Some(Stream::Stdout));
    let mut output = None;
    if !elevated {
        match open_output() {
            Ok(o) => output = Some(o),
            Err(code) => return code,
        }
    }
    if let Some(dir) = &args.textfile {
        if elevated && args.every.is_some() {
            note(
                "--every is not available in a setuid or capability install, which keeps its \
                  privilege for one scan only; run tally mem --textfile from a timer instead",
            );
            return 2;
        }
        return super::serve::mem_textfile(&mut cfg, privilege, user.as_deref(), dir, args.every);
    }
    let report = match args.watch {
        Some(interval) => {
            let signals = match tally::sys::signals::Forwarder::install() {
                Ok(s) => s,
                Err(e) => {
                    note(&format!("cannot install signal handlers for --watch: {e}"));
                    return 1;
                }
            };
            let terminal = io::stdout().is_terminal();
            // A frame goes out whole (render flushes it), not a write per
            // line, before the wait for the next.
            let mut out = match tally::report::output::Sink::stdout_by_screen() {
                Ok(s) => s,
                Err(e) => {
                    note(&format!("cannot write to stdout: {e}"));
                    return 1;
                }
            };
            let stop = || signals.pending().is_some();
            mem::watch(
                &cfg,
                interval,
                format,
                Style::stdout(),
                terminal,
                &mut out,
                &stop,
            )
            .map(|r| r.unwrap_or_default())
        }
        None => {
            let snap = mem::scan(&cfg, privilege);
            // Privilege ends with the scan, whatever its outcome: naming,
            // user lookups and output run with the caller's rights only.
            if let Err(e) = privilege.drop_to_caller() {
                note(&mem::MemError::DropPrivileges(e).to_string());
                return 1;
            }
            if let (Some(user), None) = (user.as_deref(), cfg.grouping.uid) {
                match resolve(user) {
                    Ok(uid) => cfg.grouping.uid = Some(uid),
                    Err(code) => return code,
                }
            }
            if output.is_none() {
                match open_output() {
                    Ok(o) => output = Some(o),
                    Err(code) => return code,
                }
            }
            cfg.grouping.check_replaced = true;
            snap.map(|snap| mem::summarize(&snap, &cfg))
        }
    };
    match report {
        Ok(report) => {
            let code = match output {
                // With --watch, the frames went out; the exports hold the
                // last snapshot.
                Some(o) if args.watch.is_some() => super::said(o.write_exports(&report)),
                Some(o) => super::said(o.write(&report)),
                None => 0,
            };
            for msg in mem::closing_notes(&report, elevated, tally::sys::geteuid() == 0) {
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

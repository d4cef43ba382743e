//! `tally load`: the methods in child processes, the table and the plot.

use std::io::{self, IsTerminal};

use tally::cli;
use tally::report::Stream;

pub(super) fn load_command(args: cli::load::LoadArgs) -> u8 {
    use tally::load::{self, Mode};
    if let (Some(method), true) = (args.child, args.hold) {
        // One of N processes of --procs: load at the barrier, hold.
        let Some(parent) = args.parent else {
            tally::diag!("tally: load --hold needs --parent PID");
            return 2;
        };
        return match load::hold::serve(method, &args.file, args.touch, parent) {
            Ok(load::hold::Ended::Released) => 0,
            Ok(load::hold::Ended::NoStart) => 1,
            Ok(load::hold::Ended::Failed { out_of_memory }) => {
                if out_of_memory {
                    load::child::EXIT_NO_MEMORY
                } else {
                    1
                }
            }
            Err(e) => {
                tally::diag!("tally: load --hold: {e}");
                1
            }
        };
    }
    if let Some(method) = args.child {
        // One load in this process, the result in a file for the parent.
        let (result, code) = match load::child::load(method, &args.file, args.touch) {
            Ok(r) => (r, 0),
            Err(e) => (
                load::child::ChildResult {
                    error: Some(e.to_string()),
                    ..Default::default()
                },
                if e.kind() == io::ErrorKind::OutOfMemory {
                    load::child::EXIT_NO_MEMORY
                } else {
                    1
                },
            ),
        };
        if let Some(path) = &args.result {
            let written = serde_json::to_vec(&result)
                .map_err(io::Error::other)
                .and_then(|b| std::fs::write(path, b));
            if written.is_err() {
                return code.max(1);
            }
        }
        return code;
    }
    let exe = match std::env::current_exe() {
        Ok(p) => p,
        Err(e) => {
            tally::diag!("tally: cannot find the tally binary to run loads with: {e}");
            return 1;
        }
    };
    let modes = if args.cold {
        vec![Mode::Cold]
    } else if args.warm {
        vec![Mode::Warm]
    } else {
        vec![Mode::Cold, Mode::Warm]
    };
    let procs: Vec<u32> = if args.procs_sweep {
        load::procs::SWEEP.to_vec()
    } else if let Some(n) = args.procs {
        vec![n]
    } else if args.mem_limit.is_some() {
        vec![1]
    } else {
        Vec::new()
    };
    if !procs.is_empty() {
        return procs_command(&args, procs, modes, exe);
    }
    let methods = methods(&args, &load::Method::ALL);
    let cfg = load::Config {
        file: args.file.clone(),
        methods,
        modes,
        runs: args.runs,
        touch: args.touch,
        exe,
    };
    // Bad formats and output paths fail before the loads, not after.
    let output = match super::open_output::<load::report::LoadReport>(
        &args.out,
        "load",
        Some(Stream::Stdout),
    ) {
        Ok(o) => o,
        Err(code) => return code,
    };
    let bar = progress_bar();
    let mut on_progress = |p: load::Progress| {
        show(&bar, p.done, p.of, || {
            format!("{} {}", p.mode.name(), p.method.name())
        });
    };
    let result = load::execute(&cfg, &mut on_progress);
    if let Some(b) = &bar {
        b.finish_and_clear();
    }
    let report = match result {
        Ok(r) => r,
        Err(e) => {
            tally::diag!("tally: load: {e}");
            return e.exit_code();
        }
    };
    let code = super::said(output.write(&report));
    if code != 0 {
        return code;
    }
    // A method this filesystem cannot do (O_DIRECT on tmpfs) is shown as
    // unavailable, not a failure; no method working at all is one.
    let none_worked = report.results.iter().all(|r| r.error.is_some());
    u8::from(!report.ok() || none_worked)
}

/// `tally load --procs N` / `--procs-sweep` / `--mem-limit`.
fn procs_command(
    args: &cli::load::LoadArgs,
    procs: Vec<u32>,
    modes: Vec<tally::load::Mode>,
    exe: std::path::PathBuf,
) -> u8 {
    use tally::load::{self, procs::ProcsConfig};
    let methods = methods(args, &[load::Method::Read, load::Method::Mmap]);
    let cfg = ProcsConfig {
        file: args.file.clone(),
        methods,
        modes,
        procs,
        touch: args.touch,
        mem_limit_bytes: args.mem_limit,
        exe,
    };
    // Bad formats and output paths fail before the loads, not after.
    let output = match super::open_output::<load::procs_report::ProcsReport>(
        &args.out,
        "load",
        Some(Stream::Stdout),
    ) {
        Ok(o) => o,
        Err(code) => return code,
    };
    let bar = progress_bar();
    let mut on_progress = |p: load::procs::ProcsProgress| {
        show(&bar, p.done, p.of, || {
            format!("{} {} ×{}", p.mode.name(), p.method.name(), p.procs)
        });
    };
    let result = load::procs::execute(&cfg, &mut on_progress);
    if let Some(b) = &bar {
        b.finish_and_clear();
    }
    let report = match result {
        Ok(r) => r,
        Err(e) => {
            tally::diag!("tally: load: {e}");
            return e.exit_code();
        }
    };
    let code = super::said(output.write(&report));
    if code != 0 {
        return code;
    }
    // An OOM kill under --mem-limit is a finding, not a failure; differing
    // checksums, or no load completing anywhere, are.
    let none_worked = report.runs.iter().all(|r| r.completed == 0);
    u8::from(!report.ok() || none_worked)
}

/// `--methods` in the order given, each once; `default` without it.
fn methods(
    args: &cli::load::LoadArgs,
    default: &[tally::load::Method],
) -> Vec<tally::load::Method> {
    if args.methods.is_empty() {
        return default.to_vec();
    }
    let mut once = Vec::new();
    for m in &args.methods {
        if !once.contains(m) {
            once.push(*m);
        }
    }
    once
}

/// The progress bar, on a terminal's stderr only.
fn progress_bar() -> Option<indicatif::ProgressBar> {
    io::stderr().is_terminal().then(|| {
        let b = indicatif::ProgressBar::new(0);
        b.set_style(
            indicatif::ProgressStyle::with_template("tally: load {msg} {bar:30} {pos}/{len}")
                .unwrap_or_else(|_| indicatif::ProgressStyle::default_bar()),
        );
        b
    })
}

/// Shows `done` of `of` loads and the one under way.
fn show(bar: &Option<indicatif::ProgressBar>, done: u32, of: u32, what: impl Fn() -> String) {
    if let Some(b) = bar {
        b.set_length(u64::from(of));
        b.set_position(u64::from(done));
        b.set_message(what());
    }
}

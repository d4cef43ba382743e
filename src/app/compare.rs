//! `tally compare`: from arguments to the plan, the runs and the report
//! (stdout, `-o`, `--export`, `--html`), and the exit code.

use std::io::{self, IsTerminal, Write};

use tally::cli;
use tally::compare::{self, CompareError, plan};
use tally::report::{self, Format, Style};

use super::{Exports, Sink};

fn plan_of(args: &cli::compare::CompareArgs) -> Result<Vec<compare::Instance>, plan::PlanError> {
    let mut params = Vec::new();
    for p in args.parameter_scan.chunks(3) {
        let get = |i: usize| p.get(i).map(String::as_str).unwrap_or_default();
        params.push(plan::scan(
            get(0),
            get(1),
            get(2),
            args.parameter_step_size,
        )?);
    }
    for p in args.parameter_list.chunks(2) {
        let get = |i: usize| p.get(i).map(String::as_str).unwrap_or_default();
        params.push(plan::list(get(0), get(1))?);
    }
    plan::expand(&args.commands, &args.names, &params, args.no_shell)
}

pub(super) fn compare_command(mut args: cli::compare::CompareArgs) -> u8 {
    let instances = match plan_of(&args) {
        Ok(i) => i,
        Err(e) => {
            tally::diag!("tally: compare: {e}");
            return 2;
        }
    };
    let mut out = match &args.output {
        Some(path) => match Sink::open(path) {
            Ok(f) => f,
            Err(e) => {
                tally::diag!("tally: {e:#}");
                return 1;
            }
        },
        None => Sink::Stdout,
    };
    if let Some(path) = args.html.take() {
        args.export.push(cli::Export {
            format: Format::HTML,
            path,
            flag: "--html",
        });
    }
    let exports = match Exports::open_with(&args.export, "compare", &|_| true) {
        Ok(e) => e,
        Err((msg, code)) => {
            tally::diag!("tally: {msg}");
            return code;
        }
    };
    let cfg = compare::Config {
        instances,
        runs: args.runs,
        min_runs: args.min_runs,
        max_runs: args.max_runs,
        warmup: args.warmup,
        prepare: args.prepare,
        setup: args.setup,
        cleanup: args.cleanup,
        cold: args.cold,
        drop_caches: args.drop_caches,
        warm: args.warm,
        reference: args.reference.map(|r| r.saturating_sub(1) as usize),
        alpha: args.alpha,
        threshold: args.threshold,
        ignore_failure: args.ignore_failure,
        show_output: args.show_output,
        seed: args.seed.unwrap_or_else(tally::stats::fresh_seed),
    };
    let bar = io::stderr().is_terminal().then(|| {
        let bar = indicatif::ProgressBar::new(0);
        bar.set_style(
            indicatif::ProgressStyle::with_template("tally: {msg} {bar:30} {pos}/{len} eta {eta}")
                .unwrap_or_else(|_| indicatif::ProgressStyle::default_bar()),
        );
        bar
    });
    let mut on_progress = |p: compare::Progress| {
        if let Some(bar) = &bar {
            bar.set_message(if p.warmup { "warm-up" } else { "runs" });
            if let Some(of) = p.of {
                bar.set_length(of);
            }
            bar.set_position(p.done);
        }
    };
    let result = compare::execute(&cfg, &mut on_progress);
    if let Some(bar) = &bar {
        bar.finish_and_clear();
    }
    let report = match result {
        Ok(r) => r,
        Err(e) => {
            let code = e.exit_code();
            match e {
                CompareError::Plan(e) => tally::diag!("tally: compare: {e}"),
                e => tally::diag!("tally: compare: {e}"),
            }
            return code;
        }
    };
    let style = match &args.output {
        Some(p) if p.as_os_str() != "-" => Style::PLAIN,
        _ => Style::stdout(),
    };
    let mut text = Vec::with_capacity(8192);
    let written = report::render(&report, args.format, style, &mut text).and_then(|()| {
        out.write_all(&text)
            .and_then(|()| out.flush())
            .map_err(report::RenderError::Io)
    });
    let mut code = 0;
    match written {
        Ok(()) => {}
        Err(e) if e.is_broken_pipe() => {}
        Err(e) => {
            tally::diag!("tally: cannot write the report: {e}");
            code = 1;
        }
    }
    if !exports.write(&report) {
        code = 1;
    }
    match report.interrupted_by.as_deref() {
        Some("SIGHUP") => 128 + libc::SIGHUP as u8,
        Some("SIGQUIT") => 128 + libc::SIGQUIT as u8,
        Some("SIGTERM") => 128 + libc::SIGTERM as u8,
        Some(_) => 128 + libc::SIGINT as u8,
        None => code,
    }
}

//! `tally compare`: from arguments to the plan, the runs and the report
//! (stdout, `-o`, `--export`, `--html`), and the exit code.

use tally::cli;
use tally::compare::{self, plan};
use tally::report::Stream;

use super::progress;

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

pub(super) fn compare_command(args: cli::compare::CompareArgs) -> u8 {
    let instances = match plan_of(&args) {
        Ok(i) => i,
        Err(e) => {
            tally::diag!("tally: compare: {e}");
            return 2;
        }
    };
    let output = match super::open_output::<compare::report::CompareReport>(
        &args.out,
        "compare",
        Some(Stream::Stdout),
    ) {
        Ok(o) => o,
        Err(code) => return code,
    };
    if output.uses_stdout() && args.show_output {
        tally::diag!(
            "tally: --show-output sends the commands' output to stdout, where the report goes: \
             write the report to a file (-o FILE)"
        );
        return 2;
    }
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
    let bar = progress::bar(Some(0));
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
            tally::diag!("tally: compare: {e}");
            return e.exit_code();
        }
    };
    let code = super::said(output.write(&report));
    match report.interrupted_by.as_deref() {
        Some("SIGHUP") => 128 + libc::SIGHUP as u8,
        Some("SIGQUIT") => 128 + libc::SIGQUIT as u8,
        Some("SIGTERM") => 128 + libc::SIGTERM as u8,
        Some(_) => 128 + libc::SIGINT as u8,
        None => code,
    }
}

//! `tally compare`: the arguments read and checked, the runs measured
//! with a progress bar, the report written (see `tally::compare::command`).

use tally::compare::args::CompareArgs;
use tally::compare::{self, command};

use super::progress;

pub(super) fn compare_command(args: CompareArgs) -> u8 {
    match compare_with(&args) {
        Ok(code) => code,
        Err(e) => {
            tally::diag!("tally: {e}");
            e.exit_code()
        }
    }
}

fn compare_with(args: &CompareArgs) -> Result<u8, command::Refused> {
    let (cfg, outputs) = command::prepare(args)?;
    let bar = progress::bar(Some(0));
    let report = compare::execute(&cfg, &mut |p| {
        if let Some(bar) = &bar {
            bar.set_message(if p.warmup { "warm-up" } else { "runs" });
            if let Some(of) = p.of {
                bar.set_length(of);
            }
            bar.set_position(p.done);
        }
    });
    if let Some(bar) = &bar {
        bar.finish_and_clear();
    }
    Ok(command::output(outputs, &report?, &cfg))
}

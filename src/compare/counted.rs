//! `tally compare --count`: what the counted runs are (under the
//! simulator, rounds of their own that `runner` makes before the timed
//! ones; with the CPU's counters, the timed runs themselves), and once the
//! report is built, each command's counting and which functions its
//! change of instructions is in.
//!
//! Runs under the simulator are made by tally itself (the fork path of
//! [`crate::run::Measurer`]), not by the spawner: their memory and time
//! are Valgrind's and not reported, so the spawner's small peak buys them
//! nothing.

use super::plan::{COUNTED_RUNS, Config};
use super::report::{CommandResult, CompareCount, CompareReport};
use crate::count::{Counting, Profile};
use crate::run::report::RunRecord;

/// Functions a command's change of instructions is put on.
pub const CHANGE_FUNCTIONS: usize = 10;

/// The counted runs made under the simulator.
pub struct CountedRuns {
    /// Each command's records, in the order made.
    pub runs: Vec<Vec<RunRecord>>,
    /// Each command's profiles (with their runs' instructions).
    pub profiles: Vec<Vec<(u64, Profile)>>,
    /// Each run's place (1-based) in the order the runs were made.
    pub order: Vec<Vec<u32>>,
    /// The signal that stopped them, if one did.
    pub interrupted_by: Option<String>,
}

/// Counted runs of each command under the simulator, how many.
pub fn runs_asked(cfg: &Config) -> u32 {
    cfg.count_runs
        .or(if cfg.timed { None } else { cfg.runs })
        .unwrap_or(COUNTED_RUNS)
}

/// After the report is built: the source, each command's counting, and
/// for each command compared with a reference which functions its change
/// of instructions is in. `profiles` are the commands measured now (in
/// order); the baseline's come with its stored runs.
pub fn annotate(
    report: &mut CompareReport,
    counting: &Counting,
    mut profiles: Vec<Vec<(u64, Profile)>>,
) {
    let mut version = None;
    for c in &report.commands {
        version = version.or_else(|| {
            c.runs
                .iter()
                .filter_map(|r| r.counted())
                .find_map(|x| x.tool_version.clone())
        });
    }
    let source = counting.source(version.as_deref());
    let mut most = 0u32;
    for (i, c) in report.commands.iter_mut().enumerate() {
        if c.from_baseline {
            continue;
        }
        let counted: Vec<&crate::count::Counted> =
            c.runs.iter().filter_map(|r| r.counted()).collect();
        most = most.max(counted.len() as u32);
        let taken = profiles.get_mut(i).map(std::mem::take).unwrap_or_default();
        let mut count = crate::count::CountReport::of(counting, &counted, taken);
        // Runs that gave no count, said with the command and the first
        // reason: without it a command whose every count is missing would
        // show no figure and no word of why.
        let missing: Vec<&str> = c
            .runs
            .iter()
            .filter_map(|r| r.count.as_ref()?.unavailable_reason())
            .collect();
        if let Some(first) = missing.first() {
            let asked = missing.len() + counted.len();
            count.notes.insert(
                0,
                format!(
                    "#{} {}: counts unavailable in {} of {asked} run{}: {first}",
                    i + 1,
                    crate::text::escape_text(&c.name),
                    missing.len(),
                    if asked == 1 { "" } else { "s" }
                ),
            );
        }
        c.count = Some(count);
    }
    let attributions: Vec<Option<crate::count::Attribution>> = report
        .commands
        .iter()
        .map(|c| {
            let j = c.compared_with?;
            let now = c.count.as_ref()?.profile.as_ref()?;
            let then = report.commands.get(j)?.count.as_ref()?.profile.as_ref()?;
            crate::count::profile::attribute(now, then, CHANGE_FUNCTIONS)
        })
        .collect();
    for (c, a) in report.commands.iter_mut().zip(attributions) {
        c.instructions_change = a;
    }
    report.count = Some(CompareCount {
        source,
        runs_per_command: most,
    });
}

/// A stored command's counting, read from its baseline: the source and
/// its profile, for the change to be put on functions.
pub fn stored(
    c: &mut CommandResult,
    source: Option<&crate::count::Source>,
    profile: Option<Profile>,
) {
    let Some(source) = source else {
        return;
    };
    c.count = Some(crate::count::CountReport {
        source: source.clone(),
        profile,
        profile_run: None,
        notes: Vec::new(),
    });
}

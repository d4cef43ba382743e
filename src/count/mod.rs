//! Counted work (`--count`): figures no machine can move, instructions
//! first, from one of two sources, always named in the report:
//!
//! - `hw` ([`hw`]): the CPU's counters (`perf_event_open`), where the
//!   machine has a PMU and the kernel lets this user count; the runs are
//!   the timed runs, counted as they run.
//! - `sim` ([`sim`]): Valgrind's Cachegrind, which counts every
//!   instruction the command's tree executes on a simulated CPU with one
//!   fixed cache geometry; a run under it takes 20–100 times as long, so
//!   its time, memory and I/O are Valgrind's, not the command's, and are
//!   never reported as the command's (see [`CountState::simulated`]). It
//!   also says where the instructions went ([`profile`]).
//!
//! `auto` takes `hw` where it counts, else `sim` where Valgrind is
//! installed, else says why neither can. `tally run` and `tally compare`
//! count through one interface: [`Counting`] is resolved once per
//! invocation, and each run is prepared ([`Counting::prepare`]), started
//! as its plan says, attached ([`RunCount::attach`], for `hw`) and
//! finished ([`RunCount::finish`]) into a [`CountState`] of the run's
//! record.

pub mod cachegrind;
mod elf;
pub mod human;
pub mod hw;
pub mod profile;
pub mod sim;

use std::ffi::OsString;

use serde::{Deserialize, Serialize};

pub use profile::{Attribution, FunctionCost, Profile};

/// `--count=auto|hw|sim`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Choice {
    Auto,
    Hw,
    Sim,
}

impl Choice {
    /// The value of `--count` (`auto` when it is given bare).
    pub fn parse(s: &str) -> Result<Choice, String> {
        match s {
            "auto" | "" => Ok(Choice::Auto),
            "hw" => Ok(Choice::Hw),
            "sim" => Ok(Choice::Sim),
            other => Err(format!(
                "{} is not a counting source: give auto, hw (the CPU's counters) or sim \
                 (Valgrind's Cachegrind)",
                crate::text::escape_text(other)
            )),
        }
    }

    /// The value as `--count` takes it.
    pub fn as_str(self) -> &'static str {
        match self {
            Choice::Auto => "auto",
            Choice::Hw => "hw",
            Choice::Sim => "sim",
        }
    }
}

/// What a history names as the counting source of figures timed, not
/// counted.
pub const CLOCK: &str = "clock";

/// The least run-to-run spread of a count, as a fraction of it, by the
/// source a history names for its machine (`sim`, `hw`, or an imported
/// report's tool); `None` for times (`clock`). Under the simulator a
/// process counts about 19 instructions more when its pid has one more
/// digit (a shell formats its own pid): a ten-thousandth of the smallest
/// shell's count (`sh -c true`, 222,439 under Cachegrind 3.19). The CPU's
/// counters add the interrupts they count on x86, a few hundredths of a
/// percent: a thousandth. A step smaller than this is no change of work.
pub fn repeat_floor(counting: &str) -> Option<f64> {
    match counting {
        "" | CLOCK => None,
        "sim" | "cachegrind" | "callgrind" | "valgrind" => Some(1e-4),
        _ => Some(1e-3),
    }
}

/// Which source counted.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Kind {
    Hw,
    Sim,
}

impl Kind {
    pub fn name(self) -> &'static str {
        match self {
            Kind::Hw => "hw",
            Kind::Sim => "sim",
        }
    }
}

/// The counting source of a report or a baseline: what counted, which
/// version, on what geometry. Counts of two sources are compared only
/// where these agree.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Source {
    pub kind: Kind,
    /// `cachegrind (Valgrind 3.19.0)`, `perf_event_open`.
    pub tool: String,
    /// The simulated caches (`sim`), or the CPU counted on (`hw`).
    pub machine: String,
    /// How the runs were made, in words.
    pub method: String,
}

impl Source {
    /// What differs between counts of `self` and `other`, in words, or
    /// `None` when they count alike.
    pub fn differs_from(&self, other: &Source) -> Option<String> {
        if self.kind != other.kind {
            return Some(format!(
                "counted by {} ({}) then and by {} ({}) now",
                other.kind.name(),
                crate::text::escape_text(&other.tool),
                self.kind.name(),
                crate::text::escape_text(&self.tool)
            ));
        }
        if self.tool != other.tool {
            return Some(format!(
                "counted by {} then and by {} now",
                crate::text::escape_text(&other.tool),
                crate::text::escape_text(&self.tool)
            ));
        }
        if self.machine != other.machine {
            return Some(format!(
                "counted on {} then and on {} now",
                crate::text::escape_text(&other.machine),
                crate::text::escape_text(&self.machine)
            ));
        }
        None
    }
}

/// One event's count (the `hw` source's raw readings).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct EventCount {
    pub event: String,
    pub value: u64,
}

/// The counted figures of one run.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Counted {
    pub source: Kind,
    /// Instructions executed in user space, by every process of the tree.
    pub instructions: Option<u64>,
    /// `hw`: the CPU's cycles in user space.
    pub cycles: Option<u64>,
    /// `sim`: data reads and writes.
    pub data_reads: Option<u64>,
    pub data_writes: Option<u64>,
    /// `sim`: first-level misses (instruction and data) and last-level
    /// misses.
    pub l1_misses: Option<u64>,
    pub ll_misses: Option<u64>,
    /// `sim`: [`sim::estimated_cycles`].
    pub estimated_cycles: Option<u64>,
    /// `sim`: processes counted (each wrote a file).
    #[serde(default)]
    pub processes: u32,
    /// `sim`: of them, copies forked without `exec`, whose files repeat
    /// their parent's counts up to the fork.
    #[serde(default)]
    pub forked_copies: u32,
    /// `sim`: the Valgrind version its logs named.
    #[serde(default)]
    pub tool_version: Option<String>,
    /// `hw`: time the counters were enabled and running (less when
    /// multiplexed; the values are then scaled to the whole).
    #[serde(default)]
    pub time_enabled_ns: Option<u64>,
    #[serde(default)]
    pub time_running_ns: Option<u64>,
    /// `hw`: every counter read, by event name.
    #[serde(default)]
    pub events: Vec<EventCount>,
    /// `sim`: programs in the tree Valgrind refused to run (setuid,
    /// setgid or setcap): they did not run, and are not counted.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub refused: Vec<String>,
    /// `sim`: where the instructions went; kept by the report, not per
    /// run.
    #[serde(skip)]
    pub profile: Option<Profile>,
}

/// The counts of a run: measured, or why not.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "state", rename_all = "lowercase")]
pub enum CountState {
    Measured(Box<Counted>),
    Unavailable {
        reason: String,
        /// The source that tried: a run made under the simulator that
        /// gave no count was still Valgrind's, its time too (absent in
        /// reports written before it was kept).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        source: Option<Kind>,
    },
}

impl CountState {
    pub fn measured(&self) -> Option<&Counted> {
        match self {
            CountState::Measured(c) => Some(c),
            CountState::Unavailable { .. } => None,
        }
    }

    /// Why the run gave no count; `None` when it gave one.
    pub fn unavailable_reason(&self) -> Option<&str> {
        match self {
            CountState::Unavailable { reason, .. } => Some(reason),
            CountState::Measured(_) => None,
        }
    }

    /// Whether the run was made under the simulator: its time, memory
    /// and I/O are the simulator's, not the command's, whether or not it
    /// gave a count (Valgrind refusing to start a program takes time too).
    pub fn simulated(&self) -> bool {
        match self {
            CountState::Measured(c) => c.source == Kind::Sim,
            CountState::Unavailable { source, .. } => *source == Some(Kind::Sim),
        }
    }
}

/// The counting of one invocation: the source `--count` resolved to.
#[derive(Debug, Clone)]
pub enum Counting {
    Hw,
    Sim(sim::Sim),
}

impl Counting {
    /// The source `choice` gives on this machine, or why none can count
    /// (with the fix).
    pub fn resolve(choice: Choice) -> Result<Counting, String> {
        match choice {
            Choice::Hw => hw::probe().map(|()| Counting::Hw),
            Choice::Sim => sim::Sim::find().map(Counting::Sim),
            Choice::Auto => match hw::probe() {
                Ok(()) => Ok(Counting::Hw),
                Err(no_hw) => sim::Sim::find().map(Counting::Sim).map_err(|no_sim| {
                    format!("neither source can count here: hw: {no_hw}; sim: {no_sim}")
                }),
            },
        }
    }

    pub fn kind(&self) -> Kind {
        match self {
            Counting::Hw => Kind::Hw,
            Counting::Sim(_) => Kind::Sim,
        }
    }

    /// The source as a report names it; `version` is what the runs said
    /// of the tool (Valgrind's version, from its logs).
    pub fn source(&self, version: Option<&str>) -> Source {
        match self {
            Counting::Hw => Source {
                kind: Kind::Hw,
                tool: "perf_event_open".into(),
                machine: cpu_model(),
                method: "instructions and cycles in user space (exclude_kernel, exclude_hv), \
                         counted from the command's exec in it and every process it started"
                    .into(),
            },
            Counting::Sim(_) => Source {
                kind: Kind::Sim,
                tool: format!(
                    "cachegrind (Valgrind {})",
                    version.unwrap_or("of unknown version")
                ),
                machine: sim::geometry(),
                method: "every process of the tree under Valgrind (--trace-children=yes), \
                         address-space randomisation off, PYTHONHASHSEED=0 unless set"
                    .into(),
            },
        }
    }

    /// Gets one run ready: for `sim`, its scratch directory and the
    /// command line that runs `argv` under Cachegrind.
    pub fn prepare(&self, argv: &[OsString]) -> Result<RunCount, String> {
        match self {
            Counting::Hw => Ok(RunCount::Hw(None)),
            Counting::Sim(s) => s.prepare(argv).map(RunCount::Sim),
        }
    }
}

/// The CPU model, for an `hw` source.
fn cpu_model() -> String {
    let cpuinfo = std::fs::read_to_string("/proc/cpuinfo").unwrap_or_default();
    crate::procfs::cpuinfo::model_name(&cpuinfo).unwrap_or_else(|| "an unknown CPU".into())
}

/// One run's counting, from its preparation to its figures.
pub enum RunCount {
    /// The counters, once attached.
    Hw(Option<hw::HwRun>),
    Sim(sim::SimRun),
}

impl RunCount {
    /// What to exec instead of the command, with the environment and the
    /// fixed layout it needs (`sim`); `None`: the command as it is.
    pub fn wrapped(&self) -> Option<(&[OsString], &[OsString])> {
        match self {
            RunCount::Hw(_) => None,
            RunCount::Sim(s) => Some((&s.argv, &s.env)),
        }
    }

    /// Whether the counters must be attached at the gate (`hw`).
    pub fn needs_gate(&self) -> bool {
        matches!(self, RunCount::Hw(_))
    }

    /// Attaches the counters to `pid`, which waits at its gate (`hw`).
    pub fn attach(&mut self, pid: u32) {
        if let RunCount::Hw(slot) = self {
            *slot = Some(hw::attach(pid));
        }
    }

    /// The run's counts, after the command has exited.
    pub fn finish(self) -> CountState {
        let (got, source) = match self {
            RunCount::Hw(Some(h)) => (h.finish(), Kind::Hw),
            RunCount::Hw(None) => (Err("the counters were never attached".into()), Kind::Hw),
            RunCount::Sim(s) => (s.finish(), Kind::Sim),
        };
        match got {
            Ok(c) => CountState::Measured(Box::new(c)),
            Err(reason) => CountState::Unavailable {
                reason,
                source: Some(source),
            },
        }
    }
}

/// What a report says of its counting as a whole: the source, where the
/// instructions went (`sim`), and what the counts may not show.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CountReport {
    pub source: Source,
    /// `sim`: where the instructions went, in the counted run whose
    /// instructions are the median (`profile_run`, counted from 0 among
    /// the counted runs).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub profile: Option<Profile>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub profile_run: Option<u32>,
    /// In words: instructions that could not be put on functions, copies
    /// forked without `exec`, counts that differed between runs.
    pub notes: Vec<String>,
}

/// Instructions of code without symbols, as a share of the whole, from
/// which a note says so.
const WITHOUT_SYMBOLS_SAID: f64 = 0.01;

impl CountReport {
    /// The report of `counting` over the counted runs' figures and the
    /// profiles taken out of them (each with its run's instructions, in
    /// the order of the runs).
    pub fn of(
        counting: &Counting,
        counted: &[&Counted],
        profiles: Vec<(u64, Profile)>,
    ) -> CountReport {
        let version = counted.iter().find_map(|c| c.tool_version.as_deref());
        let mut notes = Vec::new();
        let forked = counted.iter().map(|c| c.forked_copies).max().unwrap_or(0);
        if forked > 0 {
            notes.push(format!(
                "{forked} process{} forked without exec: Valgrind starts such a copy with its \
                 parent's counts up to the fork, so that work is counted again in the copy (as \
                 Valgrind itself counts it); the counts still repeat from run to run",
                if forked == 1 { " was" } else { "es were" }
            ));
        }
        let mut refused: Vec<String> = Vec::new();
        for program in counted.iter().flat_map(|c| &c.refused) {
            if !refused.contains(program) {
                refused.push(program.clone());
            }
        }
        if !refused.is_empty() {
            notes.push(format!("Valgrind: {}", sim::refused_words(&refused)));
        }
        let instructions: Vec<u64> = counted.iter().filter_map(|c| c.instructions).collect();
        if let (Some(lo), Some(hi)) = (instructions.iter().min(), instructions.iter().max())
            && lo != hi
        {
            notes.push(format!(
                "instructions differed between runs by {:.3}% ({} to {}): the command's work \
                 depends on something that changes from run to run (time, process ids, \
                 threads, random numbers, files it lists)",
                (*hi as f64 / (*lo).max(1) as f64 - 1.0) * 100.0,
                crate::units::thousands(*lo),
                crate::units::thousands(*hi)
            ));
        }
        let mut profile = None;
        let mut profile_run = None;
        if !profiles.is_empty() {
            // The first run whose instructions are the median.
            let mut counts: Vec<u64> = profiles.iter().map(|(n, _)| *n).collect();
            counts.sort_unstable();
            let median = counts[(counts.len() - 1) / 2];
            let pick = profiles.iter().position(|(n, _)| *n == median).unwrap_or(0);
            profile_run = u32::try_from(pick).ok();
            profile = profiles.into_iter().nth(pick).map(|(_, p)| p);
        }
        if let Some(p) = &profile {
            notes.extend(without_symbols(p));
        }
        CountReport {
            source: counting.source(version),
            profile,
            profile_run,
            notes,
        }
    }
}

/// A note per program whose code without symbols holds a notable share
/// of the instructions: stripped (no `.symtab`), or not.
fn without_symbols(p: &Profile) -> Vec<String> {
    let total = p.total_instructions.max(1) as f64;
    p.without_symbols()
        .into_iter()
        .filter(|(_, ir)| *ir as f64 / total >= WITHOUT_SYMBOLS_SAID)
        .map(|(program, ir)| {
            let share = format!("{:.0}%", ir as f64 / total * 100.0);
            let shown = crate::text::escape_text(program);
            let file = crate::gpu::on_path(program).or_else(|| {
                program
                    .contains('/')
                    .then(|| std::path::PathBuf::from(program))
            });
            match file.as_deref().and_then(elf::has_symbol_table) {
                Some(false) => format!(
                    "{share} of the instructions ran in code without symbols in {shown}, \
                     which is stripped (no symbol table): which of its functions did the work \
                     cannot be said; its debug symbols (a -dbgsym or -debuginfo package) or a \
                     build with -g name them"
                ),
                _ => format!(
                    "{share} of the instructions ran in code without symbols in the process of \
                     {shown} (a stripped library it loaded, or generated code): which functions \
                     did the work cannot be said"
                ),
            }
        })
        .collect()
}

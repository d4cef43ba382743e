//! `--save-baseline FILE` and `--baseline FILE`: a comparison's runs kept
//! for later, and compared with later.
//!
//! A baseline file is one JSON document, written through the output stage
//! (whole, then renamed into place: no half file after Ctrl-C or a full
//! disk), under the header every JSON document of tally has
//! (`tally_version`, `timestamp`, `hostname`, `kernel`), then:
//! - `format` (`tally-compare-baseline`) and `schema_version` (of this
//!   format, [`SCHEMA_VERSION`]); a newer one is refused;
//! - `machine`: the fingerprint ([`Fingerprint`]: CPU model, logical CPUs,
//!   kernel, memory), compared with the machine of a later comparison;
//!   `other_cpu_percent`: other work on the machine while the runs ran
//!   (percent of one CPU), likewise; `speed_probe_ns`: the speed probes
//!   made with the runs (`super::probe`), compared with a later
//!   comparison's;
//! - `options`: what shapes a run ([`RunShape`]: the shell, warm-up runs,
//!   the hooks, `--cold`, `--warm`, `--drop-caches`, `--input`,
//!   `--command-output`), likewise compared;
//! - `seed`, and `commands[]`: `name`, `command`, `parameters`, `runs`,
//!   `failed_runs`, `exit_codes[]` (null: killed by a signal),
//!   `io_unavailable`, and `samples`: every run's value of every figure,
//!   by its JSON key (a figure not measured in every run is left out).
//!
//! A later `--baseline FILE` matches each command it runs to a stored one
//! by name, else by command string, and compares its runs with the stored
//! runs by the comparison's own statistics, the stored runs as reference.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use super::plan::{
    Baseline, BaselineUse, CommandOutput, Config, Fingerprint, Instance, Shell, StoredRuns,
};
use super::report::{CommandResult, CompareReport};
use crate::procfs::io::IoCounters;
use crate::run::report::{ExitInfo, FIGURES, RunRecord};
use crate::text::path::display;

/// The `format` of a baseline file.
pub const FORMAT: &str = "tally-compare-baseline";

/// The version of the baseline format this tally writes; it reads this
/// one and every one before it ([`FIRST_VERSION`]). Version 2 added
/// counted work (`count_source`, each command's `counted` runs), and with
/// it commands of counted runs only (`runs` 0).
pub const SCHEMA_VERSION: u32 = 2;

/// The oldest baseline format this tally reads.
pub const FIRST_VERSION: u32 = 1;

/// The most functions of a command's profile a baseline keeps (the rest
/// are added up in its `other_instructions`), and the longest name or
/// file of one.
pub const MAX_PROFILE_FUNCTIONS: usize = 100;
const MAX_PROFILE_TEXT: usize = 256;

/// The most runs a baseline holds, all commands together.
pub const MAX_RUNS: usize = 100_000;

/// The most commands a baseline holds.
pub const MAX_COMMANDS: usize = 1_000;

/// The longest name, command string or parameter a baseline holds.
pub const MAX_TEXT_BYTES: usize = 16 * 1024;

/// The most bytes one number takes in the file: 20 digits, the indentation
/// of pretty JSON, a comma and a newline.
const MAX_VALUE_BYTES: usize = 40;

/// Numbers per run: every figure, and the exit code.
const VALUES_PER_RUN: usize = FIGURES.len() + 1;

/// The largest baseline file read: [`MAX_RUNS`] runs of a number per
/// figure and the exit code, each at most 40 bytes of pretty JSON, and per
/// command its texts (name,
/// command, parameters, the I/O note) and keys. Anything larger is not a
/// baseline this tally wrote.
pub const MAX_FILE_BYTES: u64 = (MAX_RUNS * VALUES_PER_RUN * MAX_VALUE_BYTES
    + MAX_COMMANDS * (4 * MAX_TEXT_BYTES + 4096)
    + MAX_COMMANDS * MAX_PROFILE_FUNCTIONS * (3 * MAX_PROFILE_TEXT + 256))
    as u64;

/// This machine's fingerprint.
pub fn fingerprint() -> Fingerprint {
    let cpuinfo = std::fs::read_to_string("/proc/cpuinfo").unwrap_or_default();
    let meminfo = std::fs::read_to_string("/proc/meminfo").unwrap_or_default();
    Fingerprint {
        cpu_model: crate::procfs::cpuinfo::model_name(&cpuinfo),
        cpus: std::thread::available_parallelism()
            .ok()
            .and_then(|n| u32::try_from(n.get()).ok()),
        kernel: crate::sys::uname::uname().ok().map(|u| u.release),
        memory_bytes: crate::procfs::meminfo::bytes(&meminfo, "MemTotal"),
    }
}

/// The options that shape a run, as a baseline keeps them.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct RunShape {
    /// `sh`, `none` (`-N`) or the shell given (`--shell`).
    pub shell: String,
    pub warmup: u32,
    pub prepare: Option<String>,
    pub conclude: Option<String>,
    pub setup: Option<String>,
    pub cleanup: Option<String>,
    pub cold: Vec<String>,
    pub warm: Vec<String>,
    pub drop_caches: bool,
    /// `--input`; `None`: /dev/null.
    pub input: Option<String>,
    /// `null`, `pipe`, `inherit` or `file`.
    pub command_output: String,
}

impl RunShape {
    pub fn of(cfg: &Config) -> RunShape {
        let paths = |v: &[PathBuf]| v.iter().map(|p| display(p)).collect();
        RunShape {
            shell: cfg.shell.describe(),
            warmup: cfg.warmup,
            prepare: cfg.prepare.clone(),
            conclude: cfg.conclude.clone(),
            setup: cfg.setup.clone(),
            cleanup: cfg.cleanup.clone(),
            cold: paths(&cfg.cold),
            warm: paths(&cfg.warm),
            drop_caches: cfg.drop_caches,
            input: cfg.input.as_deref().map(display),
            command_output: match cfg.command_output {
                CommandOutput::Null => "null",
                CommandOutput::Pipe => "pipe",
                CommandOutput::Inherit => "inherit",
                CommandOutput::File(_) => "file",
            }
            .into(),
        }
    }

    /// What differs from `now`, one phrase per option.
    pub fn differences(&self, now: &RunShape) -> Vec<String> {
        let mut out = Vec::new();
        let mut differ = |option: &str, then: String, now: String| {
            if then != now {
                // The baseline's side was read from a file: escaped.
                out.push(format!(
                    "{option} {} then, {} now",
                    crate::text::escape_text(&then),
                    crate::text::escape_text(&now)
                ));
            }
        };
        let opt = |v: &Option<String>| v.as_deref().map_or("none".into(), |s| format!("{s:?}"));
        let list = |v: &[String]| {
            if v.is_empty() {
                "none".into()
            } else {
                v.join(" ")
            }
        };
        differ("--shell", self.shell.clone(), now.shell.clone());
        differ("--warmup", self.warmup.to_string(), now.warmup.to_string());
        differ("--prepare", opt(&self.prepare), opt(&now.prepare));
        differ("--conclude", opt(&self.conclude), opt(&now.conclude));
        differ("--setup", opt(&self.setup), opt(&now.setup));
        differ("--cleanup", opt(&self.cleanup), opt(&now.cleanup));
        differ("--cold", list(&self.cold), list(&now.cold));
        differ("--warm", list(&self.warm), list(&now.warm));
        differ(
            "--drop-caches",
            self.drop_caches.to_string(),
            now.drop_caches.to_string(),
        );
        differ("--input", opt(&self.input), opt(&now.input));
        differ(
            "--command-output",
            self.command_output.clone(),
            now.command_output.clone(),
        );
        out
    }
}

/// A command's runs under the simulator (`--count=sim`) in a baseline:
/// their counted figures, and where the instructions went. (The CPU's
/// counters count the timed runs: their figures are in `samples`.)
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct StoredCounted {
    pub runs: usize,
    /// Each run's exit code; null when a signal killed it.
    pub exit_codes: Vec<Option<i32>>,
    /// Every run's value of each counted figure, by JSON key.
    pub samples: BTreeMap<String, Vec<u64>>,
    /// Each run's processes counted, and of them the copies forked
    /// without `exec` (absent from baselines saved before they were
    /// kept: read as 0).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub processes: Vec<u32>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub forked_copies: Vec<u32>,
    /// The Valgrind version the runs' logs named.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tool_version: Option<String>,
    /// Where the instructions went, in the run of median instructions
    /// (at most [`MAX_PROFILE_FUNCTIONS`] functions).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub profile: Option<crate::count::Profile>,
}

/// One command's runs in a baseline.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct StoredCommand {
    pub name: String,
    pub command: String,
    #[serde(default)]
    pub parameters: Vec<(String, String)>,
    pub runs: usize,
    #[serde(default)]
    pub failed_runs: u32,
    /// Each run's exit code; null when a signal killed it.
    pub exit_codes: Vec<Option<i32>>,
    /// Why the I/O figures are absent, when they are.
    #[serde(default)]
    pub io_unavailable: Option<String>,
    /// Every run's value of each figure, by JSON key.
    pub samples: BTreeMap<String, Vec<u64>>,
    /// Runs under the simulator (`--count=sim`), apart from the timed ones.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub counted: Option<StoredCounted>,
}

/// A baseline file (see the module's text).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct BaselineFile {
    pub format: String,
    pub schema_version: u32,
    pub machine: Fingerprint,
    /// Other work on the machine while the runs ran, percent of one CPU.
    #[serde(default)]
    pub other_cpu_percent: Option<f64>,
    /// The speed probes made with the runs (nanoseconds each; absent in
    /// baselines saved before there were).
    #[serde(default)]
    pub speed_probe_ns: Vec<u64>,
    /// Which work the probes timed (`crate::speed::VERSION`; 1 when
    /// absent): probes of another version are not compared.
    #[serde(default = "crate::speed::first_version")]
    pub speed_probe_version: u32,
    pub options: RunShape,
    /// How the counted figures were counted (`--count`), when they were.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub count_source: Option<crate::count::Source>,
    pub seed: u64,
    pub commands: Vec<StoredCommand>,
    /// Read from the header (the output stage writes it).
    #[serde(default, skip_serializing)]
    pub tally_version: Option<String>,
    /// Read from the header: when the file was written.
    #[serde(default, skip_serializing)]
    pub timestamp: Option<String>,
}

/// Why a baseline cannot be written.
#[derive(Debug, thiserror::Error)]
#[error("--save-baseline: {0}")]
pub struct SaveError(pub String);

impl BaselineFile {
    /// The runs measured now in `report` (not those read from a baseline).
    pub fn of(report: &CompareReport, cfg: &Config) -> Result<BaselineFile, SaveError> {
        let measured: Vec<&CommandResult> = report
            .commands
            .iter()
            .filter(|c| !c.from_baseline)
            .collect();
        let runs: usize = measured.iter().map(|c| c.runs.len()).sum();
        if runs > MAX_RUNS {
            return Err(SaveError(format!(
                "{runs} runs; a baseline keeps at most {MAX_RUNS} (fewer -n, --max-runs or commands)"
            )));
        }
        if measured.len() > MAX_COMMANDS {
            return Err(SaveError(format!(
                "{} commands; a baseline keeps at most {MAX_COMMANDS}",
                measured.len()
            )));
        }
        // A later comparison matches its commands to these by name: two of
        // one name would both match the first.
        for (i, c) in measured.iter().enumerate() {
            if let Some(j) = measured[..i].iter().position(|d| d.name == c.name) {
                return Err(SaveError(format!(
                    "commands {} and {} are both named {}: a baseline tells its commands by \
                     name; give each a --name of its own",
                    j + 1,
                    i + 1,
                    crate::text::Foreign(&c.name)
                )));
            }
        }
        let commands = measured.into_iter().map(stored).collect();
        Ok(BaselineFile {
            format: FORMAT.into(),
            schema_version: SCHEMA_VERSION,
            machine: fingerprint(),
            other_cpu_percent: report.other_cpu_percent,
            speed_probe_ns: report
                .speed
                .as_ref()
                .map(|s| s.probes_ns.clone())
                .unwrap_or_default(),
            speed_probe_version: crate::speed::VERSION,
            options: RunShape::of(cfg),
            count_source: report.count.as_ref().map(|c| c.source.clone()),
            seed: report.seed,
            commands,
            tally_version: None,
            timestamp: None,
        })
    }
}

fn stored(c: &CommandResult) -> StoredCommand {
    let (simulated, timed): (Vec<&RunRecord>, Vec<&RunRecord>) =
        c.runs.iter().partition(|r| r.simulated());
    let samples_of = |runs: &[&RunRecord], counted_only: bool| -> BTreeMap<String, Vec<u64>> {
        FIGURES
            .iter()
            .filter(|f| !counted_only || f.counted)
            .filter_map(|f| {
                let v: Option<Vec<u64>> = runs.iter().map(|r| f.value(r)).collect();
                Some((f.key.to_string(), v.filter(|v| !v.is_empty())?))
            })
            .collect()
    };
    let counted = (!simulated.is_empty()).then(|| StoredCounted {
        runs: simulated.len(),
        exit_codes: simulated.iter().map(|r| r.exit.code).collect(),
        samples: samples_of(&simulated, true),
        processes: simulated
            .iter()
            .map(|r| r.counted().map_or(0, |x| x.processes))
            .collect(),
        forked_copies: simulated
            .iter()
            .map(|r| r.counted().map_or(0, |x| x.forked_copies))
            .collect(),
        tool_version: simulated
            .iter()
            .find_map(|r| r.counted().and_then(|x| x.tool_version.clone())),
        profile: c
            .count
            .as_ref()
            .and_then(|r| r.profile.clone())
            .map(|p| p.truncated(MAX_PROFILE_FUNCTIONS, MAX_PROFILE_TEXT)),
    });
    StoredCommand {
        name: c.name.clone(),
        command: c.command.clone(),
        parameters: c.parameters.clone(),
        runs: timed.len(),
        failed_runs: timed.iter().filter(|r| r.exit.code != Some(0)).count() as u32,
        exit_codes: timed.iter().map(|r| r.exit.code).collect(),
        io_unavailable: timed.iter().find_map(|r| r.io_unavailable.clone()),
        samples: samples_of(&timed, false),
        counted,
    }
}

/// A stored command's runs as run records (the timed ones, then those
/// under the simulator), or why they are not whole.
fn records(c: &StoredCommand) -> Result<Vec<RunRecord>, String> {
    let mut out = if c.runs == 0 {
        Vec::new()
    } else {
        timed_records(c)?
    };
    if let Some(counted) = &c.counted {
        out.extend(counted_records(&c.name, counted)?);
    }
    Ok(out)
}

/// The counted figures of run `i` from `samples`, by JSON key.
/// `sim` (the runs `c` stored): with each run's processes and the
/// Valgrind version.
fn counted_of(
    source: crate::count::Kind,
    samples: &BTreeMap<String, Vec<u64>>,
    c: Option<&StoredCounted>,
    i: usize,
) -> Option<crate::count::CountState> {
    let get = |k: &str| samples.get(k).and_then(|v| v.get(i)).copied();
    let each = |v: Option<&Vec<u32>>| v.and_then(|v| v.get(i)).copied().unwrap_or(0);
    let instructions = get("instructions");
    instructions?;
    Some(crate::count::CountState::Measured(Box::new(
        crate::count::Counted {
            source,
            instructions,
            cycles: get("cycles"),
            data_reads: get("data_reads"),
            data_writes: get("data_writes"),
            l1_misses: get("l1_misses"),
            ll_misses: get("ll_misses"),
            estimated_cycles: get("estimated_cycles"),
            processes: each(c.map(|c| &c.processes)),
            forked_copies: each(c.map(|c| &c.forked_copies)),
            tool_version: c.and_then(|c| c.tool_version.clone()),
            time_enabled_ns: None,
            time_running_ns: None,
            events: Vec::new(),
            refused: Vec::new(),
            profile: None,
        },
    )))
}

/// The most processes one counted run may have (each wrote a file).
const MAX_COUNTED_PROCESSES: u32 = 1 << 20;

/// A stored command's runs under the simulator as run records.
fn counted_records(name: &str, c: &StoredCounted) -> Result<Vec<RunRecord>, String> {
    for (key, values) in &c.samples {
        if values.len() != c.runs {
            return Err(format!(
                "command {name:?}: counted {key} has {} values for {} runs",
                values.len(),
                c.runs
            ));
        }
    }
    for (key, values) in [
        ("processes", &c.processes),
        ("forked_copies", &c.forked_copies),
    ] {
        if !values.is_empty() && values.len() != c.runs {
            return Err(format!(
                "command {name:?}: counted {key} has {} values for {} runs",
                values.len(),
                c.runs
            ));
        }
    }
    if let Some(p) = c
        .processes
        .iter()
        .find(|p| !(1..=MAX_COUNTED_PROCESSES).contains(*p))
    {
        return Err(format!(
            "command {name:?}: counted processes holds {p}; a counted run has 1 to \
             {MAX_COUNTED_PROCESSES}"
        ));
    }
    let more_copies = c
        .forked_copies
        .iter()
        .zip(c.processes.iter().chain(std::iter::repeat(&u32::MAX)))
        .find(|(f, p)| f > p);
    if let Some((f, p)) = more_copies {
        return Err(format!(
            "command {name:?}: counted forked_copies holds {f}, more than the run's {p} processes"
        ));
    }
    if let Some(v) = &c.tool_version {
        let plain = |b: u8| b.is_ascii_alphanumeric() || b".-+_~".contains(&b);
        if v.is_empty() || v.len() > 64 || !v.bytes().all(plain) {
            return Err(format!(
                "command {name:?}: counted tool_version {} is not a version",
                crate::text::escape_text(&v.chars().take(80).collect::<String>())
            ));
        }
    }
    if c.exit_codes.len() != c.runs {
        return Err(format!(
            "command {name:?}: {} counted exit codes for {} runs",
            c.exit_codes.len(),
            c.runs
        ));
    }
    if !c.samples.contains_key("instructions") {
        return Err(format!(
            "command {name:?}: counted runs without instructions"
        ));
    }
    (0..c.runs)
        .map(|i| {
            let mut r = stored_run(0, c.exit_codes.get(i).copied().flatten());
            r.count = counted_of(crate::count::Kind::Sim, &c.samples, Some(c), i);
            Ok(r)
        })
        .collect()
}

/// Exit statuses read from a baseline (`field`'s): 0 to 255, or null
/// for a run a signal killed.
fn exit_codes(codes: &[Option<i32>], field: impl Fn() -> String) -> Result<(), String> {
    match codes.iter().flatten().find(|e| !(0..=255).contains(*e)) {
        Some(code) => Err(format!(
            "{} holds {code}; an exit status is 0 to 255 (null: killed by a signal)",
            field()
        )),
        None => Ok(()),
    }
}

/// A stored run with no figure but its wall time and exit: what the
/// stored figures are set on.
fn stored_run(wall_ns: u64, code: Option<i32>) -> RunRecord {
    let mut run = RunRecord::bare(wall_ns);
    run.io_unavailable = None;
    run.exit = ExitInfo {
        code,
        signal: code.is_none().then(|| "a signal".into()),
        signal_number: None,
        core_dumped: false,
    };
    run
}

/// A stored command's timed runs as run records.
fn timed_records(c: &StoredCommand) -> Result<Vec<RunRecord>, String> {
    for (key, values) in &c.samples {
        if values.len() != c.runs {
            return Err(format!(
                "command {:?}: {key} has {} values for {} runs",
                c.name,
                values.len(),
                c.runs
            ));
        }
    }
    if c.exit_codes.len() != c.runs {
        return Err(format!(
            "command {:?}: {} exit codes for {} runs",
            c.name,
            c.exit_codes.len(),
            c.runs
        ));
    }
    let column = |key: &str| -> Result<&Vec<u64>, String> {
        c.samples
            .get(key)
            .ok_or_else(|| format!("command {:?}: no {key} samples", c.name))
    };
    let io_column = |key: &str| c.samples.get(key);
    let wall = column("wall_ns")?;
    let user = column("user_us")?;
    let system = column("system_us")?;
    let rss = column("max_rss_bytes")?;
    let minor = column("minor_faults")?;
    let major = column("major_faults")?;
    let voluntary = column("voluntary_switches")?;
    let involuntary = column("involuntary_switches")?;
    let block_in = column("block_input_ops")?;
    let block_out = column("block_output_ops")?;
    let io = (
        io_column("storage_read_bytes"),
        io_column("storage_write_bytes"),
        io_column("read_call_bytes"),
        io_column("write_call_bytes"),
    );
    let waits = [
        "cpu_wait_ns",
        "io_wait_ns",
        "memory_stall_ns",
        "other_wait_ns",
    ]
    .map(|k| c.samples.get(k));
    let gpu = ["gpu_mem_peak_bytes", "gpu_busy_ns", "gpu_energy_mj"].map(|k| c.samples.get(k));
    let at = |v: &Vec<u64>, i: usize| v.get(i).copied().unwrap_or(0);
    let mut out = Vec::with_capacity(c.runs);
    for i in 0..c.runs {
        let code = c.exit_codes.get(i).copied().flatten();
        out.push(RunRecord {
            wall_ns: at(wall, i),
            user_us: at(user, i),
            system_us: at(system, i),
            max_rss_bytes: at(rss, i),
            minor_faults: at(minor, i),
            major_faults: at(major, i),
            voluntary_switches: at(voluntary, i),
            involuntary_switches: at(involuntary, i),
            block_input_ops: at(block_in, i),
            block_output_ops: at(block_out, i),
            io: match io {
                (Some(sr), Some(sw), Some(rc), Some(wc)) => Some(IoCounters {
                    storage_read_bytes: at(sr, i),
                    storage_write_bytes: at(sw, i),
                    read_call_bytes: at(rc, i),
                    write_call_bytes: at(wc, i),
                    ..IoCounters::default()
                }),
                _ => None,
            },
            io_source: None,
            io_unavailable: c.io_unavailable.clone(),
            counters: None,
            // The CPU's counters counted the timed runs.
            count: counted_of(crate::count::Kind::Hw, &c.samples, None, i),
            tree: None,
            cold: None,
            why: waits.iter().any(Option::is_some).then(|| {
                let [cpu, io, memory, other] = waits.map(|w| w.map(|v| at(v, i)));
                crate::run::report::Why::from_stored(at(wall, i), cpu, io, memory, other)
            }),
            exit: ExitInfo {
                code,
                signal: code.is_none().then(|| "a signal".into()),
                signal_number: None,
                core_dumped: false,
            },
            forwarded_signal: None,
            escalated_to_sigkill: false,
            gpu: if gpu.iter().any(Option::is_some) {
                let [mem, busy, energy] = gpu.map(|g| g.map(|v| at(v, i)));
                crate::gpu::GpuPart::measured(crate::gpu::Gpu::from_stored(mem, busy, energy))
            } else {
                Default::default()
            },
        });
    }
    Ok(out)
}

/// Why a baseline cannot be used; each names the file and the fix.
#[derive(Debug, thiserror::Error)]
pub enum BaselineError {
    /// It names the file, its type or the cap, and the fix.
    #[error(transparent)]
    Read(#[from] crate::input::InputError),
    #[error(
        "the baseline {} is truncated (it ends at byte {size}); save it again with --save-baseline",
        display(path)
    )]
    Truncated { path: PathBuf, size: usize },
    #[error(
        "{} is {what}, not a tally compare baseline; write one with `tally compare --save-baseline FILE COMMAND...`",
        display(path)
    )]
    Foreign { path: PathBuf, what: String },
    #[error(
        "the baseline {} has format version {found}, newer than this tally reads ({SCHEMA_VERSION}); use the tally that wrote it ({}), or save the baseline again",
        display(path),
        version.as_deref().unwrap_or("a newer version")
    )]
    Newer {
        path: PathBuf,
        found: u64,
        version: Option<String>,
    },
    #[error(
        "the baseline {} is corrupt: {why}; save it again with --save-baseline",
        display(path)
    )]
    Corrupt { path: PathBuf, why: String },
    #[error(
        "command {command:?} matches nothing in the baseline {} (it holds {held}); give the --name it was saved with, or save a new baseline",
        display(path)
    )]
    NoMatch {
        path: PathBuf,
        command: String,
        held: String,
    },
}

impl BaselineError {
    /// 2 for commands that match nothing (the command line is wrong), 1
    /// for a file that cannot be used.
    pub fn exit_code(&self) -> u8 {
        match self {
            BaselineError::NoMatch { .. } => 2,
            _ => 1,
        }
    }
}

/// A baseline file as the bounded reader takes it.
const BOUND: crate::input::Bound = crate::input::Bound {
    what: "baseline",
    cap_bytes: MAX_FILE_BYTES,
    fix: "give the file `tally compare --save-baseline FILE COMMAND...` wrote",
};

/// The bytes of a baseline file: a regular file of at most
/// [`MAX_FILE_BYTES`].
fn read(path: &Path) -> Result<Vec<u8>, BaselineError> {
    Ok(crate::input::read_file(path, &BOUND)?)
}

/// The fields read first, to tell what kind of document a file is.
#[derive(Deserialize)]
struct Probe {
    format: Option<serde_json::Value>,
    /// Any JSON value: one of the wrong type is corrupt, named below.
    schema_version: Option<serde_json::Value>,
    tally_version: Option<serde_json::Value>,
    commands: Option<serde::de::IgnoredAny>,
    versus_reference: Option<serde::de::IgnoredAny>,
    reference_is: Option<serde::de::IgnoredAny>,
    benchmarks: Option<serde::de::IgnoredAny>,
    runs: Option<serde::de::IgnoredAny>,
}

/// What a JSON document that is not a baseline looks like it is.
fn kind_of(p: &Probe) -> String {
    if p.reference_is.is_some() || p.versus_reference.is_some() {
        "a `tally compare` report (--format json)".into()
    } else if p.benchmarks.is_some() {
        "a `tally bench` report".into()
    } else if p.runs.is_some() && p.commands.is_none() {
        "a `tally run` report".into()
    } else {
        match &p.format {
            Some(f) => format!(
                "a document of format {}",
                crate::text::escape_text(&f.to_string())
            ),
            None => "a JSON document of another kind".into(),
        }
    }
}

/// Reads and checks a baseline file.
pub fn load(path: &Path) -> Result<BaselineFile, BaselineError> {
    let bytes = read(path)?;
    parse(path, &bytes)
}

/// Checks the bytes of a baseline file (see [`load`]).
pub fn parse(path: &Path, bytes: &[u8]) -> Result<BaselineFile, BaselineError> {
    let path_buf = || path.to_path_buf();
    let corrupt = |why: String| BaselineError::Corrupt {
        path: path_buf(),
        why,
    };
    let probe: Probe = match serde_json::from_slice(bytes) {
        Ok(p) => p,
        Err(e) if e.classify() == serde_json::error::Category::Eof && !bytes.is_empty() => {
            return Err(BaselineError::Truncated {
                path: path_buf(),
                size: bytes.len(),
            });
        }
        Err(e) if bytes.is_empty() => {
            return Err(corrupt(format!("the file is empty ({e})")));
        }
        // A field given twice is a damaged baseline, not another kind of
        // document: serde names the field.
        Err(e)
            if e.classify() == serde_json::error::Category::Data
                && e.to_string().starts_with("duplicate field") =>
        {
            return Err(corrupt(crate::input::json_error(bytes, &e)));
        }
        Err(e) if e.classify() == serde_json::error::Category::Data => {
            return Err(BaselineError::Foreign {
                path: path_buf(),
                what: "a JSON document of another kind".into(),
            });
        }
        Err(_) => {
            return Err(BaselineError::Foreign {
                path: path_buf(),
                what: "not JSON".into(),
            });
        }
    };
    if probe.format.as_ref().and_then(|f| f.as_str()) != Some(FORMAT) {
        return Err(BaselineError::Foreign {
            path: path_buf(),
            what: kind_of(&probe),
        });
    }
    check_version(path, &probe)?;
    // serde quotes what it found: text not from tally.
    let file: BaselineFile =
        serde_json::from_slice(bytes).map_err(|e| corrupt(crate::input::json_error(bytes, &e)))?;
    if file.commands.is_empty() {
        return Err(corrupt("it holds no command".into()));
    }
    if file.commands.len() > MAX_COMMANDS {
        return Err(corrupt(format!(
            "{} commands, at most {MAX_COMMANDS}",
            file.commands.len()
        )));
    }
    let runs: usize = file.commands.iter().fold(0usize, |a, c| {
        a.saturating_add(c.runs)
            .saturating_add(c.counted.as_ref().map_or(0, |k| k.runs))
    });
    if runs > MAX_RUNS {
        return Err(corrupt(format!("{runs} runs, at most {MAX_RUNS}")));
    }
    for c in &file.commands {
        // Timed runs: two at least to compare; none where the command's
        // runs were all counted under the simulator.
        let counted_only = c.runs == 0 && c.counted.as_ref().is_some_and(|k| k.runs > 0);
        if c.runs < 2 && !counted_only {
            return Err(corrupt(format!(
                "command {:?} has {} run{}, a comparison needs at least 2",
                c.name,
                c.runs,
                if c.runs == 1 { "" } else { "s" }
            )));
        }
        let long = [&c.name, &c.command]
            .into_iter()
            .chain(c.parameters.iter().flat_map(|(k, v)| [k, v]))
            .any(|t| t.len() > MAX_TEXT_BYTES);
        if long {
            return Err(corrupt(format!(
                "command {:?}: a text over {MAX_TEXT_BYTES} bytes",
                c.name.chars().take(40).collect::<String>()
            )));
        }
        records(c).map_err(corrupt)?;
    }
    validate(&file).map_err(corrupt)?;
    Ok(file)
}

/// The probe's `schema_version`: one this tally reads, or why not.
fn check_version(path: &Path, probe: &Probe) -> Result<(), BaselineError> {
    let corrupt = |why: String| BaselineError::Corrupt {
        path: path.to_path_buf(),
        why,
    };
    let path_buf = || path.to_path_buf();
    let version = probe.schema_version.as_ref().map(|v| (v.as_u64(), v));
    match version {
        Some((Some(v), _)) if v > u64::from(SCHEMA_VERSION) => {
            return Err(BaselineError::Newer {
                path: path_buf(),
                found: v,
                version: probe
                    .tally_version
                    .as_ref()
                    .and_then(|t| t.as_str())
                    // Text from the file: escaped, and short.
                    .map(|t| crate::text::escape_text(&t.chars().take(40).collect::<String>())),
            });
        }
        Some((Some(v), _))
            if (u64::from(FIRST_VERSION)..=u64::from(SCHEMA_VERSION)).contains(&v) => {}
        Some((Some(v), _)) => {
            return Err(corrupt(format!(
                "schema_version is {v}, this tally reads {FIRST_VERSION} to {SCHEMA_VERSION}"
            )));
        }
        Some((None, raw)) => {
            let shown: String = raw.to_string().chars().take(40).collect();
            return Err(corrupt(format!(
                "schema_version is {}, not a whole number (this tally reads {SCHEMA_VERSION})",
                crate::text::escape_text(&shown)
            )));
        }
        None => {
            return Err(corrupt(format!(
                "schema_version is missing (this tally reads {SCHEMA_VERSION})"
            )));
        }
    }
    Ok(())
}

/// The largest value a stored sample may hold: 2^53, the largest integer
/// the statistics (in f64) hold exactly; 104 days in ns, 8 PiB in bytes.
pub const MAX_SAMPLE: u64 = 1 << 53;

/// The most other work a baseline may say it saw, percent of one CPU
/// (every CPU of a 10,000-CPU machine busy).
const MAX_OTHER_CPU_PERCENT: f64 = 1_000_000.0;

/// Every number of a parsed baseline checked once, here, so that no later
/// code sees a corrupt one: finite, in range, consistent with the rest of
/// the document. The error names the field and the reason.
fn validate(file: &BaselineFile) -> Result<(), String> {
    if let Some(p) = file.other_cpu_percent
        && !(p.is_finite() && (0.0..=MAX_OTHER_CPU_PERCENT).contains(&p))
    {
        return Err(format!(
            "other_cpu_percent is {}, not a share of CPUs between 0 and {MAX_OTHER_CPU_PERCENT}",
            crate::units::short_number(p)
        ));
    }
    crate::speed::check_probes("speed_probe_ns", &file.speed_probe_ns)?;
    if file.machine.cpus == Some(0) {
        return Err("machine.cpus is 0; a machine has at least one CPU".into());
    }
    for (i, c) in file.commands.iter().enumerate() {
        let at = |field: &str| {
            format!(
                "commands[{i}] ({}).{field}",
                crate::text::escape_text(&c.name.chars().take(40).collect::<String>())
            )
        };
        if c.runs > MAX_RUNS {
            return Err(format!("{} is {}, at most {MAX_RUNS}", at("runs"), c.runs));
        }
        if c.failed_runs as usize > c.runs {
            return Err(format!(
                "{} is {}, more than its {} runs",
                at("failed_runs"),
                c.failed_runs,
                c.runs
            ));
        }
        let failed = c.exit_codes.iter().filter(|e| **e != Some(0)).count();
        if failed != c.failed_runs as usize {
            return Err(format!(
                "{} is {}, but {failed} of its exit_codes are a failure",
                at("failed_runs"),
                c.failed_runs
            ));
        }
        exit_codes(&c.exit_codes, || at("exit_codes"))?;
        for (key, values) in &c.samples {
            if let Some(v) = values.iter().find(|v| **v > MAX_SAMPLE) {
                return Err(format!(
                    "{} holds {v}, over {MAX_SAMPLE}, more than any run measures",
                    at(&format!("samples.{}", crate::text::escape_text(key)))
                ));
            }
        }
        if let Some(k) = &c.counted {
            if k.runs > MAX_RUNS {
                return Err(format!(
                    "{} is {}, at most {MAX_RUNS}",
                    at("counted.runs"),
                    k.runs
                ));
            }
            exit_codes(&k.exit_codes, || at("counted.exit_codes"))?;
            for (key, values) in &k.samples {
                if !super::gate::counted(key) {
                    return Err(format!(
                        "{} is not a counted figure",
                        at(&format!(
                            "counted.samples.{}",
                            crate::text::escape_text(key)
                        ))
                    ));
                }
                if let Some(v) = values.iter().find(|v| **v > MAX_SAMPLE) {
                    return Err(format!(
                        "{} holds {v}, over {MAX_SAMPLE}, more than any run counts",
                        at(&format!(
                            "counted.samples.{}",
                            crate::text::escape_text(key)
                        ))
                    ));
                }
            }
            if let Some(p) = &k.profile {
                p.check(MAX_PROFILE_FUNCTIONS, MAX_PROFILE_TEXT)
                    .map_err(|why| format!("{}: {why}", at("counted.profile")))?;
            }
        }
        if let Some(wall) = c.samples.get("wall_ns")
            && wall.contains(&0)
        {
            return Err(format!(
                "{} holds 0; every run takes some time",
                at("samples.wall_ns")
            ));
        }
    }
    Ok(())
}

/// The instances of a `--baseline` comparison given no command: every
/// command of the file, run as it was saved (its shell).
pub fn instances(file: &BaselineFile) -> Vec<Instance> {
    let shell = Shell::parse(&file.options.shell).unwrap_or_default();
    file.commands
        .iter()
        .map(|c| Instance {
            name: c.name.clone(),
            command: c.command.clone(),
            argv: shell.argv(&c.command),
            parameters: c.parameters.clone(),
        })
        .collect()
}

/// Matches each of `cfg`'s instances to a stored command (by name, else
/// by command string), and says what differs from the comparison that
/// saved it.
pub fn matched(path: &Path, file: &BaselineFile, cfg: &Config) -> Result<Baseline, BaselineError> {
    let mut commands = Vec::with_capacity(cfg.instances.len());
    for inst in &cfg.instances {
        let found = file
            .commands
            .iter()
            .find(|c| c.name == inst.name)
            .or_else(|| file.commands.iter().find(|c| c.command == inst.command));
        let Some(stored) = found else {
            let held: Vec<String> = file
                .commands
                .iter()
                .take(8)
                .map(|c| format!("{:?}", c.name))
                .collect();
            let more = file.commands.len().saturating_sub(8);
            return Err(BaselineError::NoMatch {
                path: path.to_path_buf(),
                command: inst.name.clone(),
                held: if more > 0 {
                    format!("{} and {more} more", held.join(", "))
                } else {
                    held.join(", ")
                },
            });
        };
        let runs = records(stored).map_err(|why| BaselineError::Corrupt {
            path: path.to_path_buf(),
            why,
        })?;
        commands.push(StoredRuns {
            name: stored.name.clone(),
            command: stored.command.clone(),
            parameters: stored.parameters.clone(),
            runs,
            failed_runs: stored.failed_runs,
            profile: stored.counted.as_ref().and_then(|k| k.profile.clone()),
        });
    }
    let mut differences = Vec::new();
    let here = fingerprint();
    let machine = file.machine.differences(&here);
    if !machine.is_empty() {
        differences.push(format!(
            "saved on another machine: {}; differences may be the machine's",
            machine.join(", ")
        ));
    }
    let ours = env!("CARGO_PKG_VERSION");
    if let Some(v) = &file.tally_version
        && v != ours
    {
        differences.push(format!(
            "saved by tally {}, this is tally {ours}",
            crate::text::Foreign(v)
        ));
    }
    if !file.speed_probe_ns.is_empty() && file.speed_probe_version != crate::speed::VERSION {
        differences.push(format!(
            "its speed probes timed other work (probe version {}, this is {}): the machine's \
             speed then and now is not compared",
            file.speed_probe_version,
            crate::speed::VERSION
        ));
    }
    let options = file.options.differences(&RunShape::of(cfg));
    if !options.is_empty() {
        differences.push(format!("saved with other options: {}", options.join(", ")));
    }
    Ok(Baseline {
        commands,
        about: BaselineUse {
            path: path.to_path_buf(),
            saved_at: file.timestamp.clone(),
            tally_version: file.tally_version.clone(),
            machine: file.machine.clone(),
            other_cpu_percent: file.other_cpu_percent,
            // A probe of 0 ns or over a second is no probe of this work,
            // and probes of another version timed other work.
            // Probes of another version timed other work (said above).
            speed_probe_ns: if file.speed_probe_version == crate::speed::VERSION {
                file.speed_probe_ns.clone()
            } else {
                Vec::new()
            },
            probes_of_other_work: !file.speed_probe_ns.is_empty()
                && file.speed_probe_version != crate::speed::VERSION,
            count_source: file.count_source.clone(),
            differences,
        },
    })
}

// A baseline is JSON only; the other forms exist for the Render trait.
crate::forms_of!(BaselineFile: Data);

impl crate::report::Render for BaselineFile {
    fn human(&self, out: &mut dyn std::io::Write, _: crate::report::Style) -> std::io::Result<()> {
        for c in &self.commands {
            writeln!(out, "baseline: {} ({} runs)", c.name, c.runs)?;
        }
        Ok(())
    }

    fn table(&self) -> crate::report::Table {
        crate::report::Table {
            headers: vec!["name".into(), "command".into(), "runs".into()],
            rows: self
                .commands
                .iter()
                .map(|c| vec![c.name.clone(), c.command.clone(), c.runs.to_string()])
                .collect(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::compare::plan::Instance;

    fn result(name: &str, n: u64) -> CommandResult {
        let mut c = CommandResult::new(
            &Instance {
                name: name.into(),
                command: format!("./{name}"),
                argv: Vec::new(),
                parameters: vec![("n".into(), "3".into())],
            },
            n as usize,
        );
        for i in 0..n {
            c.runs.push(RunRecord {
                wall_ns: 1_000_000 + i * 1000,
                user_us: 700 + i,
                system_us: 200 + i,
                max_rss_bytes: 2_000_000 + i * 4096,
                minor_faults: 100 + i,
                major_faults: i % 2,
                voluntary_switches: 3,
                involuntary_switches: i % 3,
                block_input_ops: 8,
                block_output_ops: 0,
                io: Some(IoCounters {
                    read_call_bytes: 10_000 + i,
                    write_call_bytes: 20,
                    storage_read_bytes: 4096,
                    storage_write_bytes: 0,
                    ..IoCounters::default()
                }),
                io_source: None,
                io_unavailable: None,
                counters: None,
                count: None,
                gpu: crate::gpu::GpuPart::measured(crate::gpu::Gpu::from_stored(
                    Some((2_660 + i) << 20),
                    Some(7_000_000 + i),
                    Some(212_450 + i),
                )),
                ..RunRecord::bare(0)
            });
        }
        c
    }

    fn file_of(c: &CommandResult) -> BaselineFile {
        BaselineFile {
            format: FORMAT.into(),
            schema_version: SCHEMA_VERSION,
            machine: Fingerprint::default(),
            other_cpu_percent: Some(3.0),
            speed_probe_ns: Vec::new(),
            speed_probe_version: crate::speed::VERSION,
            options: RunShape::default(),
            count_source: None,
            seed: 7,
            commands: vec![stored(c)],
            tally_version: None,
            timestamp: None,
        }
    }

    fn json(file: &BaselineFile) -> Vec<u8> {
        let mut out = Vec::new();
        crate::report::json::write(file, &mut out).unwrap();
        out
    }

    #[test]
    fn every_figure_of_every_run_round_trips() {
        let c = result("old", 12);
        let bytes = json(&file_of(&c));
        let back = parse(Path::new("b.json"), &bytes).expect("parses");
        let runs = records(&back.commands[0]).unwrap();
        assert_eq!(runs.len(), 12);
        for fig in FIGURES {
            let then: Vec<Option<u64>> = c.runs.iter().map(|r| fig.value(r)).collect();
            let now: Vec<Option<u64>> = runs.iter().map(|r| fig.value(r)).collect();
            assert_eq!(then, now, "{}", fig.key);
        }
        assert_eq!(back.commands[0].parameters, c.parameters);
        assert_eq!(back.tally_version.as_deref(), Some("[tally_version]"));
        assert!(bytes.len() < 12 * VALUES_PER_RUN * MAX_VALUE_BYTES + 4096);
    }

    /// Stored counted runs came back with 0 processes and no Valgrind
    /// version: a zero posing as a count in compare's JSON.
    #[test]
    fn counted_runs_keep_their_processes_and_valgrind_version() {
        let counted = |processes: u32| crate::count::Counted {
            source: crate::count::Kind::Sim,
            instructions: Some(1_000_000),
            cycles: None,
            data_reads: Some(10),
            data_writes: Some(5),
            l1_misses: Some(1),
            ll_misses: Some(0),
            estimated_cycles: Some(1_000_100),
            processes,
            forked_copies: 1,
            tool_version: Some("3.19.0".into()),
            time_enabled_ns: None,
            time_running_ns: None,
            events: Vec::new(),
            refused: Vec::new(),
            profile: None,
        };
        let mut c = result("old", 2);
        for p in [2, 3] {
            let mut r = RunRecord::bare(0);
            r.count = Some(crate::count::CountState::Measured(Box::new(counted(p))));
            assert!(r.simulated());
            c.runs.push(r);
        }
        let file = file_of(&c);
        let back = parse(Path::new("b.json"), &json(&file)).expect("parses");
        let runs = records(&back.commands[0]).unwrap();
        let got: Vec<(u32, u32, Option<String>)> = runs
            .iter()
            .filter_map(|r| r.counted())
            .map(|x| (x.processes, x.forked_copies, x.tool_version.clone()))
            .collect();
        assert_eq!(
            got,
            [
                (2, 1, Some("3.19.0".to_string())),
                (3, 1, Some("3.19.0".to_string()))
            ]
        );
        type Spoil = fn(&mut StoredCounted);
        let cases: [(Spoil, &str); 4] = [
            (
                |s| s.processes.pop().map(drop).unwrap_or(()),
                "counted processes has 1 values for 2 runs",
            ),
            (|s| s.processes[0] = 0, "counted processes holds 0"),
            (
                |s| s.forked_copies[1] = 4,
                "counted forked_copies holds 4, more than the run's 3",
            ),
            (
                |s| s.tool_version = Some("3.19\u{1b}[2J".into()),
                "counted tool_version 3.19\\x1b[2J is not a version",
            ),
        ];
        for (spoil, want) in cases {
            let mut f = file.clone();
            spoil(f.commands[0].counted.as_mut().unwrap());
            let e = records(&f.commands[0]).unwrap_err();
            assert!(e.contains(want), "{e}");
        }
    }

    #[test]
    fn corrupt_foreign_newer_and_truncated_files_are_refused_by_name() {
        let path = Path::new("b.json");
        let good = json(&file_of(&result("old", 5)));
        let err = |bytes: &[u8]| parse(path, bytes).unwrap_err().to_string();
        let cut = err(&good[..good.len() / 2]);
        assert!(cut.contains("truncated"), "{cut}");
        assert!(err(b"").contains("empty"));
        assert!(err(b"\x7fELF\x02\x01").contains("not JSON"));
        let report = err(br#"{"reference_is": "fastest", "commands": []}"#);
        assert!(report.contains("a `tally compare` report"), "{report}");
        assert!(err(br#"{"benchmarks": []}"#).contains("`tally bench`"));
        assert!(err(b"[1, 2]").contains("another kind"));
        let text = String::from_utf8(good.clone()).unwrap();
        let newer = text.replace(
            &format!("\"schema_version\": {SCHEMA_VERSION}"),
            "\"schema_version\": 99",
        );
        let e = err(newer.as_bytes());
        assert!(e.contains("version 99, newer"), "{e}");
        // A column one value short.
        let short = text.replacen("\"wall_ns\": [\n", "\"wall_ns\": [\n      7,\n", 1);
        let e = err(short.as_bytes());
        assert!(
            e.contains("corrupt") && e.contains("wall_ns has 6 values for 5 runs"),
            "{e}"
        );
        let one = text.replace("\"runs\": 5", "\"runs\": 1");
        assert!(err(one.as_bytes()).contains("corrupt"));
    }

    #[test]
    fn a_missing_baseline_says_how_to_make_one() {
        let dir = tempfile::tempdir().unwrap();
        let e = load(&dir.path().join("none")).unwrap_err();
        assert!(e.to_string().contains("--save-baseline FILE"), "{e}");
        let e = load(dir.path()).unwrap_err();
        assert!(
            e.to_string().contains("a directory, not a regular file"),
            "{e}"
        );
        // The bound follows from the limits of the format.
        const {
            assert!(MAX_FILE_BYTES > (MAX_RUNS * FIGURES.len() * 20) as u64);
            assert!(MAX_FILE_BYTES < 512 << 20);
        }
    }

    #[test]
    fn machines_and_options_that_differ_are_named() {
        let then = Fingerprint {
            cpu_model: Some("A".into()),
            cpus: Some(2),
            kernel: Some("6.1".into()),
            memory_bytes: Some(4 << 30),
        };
        let now = Fingerprint {
            cpus: Some(4),
            kernel: Some("6.8".into()),
            ..then.clone()
        };
        assert_eq!(
            then.differences(&now),
            ["2 CPUs then, 4 now", "kernel 6.1 then, 6.8 now"]
        );
        assert!(then.differences(&then).is_empty());
        let a = RunShape {
            shell: "sh".into(),
            command_output: "null".into(),
            ..RunShape::default()
        };
        let b = RunShape {
            shell: "none".into(),
            warmup: 3,
            ..a.clone()
        };
        assert_eq!(
            a.differences(&b),
            ["--shell sh then, none now", "--warmup 0 then, 3 now"]
        );
    }
}

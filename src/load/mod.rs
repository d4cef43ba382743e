//! `tally load FILE`: ways of loading a big file, compared cold and warm.
//!
//! Each load runs in a child process (tally re-executes itself with the
//! hidden `--child METHOD`) under the machinery of `tally run`, so wall and
//! cpu time, peak RSS, faults and block input are the method's own. Cold
//! runs evict the file and verify it left the cache first (no root
//! needed); warm runs read in whatever is missing first. Every method then
//! uses the data — a checksum over every byte by default — and the
//! checksums must agree.
//!
//! The file's identity (device, inode, size, modification time) is
//! checked before and after every load ([`identity`]): a load during which
//! it changed is invalid ("the file changed"), no later load runs, and the
//! command fails.
//!
//! SIGINT, SIGTERM, SIGHUP and SIGQUIT stop the comparison: a load that is
//! running gets the signal (and is reaped), no further load starts, the
//! result directory is removed, and [`execute`] returns
//! [`LoadError::Interrupted`].
//!
//! [`command`] takes the command from its arguments to its exit code.

pub mod args;
pub mod checksum;
pub mod child;
pub mod command;
pub mod hold;
pub mod identity;
pub mod memlimit;
pub mod procs;
pub mod procs_report;
pub mod report;

use std::ffi::OsString;
use std::io;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use crate::run;
use crate::stats;
use crate::sys::{self, signals::Forwarder};
use crate::text::path::display;
use report::{LoadReport, MethodResult, Methods};

/// A way of loading a file.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, clap::ValueEnum)]
#[serde(rename_all = "kebab-case")]
pub enum Method {
    /// The whole file into one heap buffer with read() (std::ifstream).
    Read,
    /// read() in 1 MiB chunks.
    ReadChunks,
    /// POSIX_FADV_SEQUENTIAL, then read() in 1 MiB chunks.
    FadviseRead,
    /// mmap(MAP_SHARED), then touch the pages.
    Mmap,
    /// mmap + MADV_SEQUENTIAL.
    MmapSequential,
    /// mmap + MADV_WILLNEED.
    MmapWillneed,
    /// mmap with MAP_POPULATE.
    MmapPopulate,
    /// mmap + MADV_POPULATE_READ (Linux 5.14+).
    PopulateRead,
    /// O_DIRECT reads of 4 MiB into an aligned buffer (no page cache).
    Direct,
    /// io_uring, buffered, 4 reads of 4 MiB in flight.
    Uring,
    /// io_uring with O_DIRECT.
    UringDirect,
}

impl Method {
    pub const ALL: [Method; 11] = [
        Method::Read,
        Method::ReadChunks,
        Method::FadviseRead,
        Method::Mmap,
        Method::MmapSequential,
        Method::MmapWillneed,
        Method::MmapPopulate,
        Method::PopulateRead,
        Method::Direct,
        Method::Uring,
        Method::UringDirect,
    ];

    /// The name used on the command line and in reports.
    pub fn name(self) -> &'static str {
        match self {
            Method::Read => "read",
            Method::ReadChunks => "read-chunks",
            Method::FadviseRead => "fadvise-read",
            Method::Mmap => "mmap",
            Method::MmapSequential => "mmap-sequential",
            Method::MmapWillneed => "mmap-willneed",
            Method::MmapPopulate => "mmap-populate",
            Method::PopulateRead => "populate-read",
            Method::Direct => "direct",
            Method::Uring => "uring",
            Method::UringDirect => "uring-direct",
        }
    }
}

/// How much of the loaded data each method uses.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize, clap::ValueEnum)]
#[serde(rename_all = "lowercase")]
pub enum Touch {
    /// Nothing: lazy methods (mmap) then load almost nothing.
    None,
    /// One byte per page.
    Page,
    /// A checksum over every byte (the default, fair to lazy methods).
    #[default]
    All,
}

/// Cache state before a load.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Mode {
    Cold,
    Warm,
}

impl Mode {
    /// Its name in reports: `cold` or `warm`.
    pub fn name(self) -> &'static str {
        match self {
            Mode::Cold => "cold",
            Mode::Warm => "warm",
        }
    }
}

/// What to compare.
#[derive(Debug, Clone)]
pub struct Config {
    pub file: PathBuf,
    pub methods: Vec<Method>,
    pub modes: Vec<Mode>,
    pub runs: u32,
    pub touch: Touch,
    /// The tally binary to re-execute (normally `current_exe`).
    pub exe: PathBuf,
}

/// Why `tally load` could not run.
#[derive(Debug, thiserror::Error)]
pub enum LoadError {
    #[error(
        "cannot open {}: {source} — name a readable regular file",
        display(path)
    )]
    File { path: PathBuf, source: io::Error },
    #[error(
        "{} is {kind}, not a regular file: name a regular file to load",
        display(path)
    )]
    NotRegular { path: PathBuf, kind: &'static str },
    #[error(
        "{what} needs about {} of memory ({detail}), more than the {} available \
         (MemAvailable): lower --procs, choose methods that share the page cache (mmap), or \
         add --mem-limit SIZE to run each load in a memory-limited group",
        crate::units::human_bytes(*.needed_bytes),
        crate::units::human_bytes(*.available_bytes)
    )]
    NotEnoughMemory {
        /// `--procs 256 with read of a 4.0 GiB file`
        what: String,
        needed_bytes: u64,
        available_bytes: u64,
        /// How the figure is made up.
        detail: String,
    },
    #[error("cannot create a result file: {0}")]
    Temp(io::Error),
    #[error("cannot run a load: {0}")]
    Run(#[from] run::RunError),
    #[error("cannot start a load process: {0}")]
    Spawn(io::Error),
    #[error("cannot handle signals: {0}")]
    Signals(io::Error),
    #[error("cannot find the tally binary to run loads with: {0}")]
    Exe(io::Error),
    #[error("interrupted by {name}: the running load was stopped, no other was started")]
    Interrupted { name: String, signal: i32 },
}

impl crate::failure::Failure for LoadError {
    /// The exit status for this error: 128+N when signal N interrupted
    /// the comparison (as a shell reports a command killed by it), else 1.
    fn exit_code(&self) -> u8 {
        match self {
            LoadError::Interrupted { signal, .. } => {
                u8::try_from(128 + signal.clamp(&0, &127)).unwrap_or(1)
            }
            _ => 1,
        }
    }
}

/// Progress: loads done of the total.
#[derive(Debug, Clone, Copy)]
pub struct Progress {
    pub done: u32,
    pub of: u32,
    pub method: Method,
    pub mode: Mode,
}

/// `file`'s metadata, or an error naming it unless it is a regular file
/// this process can open: checked before any load starts.
fn check_file(file: &Path) -> Result<std::fs::Metadata, LoadError> {
    let error = |source| LoadError::File {
        path: file.to_path_buf(),
        source,
    };
    let meta = std::fs::metadata(file).map_err(error)?;
    if !meta.is_file() {
        return Err(LoadError::NotRegular {
            path: file.to_path_buf(),
            kind: crate::input::kind_of(meta.file_type()),
        });
    }
    std::fs::File::open(file).map_err(error)?;
    Ok(meta)
}

/// Runs every method in every mode `runs` times.
pub fn execute(cfg: &Config, progress: &mut dyn FnMut(Progress)) -> Result<LoadReport, LoadError> {
    let meta = check_file(&cfg.file)?;
    // Held over all the loads (each `run::execute` nests its own): a
    // signal while no load runs is noted, not fatal, so the loop stops
    // and the result directory is removed on the way out.
    let forwarder = Forwarder::install().map_err(LoadError::Signals)?;
    let result_dir = tempfile::tempdir().map_err(LoadError::Temp)?;
    let result_path = result_dir.path().join("result.json");
    let runs = cfg.runs.max(1);
    let total = (cfg.methods.len() * cfg.modes.len()) as u32 * runs;
    let mut done = 0u32;
    let mut results = Vec::new();
    let start = identity::Identity::of(&meta);
    // Why the file is not the one the command started with, once it is not.
    let mut changed: Option<String> = None;
    for &mode in &cfg.modes {
        for &method in &cfg.methods {
            if changed.is_some() {
                results.push(MethodResult::invalid(
                    method,
                    mode,
                    "not run: the file changed during an earlier load".into(),
                ));
                continue;
            }
            let mut samples = Vec::new();
            for _ in 0..runs {
                if let Some(sig) = forwarder.pending() {
                    return Err(interrupted(sig));
                }
                if let Some(why) = start.change(&cfg.file) {
                    changed = Some(why);
                    break;
                }
                progress(Progress {
                    done,
                    of: total,
                    method,
                    mode,
                });
                let mut sample = one_load(cfg, method, mode, &result_path)?;
                if let Some(sig) = sample.interrupted.or_else(|| forwarder.pending()) {
                    return Err(interrupted(sig));
                }
                if let Some(why) = start.change(&cfg.file) {
                    sample.invalid = Some(format!("the file changed during this load: {why}"));
                    changed = Some(why);
                }
                samples.push(sample);
                done += 1;
                if changed.is_some() {
                    break;
                }
            }
            let mut result = summarize(method, mode, &samples);
            if result.invalid.is_none()
                && let Some(why) = &changed
            {
                // Changed between two of its loads: none of its next ran.
                result.invalid = Some(format!("the file changed before its next load: {why}"));
            }
            results.push(result);
        }
    }
    let report = LoadReport::new(
        cfg.file.clone(),
        meta.len(),
        cfg.touch,
        Methods {
            runs_per_method: runs,
            results,
        },
        changed,
    );
    drop(forwarder);
    Ok(report)
}

fn interrupted(signal: i32) -> LoadError {
    LoadError::Interrupted {
        name: sys::signal_name(signal),
        signal,
    }
}

/// One measured load.
struct Sample {
    record: Option<run::report::RunRecord>,
    child: child::ChildResult,
    resident_after_pages: Option<u64>,
    cold_left_bytes: Option<u64>,
    /// The signal that stopped this load, if one did.
    interrupted: Option<i32>,
    /// Why the load does not count: the file changed while it ran.
    invalid: Option<String>,
}

/// The number of a forwarded signal from its name.
fn signal_number(name: &str) -> Option<i32> {
    sys::signals::FORWARDED
        .into_iter()
        .find(|s| sys::signal_name(*s) == name)
}

/// Why a load left no result, from how the child ended.
fn no_result_reason(exit: Option<&run::report::ExitInfo>) -> String {
    match exit {
        Some(e) => match (&e.signal, e.code) {
            (Some(sig), _) if sig == "SIGKILL" => {
                "the load was killed by SIGKILL (by the kernel's OOM killer if memory ran out)"
                    .into()
            }
            (Some(sig), _) => format!("the load was killed by {sig}"),
            (None, Some(code)) if code == i32::from(child::EXIT_NO_MEMORY) => {
                "the load ran out of memory".into()
            }
            (None, Some(code)) => format!("the load exited with status {code} and no result"),
            (None, None) => "the load ended without a result".into(),
        },
        None => "the load did not run".into(),
    }
}

fn one_load(cfg: &Config, method: Method, mode: Mode, result: &Path) -> Result<Sample, LoadError> {
    let _ = std::fs::remove_file(result);
    if mode == Mode::Warm
        && let Ok(f) = std::fs::File::open(&cfg.file)
    {
        let size = f.metadata().map(|m| m.len()).unwrap_or(0);
        let _ = crate::pagecache::warm::warm(&f, size);
    }
    let touch = match cfg.touch {
        Touch::None => "none",
        Touch::Page => "page",
        Touch::All => "all",
    };
    let argv: Vec<OsString> = vec![
        cfg.exe.clone().into_os_string(),
        "load".into(),
        "--child".into(),
        method.name().into(),
        "--touch".into(),
        touch.into(),
        "--result".into(),
        result.as_os_str().to_owned(),
        cfg.file.clone().into_os_string(),
    ];
    let rc = run::Config {
        argv,
        runs: 1,
        quiet_command: true,
        cold: if mode == Mode::Cold {
            vec![cfg.file.clone()]
        } else {
            Vec::new()
        },
        ..Default::default()
    };
    let rep = run::execute(&rc, &mut crate::progress::Progress::none())?;
    let record = rep.runs.into_iter().next();
    let interrupted = record
        .as_ref()
        .and_then(|r| r.forwarded_signal.as_deref())
        .or(rep.interrupted_by.as_deref())
        .and_then(signal_number);
    let child = match std::fs::read(result) {
        Ok(bytes) => serde_json::from_slice(&bytes).unwrap_or_else(|e| child::ChildResult {
            error: Some(format!("unreadable result: {e}")),
            ..Default::default()
        }),
        Err(_) => child::ChildResult {
            error: Some(no_result_reason(record.as_ref().map(|r| &r.exit))),
            ..Default::default()
        },
    };
    let resident_after_pages = std::fs::File::open(&cfg.file).ok().and_then(|f| {
        let size = f.metadata().map(|m| m.len()).unwrap_or(0);
        crate::pagecache::residency(&f, &cfg.file, size).cached_pages()
    });
    let cold_left_bytes = record
        .as_ref()
        .and_then(|r| r.cold.as_ref())
        .map(|c| c.cached_after_bytes);
    Ok(Sample {
        record,
        child,
        resident_after_pages,
        cold_left_bytes,
        interrupted,
        invalid: None,
    })
}

fn median(values: impl Iterator<Item = u64>) -> Option<u64> {
    let v: Vec<f64> = values.map(|x| x as f64).collect();
    stats::summarize(&v).map(|s| s.median.round() as u64)
}

fn summarize(method: Method, mode: Mode, samples: &[Sample]) -> MethodResult {
    let ok: Vec<&Sample> = samples
        .iter()
        .filter(|s| s.child.error.is_none() && s.record.is_some() && s.invalid.is_none())
        .collect();
    let invalid = samples.iter().find_map(|s| s.invalid.clone());
    let error = samples.iter().find_map(|s| s.child.error.clone());
    let rec = |f: fn(&run::report::RunRecord) -> u64| {
        median(ok.iter().filter_map(|s| s.record.as_ref().map(f)))
    };
    let mut checksums: Vec<String> = ok.iter().filter_map(|s| s.child.checksum.clone()).collect();
    checksums.sort();
    checksums.dedup();
    MethodResult {
        method,
        mode,
        runs: ok.len() as u32,
        wall_us: rec(|r| r.wall_ns / 1000),
        user_us: rec(|r| r.user_us),
        system_us: rec(|r| r.system_us),
        max_rss_bytes: rec(|r| r.max_rss_bytes),
        minor_faults: rec(|r| r.minor_faults),
        major_faults: rec(|r| r.major_faults),
        block_input_ops: rec(|r| r.block_input_ops),
        storage_read_bytes: median(ok.iter().filter_map(|s| {
            s.record
                .as_ref()
                .and_then(|r| r.io.map(|i| i.storage_read_bytes))
        })),
        resident_after_pages: median(ok.iter().filter_map(|s| s.resident_after_pages)),
        cached_before_bytes: median(ok.iter().filter_map(|s| s.cold_left_bytes)),
        bytes_loaded: median(ok.iter().map(|s| s.child.bytes_loaded)),
        checksums,
        error: if ok.is_empty() && invalid.is_none() {
            error
        } else {
            None
        },
        invalid,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::failure::Failure;

    #[test]
    fn an_interrupt_exits_as_the_shell_reports_the_signal() {
        assert_eq!(interrupted(libc::SIGINT).exit_code(), 130);
        assert_eq!(interrupted(libc::SIGTERM).exit_code(), 143);
        let e = LoadError::NotRegular {
            path: "/dev/null".into(),
            kind: "a character device",
        };
        assert_eq!(e.exit_code(), 1);
        assert_eq!(
            e.to_string(),
            "/dev/null is a character device, not a regular file: name a regular file to load"
        );
        assert_eq!(signal_number("SIGHUP"), Some(libc::SIGHUP));
        assert_eq!(signal_number("SIGKILL"), None);
    }

    #[test]
    fn a_load_without_a_result_says_how_it_ended() {
        let exit = |code: Option<i32>, signal: Option<&str>| run::report::ExitInfo {
            code,
            signal: signal.map(String::from),
            signal_number: None,
            core_dumped: false,
        };
        let reason = |e| no_result_reason(Some(&e));
        assert!(reason(exit(None, Some("SIGKILL"))).contains("OOM killer"));
        assert_eq!(
            reason(exit(None, Some("SIGSEGV"))),
            "the load was killed by SIGSEGV"
        );
        assert_eq!(
            reason(exit(Some(child::EXIT_NO_MEMORY.into()), None)),
            "the load ran out of memory"
        );
        assert!(reason(exit(Some(101), None)).contains("status 101"));
        assert_eq!(no_result_reason(None), "the load did not run");
    }
}

//! The `sim` source: the command run under Valgrind's Cachegrind, every
//! process of its tree (`--trace-children=yes`), with one fixed cache
//! geometry ([`GEOMETRY`]) so that no figure depends on the host, the
//! address space laid out without randomisation and `PYTHONHASHSEED=0`
//! unless the user set it. Each process writes its own file into a
//! scratch directory of the run's; tally reads them all after the run,
//! checks each (see [`super::cachegrind`]), adds them up, and removes the
//! directory on every path.
//!
//! A process that forks without `exec` goes on under the same Valgrind,
//! which starts the copy with its parent's counts so far: that work is
//! counted again in the copy's file. Such copies write no log of their
//! own (`--child-silent-after-fork=yes`), which is how they are told from
//! processes Valgrind started afresh at an `exec`; they are counted as
//! Valgrind counts them, and said.

use std::ffi::{OsStr, OsString};
use std::os::unix::ffi::{OsStrExt, OsStringExt};
use std::path::{Path, PathBuf};

use super::cachegrind::{self, CgFile};
use super::profile::{ProcessCosts, Profile};
use super::{Counted, Kind};

/// One simulated cache: size, line and associativity.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Cache {
    pub name: &'static str,
    pub size_bytes: u32,
    pub ways: u32,
    pub line_bytes: u32,
}

/// The cache geometry every counted run simulates, whatever the host has:
/// 32 KiB 8-way first-level instruction and data caches and an 8 MiB
/// 16-way last level, 64-byte lines (a common x86-64 desktop part).
pub const GEOMETRY: [Cache; 3] = [
    Cache {
        name: "I1",
        size_bytes: 32 * 1024,
        ways: 8,
        line_bytes: 64,
    },
    Cache {
        name: "D1",
        size_bytes: 32 * 1024,
        ways: 8,
        line_bytes: 64,
    },
    Cache {
        name: "LL",
        size_bytes: 8 * 1024 * 1024,
        ways: 16,
        line_bytes: 64,
    },
];

/// The geometry in words: `I1 32768 B 8-way, D1 32768 B 8-way, LL
/// 8388608 B 16-way, 64 B lines`.
pub fn geometry() -> String {
    let caches: Vec<String> = GEOMETRY
        .iter()
        .map(|c| format!("{} {} B {}-way", c.name, c.size_bytes, c.ways))
        .collect();
    format!("{}, {} B lines", caches.join(", "), GEOMETRY[0].line_bytes)
}

/// The largest output file read (a program with millions of lines of
/// code writes some tens of MB).
const MAX_FILE_BYTES: u64 = 1 << 30;

/// The most output files read from one run: one per process.
const MAX_FILES: usize = 100_000;

/// How an output file is read.
const BOUND: crate::input::Bound = crate::input::Bound {
    what: "Cachegrind output",
    cap_bytes: MAX_FILE_BYTES,
    fix: "a run under tally --count=sim writes these itself",
};

/// Valgrind, found.
#[derive(Debug, Clone)]
pub struct Sim {
    valgrind: PathBuf,
}

/// Why the `sim` source cannot count here.
pub const NOT_INSTALLED: &str = "valgrind is not on PATH: install it (Debian, Ubuntu: \
    `apt-get install valgrind`; Fedora: `dnf install valgrind`)";

impl Sim {
    /// Valgrind on `PATH`, or why not.
    pub fn find() -> Result<Sim, String> {
        crate::gpu::on_path("valgrind")
            .map(|valgrind| Sim { valgrind })
            .ok_or_else(|| NOT_INSTALLED.to_string())
    }

    /// Makes one run's scratch directory and the command line and
    /// environment that run it under Cachegrind.
    pub fn prepare(&self, argv: &[OsString]) -> Result<SimRun, String> {
        if let Some(program) = argv.first() {
            refuses(program)?;
        }
        let dir = tempfile::Builder::new()
            .prefix("tally-count-")
            .tempdir()
            .map_err(|e| {
                // tempfile's error ends with the path it tried (`at path
                // "…"`), which the message names already.
                let text = e.to_string();
                let why = text
                    .rsplit_once(" at path \"")
                    .map_or(text.as_str(), |(w, _)| w);
                format!(
                    "cannot make a scratch directory for Cachegrind's files in {}: {why}; set \
                     TMPDIR to a directory this user can write",
                    crate::text::path::display(&std::env::temp_dir())
                )
            })?;
        // Valgrind expands `%p` in these names, and `%%` is a `%`.
        let escaped = OsString::from_vec(
            dir.path()
                .as_os_str()
                .as_bytes()
                .iter()
                .flat_map(|&b| if b == b'%' { vec![b'%', b'%'] } else { vec![b] })
                .collect(),
        );
        let at = |name: &str| {
            let mut s = escaped.clone();
            s.push("/");
            s.push(name);
            s
        };
        let mut wrapped: Vec<OsString> = vec![
            self.valgrind.clone().into_os_string(),
            "--tool=cachegrind".into(),
            "--trace-children=yes".into(),
            "--child-silent-after-fork=yes".into(),
            "--cache-sim=yes".into(),
            "--branch-sim=no".into(),
        ];
        for c in GEOMETRY {
            wrapped
                .push(format!("--{}={},{},{}", c.name, c.size_bytes, c.ways, c.line_bytes).into());
        }
        let mut out = OsString::from("--cachegrind-out-file=");
        out.push(at("cg.%p"));
        let mut log = OsString::from("--log-file=");
        log.push(at("log.%p"));
        wrapped.push(out);
        wrapped.push(log);
        wrapped.push("--".into());
        wrapped.extend(argv.iter().cloned());
        Ok(SimRun {
            dir,
            argv: wrapped,
            env: environment(),
        })
    }
}

/// How Valgrind says it will not run a program: setuid and setgid
/// programs, and those with file capabilities, would run with privileges
/// its simulator cannot give them. The top-level command's refusal goes
/// to stderr before any log is open; one in the tree goes to the log of
/// the process whose `exec` it refused, which then fails (`EACCES`).
const REFUSAL: &str = "Can't execute setuid/setgid/setcap executable: ";

/// The programs whose refusals a run's logs record, at most this many.
const MAX_REFUSED: usize = 16;

/// `Err` with the reason and the fix when Valgrind would refuse to run
/// `program` (as `exec` finds it: on `PATH` when it names no directory):
/// it is setuid, setgid or has file capabilities. A program that cannot
/// be found or read is left to the run, which says so.
fn refuses(program: &OsStr) -> Result<(), String> {
    use std::os::unix::fs::PermissionsExt;
    let path = if program.as_bytes().contains(&b'/') {
        PathBuf::from(program)
    } else {
        match program.to_str().and_then(crate::gpu::on_path) {
            Some(p) => p,
            None => return Ok(()),
        }
    };
    // A directory's setgid bit (a shared directory's) is no program's:
    // only a file is judged, anything else is left to the run.
    let Some(meta) = std::fs::metadata(&path).ok().filter(|m| m.is_file()) else {
        return Ok(());
    };
    let mode = meta.permissions().mode();
    let why = if mode & 0o4000 != 0 {
        "setuid"
    } else if mode & 0o2000 != 0 {
        "setgid"
    } else if crate::sys::file::has_xattr(&path, c"security.capability").unwrap_or(false) {
        "given file capabilities (setcap)"
    } else {
        return Ok(());
    };
    let shown = crate::text::path::display(&path);
    Err(format!(
        "{shown} is {why}: Valgrind, which --count=sim runs the command under, cannot run \
         setuid, setgid or setcap programs; count a copy without the bit (`cp {shown} \
         /tmp/` and count the copy), or count with --count=hw where the CPU has counters"
    ))
}

/// The programs Valgrind refused to run, as a log names them.
fn refusals_in(log: &str) -> impl Iterator<Item = String> + '_ {
    log.lines().filter_map(|l| {
        let at = l.find(REFUSAL)? + REFUSAL.len();
        let program = l[at..].trim_end();
        (!program.is_empty()).then(|| program.chars().take(4096).collect())
    })
}

/// This process's environment with `PYTHONHASHSEED=0` added unless it is
/// set: Python otherwise seeds its string hashes afresh in each process,
/// and the work of every dictionary moves with them.
fn environment() -> Vec<OsString> {
    let mut env: Vec<OsString> = Vec::new();
    let mut seeded = false;
    for (k, v) in std::env::vars_os() {
        seeded |= k == "PYTHONHASHSEED";
        let mut kv = k;
        kv.push("=");
        kv.push(v);
        env.push(kv);
    }
    if !seeded {
        env.push("PYTHONHASHSEED=0".into());
    }
    env
}

/// One run under Cachegrind: what to exec, and where its files go.
pub struct SimRun {
    dir: tempfile::TempDir,
    /// Valgrind's command line, the command's after it.
    pub argv: Vec<OsString>,
    /// The command's environment (its `environment`).
    pub env: Vec<OsString>,
}

impl SimRun {
    /// Reads, checks and adds up every process's file; the scratch
    /// directory goes with `self`.
    pub fn finish(self) -> Result<Counted, String> {
        let read = read_dir(self.dir.path())?;
        let result = counted(&read);
        drop(self.dir);
        result
    }
}

/// What one run's scratch directory held.
struct Files {
    /// Each process's file: its pid and what it said.
    files: Vec<(u32, CgFile)>,
    /// Pids of the processes that wrote a log: those Valgrind started
    /// afresh (the command, and each `exec` in its tree).
    logged: std::collections::HashSet<u32>,
    /// The Valgrind version the logs name (`3.19.0`).
    version: Option<String>,
    /// The first lines of Valgrind's own messages, when it said more than
    /// its preamble (a run that did not start).
    said: Option<String>,
    /// Programs in the tree Valgrind would not run (see [`REFUSAL`]).
    refused: Vec<String>,
}

fn read_dir(dir: &Path) -> Result<Files, String> {
    let entries = std::fs::read_dir(dir).map_err(|e| {
        format!(
            "cannot read Cachegrind's files in {}: {e}",
            crate::text::path::display(dir)
        )
    })?;
    let mut out = Files {
        files: Vec::new(),
        logged: Default::default(),
        version: None,
        said: None,
        refused: Vec::new(),
    };
    let mut seen = 0usize;
    for entry in entries {
        let entry = entry.map_err(|e| format!("cannot read Cachegrind's files: {e}"))?;
        seen += 1;
        if seen > 2 * MAX_FILES {
            return Err(format!(
                "the command's tree started more than {MAX_FILES} processes under Valgrind: too many to count"
            ));
        }
        let name = entry.file_name();
        let Some((kind, pid)) = split_name(&name) else {
            continue;
        };
        let path = entry.path();
        let bytes = crate::input::read_file(&path, &BOUND).map_err(|e| e.to_string())?;
        let text = String::from_utf8_lossy(&bytes);
        match kind {
            "cg" => {
                let file = cachegrind::parse(&text).map_err(|e| {
                    format!("Cachegrind's file of process {pid} cannot be used: {e}")
                })?;
                out.files.push((pid, file));
            }
            _ => {
                out.logged.insert(pid);
                if out.version.is_none() {
                    out.version = version_in(&text);
                }
                if out.said.is_none() {
                    out.said = complaint_in(&text);
                }
                for program in refusals_in(&text) {
                    if out.refused.len() < MAX_REFUSED && !out.refused.contains(&program) {
                        out.refused.push(program);
                    }
                }
            }
        }
    }
    out.files.sort_by_key(|(pid, _)| *pid);
    out.refused.sort();
    Ok(out)
}

/// `("cg", 123)` for `cg.123`, `("log", 123)` for `log.123`.
fn split_name(name: &OsStr) -> Option<(&'static str, u32)> {
    let s = name.to_str()?;
    let (kind, pid) = s.split_once('.')?;
    let kind = match kind {
        "cg" => "cg",
        "log" => "log",
        _ => return None,
    };
    Some((kind, pid.parse().ok()?))
}

/// `3.19.0` from the preamble's `Using Valgrind-3.19.0 and LibVEX`.
fn version_in(log: &str) -> Option<String> {
    let at = log.find("Using Valgrind-")? + "Using Valgrind-".len();
    let v: String = log[at..]
        .chars()
        .take_while(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '-'))
        .take(32)
        .collect();
    (!v.is_empty()).then_some(v)
}

/// Valgrind's own words beyond its preamble and summary (`valgrind:
/// ...`, a fatal signal, an unhandled instruction), the first three lines.
fn complaint_in(log: &str) -> Option<String> {
    let lines: Vec<&str> = log
        .lines()
        .filter(|l| l.starts_with("valgrind:") || l.contains("Fatal") || l.contains("unhandled"))
        .take(3)
        .collect();
    (!lines.is_empty()).then(|| crate::text::escape_text(&lines.join("; ")))
}

/// The run's counted figures from its files.
fn counted(read: &Files) -> Result<Counted, String> {
    if read.files.is_empty() {
        return Err(match (&read.said, read.refused.is_empty()) {
            (_, false) => format!("Valgrind wrote no count: {}", refused_words(&read.refused)),
            (Some(said), true) => format!("Valgrind wrote no count: {said}"),
            (None, true) => "Valgrind wrote no count (the command did not start under it?)".into(),
        });
    }
    let mut totals = [0u64; cachegrind::EVENTS.len()];
    let mut processes = Vec::with_capacity(read.files.len());
    for (pid, f) in &read.files {
        for (slot, event) in totals.iter_mut().zip(cachegrind::EVENTS) {
            let v = f.total(event).ok_or_else(|| {
                format!("Cachegrind's file of process {pid} has no {event} count")
            })?;
            *slot = slot.saturating_add(v);
        }
        let ir = f.events.iter().position(|e| e == "Ir").unwrap_or(0);
        processes.push(ProcessCosts {
            program: program_of(&f.cmd),
            functions: &f.functions,
            ir,
        });
    }
    let [ir, i1mr, ilmr, dr, d1mr, dlmr, dw, d1mw, dlmw] = totals;
    let l1_misses = i1mr.saturating_add(d1mr).saturating_add(d1mw);
    let ll_misses = ilmr.saturating_add(dlmr).saturating_add(dlmw);
    let forked: Vec<u32> = read
        .files
        .iter()
        .map(|(pid, _)| *pid)
        .filter(|pid| !read.logged.contains(pid))
        .collect();
    Ok(Counted {
        source: Kind::Sim,
        instructions: Some(ir),
        cycles: None,
        data_reads: Some(dr),
        data_writes: Some(dw),
        l1_misses: Some(l1_misses),
        ll_misses: Some(ll_misses),
        estimated_cycles: Some(estimated_cycles(ir, dr, dw, l1_misses, ll_misses)),
        processes: u32::try_from(read.files.len()).unwrap_or(u32::MAX),
        forked_copies: u32::try_from(forked.len()).unwrap_or(u32::MAX),
        tool_version: read.version.clone(),
        time_enabled_ns: None,
        time_running_ns: None,
        events: Vec::new(),
        refused: read.refused.clone(),
        profile: Some(Profile::of(&processes)),
    })
}

/// Programs Valgrind refused to run, in words: which, and why.
pub fn refused_words(refused: &[String]) -> String {
    let shown: Vec<String> = refused
        .iter()
        .map(|p| crate::text::escape_text(p))
        .collect();
    format!(
        "it refused to run {} (setuid, setgid or setcap: Valgrind cannot run such programs), \
         so under --count=sim {} did not run and {} work is not counted: the command may have \
         taken another path than it takes without Valgrind",
        shown.join(", "),
        if refused.len() == 1 { "it" } else { "they" },
        if refused.len() == 1 { "its" } else { "their" },
    )
}

/// The program of a `cmd:` line: its first word.
fn program_of(cmd: &str) -> &str {
    cmd.split_whitespace().next().unwrap_or("???")
}

/// Itamar Turner-Trauring's estimate ("Consistent benchmarking in CI",
/// pythonspeed.com, 2021, as iai-callgrind computes it): every access
/// that hits the first level costs 1 cycle, one that hits the last level
/// 5, one that goes to memory 35.
pub fn estimated_cycles(ir: u64, dr: u64, dw: u64, l1_misses: u64, ll_misses: u64) -> u64 {
    let accesses = ir.saturating_add(dr).saturating_add(dw);
    let l1_hits = accesses.saturating_sub(l1_misses);
    let ll_hits = l1_misses.saturating_sub(ll_misses);
    l1_hits
        .saturating_add(ll_hits.saturating_mul(5))
        .saturating_add(ll_misses.saturating_mul(35))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_estimate_weighs_hits_by_level() {
        // 100 accesses: 90 hit L1, 8 hit LL, 2 go to memory.
        assert_eq!(estimated_cycles(60, 30, 10, 10, 2), 90 + 8 * 5 + 2 * 35);
        assert_eq!(estimated_cycles(0, 0, 0, 0, 0), 0);
    }

    #[test]
    fn names_and_versions_are_read_from_valgrinds_files() {
        assert_eq!(split_name(OsStr::new("cg.123")), Some(("cg", 123)));
        assert_eq!(split_name(OsStr::new("log.9")), Some(("log", 9)));
        assert_eq!(split_name(OsStr::new("cg.x")), None);
        assert_eq!(split_name(OsStr::new("other")), None);
        let log = "==1== Cachegrind, a cache and branch-prediction profiler\n\
                   ==1== Using Valgrind-3.19.0 and LibVEX; rerun with -h\n";
        assert_eq!(version_in(log).as_deref(), Some("3.19.0"));
        assert_eq!(complaint_in(log), None);
        assert!(
            complaint_in("valgrind: ./x: cannot execute binary file\n")
                .unwrap()
                .contains("cannot execute")
        );
    }

    #[test]
    fn a_refusal_in_a_log_names_the_program() {
        let log = "==7== Cachegrind, a cache and branch-prediction profiler\n\
                   ==7== Warning: Can't execute setuid/setgid/setcap executable: /usr/bin/passwd\n\
                   ==7== Possible workaround: remove --trace-children=yes, if in effect\n";
        assert_eq!(refusals_in(log).collect::<Vec<_>>(), ["/usr/bin/passwd"]);
        assert_eq!(refusals_in("==7== Using Valgrind-3.19.0\n").count(), 0);
        let none = Files {
            files: Vec::new(),
            logged: Default::default(),
            version: None,
            said: None,
            refused: vec!["/usr/bin/passwd".into()],
        };
        let why = counted(&none).unwrap_err();
        assert!(why.contains("refused to run /usr/bin/passwd"), "{why}");
    }

    #[test]
    fn setuid_and_setgid_programs_are_refused_before_they_run() {
        use std::os::unix::fs::PermissionsExt;
        let dir = tempfile::tempdir().unwrap();
        let program = dir.path().join("prog");
        std::fs::write(&program, b"#!/bin/sh\n").unwrap();
        let mode = |m: u32| {
            std::fs::set_permissions(&program, std::fs::Permissions::from_mode(m)).unwrap();
            refuses(program.as_os_str())
        };
        assert_eq!(mode(0o755), Ok(()));
        assert!(mode(0o4755).unwrap_err().contains("is setuid"));
        assert!(mode(0o2755).unwrap_err().contains("is setgid"));
        // Not found, or a directory (a shared one is often setgid): left
        // to the run, which says so.
        assert_eq!(refuses(OsStr::new("no-such-program-anywhere")), Ok(()));
        std::fs::set_permissions(dir.path(), std::fs::Permissions::from_mode(0o2755)).unwrap();
        assert_eq!(refuses(dir.path().as_os_str()), Ok(()));
    }

    #[test]
    fn the_geometry_is_said_as_it_is_asked() {
        assert_eq!(
            geometry(),
            "I1 32768 B 8-way, D1 32768 B 8-way, LL 8388608 B 16-way, 64 B lines"
        );
    }

    #[test]
    fn a_copy_forked_without_exec_is_told_by_its_missing_log() {
        let file = |ir: u64| {
            let text = format!(
                "events: Ir I1mr ILmr Dr D1mr DLmr Dw D1mw DLmw\nfn=main\n1 {ir} 1 1 2 1 1 3 1 1\nsummary: {ir} 1 1 2 1 1 3 1 1\n"
            );
            cachegrind::parse(&text).unwrap()
        };
        let read = Files {
            files: vec![(10, file(100)), (11, file(150))],
            logged: [10].into_iter().collect(),
            version: Some("3.19.0".into()),
            said: None,
            refused: Vec::new(),
        };
        let c = counted(&read).unwrap();
        assert_eq!(c.instructions, Some(250));
        assert_eq!((c.processes, c.forked_copies), (2, 1));
        assert_eq!(c.data_reads, Some(4));
        assert_eq!(c.l1_misses, Some(2 + 2 + 2));
        let none = Files {
            files: Vec::new(),
            logged: Default::default(),
            version: None,
            said: Some("valgrind: bad option".into()),
            refused: Vec::new(),
        };
        assert!(counted(&none).unwrap_err().contains("bad option"));
    }
}

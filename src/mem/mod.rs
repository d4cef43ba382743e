//! `tally mem`: memory per program (private, shared, RAM used = PSS, swap)
//! read from /proc, exact to the kB, safe to install for every user.
//!
//! [`scan`](scan::scan) reads the figures, [`group`](group::group) turns
//! processes into rows and [`report::MemReport`] renders them. The caller
//! drops privilege between the first two (see [`privilege`]).

pub mod args;
pub mod columns;
pub mod command;
pub mod error;
pub mod exe;
pub mod gpu;
pub mod group;
pub mod name;
pub mod privilege;
pub mod report;
pub mod rows;
pub mod scan;
pub mod textfile;

use std::io::{self, Write};
use std::time::{Duration, Instant};

use crate::procfs::ProcRoot;
use crate::report::{Format, RenderError, Style};
pub use error::MemError;
use group::{GroupBy, Grouping};
use name::NameMode;
use privilege::Privilege;
use report::{MemReport, View};
use scan::{Needs, Snapshot};

/// Everything `tally mem` needs, validated.
#[derive(Debug, Clone, Default)]
pub struct Config {
    pub procfs: ProcRoot,
    /// Only these processes (`--pid`).
    pub pids: Option<Vec<u32>>,
    pub grouping: Grouping,
    pub view: View,
    /// Scan workers; 0: one per core.
    pub threads: usize,
    /// Read every status file even if nothing else needs it (a `--user`
    /// filter resolved after the scan).
    pub read_status: bool,
    /// `--user`: a login name or a number, looked up by [`measure`] with
    /// the caller's rights into `grouping.uid`.
    pub user: Option<String>,
    /// What to say before the scan (an option this install ignores).
    pub notes: Vec<String>,
    /// Whether GPU memory per row is measured (`--gpu`).
    pub gpu: gpu::Want,
}

impl Config {
    /// The files beyond the memory figures that naming and grouping read.
    pub fn needs(&self) -> Needs {
        let g = &self.grouping;
        Needs {
            // With --pid, status tells a thread ID from a process ID.
            status: g.name == NameMode::Comm
                || g.by == GroupBy::User
                || g.uid.is_some()
                || self.pids.is_some()
                || self.read_status,
            comm: g.name == NameMode::Exe,
            cmdline: g.name == NameMode::Argv0 || g.split_args,
            cgroup: g.by == GroupBy::Cgroup,
        }
    }
}

/// Measures memory per program as `cfg` says, in the one order privilege
/// allows: the scan reads the figures with `privilege`, which ends with it
/// whatever its outcome ([`Privilege::end_scan`]: an install's is dropped
/// for good, a server's kept); `--user` is looked up with the caller's
/// rights only (before the scan when there are no others, after it
/// otherwise), and the rows are named and grouped after. `tally mem`, its
/// `--textfile` and `--watch`, and `tally serve`'s collector all measure
/// here.
pub fn measure(cfg: &Config, privilege: &mut Privilege) -> Result<MemReport, MemError> {
    measure_saying(cfg, privilege, &mut |_| {})
}

/// [`measure`], telling `say` what it waits for when nvidia-smi takes
/// more than a moment to answer.
pub fn measure_saying(
    cfg: &Config,
    privilege: &mut Privilege,
    say: &mut dyn FnMut(&str),
) -> Result<MemReport, MemError> {
    let mut cfg = cfg.clone();
    if !privilege.is_elevated() {
        resolve_user(&mut cfg)?;
    }
    // nvidia-smi answers while /proc is read; it is started with the
    // caller's rights only (after the drop for an install with more).
    let early = (!privilege.is_elevated()).then(|| gpu::start(cfg.gpu, &cfg.procfs));
    let helpers = early
        .as_ref()
        .map_or_else(Vec::new, |g| g.helpers(&cfg.procfs));
    let snap = scan(&cfg, *privilege, &helpers);
    privilege.end_scan().map_err(MemError::DropPrivileges)?;
    let gpu = early.unwrap_or_else(|| gpu::start(cfg.gpu, &cfg.procfs));
    let mut snap = snap?;
    resolve_user(&mut cfg)?;
    // No path a process names is looked at with more rights than the
    // caller's.
    cfg.grouping.check_replaced = !privilege.is_elevated();
    let gpu = gpu.attribute_saying(&mut snap, cfg.pids.as_deref(), say);
    let mut report = summarize(&snap, &cfg);
    if let gpu::GpuState::Measured(_) = gpu.gpu {
        // No process kept: none holds any.
        report.total.gpu_bytes = report.total.gpu_bytes.plus(columns::GpuBytes::Known(0));
    }
    report.gpu = gpu;
    Ok(report)
}

/// Looks `cfg.user` up into `cfg.grouping.uid`, once.
fn resolve_user(cfg: &mut Config) -> Result<(), MemError> {
    if let (Some(user), None) = (&cfg.user, cfg.grouping.uid) {
        let uid = crate::sys::user::uid_of(user).or_else(|| user.parse().ok());
        cfg.grouping.uid = Some(uid.ok_or_else(|| MemError::UnknownUser(user.clone()))?);
    }
    Ok(())
}

/// Reads the figures: the only step that needs privilege. With more
/// rights than the caller, only the memory figures are read with them
/// (see [`scan::scan_as_caller`]). `helpers`, tally's own nvidia-smi
/// queries, are left out as tally is.
pub fn scan(cfg: &Config, privilege: Privilege, helpers: &[u32]) -> Result<Snapshot, MemError> {
    let (root, pids, needs) = (&cfg.procfs, cfg.pids.as_deref(), cfg.needs());
    if privilege.is_elevated() {
        scan::scan_as_caller(root, pids, needs, cfg.threads, &|| privilege.as_caller())
    } else {
        scan::scan(root, pids, needs, cfg.threads, helpers)
    }
}

/// Turns a snapshot into the report.
pub fn summarize(snap: &Snapshot, cfg: &Config) -> MemReport {
    let (groups, total, hidden_groups) = group::group(&snap.samples, &cfg.grouping);
    let with_swap_pss = snap
        .samples
        .iter()
        .filter(|s| s.mem.swap_pss_kb.is_some())
        .count();
    let swap_source = if snap.samples.is_empty() {
        "none"
    } else if with_swap_pss == snap.samples.len() {
        "SwapPss"
    } else {
        // Mixed only on fixture trees; Swap is then the honest name.
        "Swap"
    };
    let mut total = total;
    total.swap_not_attributed = swap_rest(snap, cfg, swap_source == "SwapPss");
    let mut warnings = Vec::new();
    if cfg.pids.is_some() {
        for pid in &snap.missing_pids {
            warnings.push(format!("no process {pid}"));
        }
    }
    MemReport {
        schema_version: crate::report::SCHEMA_VERSION,
        group_by: cfg.grouping.by,
        name_mode: cfg.grouping.name,
        split_args: cfg.grouping.split_args,
        swap_source: swap_source.to_string(),
        groups,
        hidden_groups,
        total,
        skipped: snap.skipped.clone(),
        read_from_smaps: snap
            .samples
            .iter()
            .filter(|s| s.source == scan::Source::Smaps)
            .count() as u64,
        warnings,
        gpu: gpu::GpuPart::default(),
        view: cfg.view,
    }
}

/// The swap in use that no process's `SwapPss` holds, or why it cannot be
/// told: it needs every process's SwapPss, so a scan that did not see every
/// process leaves it unavailable. Reads `<procfs>/meminfo` (the machine's
/// swap) and /proc/self/mountinfo (whether /proc hides processes); called
/// after any privilege is dropped.
fn swap_rest(snap: &Snapshot, cfg: &Config, every_swap_pss: bool) -> report::SwapRest {
    let path = cfg.procfs.path().join("meminfo");
    let swap = crate::input::read_proc_text(&path)
        .map_err(|e| match e {
            crate::input::InputError::Io { source, .. }
                if source.kind() == io::ErrorKind::NotFound =>
            {
                "the proc tree has no meminfo".to_string()
            }
            e => e.to_string(),
        })
        .and_then(|text| {
            crate::procfs::meminfo::parse_swap(&text)
                .ok_or_else(|| "meminfo has no SwapTotal and SwapFree lines".to_string())
        });
    let attributed_kb: u64 = snap
        .samples
        .iter()
        .map(|s| s.mem.swap_pss_kb.unwrap_or(0))
        .fold(0, u64::saturating_add);
    let hidden = crate::sys::geteuid() != 0 && hides_processes(cfg.procfs.path());
    let s = &snap.skipped;
    let why = if cfg.pids.is_some() {
        Some("--pid reads only some processes".to_string())
    } else if s.denied > 0 || s.failed > 0 {
        Some(format!(
            "{} could not be read",
            crate::units::count(s.denied.saturating_add(s.failed), "process", "processes")
        ))
    } else if hidden {
        Some("/proc is mounted with hidepid: other users' processes are not seen".to_string())
    } else if !every_swap_pss {
        Some("this kernel has no SwapPss".to_string())
    } else {
        None
    };
    let kb = |n: u64| n.saturating_mul(1024);
    let (total, used) = match &swap {
        Ok(sw) => (Some(kb(sw.total_kb)), Some(kb(sw.used_kb()))),
        Err(_) => (None, None),
    };
    let (bytes, unavailable) = match (why, swap) {
        // No swap in use: nothing can be unattributed.
        (_, Ok(sw)) if sw.used_kb() == 0 => (Some(0), None),
        (Some(why), _) => (None, Some(why)),
        (None, Err(why)) => (None, Some(why)),
        (None, Ok(sw)) if attributed_kb > sw.used_kb() => (
            None,
            Some(format!(
                "the processes' SwapPss ({} kB) exceeds the swap in use ({} kB): swap \
                 changed during the scan",
                crate::units::thousands(attributed_kb),
                crate::units::thousands(sw.used_kb())
            )),
        ),
        (None, Ok(sw)) => (Some(kb(sw.used_kb() - attributed_kb)), None),
    };
    report::SwapRest {
        bytes,
        swap_total_bytes: total,
        swap_used_bytes: used,
        unavailable,
    }
}

/// Whether the proc filesystem mounted at `root` hides other users'
/// processes (`hidepid=1`, `2`, `noaccess`, `invisible`), from this
/// process's mountinfo. A tree that is not a mount hides nothing.
fn hides_processes(root: &std::path::Path) -> bool {
    let Ok(mountinfo) = crate::input::read_proc_text(std::path::Path::new("/proc/self/mountinfo"))
    else {
        return false;
    };
    let root = root.canonicalize().unwrap_or_else(|_| root.to_path_buf());
    crate::procfs::mountinfo::proc_hides_processes(&mountinfo, &root)
}

/// ` (PID 1 init)`, ` (the first: PID 1 init)`: the process denied with
/// the lowest PID, named by its comm where /proc still shows it (escaped:
/// a name is the process's own text).
fn denied_name(s: &scan::Skipped) -> String {
    let Some(pid) = s.first_denied_pid else {
        return String::new();
    };
    let comm = crate::input::read_proc_text(std::path::Path::new(&format!("/proc/{pid}/comm")))
        .map(|c| format!(" {}", crate::text::escape_text(c.trim_end_matches('\n'))))
        .unwrap_or_default();
    let first = if s.denied > 1 { "the first: " } else { "" };
    format!(" ({first}PID {pid}{comm})")
}

/// The notes to print once at the end: processes left out and the fix.
pub fn closing_notes(report: &MemReport, privileged_install: bool, root: bool) -> Vec<String> {
    let mut notes = report.warnings.clone();
    let s = &report.skipped;
    if s.denied > 0 && root {
        notes.push(format!(
            "{} not counted{}: unreadable even as root (a capability tally lacks, or an LSM)",
            crate::units::count(s.denied, "process", "processes"),
            denied_name(s),
        ));
    } else if s.denied > 0 {
        let fix = if privileged_install {
            "this install shows what /proc shows you, with every memory figure: /proc mounted \
             with hidepid hides other users' processes from you and so from it; else a \
             security module stops tally"
        } else {
            "run as root, or install tally for every user with \
             `setcap cap_sys_ptrace,cap_dac_read_search+ep $(which tally)` (see tally mem --help)"
        };
        notes.push(format!(
            "{}{} could not be read (permission denied) and {} not counted: {fix}",
            crate::units::count(s.denied, "process", "processes"),
            denied_name(s),
            if s.denied == 1 { "is" } else { "are" }
        ));
    }
    if s.failed > 0 {
        notes.push(format!(
            "{} could not be read and {} not counted; the first: {}",
            crate::units::count(s.failed, "process", "processes"),
            if s.failed == 1 { "is" } else { "are" },
            s.first_error.as_deref().unwrap_or("unknown error")
        ));
    }
    notes.extend(gpu::notes(&report.gpu));
    notes
}

/// A `--watch` frame for a screen of `rows` lines: at most `rows - 1`
/// lines (the cursor's line stays free, so the screen never scrolls and
/// no stale line is left behind per redraw). Rows ascend, so a frame too
/// tall keeps its header and its biggest rows and TOTAL, and says how many
/// it left out.
pub fn fit_frame(frame: &str, rows: Option<usize>) -> String {
    let lines: Vec<&str> = frame.lines().collect();
    let room = rows.map_or(usize::MAX, |r| r.saturating_sub(1)).max(3);
    if lines.len() <= room {
        return frame.to_string();
    }
    let tail = room - 2;
    let left_out = lines.len() - 1 - tail;
    let mut out = String::new();
    out.push_str(lines[0]);
    out.push('\n');
    out.push_str(&format!(
        "… {left_out} smaller lines not shown: a taller terminal, or --top N\n"
    ));
    for line in &lines[lines.len() - tail..] {
        out.push_str(line);
        out.push('\n');
    }
    out
}

/// Scans and renders every `interval` until `stop` says so or stdout
/// closes; on a terminal each frame replaces the last, on a pipe frames
/// are appended. Returns the last report.
pub fn watch(
    cfg: &Config,
    interval: Duration,
    format: Format,
    style: Style,
    terminal: bool,
    out: &mut dyn Write,
    stop: &dyn Fn() -> bool,
) -> Result<Option<MemReport>, MemError> {
    let mut last = None;
    let mut first = true;
    while !stop() {
        let started = Instant::now();
        let report = measure(cfg, &mut Privilege::Ordinary)?;
        if terminal {
            // Home, then clear the screen; the frame fits the screen, so
            // nothing scrolls into the scrollback at each redraw.
            out.write_all(b"\x1b[H\x1b[2J").map_err(RenderError::Io)?;
            let mut frame = Vec::new();
            crate::report::render(&report, format, style, &mut frame)?;
            let rows = crate::sys::tty::stdout_rows().map(usize::from);
            let frame = fit_frame(&String::from_utf8_lossy(&frame), rows);
            out.write_all(frame.as_bytes()).map_err(RenderError::Io)?;
            out.flush().map_err(RenderError::Io)?;
        } else {
            if !first && format == Format::HUMAN {
                out.write_all(b"\n").map_err(RenderError::Io)?;
            }
            crate::report::render(&report, format, style, out)?;
        }
        first = false;
        last = Some(report);
        // Sleep in short steps so a signal ends the loop promptly.
        while started.elapsed() < interval && !stop() {
            let left = interval.saturating_sub(started.elapsed());
            std::thread::sleep(left.min(Duration::from_millis(50)));
        }
    }
    Ok(last)
}

#[cfg(test)]
mod tests {
    use super::fit_frame;

    /// `mem --watch` on an 80×24 terminal left a stale line per redraw: a
    /// frame as tall as the screen scrolled it by one.
    #[test]
    fn a_watch_frame_never_fills_the_screen() {
        let frame: String = std::iter::once("header".to_string())
            .chain((1..=30).map(|i| format!("row {i}")))
            .chain(["TOTAL".to_string()])
            .map(|l| l + "\n")
            .collect();
        let fitted = fit_frame(&frame, Some(24));
        let lines: Vec<&str> = fitted.lines().collect();
        assert_eq!(lines.len(), 23, "{fitted}");
        assert_eq!(lines[0], "header");
        assert!(lines[1].contains("10 smaller lines not shown"), "{fitted}");
        assert_eq!(lines[2], "row 11");
        assert_eq!(lines[22], "TOTAL");
        // A frame that fits, or no height known, is left as it is.
        assert_eq!(fit_frame(&frame, Some(100)), frame);
        assert_eq!(fit_frame(&frame, None), frame);
    }
}

//! GPU memory per process at one moment: `nvidia-smi --query-compute-apps`
//! asked once (no `-lms`), for `tally mem` and `tally serve`.
//!
//! The query is started with [`start`] and read with [`Query::finish`], so
//! a caller can scan /proc while nvidia-smi talks to the driver. Beside it
//! runs `nvidia-smi --query-gpu=uuid,memory.total`: no process holds more
//! than its GPU has, nor do all of a GPU's together, and an answer that
//! says otherwise is refused with the figure and the total. Both are
//! helper processes ([`crate::sys::helper`]): in a process group of their
//! own, ended as a group (what they started too) when they exit or at
//! [`LIMIT`], reaped on every path, dying with tally, holding no ambient
//! capability. Their output is bounded ([`MAX_LINES`] lines of at most
//! `MAX_LINE` bytes). Every line goes through [`super::parse::app_line`]:
//! a line that does not read makes the whole answer unavailable, never a
//! partial list posing as the whole.
//!
//! A query that failed or gave no answer is not asked again for
//! [`RETRY_AFTER`]: the scans that follow (`tally serve`'s scrapes, `tally
//! mem --watch`'s frames) get the same reason at once instead of each
//! waiting for an nvidia-smi that does not answer.

use std::collections::BTreeMap;
use std::io::{BufRead, BufReader, Read};
use std::process::ExitStatus;
use std::sync::Mutex;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use super::parse::{self, AppLine};
use crate::sys::helper::Helper;

/// How long nvidia-smi may take to answer before it is stopped.
pub const LIMIT: Duration = Duration::from_secs(5);
/// Most lines read from nvidia-smi (one per process and GPU).
pub const MAX_LINES: usize = 65_536;
/// How long a query that failed or gave no answer stands for the next.
pub const RETRY_AFTER: Duration = Duration::from_secs(300);

/// The query, as the documents and the reports name it.
pub const QUERY: &str = "nvidia-smi --query-compute-apps=timestamp,pid,used_memory,gpu_uuid --format=csv,noheader,nounits";

/// Why there is no answer when nvidia-smi is not on `PATH`.
pub use super::NOT_ON_PATH;

/// What nvidia-smi printed when no process uses a GPU (older drivers; the
/// CSV form of driver 580 prints no line at all).
const NO_PROCESSES: &str = "No running processes found";

/// The last failure and when it came (see [`RETRY_AFTER`]).
static FAILED: Mutex<Option<(Instant, String)>> = Mutex::new(None);

/// The failure that still stands for a new query, if any.
fn still_failed() -> Option<String> {
    let failed = FAILED.lock().unwrap_or_else(|e| e.into_inner());
    failed
        .as_ref()
        .filter(|(at, _)| at.elapsed() < RETRY_AFTER)
        .map(|(_, why)| why.clone())
}

/// Keeps the answer's failure (or clears it on success) for the next.
fn remember(answer: Apps) -> Apps {
    let mut failed = FAILED.lock().unwrap_or_else(|e| e.into_inner());
    match &answer {
        Apps::Unavailable(why) => *failed = Some((Instant::now(), why.clone())),
        Apps::Listed { .. } => *failed = None,
        Apps::Off => {}
    }
    answer
}

/// The GPU memory of one process, as the driver attributes it.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ProcessMemory {
    /// Whole MiB on each GPU (by uuid), `None` where the driver gives no
    /// figure (`[N/A]` under MIG, `[Insufficient Permissions]`).
    pub per_gpu: Vec<(String, Option<u64>)>,
}

impl ProcessMemory {
    /// The sum over GPUs in bytes; `None` when any GPU's figure is unknown.
    pub fn bytes(&self) -> Option<u64> {
        self.per_gpu.iter().try_fold(0u64, |sum, (_, mib)| {
            mib.map(|m| sum.saturating_add(m.saturating_mul(1 << 20)))
        })
    }
}

/// The answer of one query.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Apps {
    /// nvidia-smi is not on `PATH`: nothing was started.
    Off,
    /// It is there but gave no answer: why, in words (its own where it
    /// said some).
    Unavailable(String),
    /// Every process the driver lists, by pid (pids of the driver's PID
    /// namespace: the host's).
    Listed {
        processes: BTreeMap<u32, ProcessMemory>,
        /// How long the query took, start to exit.
        took: Duration,
    },
}

/// A query under way, or why there is none.
pub enum Query {
    Off,
    Failed(String),
    Running(Box<Running>),
}

/// Starts the query when nvidia-smi is on `PATH` ([`super::on_path`])
/// and no failure of the last [`RETRY_AFTER`] stands.
pub fn start() -> Query {
    let Some(exe) = super::on_path("nvidia-smi") else {
        return Query::Off;
    };
    if let Some(why) = still_failed() {
        return Query::Failed(why);
    }
    let started = Instant::now();
    let apps = match Part::start(&exe, &format!("--query-compute-apps={}", parse::APP_FIELDS)) {
        Ok(p) => p,
        Err(why) => {
            remember(Apps::Unavailable(why.clone()));
            return Query::Failed(why);
        }
    };
    // Without the totals the figures are held to what no GPU has.
    let totals = Part::start(&exe, &format!("--query-gpu={}", parse::TOTAL_FIELDS)).ok();
    Query::Running(Box::new(Running {
        apps,
        totals,
        started,
    }))
}

/// [`start`] and [`Query::finish`] at once.
pub fn query() -> Apps {
    start().finish()
}

impl Query {
    /// The pids of the nvidia-smi helpers while they run.
    pub fn pids(&self) -> Vec<u32> {
        match self {
            Query::Running(r) => std::iter::once(&r.apps)
                .chain(&r.totals)
                .map(|p| p.helper.pid())
                .collect(),
            _ => Vec::new(),
        }
    }

    /// Waits for the answer (at most [`LIMIT`] after the start).
    pub fn finish(self) -> Apps {
        self.finish_saying(&mut |_| {})
    }

    /// [`Query::finish`], telling `say` what it waits for once the wait
    /// has lasted more than a moment.
    pub fn finish_saying(self, say: &mut dyn FnMut(&str)) -> Apps {
        match self {
            Query::Off => Apps::Off,
            Query::Failed(why) => Apps::Unavailable(why),
            Query::Running(r) => remember(r.finish(say)),
        }
    }
}

/// The lines nvidia-smi printed, or why they were not all read.
type Lines = Result<Vec<String>, String>;

/// Every line of `from`, up to [`MAX_LINES`] lines of `MAX_LINE` bytes;
/// past a bound the rest is read and dropped (so nvidia-smi never blocks on
/// a full pipe) and the answer is refused.
fn lines(from: impl Read) -> Lines {
    let max_line = super::MAX_LINE;
    let mut r = BufReader::new(from);
    let mut got = Vec::new();
    let mut buf = Vec::new();
    let mut refused = None;
    while refused.is_none() {
        buf.clear();
        match (&mut r).take(max_line + 1).read_until(b'\n', &mut buf) {
            Ok(0) => break,
            Ok(_) => {}
            Err(e) => return Err(format!("cannot read nvidia-smi's output: {e}")),
        }
        if buf.last() != Some(&b'\n') && buf.len() as u64 > max_line {
            refused = Some(format!(
                "nvidia-smi printed a line longer than {max_line} bytes"
            ));
        } else if got.len() == MAX_LINES {
            refused = Some(format!(
                "nvidia-smi printed more than {} lines",
                crate::units::thousands(MAX_LINES as u64)
            ));
        } else {
            let line = String::from_utf8_lossy(&buf);
            got.push(line.trim_end_matches(['\r', '\n']).to_string());
        }
    }
    match refused {
        Some(why) => {
            let _ = std::io::copy(&mut r, &mut std::io::sink());
            Err(why)
        }
        None => Ok(got),
    }
}

/// One nvidia-smi of the query, with a reader on each of its pipes.
struct Part {
    helper: Helper,
    out: Option<JoinHandle<Lines>>,
    err: Option<JoinHandle<Vec<u8>>>,
}

/// What one nvidia-smi left: its exit status (`None`: none by [`LIMIT`],
/// it was stopped), its lines and the start of its stderr.
struct Ended {
    status: Option<ExitStatus>,
    lines: Lines,
    err: Vec<u8>,
}

fn thread<T: Send + 'static>(
    which: &str,
    read: impl FnOnce() -> T + Send + 'static,
) -> Result<JoinHandle<T>, String> {
    std::thread::Builder::new()
        .name(format!("tally-nvsmi-{which}"))
        .spawn(read)
        .map_err(|e| format!("cannot start a thread to read nvidia-smi: {e}"))
}

impl Part {
    fn start(exe: &std::path::Path, query: &str) -> Result<Part, String> {
        let mut helper = Helper::start(super::command(exe, query, None))
            .map_err(|e| format!("cannot start {}: {e}", crate::text::path::display(exe)))?;
        let out = helper.stdout().map(|o| thread("out", move || lines(o)));
        let err = helper
            .stderr()
            .map(|e| thread("err", move || super::kept(e)));
        // A thread that cannot start is the error (the helper is stopped
        // as it is dropped).
        Ok(Part {
            out: out.transpose()?,
            err: err.transpose()?,
            helper,
        })
    }

    /// Waits until it exits or `deadline`, then ends it with its group and
    /// its pipes: every wait here is bounded.
    fn finish(mut self, deadline: Instant) -> Ended {
        let status = self.helper.wait_until(deadline);
        self.helper.stop();
        let lines = self
            .out
            .take()
            .and_then(|t| t.join().ok())
            .unwrap_or_else(|| Err("nvidia-smi's output could not be read".to_string()));
        let err = self
            .err
            .take()
            .and_then(|t| t.join().ok())
            .unwrap_or_default();
        Ended { status, lines, err }
    }
}

/// The query's nvidia-smi helpers, running.
pub struct Running {
    apps: Part,
    /// The GPUs' memory totals, when that query could start.
    totals: Option<Part>,
    started: Instant,
}

impl Running {
    fn finish(mut self, say: &mut dyn FnMut(&str)) -> Apps {
        let deadline = self.started + LIMIT;
        if self
            .apps
            .helper
            .wait_until(self.started + super::A_MOMENT)
            .is_none()
        {
            say(&format!(
                "waiting up to {} s for nvidia-smi's answer (GPU memory per process)",
                LIMIT.as_secs()
            ));
        }
        let apps = self.apps.finish(deadline);
        let totals = self.totals.map(|t| t.finish(deadline));
        let Some(status) = apps.status else {
            return Apps::Unavailable(format!(
                "nvidia-smi gave no answer in {} s (stopped)",
                LIMIT.as_secs()
            ));
        };
        let took = self.started.elapsed();
        let lines = match (status.success(), apps.lines) {
            (true, Ok(lines)) => lines,
            (true, Err(why)) => return Apps::Unavailable(why),
            (false, lines) => return Apps::Unavailable(failure(status, &lines, &apps.err)),
        };
        let totals = totals.map_or_else(BTreeMap::new, |t| read_totals(&t));
        match read_answer(&lines, &totals) {
            Ok(processes) => Apps::Listed { processes, took },
            Err(why) => Apps::Unavailable(why),
        }
    }
}

/// The memory total of each GPU by uuid, from the totals query when it
/// answered in full; else none (the figures are then held to
/// [`parse::MAX_MIB`]).
fn read_totals(t: &Ended) -> BTreeMap<String, u64> {
    let (Some(status), Ok(lines)) = (t.status, &t.lines) else {
        return BTreeMap::new();
    };
    if !status.success() {
        return BTreeMap::new();
    }
    let mut totals = BTreeMap::new();
    for line in lines.iter().filter(|l| !l.trim().is_empty()) {
        match parse::total_line(line) {
            Ok((uuid, Some(mib))) => {
                totals.insert(uuid, mib);
            }
            Ok((_, None)) => {}
            Err(_) => return BTreeMap::new(),
        }
    }
    totals
}

/// Why nvidia-smi failed: its exit status and its own words (the first
/// line it printed, on stdout as it prints its failures, else stderr).
fn failure(status: ExitStatus, lines: &Lines, err: &[u8]) -> String {
    use std::os::unix::process::ExitStatusExt;
    let first_out = lines
        .as_ref()
        .ok()
        .and_then(|l| l.iter().find(|l| !l.trim().is_empty()).cloned());
    let err = String::from_utf8_lossy(err);
    let first_err = err.lines().find(|l| !l.trim().is_empty());
    let words = first_out.as_deref().or(first_err).map_or_else(
        || "it printed nothing".to_string(),
        |w| crate::text::escape::escape_text(w.trim()),
    );
    match (status.code(), status.signal()) {
        (Some(code), _) => format!("nvidia-smi exited with status {code}: {words}"),
        (None, Some(sig)) => format!(
            "nvidia-smi was killed by {}: {words}",
            crate::sys::signal_name(sig)
        ),
        (None, None) => format!("nvidia-smi stopped: {words}"),
    }
}

/// The processes of a successful answer, by pid; a line that does not
/// read, or a figure over its GPU's memory total (`totals`, by uuid), or
/// a GPU whose processes hold more than its total together, refuses the
/// whole answer, saying which and why.
pub fn read_answer(
    lines: &[String],
    totals: &BTreeMap<String, u64>,
) -> Result<BTreeMap<u32, ProcessMemory>, String> {
    let mut processes: BTreeMap<u32, ProcessMemory> = BTreeMap::new();
    let mut per_gpu: BTreeMap<String, u64> = BTreeMap::new();
    for line in lines {
        let line = line.trim();
        if line.is_empty() || line == NO_PROCESSES {
            continue;
        }
        let read = parse::app_line(line, &|uuid| totals.get(uuid).copied());
        let AppLine {
            pid,
            used_mib,
            gpu_uuid,
            ..
        } = read.map_err(|why| {
            format!(
                "nvidia-smi printed a line tally refused ({why}): {}",
                crate::text::escape::escape_text(line)
            )
        })?;
        if let Some(mib) = used_mib {
            let sum = per_gpu.entry(gpu_uuid.clone()).or_default();
            *sum = sum.saturating_add(mib);
        }
        processes
            .entry(pid)
            .or_default()
            .per_gpu
            .push((gpu_uuid, used_mib));
    }
    for (uuid, sum) in &per_gpu {
        parse::check_mib(*sum, "its processes' memory", totals.get(uuid).copied())
            .map_err(|why| format!("nvidia-smi lists more on GPU {uuid} than it holds: {why}"))?;
    }
    Ok(processes)
}

#[cfg(test)]
mod tests {
    use super::*;

    const UUID: &str = "GPU-98cc6ef1-602f-f852-3d10-49a3f5101a3c";

    fn strings(lines: &[&str]) -> Vec<String> {
        lines.iter().map(|l| l.to_string()).collect()
    }

    fn none() -> BTreeMap<String, u64> {
        BTreeMap::new()
    }

    /// Regression: 16,777,216 MiB for one process was accepted, and `mem`
    /// summed such lines to 234,881,024 MiB on one GPU. A figure over its
    /// GPU's total, or a GPU whose processes hold more than it has, now
    /// refuses the answer with the figure, the total and the line.
    #[test]
    fn figures_over_the_gpus_total_refuse_the_answer_with_the_reason() {
        let totals: BTreeMap<String, u64> = [(UUID.to_string(), 81_559)].into();
        let ok = read_answer(&strings(&[&format!("t, 7, 81559, {UUID}")]), &totals).unwrap();
        assert_eq!(ok[&7].bytes(), Some(81_559 << 20));
        let why = read_answer(&strings(&[&format!("t, 7, 81560, {UUID}")]), &totals).unwrap_err();
        assert_eq!(
            why,
            format!(
                "nvidia-smi printed a line tally refused (used memory 81,560 MiB is over the GPU's memory total, 81,559 MiB): t, 7, 81560, {UUID}"
            )
        );
        let why = read_answer(
            &strings(&[
                &format!("t, 7, 50000, {UUID}"),
                &format!("t, 8, 50000, {UUID}"),
            ]),
            &totals,
        )
        .unwrap_err();
        assert_eq!(
            why,
            format!(
                "nvidia-smi lists more on GPU {UUID} than it holds: its processes' memory 100,000 MiB is over the GPU's memory total, 81,559 MiB"
            )
        );
        // Without the totals, what no GPU holds.
        let why =
            read_answer(&strings(&[&format!("t, 7, 16777216, {UUID}")]), &none()).unwrap_err();
        assert!(why.contains("over 1,048,576 MiB"), "{why}");
    }

    #[test]
    fn an_answer_as_driver_580_prints_it() {
        let p = read_answer(
            &strings(&[&format!("2026/11/28 16:56:39.445, 545, 2660, {UUID}")]),
            &none(),
        )
        .unwrap();
        assert_eq!(p.len(), 1);
        assert_eq!(p[&545].bytes(), Some(2660 << 20));
    }

    #[test]
    fn no_process_is_an_empty_list_in_either_spelling() {
        assert!(read_answer(&[], &none()).unwrap().is_empty());
        assert!(
            read_answer(&strings(&[NO_PROCESSES, ""]), &none())
                .unwrap()
                .is_empty()
        );
    }

    #[test]
    fn a_process_on_two_gpus_sums_and_unknown_memory_stays_unknown() {
        let p = read_answer(
            &strings(&[
                &format!("t, 7, 100, {UUID}"),
                "t, 7, 28, GPU-other",
                &format!("t, 8, [N/A], {UUID}"),
                "t, 8, 5, GPU-other",
                &format!("t, 9, [Insufficient Permissions], {UUID}"),
            ]),
            &none(),
        )
        .unwrap();
        assert_eq!(p[&7].bytes(), Some(128 << 20));
        assert_eq!(p[&7].per_gpu.len(), 2);
        assert_eq!(p[&8].bytes(), None, "unknown, never zero");
        assert_eq!(p[&9].bytes(), None);
    }

    #[test]
    fn a_line_that_does_not_read_refuses_the_answer_and_is_quoted_escaped() {
        let why = read_answer(
            &strings(&[
                &format!("t, 7, 100, {UUID}"),
                "Unable to determine the device handle: \x1b[31m",
            ]),
            &none(),
        )
        .unwrap_err();
        assert!(
            why.starts_with("nvidia-smi printed a line tally refused"),
            "{why}"
        );
        assert!(why.ends_with("device handle: \\x1b[31m"), "{why}");
    }

    #[test]
    fn long_and_many_lines_are_refused_after_reading_to_the_end() {
        let long = vec![b'x'; super::super::MAX_LINE as usize + 10];
        let why = lines(&long[..]).unwrap_err();
        assert!(why.contains("longer than"), "{why}");
        let many = "t, 1, 1, GPU-a\n".repeat(MAX_LINES + 1);
        let why = lines(many.as_bytes()).unwrap_err();
        assert!(why.contains("more than 65,536 lines"), "{why}");
        let last_cut = lines("a\nb".as_bytes()).unwrap();
        assert_eq!(last_cut, ["a", "b"]);
        let mut longest = vec![b'y'; super::super::MAX_LINE as usize];
        longest.push(b'\n');
        assert_eq!(lines(&longest[..]).unwrap()[0].len(), longest.len() - 1);
    }
}

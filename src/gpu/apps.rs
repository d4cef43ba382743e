//! GPU memory per process at one moment: `nvidia-smi --query-compute-apps`
//! asked once (no `-lms`), for `tally mem` and `tally serve`.
//!
//! The query is started with [`start`] and read with [`Query::finish`], so
//! a caller can scan /proc while nvidia-smi talks to the driver. Its output
//! is bounded ([`MAX_LINES`] lines of at most `MAX_LINE` bytes) and so is
//! its time ([`LIMIT`]): past it the child is killed. The child is killed
//! (with anything it started: it runs in a process group of its own) and
//! reaped on every path, dies with tally (`PR_SET_PDEATHSIG`) and holds no
//! ambient capability. Every line goes through [`super::parse::app_line`]:
//! a line that does not read makes the whole answer unavailable, never a
//! partial list posing as the whole.

use std::collections::BTreeMap;
use std::io::{BufRead, BufReader, Read};
use std::process::{Child, ExitStatus};
use std::sync::mpsc::{self, Receiver};
use std::time::{Duration, Instant};

use super::parse::{self, AppLine};

/// How long nvidia-smi may take to answer before it is killed.
pub const LIMIT: Duration = Duration::from_secs(5);
/// Most lines read from nvidia-smi (one per process and GPU).
pub const MAX_LINES: usize = 65_536;

/// The query, as the documents and the reports name it.
pub const QUERY: &str = "nvidia-smi --query-compute-apps=timestamp,pid,used_memory,gpu_uuid --format=csv,noheader,nounits";

/// Why there is no answer when nvidia-smi is not on `PATH`.
pub use super::NOT_ON_PATH;

/// What nvidia-smi printed when no process uses a GPU (older drivers; the
/// CSV form of driver 580 prints no line at all).
const NO_PROCESSES: &str = "No running processes found";

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
    Running(Running),
}

/// Starts the query when nvidia-smi is on `PATH` ([`super::on_path`]).
pub fn start() -> Query {
    let Some(exe) = super::on_path("nvidia-smi") else {
        return Query::Off;
    };
    let query = format!("--query-compute-apps={}", parse::APP_FIELDS);
    let mut cmd = super::command(&exe, &query, None);
    crate::sys::sidecar::apart(&mut cmd);
    let started = Instant::now();
    let mut child = match cmd.spawn() {
        Ok(c) => c,
        Err(e) => {
            let shown = crate::text::path::display(&exe);
            return Query::Failed(format!("cannot start {shown}: {e}"));
        }
    };
    let out = child.stdout.take().map(|o| reader("out", move || lines(o)));
    let err = child
        .stderr
        .take()
        .map(|e| reader("err", move || super::kept(e)));
    let mut running = Running {
        child,
        reaped: false,
        started,
        out: None,
        err: None,
    };
    match (out, err) {
        (Some(Ok(out)), Some(Ok(err))) => {
            running.out = Some(out);
            running.err = Some(err);
            Query::Running(running)
        }
        (Some(Err(e)), _) | (_, Some(Err(e))) => {
            running.stop();
            Query::Failed(format!("cannot start a thread to read nvidia-smi: {e}"))
        }
        _ => {
            running.stop();
            Query::Failed("nvidia-smi's output could not be read".into())
        }
    }
}

/// [`start`] and [`Query::finish`] at once.
pub fn query() -> Apps {
    start().finish()
}

impl Query {
    /// The pid of nvidia-smi while it runs.
    pub fn pid(&self) -> Option<u32> {
        match self {
            Query::Running(r) => Some(r.child.id()),
            _ => None,
        }
    }

    /// Waits for the answer (at most [`LIMIT`] after the start).
    pub fn finish(self) -> Apps {
        match self {
            Query::Off => Apps::Off,
            Query::Failed(why) => Apps::Unavailable(why),
            Query::Running(r) => r.finish(),
        }
    }
}

/// The lines nvidia-smi printed, or why they were not all read.
type Lines = Result<Vec<String>, String>;

/// A thread reading one of the child's pipes; its result comes on the
/// channel when the pipe ends.
fn reader<T: Send + 'static>(
    which: &str,
    read: impl FnOnce() -> T + Send + 'static,
) -> std::io::Result<Receiver<T>> {
    let (tx, rx) = mpsc::sync_channel(1);
    std::thread::Builder::new()
        .name(format!("tally-nvsmi-{which}"))
        .spawn(move || {
            let _ = tx.send(read());
        })?;
    Ok(rx)
}

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

/// nvidia-smi running, with a reader on each of its pipes.
pub struct Running {
    child: Child,
    reaped: bool,
    started: Instant,
    out: Option<Receiver<Lines>>,
    err: Option<Receiver<Vec<u8>>>,
}

impl Running {
    fn left(&self) -> Duration {
        LIMIT.saturating_sub(self.started.elapsed())
    }

    fn finish(mut self) -> Apps {
        let timed_out = || {
            Apps::Unavailable(format!(
                "nvidia-smi gave no answer in {} s (stopped)",
                LIMIT.as_secs()
            ))
        };
        // Its stdout ends when it exits (or closes it).
        let lines = match self.out.take().map(|rx| rx.recv_timeout(self.left())) {
            Some(Ok(lines)) => lines,
            Some(Err(mpsc::RecvTimeoutError::Timeout)) => return timed_out(),
            _ => Err("nvidia-smi's output could not be read".to_string()),
        };
        let Some(status) = self.wait_until_limit() else {
            return timed_out();
        };
        let took = self.started.elapsed();
        let err = self
            .err
            .take()
            .and_then(|rx| {
                rx.recv_timeout(self.left().max(Duration::from_millis(100)))
                    .ok()
            })
            .unwrap_or_default();
        let lines = match (status.success(), lines) {
            (true, Ok(lines)) => lines,
            (true, Err(why)) => return Apps::Unavailable(why),
            (false, lines) => return Apps::Unavailable(failure(status, &lines, &err)),
        };
        match read_answer(&lines) {
            Ok(processes) => Apps::Listed { processes, took },
            Err(why) => Apps::Unavailable(why),
        }
    }

    /// Its exit status, once it has exited within [`LIMIT`]; `None` (and
    /// it is stopped) past it.
    fn wait_until_limit(&mut self) -> Option<ExitStatus> {
        loop {
            match self.child.try_wait() {
                Ok(Some(status)) => {
                    self.reaped = true;
                    return Some(status);
                }
                Ok(None) if !self.left().is_zero() => {
                    std::thread::sleep(self.left().min(Duration::from_millis(2)));
                }
                _ => {
                    self.stop();
                    return None;
                }
            }
        }
    }

    /// Kills the child and what it started, and reaps it.
    fn stop(&mut self) {
        if self.reaped {
            return;
        }
        let _ = crate::sys::sidecar::kill_group(self.child.id());
        let _ = self.child.kill();
        let _ = self.child.wait();
        self.reaped = true;
    }
}

impl Drop for Running {
    fn drop(&mut self) {
        self.stop();
    }
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
/// read refuses the whole answer, quoting it.
pub fn read_answer(lines: &[String]) -> Result<BTreeMap<u32, ProcessMemory>, String> {
    let mut processes: BTreeMap<u32, ProcessMemory> = BTreeMap::new();
    for line in lines {
        let line = line.trim();
        if line.is_empty() || line == NO_PROCESSES {
            continue;
        }
        let AppLine {
            pid,
            used_mib,
            gpu_uuid,
            ..
        } = parse::app_line(line).map_err(|why| {
            format!(
                "nvidia-smi printed a line tally cannot read ({why}): {}",
                crate::text::escape::escape_text(line)
            )
        })?;
        processes
            .entry(pid)
            .or_default()
            .per_gpu
            .push((gpu_uuid, used_mib));
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

    #[test]
    fn an_answer_as_driver_580_prints_it() {
        let p = read_answer(&strings(&[&format!(
            "2026/11/28 16:56:39.445, 545, 2660, {UUID}"
        )]))
        .unwrap();
        assert_eq!(p.len(), 1);
        assert_eq!(p[&545].bytes(), Some(2660 << 20));
    }

    #[test]
    fn no_process_is_an_empty_list_in_either_spelling() {
        assert!(read_answer(&[]).unwrap().is_empty());
        assert!(
            read_answer(&strings(&[NO_PROCESSES, ""]))
                .unwrap()
                .is_empty()
        );
    }

    #[test]
    fn a_process_on_two_gpus_sums_and_unknown_memory_stays_unknown() {
        let p = read_answer(&strings(&[
            &format!("t, 7, 100, {UUID}"),
            "t, 7, 28, GPU-other",
            &format!("t, 8, [N/A], {UUID}"),
            "t, 8, 5, GPU-other",
            &format!("t, 9, [Insufficient Permissions], {UUID}"),
        ]))
        .unwrap();
        assert_eq!(p[&7].bytes(), Some(128 << 20));
        assert_eq!(p[&7].per_gpu.len(), 2);
        assert_eq!(p[&8].bytes(), None, "unknown, never zero");
        assert_eq!(p[&9].bytes(), None);
    }

    #[test]
    fn a_line_that_does_not_read_refuses_the_answer_and_is_quoted_escaped() {
        let why = read_answer(&strings(&[
            &format!("t, 7, 100, {UUID}"),
            "Unable to determine the device handle: \x1b[31m",
        ]))
        .unwrap_err();
        assert!(
            why.starts_with("nvidia-smi printed a line tally cannot read"),
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

//! A command's GPU figures: peak GPU memory of its process tree per GPU
//! and summed, GPU busy time and energy while it ran, from NVIDIA's
//! driver through `nvidia-smi`.
//!
//! tally is one static binary and cannot load the driver's library
//! (NVML) without a dynamic loader, so it runs `nvidia-smi` twice beside
//! the command, each printing a sample every [`INTERVAL_MS`] ms
//! (`-lms`): the GPU query (utilization, power, memory of every GPU) and
//! the process query (GPU memory of every process). A reader thread per
//! query keeps the lines as they come, in order (`timeline`); the
//! processes named are matched to the command's tree through /proc. The
//! figures of any stretch of the session can be taken from it: each run
//! of `tally run -n` or of `tally compare`, sampled by one session for
//! the whole invocation ([`Runs`], `compare`'s own), whose start is paid
//! once and whose failure is found once. Both queries are helper
//! processes ([`crate::sys::helper`]): each in a process group of its
//! own, ended as a group on every exit path, every wait on them bounded,
//! and dying with tally (`PR_SET_PDEATHSIG`).
//!
//! The first command waits for the first GPU sample, at most 5 s when the
//! figures were asked for (`--gpu`) and 1 s when not; past a moment the
//! wait says what it waits for, and a signal ends it (the command is then
//! not started).
//!
//! Without `nvidia-smi` on `PATH` nothing is started: a default run costs
//! one lookup of `PATH`.

pub mod apps;
pub mod human;
pub mod parse;
pub mod timeline;

use std::io::{BufRead, BufReader, Read};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::{Arc, Mutex, mpsc};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use serde::{Deserialize, Serialize};

use crate::sys::helper::Helper;
use timeline::{Timeline, Window};

/// The sampling period asked of nvidia-smi, in ms.
pub const INTERVAL_MS: u32 = 20;
/// How long tally waits for nvidia-smi's first sample before the first
/// command starts, when the figures were asked for (`--gpu`): it starts
/// the driver connection, which can take a while without persistence mode.
const FIRST_SAMPLE_ASKED: Duration = Duration::from_secs(5);
/// The same wait when they were not asked for: forty times the 25 ms
/// the first line took on the H200, and short enough that a default run
/// never waits long for figures nobody asked for.
const FIRST_SAMPLE_DEFAULT: Duration = Duration::from_secs(1);
/// A wait for nvidia-smi longer than this says what it waits for.
pub(crate) const A_MOMENT: Duration = Duration::from_millis(250);
/// How long an nvidia-smi that printed a line tally cannot read gets to
/// exit (for its status) before it is stopped.
const EXIT_GRACE: Duration = Duration::from_millis(500);
/// Longest line read from nvidia-smi; a longer one is refused.
const MAX_LINE: u64 = 4096;
/// Bytes of nvidia-smi's stderr kept for a message.
const KEPT_STDERR: u64 = 1024;

/// Where the figures come from, for the report.
pub const SOURCE: &str = "nvidia-smi --query-gpu (utilization.gpu, power.draw) and --query-compute-apps (used_memory of the command's processes), sampled";

/// One GPU's figures for one run.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct OneGpu {
    pub index: u32,
    pub name: String,
    pub uuid: String,
    /// Largest GPU memory the command's processes held on this GPU at one
    /// sample; `null` when the process query failed.
    pub mem_peak_bytes: Option<u64>,
    /// Σ utilization × time while the command ran: time a kernel ran on
    /// this GPU, anyone's (the driver does not split it by process).
    pub busy_ns: Option<u64>,
    /// Σ power draw × time while the command ran, the whole GPU's.
    pub energy_joules: Option<f64>,
    /// GPU samples that came while the command ran.
    pub samples: u64,
}

/// The GPU figures of one run.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Gpu {
    /// The largest sum over GPUs of the command's GPU memory at one sample.
    pub gpu_mem_peak_bytes: Option<u64>,
    /// Busy time summed over GPUs.
    pub gpu_busy_ns: Option<u64>,
    /// Energy summed over GPUs.
    pub gpu_energy_joules: Option<f64>,
    pub sample_interval_ns: u64,
    pub source: String,
    pub gpus: Vec<OneGpu>,
    /// What could not be measured or matched, in words.
    pub notes: Vec<String>,
}

/// The GPU state of a run as a record keeps it: not sampled (the key is
/// absent), unavailable (`null`, with [`GpuPart::gpu_reason`]) or measured.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(from = "Option<Gpu>", into = "Option<Gpu>")]
pub enum GpuState {
    #[default]
    NotSampled,
    Unavailable,
    Measured(Gpu),
}

impl From<Option<Gpu>> for GpuState {
    fn from(g: Option<Gpu>) -> GpuState {
        g.map_or(GpuState::Unavailable, GpuState::Measured)
    }
}

impl From<GpuState> for Option<Gpu> {
    fn from(g: GpuState) -> Option<Gpu> {
        match g {
            GpuState::Measured(g) => Some(g),
            _ => None,
        }
    }
}

impl GpuState {
    pub fn is_not_sampled(&self) -> bool {
        matches!(self, GpuState::NotSampled)
    }

    /// The figures, when measured.
    pub fn measured(&self) -> Option<&Gpu> {
        match self {
            GpuState::Measured(g) => Some(g),
            _ => None,
        }
    }
}

impl Gpu {
    /// A stored run's totals (a baseline keeps no per-GPU figures).
    pub fn from_stored(mem: Option<u64>, busy_ns: Option<u64>, energy_mj: Option<u64>) -> Gpu {
        Gpu {
            gpu_mem_peak_bytes: mem,
            gpu_busy_ns: busy_ns,
            gpu_energy_joules: energy_mj.map(|mj| mj as f64 / 1e3),
            sample_interval_ns: u64::from(INTERVAL_MS) * 1_000_000,
            source: format!("{SOURCE}; read from a baseline"),
            gpus: Vec::new(),
            notes: Vec::new(),
        }
    }

    /// The energy in whole millijoules: the unit the figure is compared
    /// and stored in.
    pub fn energy_mj(&self) -> Option<u64> {
        let j = self.gpu_energy_joules?;
        (j.is_finite() && j >= 0.0).then(|| (j * 1e3).round() as u64)
    }
}

/// The `gpu` and `gpu_reason` keys of a run record.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct GpuPart {
    #[serde(default, skip_serializing_if = "GpuState::is_not_sampled")]
    pub gpu: GpuState,
    /// Why `gpu` is `null`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub gpu_reason: Option<String>,
}

// Every float here is finite (power is checked where it is read), so
// equality is an equivalence.
impl Eq for GpuPart {}

impl GpuPart {
    pub fn unavailable(reason: String) -> GpuPart {
        GpuPart {
            gpu: GpuState::Unavailable,
            gpu_reason: Some(reason),
        }
    }

    pub fn measured(g: Gpu) -> GpuPart {
        GpuPart {
            gpu: GpuState::Measured(g),
            gpu_reason: None,
        }
    }
}

/// The executable `name` on `PATH`, as `execvp` would find it.
pub fn on_path(name: &str) -> Option<PathBuf> {
    use std::os::unix::fs::PermissionsExt;
    let path = std::env::var_os("PATH")?;
    std::env::split_paths(&path)
        .filter(|d| d.is_absolute())
        .map(|d| d.join(name))
        .find(|p| {
            std::fs::metadata(p).is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
        })
}

/// CLOCK_MONOTONIC ns of `at`: the clock `Instant` reads, as a number.
pub fn ns_of(at: Instant) -> u64 {
    let (now, now_ns) = (Instant::now(), crate::sys::monotonic_ns());
    match now.checked_duration_since(at) {
        Some(ago) => now_ns.saturating_sub(u64::try_from(ago.as_nanos()).unwrap_or(u64::MAX)),
        None => now_ns
            .saturating_add(u64::try_from(at.duration_since(now).as_nanos()).unwrap_or(u64::MAX)),
    }
}

/// Whether nvidia-smi can be asked: `Some(path)` when it is on `PATH`;
/// else, when the figures were `asked` for, the reason they cannot be had.
fn find(asked: bool) -> Result<Option<PathBuf>, Failed> {
    match on_path("nvidia-smi") {
        Some(exe) => Ok(Some(exe)),
        None if asked => Err(Failed::Unavailable {
            why: NOT_ON_PATH.into(),
            timed_out: false,
        }),
        None => Ok(None),
    }
}

/// Why there are no GPU figures without nvidia-smi.
pub const NOT_ON_PATH: &str = "nvidia-smi is not on PATH: no NVIDIA driver is installed here, or its tools are not on PATH (install the driver, or add the directory holding nvidia-smi to PATH)";

/// What a wait for nvidia-smi says and asks while it lasts.
#[derive(Default)]
pub struct Waiting<'s, 'i> {
    /// Told once, when the wait has lasted a quarter of a second, what it
    /// waits for.
    pub say: Option<&'s mut dyn FnMut(&str)>,
    /// Whether to stop waiting: a signal came, and nothing should start.
    pub interrupted: Option<&'i dyn Fn() -> bool>,
}

impl Waiting<'_, '_> {
    fn say(&mut self, what: &str) {
        if let Some(say) = &mut self.say {
            say(what);
        }
    }

    fn interrupted(&self) -> bool {
        self.interrupted.is_some_and(|f| f())
    }
}

/// Why sampling did not start.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Failed {
    /// nvidia-smi cannot be asked, or gave no sample: why, in words;
    /// `timed_out` when it said nothing within the wait.
    Unavailable { why: String, timed_out: bool },
    /// A signal came during the wait: nothing should start.
    Interrupted,
}

impl Failed {
    fn unavailable(why: String) -> Failed {
        Failed::Unavailable {
            why,
            timed_out: false,
        }
    }
}

/// The wait for the first sample when the figures were asked for or not.
fn first_sample_bound(asked: bool) -> Duration {
    if asked {
        FIRST_SAMPLE_ASKED
    } else {
        FIRST_SAMPLE_DEFAULT
    }
}

/// A signal stopped the wait for nvidia-smi: the command is not started.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Interrupted;

/// The GPU sampling of one invocation's runs (`tally run`, and `tally
/// compare`'s runs when tally makes them itself): one session started
/// before the first run and kept for all of them, so that nvidia-smi's
/// start is paid once, and what made it unavailable (a missing, failing
/// or silent nvidia-smi) is found once and stands for every run.
#[derive(Default)]
pub struct Runs {
    state: RunsState,
    /// Said once in the report: a wait the user paid for and did not ask.
    warning: Option<String>,
}

#[derive(Default)]
enum RunsState {
    #[default]
    NotStarted,
    Off,
    Unavailable(String),
    /// Sampling; the current run's start (CLOCK_MONOTONIC ns) once begun.
    Sampling(Box<Sampler>, Option<u64>),
}

impl Runs {
    /// Starts the session unless it was started (`asked`: `--gpu`, a
    /// failure is kept and said; otherwise a missing or failing
    /// nvidia-smi leaves the runs as they were without GPU figures, and
    /// one that said nothing within its wait is a warning).
    /// `Err(Interrupted)` when a signal ended the wait.
    pub fn start(&mut self, asked: bool, waiting: &mut Waiting) -> Result<(), Interrupted> {
        if !matches!(self.state, RunsState::NotStarted) {
            return Ok(());
        }
        self.state = match Sampler::when_present(asked, None, waiting) {
            Ok(Some(s)) => RunsState::Sampling(Box::new(s), None),
            Ok(None) => RunsState::Off,
            Err(Failed::Interrupted) => return Err(Interrupted),
            Err(Failed::Unavailable { why, .. }) if asked => RunsState::Unavailable(why),
            Err(Failed::Unavailable { why, timed_out }) => {
                if timed_out {
                    self.warning = Some(format!(
                        "GPU figures: {why}, so none were measured (with --gpu tally waits {} s, and says why)",
                        FIRST_SAMPLE_ASKED.as_secs()
                    ));
                }
                RunsState::Off
            }
        };
        Ok(())
    }

    /// The warning of a wait nobody asked for, once.
    pub fn take_warning(&mut self) -> Option<String> {
        self.warning.take()
    }

    /// The command `pid` starts now, at `at`: the samples before it are
    /// forgotten and the tree is rooted at it.
    pub fn begin(&mut self, pid: u32, at: Instant) {
        if let RunsState::Sampling(s, start) = &mut self.state {
            let ns = ns_of(at);
            s.prune(ns);
            s.root(pid);
            *start = Some(ns);
        }
    }

    /// The figures of the run that began last, over the window from
    /// `start` (the moment its clock started, no earlier than the `at`
    /// it began at) to `end`.
    pub fn finish_from(&mut self, start: Instant, end: Instant) -> GpuPart {
        if let RunsState::Sampling(_, began) = &mut self.state
            && began.is_some()
        {
            *began = Some(ns_of(start));
        }
        self.finish(end)
    }

    /// The figures of the run that began last and ended at `end`.
    pub fn finish(&mut self, end: Instant) -> GpuPart {
        match &mut self.state {
            RunsState::NotStarted | RunsState::Off => GpuPart::default(),
            RunsState::Unavailable(why) => GpuPart::unavailable(why.clone()),
            RunsState::Sampling(s, start) => {
                let end = ns_of(end);
                let w = Window {
                    start: start.take().unwrap_or(end),
                    end,
                    held_until: None,
                };
                GpuPart::measured(s.figures(w))
            }
        }
    }
}

/// The two nvidia-smi helpers and their readers.
pub struct Sampler {
    timeline: Arc<Mutex<Timeline>>,
    gpu: Helper,
    apps: Helper,
    readers: Vec<JoinHandle<()>>,
    stderr: Arc<Mutex<Vec<u8>>>,
}

/// `nvidia-smi QUERY --format=csv,noheader,nounits` (with `-lms` every
/// `every_ms`, else one sample), to start as a [`Helper`].
pub(crate) fn command(exe: &Path, query: &str, every_ms: Option<u32>) -> Command {
    let mut cmd = Command::new(exe);
    cmd.arg(query).arg("--format=csv,noheader,nounits");
    if let Some(ms) = every_ms {
        cmd.arg("-lms").arg(ms.to_string());
    }
    cmd
}

/// The first [`KEPT_STDERR`] bytes of `from` (for a message), the rest
/// drained so that nvidia-smi never blocks on a full pipe.
pub(crate) fn kept(mut from: impl Read) -> Vec<u8> {
    let mut buf = Vec::new();
    let _ = (&mut from).take(KEPT_STDERR).read_to_end(&mut buf);
    let _ = std::io::copy(&mut from, &mut std::io::sink());
    buf
}

/// Calls `each` with every line `from` gives (a line over [`MAX_LINE`]
/// bytes is given cut there), until the end.
fn each_line(from: impl Read, mut each: impl FnMut(&str)) {
    let mut r = BufReader::new(from);
    let mut buf = Vec::new();
    loop {
        buf.clear();
        match (&mut r).take(MAX_LINE).read_until(b'\n', &mut buf) {
            Ok(0) | Err(_) => return,
            Ok(_) => {}
        }
        if buf.last() != Some(&b'\n') && buf.len() as u64 == MAX_LINE {
            // Skip the rest of the long line, a bounded piece at a time.
            let mut rest = Vec::new();
            loop {
                rest.clear();
                match (&mut r).take(MAX_LINE).read_until(b'\n', &mut rest) {
                    Ok(0) | Err(_) => return,
                    Ok(_) if rest.last() == Some(&b'\n') => break,
                    Ok(_) => {}
                }
            }
        }
        let line = String::from_utf8_lossy(&buf);
        each(line.trim_end_matches(['\r', '\n']));
    }
}

impl Sampler {
    /// Starts sampling when `nvidia-smi` is on `PATH` (`Ok(None)` when
    /// it is not and the figures were not `asked` for), waiting for the
    /// first GPU sample at most 5 s when they were asked for, else 1 s.
    /// The tree is rooted at `root` when given, else from
    /// [`Sampler::root`].
    pub fn when_present(
        asked: bool,
        root: Option<u32>,
        waiting: &mut Waiting,
    ) -> Result<Option<Sampler>, Failed> {
        let Some(exe) = find(asked)? else {
            return Ok(None);
        };
        Sampler::start(&exe, root, first_sample_bound(asked), waiting).map(Some)
    }

    /// Starts both queries and waits for the first GPU sample.
    fn start(
        exe: &Path,
        root: Option<u32>,
        bound: Duration,
        waiting: &mut Waiting,
    ) -> Result<Sampler, Failed> {
        let judge: timeline::Judge = Box::new(timeline::membership);
        let mut timeline = Timeline::new(judge, u64::from(INTERVAL_MS) * 1_000_000);
        if let Some(root) = root {
            timeline.root(root);
        }
        let timeline = Arc::new(Mutex::new(timeline));
        let exe_shown = crate::text::path::display(exe);
        let spawn = |q: &str, fields: &str| {
            let query = format!("--query-{q}={fields}");
            Helper::start(command(exe, &query, Some(INTERVAL_MS)))
                .map_err(|e| Failed::unavailable(format!("cannot start {exe_shown}: {e}")))
        };
        // The process query first: by the GPU query's first line it has
        // had as long to connect to the driver.
        let apps = spawn("compute-apps", parse::APP_FIELDS)?;
        let gpu = spawn("gpu", parse::GPU_FIELDS)?;
        let mut s = Sampler {
            timeline,
            gpu,
            apps,
            readers: Vec::new(),
            stderr: Arc::new(Mutex::new(Vec::new())),
        };
        let (ready_tx, ready) = mpsc::sync_channel::<()>(1);
        s.read_gpu(ready_tx).map_err(Failed::unavailable)?;
        s.read_apps().map_err(Failed::unavailable)?;
        s.first_sample(&ready, bound, waiting)?;
        Ok(s)
    }

    /// Waits for the first GPU sample, at most `bound` after the start;
    /// says what it waits for once the wait lasts [`A_MOMENT`], and stops
    /// at a line it cannot read, at the query's end, or at a signal.
    fn first_sample(
        &mut self,
        ready: &mpsc::Receiver<()>,
        bound: Duration,
        waiting: &mut Waiting,
    ) -> Result<(), Failed> {
        let started = self.gpu.started();
        let deadline = started + bound;
        let mut said = false;
        loop {
            let slice =
                Duration::from_millis(50).min(deadline.saturating_duration_since(Instant::now()));
            let ended = matches!(
                ready.recv_timeout(slice),
                Err(mpsc::RecvTimeoutError::Disconnected)
            );
            if self.lock(|t| t.gpu_count() > 0) {
                return Ok(());
            }
            if ended || self.lock(|t| t.first_bad().is_some()) || self.gpu.exited().is_some() {
                return Err(Failed::unavailable(self.failure_text()));
            }
            if waiting.interrupted() {
                return Err(Failed::Interrupted);
            }
            if Instant::now() >= deadline {
                return Err(Failed::Unavailable {
                    why: format!("nvidia-smi printed no GPU sample in {} s", bound.as_secs()),
                    timed_out: true,
                });
            }
            if !said && started.elapsed() >= A_MOMENT {
                waiting.say(&format!(
                    "waiting up to {} s for nvidia-smi's first GPU sample",
                    bound.as_secs()
                ));
                said = true;
            }
        }
    }

    /// The tree's processes descend from `root` from now on.
    pub fn root(&self, root: u32) {
        self.lock(|t| t.root(root));
    }

    /// The figures of the stretch `w` (CLOCK_MONOTONIC ns) so far.
    pub fn figures(&mut self, w: Window) -> Gpu {
        let apps_ok = self.apps.exited().is_none();
        self.lock(|t| t.figures(w, apps_ok))
    }

    /// Forgets the samples wholly before `before` (see [`Timeline::prune`]).
    pub fn prune(&self, before: u64) {
        self.lock(|t| t.prune(before));
    }

    /// Starts a reader thread (one that cannot start is the error).
    fn reader(&mut self, f: impl FnOnce() + Send + 'static) -> Result<(), String> {
        let t = std::thread::Builder::new()
            .name("tally-gpu".into())
            .spawn(f)
            .map_err(|e| format!("cannot start a thread to read nvidia-smi: {e}"))?;
        self.readers.push(t);
        Ok(())
    }

    fn read_gpu(&mut self, ready: mpsc::SyncSender<()>) -> Result<(), String> {
        let out = self.gpu.stdout();
        let timeline = Arc::clone(&self.timeline);
        self.reader(move || {
            if let Some(out) = out {
                each_line(out, |line| {
                    let at = crate::sys::monotonic_ns();
                    timeline
                        .lock()
                        .unwrap_or_else(|e| e.into_inner())
                        .gpu(line, at);
                    let _ = ready.try_send(());
                });
            }
        })?;
        for err in [self.gpu.stderr(), self.apps.stderr()]
            .into_iter()
            .flatten()
        {
            let kept = Arc::clone(&self.stderr);
            self.reader(move || {
                let buf = self::kept(err);
                kept.lock().unwrap_or_else(|e| e.into_inner()).extend(buf);
            })?;
        }
        Ok(())
    }

    fn read_apps(&mut self) -> Result<(), String> {
        let out = self.apps.stdout();
        let timeline = Arc::clone(&self.timeline);
        self.reader(move || {
            if let Some(out) = out {
                each_line(out, |line| {
                    let at = crate::sys::monotonic_ns();
                    timeline
                        .lock()
                        .unwrap_or_else(|e| e.into_inner())
                        .app(line, at);
                });
            }
        })
    }

    fn lock<T>(&self, f: impl FnOnce(&mut Timeline) -> T) -> T {
        f(&mut self.timeline.lock().unwrap_or_else(|e| e.into_inner()))
    }

    /// Why no sample came, once a line was refused or the query ended:
    /// its exit status and its own words where it exited with a failure,
    /// else the line refused and why.
    fn failure_text(&mut self) -> String {
        use std::os::unix::process::ExitStatusExt;
        // It exits on its own when it failed; else it is stopped.
        let status = self.gpu.wait_until(Instant::now() + EXIT_GRACE);
        self.stop();
        let bad = self.lock(|t| t.first_bad().map(|(l, w)| (l.to_string(), w.to_string())));
        let err = String::from_utf8_lossy(&self.stderr.lock().unwrap_or_else(|e| e.into_inner()))
            .trim()
            .to_string();
        let words = |bad: Option<&str>| {
            bad.map(str::to_string)
                .or_else(|| (!err.is_empty()).then(|| crate::text::escape::escape_text(&err)))
                .unwrap_or_else(|| "it printed nothing".into())
        };
        match (status.and_then(|s| s.code()), &bad) {
            (Some(code), _) if code != 0 => {
                format!(
                    "nvidia-smi exited with status {code}: {}",
                    words(bad.as_ref().map(|(l, _)| l.as_str()))
                )
            }
            (_, Some((line, why))) => {
                format!("nvidia-smi printed a line tally refused ({why}): {line}")
            }
            _ => match status.and_then(|s| s.signal()) {
                Some(sig) => format!(
                    "nvidia-smi was killed by {}: {}",
                    crate::sys::signal_name(sig),
                    words(None)
                ),
                None => format!("nvidia-smi ended without a GPU sample: {}", words(None)),
            },
        }
    }

    /// Stops both helpers and waits for their readers, so every line
    /// printed is in the timeline. Returns whether the process query was
    /// still running (it did not fail).
    fn stop(&mut self) -> bool {
        let apps_ok = self.apps.exited().is_none();
        self.gpu.stop();
        self.apps.stop();
        // Bounded: a helper's pipes end when it is stopped.
        for r in self.readers.drain(..) {
            let _ = r.join();
        }
        apps_ok
    }
}

impl Drop for Sampler {
    fn drop(&mut self) {
        self.stop();
    }
}

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
//! figures of any stretch of the session can be taken from it: `tally
//! run`'s one run, or each of `tally compare`'s runs, sampled by one
//! session for the whole comparison. Both children are killed and reaped
//! on every exit path (and die with tally: `PR_SET_PDEATHSIG`).
//!
//! Without `nvidia-smi` on `PATH` nothing is started: a default run costs
//! one lookup of `PATH`.

pub mod apps;
pub mod human;
pub mod parse;
pub mod timeline;

use std::io::{BufRead, BufReader, Read};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex, mpsc};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use serde::{Deserialize, Serialize};

use timeline::{Timeline, Window};

/// The sampling period asked of nvidia-smi, in ms.
pub const INTERVAL_MS: u32 = 20;
/// How long tally waits for nvidia-smi's first sample before the command
/// starts (it starts the driver connection, which can take a while).
const FIRST_SAMPLE: Duration = Duration::from_secs(5);
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
fn find(asked: bool) -> Result<Option<PathBuf>, String> {
    match on_path("nvidia-smi") {
        Some(exe) => Ok(Some(exe)),
        None if asked => Err(NOT_ON_PATH.into()),
        None => Ok(None),
    }
}

/// Why there are no GPU figures without nvidia-smi.
pub const NOT_ON_PATH: &str = "nvidia-smi is not on PATH: no NVIDIA driver is installed here, or its tools are not on PATH (install the driver, or add the directory holding nvidia-smi to PATH)";

/// One run's GPU sampling: off, unavailable (and why), or running.
pub enum Session {
    Off,
    Unavailable(String),
    Sampling(Sampler, Option<u64>),
}

impl Session {
    /// Starts sampling when `nvidia-smi` is on `PATH`. `asked` (`--gpu`):
    /// a failure is kept and said; otherwise a missing or failing
    /// nvidia-smi leaves the run as it was without GPU figures.
    pub fn start(asked: bool) -> Session {
        match Sampler::when_present(asked, None) {
            Ok(Some(s)) => Session::Sampling(s, None),
            Ok(None) => Session::Off,
            Err(why) => Session::Unavailable(why),
        }
    }

    /// The command `pid` starts now, at `at`.
    pub fn begin(&mut self, pid: u32, at: Instant) {
        if let Session::Sampling(s, start) = self {
            s.root(pid);
            *start = Some(ns_of(at));
        }
    }

    /// Stops sampling: the command ended at `end`.
    pub fn finish(self, end: Instant) -> GpuPart {
        match self {
            Session::Off => GpuPart::default(),
            Session::Unavailable(why) => GpuPart::unavailable(why),
            Session::Sampling(mut s, start) => {
                let end = ns_of(end);
                let apps_ok = s.stop();
                let w = Window {
                    start: start.unwrap_or(end),
                    end,
                    held_until: None,
                };
                GpuPart::measured(s.lock(|t| t.figures(w, apps_ok)))
            }
        }
    }
}

/// The two nvidia-smi children and their readers.
pub struct Sampler {
    timeline: Arc<Mutex<Timeline>>,
    gpu: Child,
    apps: Child,
    readers: Vec<JoinHandle<()>>,
    stderr: Arc<Mutex<Vec<u8>>>,
}

/// `nvidia-smi QUERY --format=csv,noheader,nounits` (with `-lms` every
/// `every_ms`, else one sample), its streams piped, dying with tally.
pub(crate) fn command(exe: &Path, query: &str, every_ms: Option<u32>) -> Command {
    let mut cmd = Command::new(exe);
    cmd.arg(query).arg("--format=csv,noheader,nounits");
    if let Some(ms) = every_ms {
        cmd.arg("-lms").arg(ms.to_string());
    }
    cmd.stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    crate::sys::sidecar::die_with_parent(&mut cmd);
    cmd
}

fn nvidia_smi(exe: &Path, query: String) -> std::io::Result<Child> {
    command(exe, &query, Some(INTERVAL_MS)).spawn()
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
    /// it is not and the figures were not `asked` for). The tree is
    /// rooted at `root` when given, else from [`Sampler::root`]. Not
    /// asked for, a failing nvidia-smi is `Ok(None)` too.
    pub fn when_present(asked: bool, root: Option<u32>) -> Result<Option<Sampler>, String> {
        let Some(exe) = find(asked)? else {
            return Ok(None);
        };
        match Sampler::start(&exe, root) {
            Ok(s) => Ok(Some(s)),
            Err(why) if asked => Err(why),
            Err(_) => Ok(None),
        }
    }

    /// Starts both queries and waits for the first GPU sample.
    fn start(exe: &Path, root: Option<u32>) -> Result<Sampler, String> {
        let judge: timeline::Judge = Box::new(timeline::membership);
        let mut timeline = Timeline::new(judge, u64::from(INTERVAL_MS) * 1_000_000);
        if let Some(root) = root {
            timeline.root(root);
        }
        let timeline = Arc::new(Mutex::new(timeline));
        let exe_shown = crate::text::path::display(exe);
        let spawn = |q: &str, fields: &str| {
            nvidia_smi(exe, format!("--query-{q}={fields}"))
                .map_err(|e| format!("cannot start {exe_shown}: {e}"))
        };
        // The process query first: by the GPU query's first line it has
        // had as long to connect to the driver.
        let mut apps = spawn("compute-apps", parse::APP_FIELDS)?;
        let gpu = match spawn("gpu", parse::GPU_FIELDS) {
            Ok(g) => g,
            Err(e) => {
                let _ = apps.kill();
                let _ = apps.wait();
                return Err(e);
            }
        };
        let mut s = Sampler {
            timeline,
            gpu,
            apps,
            readers: Vec::new(),
            stderr: Arc::new(Mutex::new(Vec::new())),
        };
        let (ready_tx, ready) = mpsc::sync_channel::<()>(1);
        s.read_gpu(ready_tx)?;
        s.read_apps()?;
        let came = ready.recv_timeout(FIRST_SAMPLE);
        if came.is_ok() && s.lock(|t| t.gpu_count() > 0) {
            return Ok(s);
        }
        let why = s.failure_text(came.is_err());
        drop(s);
        Err(why)
    }

    /// The tree's processes descend from `root` from now on.
    pub fn root(&self, root: u32) {
        self.lock(|t| t.root(root));
    }

    /// The figures of the stretch `w` (CLOCK_MONOTONIC ns) so far.
    pub fn figures(&mut self, w: Window) -> Gpu {
        let apps_ok = matches!(self.apps.try_wait(), Ok(None));
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
        let out = self.gpu.stdout.take();
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
            let _ = ready.try_send(());
        })?;
        for err in [self.gpu.stderr.take(), self.apps.stderr.take()]
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
        let out = self.apps.stdout.take();
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

    /// Why no sample came: nvidia-smi's own words where it said some.
    fn failure_text(&mut self, timed_out: bool) -> String {
        if timed_out {
            return format!(
                "nvidia-smi printed no GPU sample in {} s",
                FIRST_SAMPLE.as_secs()
            );
        }
        // It said something that is not a sample: it exits, or is stopped
        // here within a second.
        let mut status = None;
        for _ in 0..100 {
            status = self.gpu.try_wait().ok().flatten();
            if status.is_some() {
                break;
            }
            std::thread::sleep(Duration::from_millis(10));
        }
        self.stop();
        let said = self.lock(|t| t.first_bad().map(str::to_string));
        let err = String::from_utf8_lossy(&self.stderr.lock().unwrap_or_else(|e| e.into_inner()))
            .trim()
            .to_string();
        let words = said
            .or_else(|| (!err.is_empty()).then(|| crate::text::escape::escape_text(&err)))
            .unwrap_or_else(|| "it printed nothing".into());
        match status.and_then(|s| s.code()) {
            Some(code) => format!("nvidia-smi exited with status {code}: {words}"),
            None => format!("nvidia-smi stopped: {words}"),
        }
    }

    /// Stops both children and waits for their readers, so every line
    /// printed is in the timeline. Returns whether the process query was
    /// still running (it did not fail).
    fn stop(&mut self) -> bool {
        let apps_ok = matches!(self.apps.try_wait(), Ok(None));
        for c in [&mut self.gpu, &mut self.apps] {
            let _ = c.kill();
            let _ = c.wait();
        }
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

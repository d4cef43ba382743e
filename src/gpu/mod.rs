//! A command's GPU figures: peak GPU memory of its process tree per GPU
//! and summed, GPU busy time and energy while it ran, from NVIDIA's
//! driver through `nvidia-smi`.
//!
//! tally is one static binary and cannot load the driver's library
//! (NVML) without a dynamic loader, so it runs `nvidia-smi` twice beside
//! the command, each printing a sample every [`INTERVAL_MS`] ms
//! (`-lms`): the GPU query (utilization, power, memory of every GPU) and
//! the process query (GPU memory of every process). A reader thread per
//! query folds the lines as they come (`fold`); the processes named are
//! matched to the command's tree through /proc. Both children are killed
//! and reaped on every exit path (and die with tally: `PR_SET_PDEATHSIG`).
//!
//! Without `nvidia-smi` on `PATH` nothing is started: a default run costs
//! one lookup of `PATH`.

pub mod apps;
pub mod fold;
pub mod human;
pub mod parse;

use std::io::{BufRead, BufReader, Read};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex, mpsc};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use serde::{Deserialize, Serialize};

use fold::Fold;

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
    fn unavailable(reason: String) -> GpuPart {
        GpuPart {
            gpu: GpuState::Unavailable,
            gpu_reason: Some(reason),
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

/// One run's GPU sampling: off, unavailable (and why), or running.
pub enum Session {
    Off,
    Unavailable(String),
    Sampling(Sampler),
}

impl Session {
    /// Starts sampling when `nvidia-smi` is on `PATH`. `asked` (`--gpu`):
    /// a failure is kept and said; otherwise a missing or failing
    /// nvidia-smi leaves the run as it was without GPU figures.
    pub fn start(asked: bool) -> Session {
        let Some(exe) = on_path("nvidia-smi") else {
            return if asked {
                Session::Unavailable(
                    "nvidia-smi is not on PATH: no NVIDIA driver is installed here, or its tools are not on PATH (install the driver, or add the directory holding nvidia-smi to PATH)".into(),
                )
            } else {
                Session::Off
            };
        };
        match Sampler::start(&exe) {
            Ok(s) => Session::Sampling(s),
            Err(why) if asked => Session::Unavailable(why),
            Err(_) => Session::Off,
        }
    }

    /// The command `pid` starts now, at `at`.
    pub fn begin(&self, pid: u32, at: Instant) {
        if let Session::Sampling(s) = self {
            s.lock().begin(pid, at);
        }
    }

    /// Stops sampling: the command ended at `end`.
    pub fn finish(self, end: Instant) -> GpuPart {
        match self {
            Session::Off => GpuPart::default(),
            Session::Unavailable(why) => GpuPart::unavailable(why),
            Session::Sampling(s) => GpuPart {
                gpu: GpuState::Measured(s.finish(end)),
                gpu_reason: None,
            },
        }
    }
}

/// The two nvidia-smi children and their readers.
pub struct Sampler {
    fold: Arc<Mutex<Option<Fold>>>,
    gpu: Child,
    apps: Child,
    readers: Vec<JoinHandle<()>>,
    stderr: Arc<Mutex<Vec<u8>>>,
}

fn nvidia_smi(exe: &Path, query: String) -> std::io::Result<Child> {
    let mut cmd = Command::new(exe);
    cmd.arg(query)
        .args(["--format=csv,noheader,nounits", "-lms"])
        .arg(INTERVAL_MS.to_string())
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    crate::sys::sidecar::die_with_parent(&mut cmd).spawn()
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
            // Skip the rest of the long line.
            let mut rest = Vec::new();
            if r.read_until(b'\n', &mut rest).is_err() {
                return;
            }
        }
        let line = String::from_utf8_lossy(&buf);
        each(line.trim_end_matches(['\r', '\n']));
    }
}

impl Sampler {
    /// Starts both queries and waits for the first GPU sample.
    fn start(exe: &Path) -> Result<Sampler, String> {
        let judge: fold::Judge = Box::new(fold::membership);
        let fold = Arc::new(Mutex::new(Some(Fold::new(judge))));
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
            fold,
            gpu,
            apps,
            readers: Vec::new(),
            stderr: Arc::new(Mutex::new(Vec::new())),
        };
        let (ready_tx, ready) = mpsc::sync_channel::<()>(1);
        s.read_gpu(ready_tx);
        s.read_apps();
        let came = ready.recv_timeout(FIRST_SAMPLE);
        let sampled = s.lock_fold(|f| f.gpu_count() > 0);
        if came.is_ok() && sampled == Some(true) {
            return Ok(s);
        }
        let why = s.failure_text(came.is_err());
        drop(s);
        Err(why)
    }

    fn read_gpu(&mut self, ready: mpsc::SyncSender<()>) {
        let out = self.gpu.stdout.take();
        let fold = Arc::clone(&self.fold);
        self.readers.push(std::thread::spawn(move || {
            if let Some(out) = out {
                each_line(out, |line| {
                    let at = Instant::now();
                    if let Some(f) = fold.lock().unwrap_or_else(|e| e.into_inner()).as_mut() {
                        f.gpu(line, at);
                    }
                    let _ = ready.try_send(());
                });
            }
            let _ = ready.try_send(());
        }));
        for err in [self.gpu.stderr.take(), self.apps.stderr.take()]
            .into_iter()
            .flatten()
        {
            let kept = Arc::clone(&self.stderr);
            self.readers.push(std::thread::spawn(move || {
                let mut buf = Vec::new();
                let mut err = err;
                let _ = (&mut err).take(KEPT_STDERR).read_to_end(&mut buf);
                kept.lock().unwrap_or_else(|e| e.into_inner()).extend(buf);
                // Drained to the end, so nvidia-smi never blocks on it.
                let _ = std::io::copy(&mut err, &mut std::io::sink());
            }));
        }
    }

    fn read_apps(&mut self) {
        let out = self.apps.stdout.take();
        let fold = Arc::clone(&self.fold);
        self.readers.push(std::thread::spawn(move || {
            if let Some(out) = out {
                each_line(out, |line| {
                    if let Some(f) = fold.lock().unwrap_or_else(|e| e.into_inner()).as_mut() {
                        f.app(line);
                    }
                });
            }
        }));
    }

    fn lock_fold<T>(&self, f: impl FnOnce(&mut Fold) -> T) -> Option<T> {
        self.fold
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .as_mut()
            .map(f)
    }

    fn lock(&self) -> LockedFold<'_> {
        LockedFold(self)
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
        if status.is_none() {
            let _ = self.gpu.kill();
            let _ = self.gpu.wait();
        }
        let _ = self.apps.kill();
        let _ = self.apps.wait();
        // Its readers end with it.
        for r in self.readers.drain(..) {
            let _ = r.join();
        }
        let said = self
            .lock_fold(|f| f.first_bad().map(str::to_string))
            .flatten();
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

    /// Stops both children and returns the run's figures.
    fn finish(mut self, end: Instant) -> Gpu {
        let fold = self.fold.lock().unwrap_or_else(|e| e.into_inner()).take();
        // Still running when stopped: the process query did not fail.
        let apps_ok = matches!(self.apps.try_wait(), Ok(None));
        self.stop();
        let fold = fold.unwrap_or_else(|| Fold::new(Box::new(fold::membership)));
        fold.finish(end, u64::from(INTERVAL_MS) * 1_000_000, apps_ok)
    }

    fn stop(&mut self) {
        for c in [&mut self.gpu, &mut self.apps] {
            let _ = c.kill();
            let _ = c.wait();
        }
        for r in self.readers.drain(..) {
            let _ = r.join();
        }
    }
}

impl Drop for Sampler {
    fn drop(&mut self) {
        self.stop();
    }
}

/// The fold of a [`Sampler`], for [`Session::begin`].
struct LockedFold<'a>(&'a Sampler);

impl LockedFold<'_> {
    fn begin(&self, pid: u32, at: Instant) {
        self.0.lock_fold(|f| f.begin(pid, at));
    }
}

//! `tally compare`'s GPU figures: one nvidia-smi session for the whole
//! comparison (see [`crate::gpu`]), rooted at the spawner, so that
//! whatever command it runs is in the tree, one at a time. The spawner
//! tells each run's stretch (start, end, and the next run's start), and
//! the run takes the samples of that stretch: busy time and energy from
//! its start to its end, memory from the moments that came from its start
//! until the next run's. Starting nvidia-smi once, rather than per run,
//! keeps its start (some 30 ms) out of every run.
//!
//! Without a spawner (runs forked by tally itself) each run samples for
//! itself, as `tally run` does.
//!
//! Not asked for (`--gpu`), the figures are sampled when nvidia-smi is on
//! PATH, and kept only when a command used a GPU (a memory peak above 0
//! in some run): comparing commands that never touch a GPU gets no
//! figures of the GPUs' idle hum.

use super::report::CommandResult;
use crate::gpu::timeline::Window;
use crate::gpu::{Failed, GpuPart, GpuState, Sampler, Waiting};
use crate::run::report::RunRecord;
use crate::run::spawner::Stretch;

/// How the runs of a comparison get their GPU figures.
pub enum Sampling {
    /// Not sampled (no nvidia-smi, not asked for).
    Off,
    /// Asked for and not measurable: why.
    Unavailable(String),
    /// One session for every run (the spawner's).
    Session(Sampler),
    /// Each run samples for itself (runs forked by tally).
    PerRun,
}

impl Sampling {
    /// Sampling for runs the spawner `spawner` makes (`None`: tally makes
    /// them itself).
    pub fn start(asked: bool, spawner: Option<u32>) -> Sampling {
        let Some(root) = spawner else {
            return Sampling::PerRun;
        };
        match Sampler::when_present(asked, Some(root), &mut Waiting::default()) {
            Ok(Some(s)) => Sampling::Session(s),
            Ok(None) => Sampling::Off,
            Err(Failed::Unavailable { why, .. }) if asked => Sampling::Unavailable(why),
            Err(_) => Sampling::Off,
        }
    }

    /// Stops the session's nvidia-smi: every run has been answered.
    pub fn stop(&mut self) {
        if let Sampling::Session(_) = self {
            *self = Sampling::Off;
        }
    }

    /// Why the figures asked for are unavailable, for a warning.
    pub fn unavailable(&self) -> Option<&str> {
        match self {
            Sampling::Unavailable(why) => Some(why),
            _ => None,
        }
    }

    /// Gives `rec`, which ran over `stretch`, its GPU figures.
    pub fn record(&mut self, rec: &mut RunRecord, stretch: Option<Stretch>) {
        match self {
            Sampling::Session(s) => {
                let Some(st) = stretch else {
                    return;
                };
                let w = Window {
                    start: st.start_ns,
                    end: st.end_ns,
                    held_until: st.next_start_ns,
                };
                rec.gpu = GpuPart::measured(s.figures(w));
                // Later runs start after this one's end.
                s.prune(st.end_ns);
            }
            Sampling::Unavailable(why) => rec.gpu = GpuPart::unavailable(why.clone()),
            Sampling::Off | Sampling::PerRun => {}
        }
    }
}

/// Without `--gpu`: the GPU figures leave every run unless some run of
/// some command held GPU memory.
pub fn keep_only_if_used(results: &mut [CommandResult], asked: bool) {
    let used = results
        .iter()
        .flat_map(|c| &c.runs)
        .any(|r| r.gpu.gpu.measured().and_then(|g| g.gpu_mem_peak_bytes) > Some(0));
    if asked || used {
        return;
    }
    for r in results.iter_mut().flat_map(|c| c.runs.iter_mut()) {
        if matches!(r.gpu.gpu, GpuState::Measured(_)) {
            r.gpu = GpuPart::default();
        }
    }
}

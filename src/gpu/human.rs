//! A run's GPU figures in words, one line per GPU.

use super::{GpuPart, GpuState, OneGpu};
use crate::units::{percent, thousands};

const MIB: u64 = 1024 * 1024;

/// The lines for people (without the `tally: ` prefix): one per GPU,
/// then the notes; the reason when the figures are unavailable; nothing
/// when they were not sampled.
pub fn lines(part: &GpuPart, wall_ns: u64) -> Vec<String> {
    match &part.gpu {
        GpuState::NotSampled => Vec::new(),
        GpuState::Unavailable => vec![format!(
            "GPU figures unavailable: {}",
            part.gpu_reason
                .as_deref()
                .unwrap_or("no reason was recorded")
        )],
        GpuState::Measured(g) => {
            let every = format!("sampled every {} ms", g.sample_interval_ns / 1_000_000);
            let mut out: Vec<String> = g
                .gpus
                .iter()
                .map(|one| line(one, wall_ns, &every))
                .collect();
            if g.gpus.is_empty() {
                out.push(format!("GPU: nvidia-smi named no GPU ({every})"));
            }
            out.extend(g.notes.iter().map(|n| format!("GPU: {n}")));
            out
        }
    }
}

fn line(g: &OneGpu, wall_ns: u64, every: &str) -> String {
    let peak = match g.mem_peak_bytes {
        Some(b) => format!("peak {}MiB", thousands(b.div_ceil(MIB))),
        None => "peak unavailable".into(),
    };
    let busy = match g.busy_ns.and_then(|b| percent(b, wall_ns)) {
        Some(p) => format!("busy {p}% of the wall time"),
        None => "busy unavailable".into(),
    };
    let energy = match g.energy_joules {
        Some(j) => format!("{} J", thousands(j.round() as u64)),
        None => "energy unavailable".into(),
    };
    format!(
        "GPU {} ({}): {peak}, {busy}, {energy} ({every})",
        g.index, g.name
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::gpu::Gpu;

    #[test]
    fn the_line_of_one_gpu_reads_as_documented() {
        let g = Gpu {
            gpu_mem_peak_bytes: Some(4112 * MIB),
            gpu_busy_ns: Some(380_000_000),
            gpu_energy_joules: Some(212.4),
            sample_interval_ns: 20_000_000,
            source: String::new(),
            gpus: vec![OneGpu {
                index: 0,
                name: "NVIDIA H200".into(),
                uuid: "GPU-x".into(),
                mem_peak_bytes: Some(4112 * MIB),
                busy_ns: Some(380_000_000),
                energy_joules: Some(212.4),
                samples: 50,
            }],
            notes: vec![],
        };
        let part = GpuPart {
            gpu: GpuState::Measured(g),
            gpu_reason: None,
        };
        assert_eq!(
            lines(&part, 1_000_000_000),
            [
                "GPU 0 (NVIDIA H200): peak 4,112MiB, busy 38% of the wall time, 212 J (sampled every 20 ms)"
            ]
        );
        assert!(lines(&GpuPart::default(), 1).is_empty());
    }
}

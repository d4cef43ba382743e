//! `--baseline OLD.json`: ratios of this run's medians to an earlier run's
//! (another kernel, another machine). A ratio is new / old for every unit,
//! so above 1 means "more ns" (slower) for latencies and "more GB/s"
//! (faster) for bandwidth; `higher_is_better` says which reading applies.

use std::path::{Path, PathBuf};

use super::model::BenchReport;
pub use super::model::{Baseline, Comparison, Verdict};

/// The significance level of the verdicts.
pub const ALPHA: f64 = 0.05;

/// The verdict on `new` samples against `old` ones: a two-sided
/// Mann–Whitney U test (the samples are medians of batches, not normal),
/// and the direction of the ratio of medians.
pub fn verdict(
    new: &[f64],
    old: &[f64],
    ratio: f64,
    higher_is_better: bool,
) -> (Option<f64>, Verdict) {
    if new.len() < 2 || old.len() < 2 {
        return (None, Verdict::Unknown);
    }
    let Some(mw) = crate::stats::mann_whitney(new, old) else {
        return (None, Verdict::Unknown);
    };
    let verdict = if mw.p >= ALPHA || ratio == 1.0 {
        Verdict::Same
    } else if (ratio > 1.0) == higher_is_better {
        Verdict::Better
    } else {
        Verdict::Worse
    };
    (Some(mw.p), verdict)
}

/// How much of a baseline is read: 64 MiB, the bound of the report's
/// schema with room to spare. A `--quick` report is 1.3 MB here (386
/// figures; the largest holds 2,029 samples); the harness keeps at most
/// 2,000 samples per figure and pass, two passes, under 25 bytes of JSON
/// each: 64 MiB holds 670 figures all at that most, more than any map
/// runs.
pub const BOUND: crate::input::Bound = crate::input::Bound {
    what: "baseline",
    cap_bytes: 64 << 20,
    fix: "give a report written by `tally bench --format json > OLD.json` (at most 64 MiB)",
};

/// Why a baseline could not be used.
#[derive(Debug, thiserror::Error)]
pub enum BaselineError {
    /// It names the file, the cap or type, and the fix.
    #[error(transparent)]
    Read(#[from] crate::input::InputError),
    #[error(
        "the baseline {} is not a `tally bench --format json` report ({source}); write one with `tally bench --format json > OLD.json`",
        crate::report::path::display(path)
    )]
    Parse {
        path: PathBuf,
        source: serde_json::Error,
    },
    #[error(
        "the baseline {} has schema_version {found}, this tally writes {expected}; rerun the old version with the same tally",
        crate::report::path::display(path)
    )]
    Schema {
        path: PathBuf,
        found: u32,
        expected: u32,
    },
}

/// Reads an earlier report.
pub fn load(path: &Path) -> Result<BenchReport, BaselineError> {
    let text = crate::input::read_text(path, &BOUND)?;
    // The version first, alone (the rest skipped unparsed), so that a
    // report of another version says so rather than failing on a field.
    #[derive(serde::Deserialize)]
    struct Version {
        schema_version: Option<u64>,
    }
    let v: Version = serde_json::from_str(&text).map_err(|source| BaselineError::Parse {
        path: path.to_path_buf(),
        source,
    })?;
    let found = v
        .schema_version
        .and_then(|s| u32::try_from(s).ok())
        .unwrap_or(0);
    if found != crate::report::SCHEMA_VERSION {
        return Err(BaselineError::Schema {
            path: path.to_path_buf(),
            found,
            expected: crate::report::SCHEMA_VERSION,
        });
    }
    serde_json::from_str(&text).map_err(|source| BaselineError::Parse {
        path: path.to_path_buf(),
        source,
    })
}

/// Compares `new` against `old` figure by figure (matched on `id`).
pub fn compare(path: &Path, old: &BenchReport, new: &BenchReport) -> Baseline {
    let mut comparisons = Vec::new();
    let mut missing = 0usize;
    for f in new.benchmarks.iter().flat_map(|b| &b.figures) {
        let Some(new_median) = f.median() else {
            continue;
        };
        let old_fig = old
            .benchmarks
            .iter()
            .flat_map(|b| &b.figures)
            .find(|o| o.id == f.id && o.value.unit_key() == f.value.unit_key());
        match old_fig.and_then(|o| Some((o, o.median()?))) {
            Some((o, old_median)) if old_median != 0.0 => {
                let ratio = new_median / old_median;
                let higher_is_better = f.value.higher_is_better();
                let (p_value, verdict) = verdict(&f.samples, &o.samples, ratio, higher_is_better);
                comparisons.push(Comparison {
                    id: f.id.clone(),
                    unit: f.value.unit_key().to_string(),
                    old_median,
                    new_median,
                    ratio,
                    higher_is_better,
                    p_value,
                    verdict,
                })
            }
            _ => missing += 1,
        }
    }
    Baseline {
        path: path.to_path_buf(),
        old_cpu_model: old.machine.cpu_model.clone(),
        old_kernel: old.machine.kernel.clone(),
        old_mode: old.mode,
        comparisons,
        missing_in_baseline: missing,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::ffi::OsStrExt;

    #[test]
    fn a_shifted_latency_is_worse_and_a_reshuffle_is_the_same() {
        let old: Vec<f64> = (0..12).map(|i| 100.0 + f64::from(i)).collect();
        let slower: Vec<f64> = old.iter().map(|x| x * 1.2).collect();
        let (p, v) = verdict(&slower, &old, 1.2, false);
        assert!(p.is_some_and(|p| p < ALPHA), "{p:?}");
        assert_eq!(v, Verdict::Worse);
        // Higher is better (bandwidth): the same shift is better.
        assert_eq!(verdict(&slower, &old, 1.2, true).1, Verdict::Better);
        let mut again = old.clone();
        again.reverse();
        let (p, v) = verdict(&again, &old, 1.0, false);
        assert!(p.is_some_and(|p| p > 0.9), "{p:?}");
        assert_eq!(v, Verdict::Same);
        // Overlapping samples with a different median are not a change.
        let close: Vec<f64> = old.iter().map(|x| x + 1.0).collect();
        assert_eq!(verdict(&close, &old, 1.01, false).1, Verdict::Same);
        assert_eq!(verdict(&[1.0], &old, 1.0, false), (None, Verdict::Unknown));
    }

    #[test]
    fn non_utf8_paths_round_trip_losslessly() {
        let path = PathBuf::from(std::ffi::OsStr::from_bytes(b"/tmp/caf\xe9\n.json"));
        let b = Baseline {
            path: path.clone(),
            old_cpu_model: None,
            old_kernel: None,
            old_mode: super::super::Mode::Quick,
            comparisons: vec![],
            missing_in_baseline: 0,
        };
        let j = serde_json::to_value(&b).unwrap();
        assert_eq!(j["path"]["bytes_hex"], "2f746d702f636166e90a2e6a736f6e");
        let back: Baseline = serde_json::from_value(j).unwrap();
        assert_eq!(back.path, path);
        assert!(
            b.describe().starts_with("/tmp/caf\\xe9\\x0a.json "),
            "{}",
            b.describe()
        );
        let bad = serde_json::json!({"path": {"lossy": "x", "bytes_hex": "zz"},
            "old_cpu_model": null, "old_kernel": null, "old_mode": "quick",
            "comparisons": [], "missing_in_baseline": 0});
        assert!(serde_json::from_value::<Baseline>(bad).is_err());
    }
}

//! One measured figure: what it is, how it is defined, its summary in a
//! unit its JSON key names, and every sample behind it.

use serde::{Deserialize, Serialize};

use super::harness::Samples;
use crate::stats::{self, Summary};

/// A figure's value. Serialised flattened into the figure, so the key names
/// the unit: `"ns": {summary}`, `"gb_per_s": {…}`, `"mhz": {…}`, or
/// `"unavailable": "reason"`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Value {
    /// Nanoseconds per operation (as the definition says).
    Ns(Summary),
    /// Gigabytes (10^9 bytes) per second.
    GbPerS(Summary),
    /// Megahertz.
    Mhz(Summary),
    /// Bytes.
    Bytes(Summary),
    /// Not measured on this machine, and why.
    Unavailable(String),
}

impl Value {
    pub fn summary(&self) -> Option<&Summary> {
        match self {
            Value::Ns(s) | Value::GbPerS(s) | Value::Mhz(s) | Value::Bytes(s) => Some(s),
            Value::Unavailable(_) => None,
        }
    }

    /// The unit key (`ns`, `gb_per_s`, …).
    pub fn unit_key(&self) -> &'static str {
        match self {
            Value::Ns(_) => "ns",
            Value::GbPerS(_) => "gb_per_s",
            Value::Mhz(_) => "mhz",
            Value::Bytes(_) => "bytes",
            Value::Unavailable(_) => "",
        }
    }

    /// Whether larger is better (bandwidth, frequency) rather than worse.
    pub fn higher_is_better(&self) -> bool {
        matches!(self, Value::GbPerS(_) | Value::Mhz(_))
    }
}

/// Above this robust spread of its samples (percent), a figure is
/// unstable: its median is not a figure to read to ±10%.
pub const UNSTABLE_SPREAD_PERCENT: f64 = 5.0;
/// Above this difference (percent) between the medians of the first and
/// the second half of its samples, or of two passes, a figure is unstable.
pub const UNSTABLE_HALVES_PERCENT: f64 = 5.0;

/// How far a figure can be trusted, from its own samples: every figure
/// carries one. A figure can look exact (a tight median) and still move
/// 30% from one run to the next; these are the signs of it that one run
/// shows.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Stability {
    /// The robust spread of the samples: 1.4826 × their median absolute
    /// deviation over the median (the CV for normal samples, but blind to
    /// a few preempted ones), percent; absent below 3 samples.
    pub spread_percent: Option<f64>,
    /// How far apart the medians of the first and second half of the
    /// samples are, over the median, percent: drift while measuring
    /// (warm-up, a first touch, a clock or a neighbour that changed).
    /// Absent below 4 samples.
    pub halves_percent: Option<f64>,
    /// For a figure measured in two passes, each with a set-up of its own
    /// (a fresh buffer, fresh files): how far apart their medians are,
    /// percent. What one placement of memory or one state of the file
    /// system gives, the other may not.
    pub passes_percent: Option<f64>,
    /// Set when the figure is unstable: by about how much (±, percent) it
    /// may move between runs, the largest of the measures above. Human
    /// output shows `unstable ±x%` instead of the spread.
    pub unstable_percent: Option<f64>,
    /// Why, when it is not the measures above (a figure derived from
    /// unstable ones).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub unstable_because: Option<String>,
}

impl Stability {
    /// The stability of samples taken in this order.
    pub fn of(values: &[f64]) -> Stability {
        let mut st = Stability::default();
        let Some(median) = stats::summarize(values).map(|s| s.median) else {
            return st;
        };
        let rel = |d: f64| {
            if median != 0.0 {
                Some(d.abs() * 100.0 / median.abs())
            } else {
                None
            }
        };
        if values.len() >= 3 {
            st.spread_percent = stats::summarize(values).and_then(|s| rel(1.4826 * s.mad));
        }
        if values.len() >= 4 {
            let (a, b) = values.split_at(values.len() / 2);
            if let (Some(a), Some(b)) = (stats::summarize(a), stats::summarize(b)) {
                st.halves_percent = rel(a.median - b.median);
            }
        }
        st.judge();
        st
    }

    /// Sets `unstable_percent` from the measures.
    fn judge(&mut self) {
        let over = |v: Option<f64>, limit: f64| v.filter(|v| *v > limit);
        let worst = [
            over(self.spread_percent, UNSTABLE_SPREAD_PERCENT),
            over(self.halves_percent, UNSTABLE_HALVES_PERCENT),
            over(self.passes_percent, UNSTABLE_HALVES_PERCENT),
        ]
        .into_iter()
        .flatten()
        .fold(None, |a: Option<f64>, v| Some(a.map_or(v, |a| a.max(v))));
        // A mark for another reason (derived from unstable figures) stays.
        let kept = self
            .unstable_percent
            .filter(|_| self.unstable_because.is_some());
        self.unstable_percent = match (worst, kept) {
            (Some(w), Some(k)) => Some(w.max(k)),
            (w, k) => w.or(k),
        };
    }
}

/// One figure of a benchmark.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Figure {
    /// Stable key: `<benchmark>.<name>[.<x>]`, e.g. `memlat.random_4k.65536`.
    pub id: String,
    /// The series a sweep point belongs to (`random, 4 KiB pages`); for a
    /// single figure, its label.
    pub label: String,
    /// The sweep parameter (bytes, descriptors, arguments), if any.
    pub x: Option<u64>,
    /// The unit of `x`: `bytes`, `fds`, `args`.
    pub x_unit: Option<String>,
    /// What exactly one unit of the figure is (per call, per round trip,
    /// per fault; MB or MiB; which code did the work).
    pub definition: String,
    #[serde(flatten)]
    pub value: Value,
    /// Coefficient of variation of the samples (stddev / mean).
    pub cv: Option<f64>,
    /// Samples that are outliers by modified z-score (> 3.5): on a shared
    /// machine, mostly samples that were preempted. Kept in `samples`.
    #[serde(default)]
    pub outliers: usize,
    /// The coefficient of variation without those outliers.
    #[serde(default)]
    pub cv_without_outliers: Option<f64>,
    /// Every kept sample, in the value's unit, in the order taken.
    #[serde(default)]
    pub samples: Vec<f64>,
    /// How far the figure can be trusted; see [`Stability`].
    #[serde(default)]
    pub stability: Stability,
    pub iters_per_sample: Option<u64>,
    pub warmup_discarded: Option<usize>,
    #[serde(default)]
    pub notes: Vec<String>,
    /// Set when the figure failed a plausibility check
    /// ([`super::plausible`]): why. The value and samples stay in the JSON
    /// for inspection, but no table, plot, metric or baseline ratio uses
    /// them.
    #[serde(default)]
    pub implausible: Option<String>,
}

impl Figure {
    fn base(id: String, label: &str, definition: &str, value: Value) -> Figure {
        Figure {
            id,
            label: label.to_string(),
            x: None,
            x_unit: None,
            definition: definition.to_string(),
            value,
            cv: None,
            outliers: 0,
            cv_without_outliers: None,
            samples: Vec::new(),
            stability: Stability::default(),
            iters_per_sample: None,
            warmup_discarded: None,
            notes: Vec::new(),
            implausible: None,
        }
    }

    fn from_values(
        id: String,
        label: &str,
        definition: &str,
        values: Vec<f64>,
        make: fn(Summary) -> Value,
    ) -> Figure {
        match stats::summarize(&values) {
            Some(s) => {
                let mut f = Figure::base(id, label, definition, make(s));
                f.cv = s.cv();
                let out = stats::outliers(&values);
                f.outliers = out.len();
                f.cv_without_outliers = if out.is_empty() {
                    f.cv
                } else {
                    let kept: Vec<f64> = values
                        .iter()
                        .enumerate()
                        .filter(|(i, _)| !out.contains(i))
                        .map(|(_, v)| *v)
                        .collect();
                    stats::summarize(&kept).and_then(|k| k.cv())
                };
                f.stability = Stability::of(&values);
                f.samples = values;
                f
            }
            None => Figure::unavailable(id, label, definition, "no finite sample was taken"),
        }
    }

    /// A latency figure in ns per operation.
    pub fn latency(id: impl Into<String>, label: &str, definition: &str, s: Samples) -> Figure {
        let clamped = s.clamped;
        let too_short = s.too_short;
        let mut f = Figure::from_values(id.into(), label, definition, s.per_op_ns, Value::Ns);
        f.iters_per_sample = Some(s.iters_per_sample);
        f.warmup_discarded = Some(s.warmup_discarded);
        f.flag_too_short(too_short);
        if clamped > 0 {
            f.notes.push(format!(
                "{clamped} samples fell below the empty-loop overhead and were clamped to 0"
            ));
        }
        f
    }

    /// A latency figure from values already in ns (which may be negative:
    /// they are kept as they are).
    pub fn latency_values(
        id: impl Into<String>,
        label: &str,
        definition: &str,
        values: Vec<f64>,
    ) -> Figure {
        Figure::from_values(id.into(), label, definition, values, Value::Ns)
    }

    /// A bandwidth figure: `bytes_per_op` over each sample's ns per op.
    pub fn bandwidth(
        id: impl Into<String>,
        label: &str,
        definition: &str,
        s: Samples,
        bytes_per_op: f64,
    ) -> Figure {
        // A sample of zero or negative duration has no bandwidth: it is
        // left out of the values and makes the figure implausible.
        let values: Vec<f64> = s
            .per_op_ns
            .iter()
            .filter(|ns| ns.is_finite() && **ns > 0.0)
            .map(|ns| bytes_per_op / ns)
            .collect();
        let untimed = s.per_op_ns.len() - values.len();
        let too_short = s.too_short.max(untimed);
        let total = s.per_op_ns.len();
        let mut f = Figure::from_values(id.into(), label, definition, values, Value::GbPerS);
        f.iters_per_sample = Some(s.iters_per_sample);
        f.warmup_discarded = Some(s.warmup_discarded);
        if total > 0 {
            f.flag_too_short_of(too_short, total);
        }
        f
    }

    /// Flags the figure when `n` of its samples were too short to time.
    fn flag_too_short(&mut self, n: usize) {
        let total = self.samples.len();
        self.flag_too_short_of(n, total);
    }

    fn flag_too_short_of(&mut self, n: usize, total: usize) {
        if n > 0 {
            self.flag(format!(
                "{n} of {total} samples lasted zero time, less, or under the timer's resolution: too short to have been timed"
            ));
        }
    }

    /// Marks the figure implausible (the first reason is kept).
    pub fn flag(&mut self, reason: impl Into<String>) {
        if self.implausible.is_none() {
            self.implausible = Some(reason.into());
        }
    }

    /// The summary a table, plot or metric may show: none when the figure
    /// is unavailable or implausible.
    pub fn measured(&self) -> Option<&Summary> {
        match self.implausible {
            Some(_) => None,
            None => self.value.summary(),
        }
    }

    /// A frequency figure in MHz.
    pub fn mhz(id: impl Into<String>, label: &str, definition: &str, values: Vec<f64>) -> Figure {
        Figure::from_values(id.into(), label, definition, values, Value::Mhz)
    }

    /// A size figure in bytes.
    pub fn bytes(id: impl Into<String>, label: &str, definition: &str, values: Vec<f64>) -> Figure {
        Figure::from_values(id.into(), label, definition, values, Value::Bytes)
    }

    /// A figure that could not be measured, and why.
    pub fn unavailable(
        id: impl Into<String>,
        label: &str,
        definition: &str,
        reason: impl Into<String>,
    ) -> Figure {
        Figure::base(
            id.into(),
            label,
            definition,
            Value::Unavailable(reason.into()),
        )
    }

    /// Sets the sweep parameter.
    pub fn at(mut self, x: u64, unit: &str) -> Figure {
        self.x = Some(x);
        self.x_unit = Some(unit.to_string());
        self
    }

    /// Adds a note.
    pub fn note(mut self, note: impl Into<String>) -> Figure {
        self.notes.push(note.into());
        self
    }

    /// By how much (±, percent) the figure may move between runs, when it
    /// is unstable and shown (measured and plausible).
    pub fn unstable(&self) -> Option<f64> {
        self.measured()?;
        self.stability.unstable_percent
    }

    /// Records a second pass of the same figure, measured after a set-up
    /// of its own: its samples join this figure's (the summary is of
    /// both), and the two medians' difference is `passes_percent`.
    pub fn with_pass(self, second: Figure) -> Figure {
        let (Some(a), Some(b)) = (self.value.summary(), second.value.summary()) else {
            return self;
        };
        let (a, b) = (a.median, b.median);
        let make = match self.value {
            Value::Ns(_) => Value::Ns,
            Value::GbPerS(_) => Value::GbPerS,
            Value::Mhz(_) => Value::Mhz,
            Value::Bytes(_) => Value::Bytes,
            Value::Unavailable(_) => return self,
        };
        let mut values = self.samples.clone();
        values.extend(second.samples.iter().copied());
        let mut f = Figure::from_values(self.id, &self.label, &self.definition, values, make);
        f.x = self.x;
        f.x_unit = self.x_unit;
        f.iters_per_sample = self.iters_per_sample;
        f.warmup_discarded = self.warmup_discarded;
        f.notes = self.notes;
        f.implausible = self.implausible.or(second.implausible);
        let mid = (a + b) / 2.0;
        if mid != 0.0 {
            f.stability.passes_percent = Some((a - b).abs() * 100.0 / mid.abs());
        }
        f.stability.judge();
        f
    }

    /// Marks the figure unstable because of what it was derived from.
    pub fn unstable_because(&mut self, percent: f64, why: impl Into<String>) {
        let p = self
            .stability
            .unstable_percent
            .map_or(percent, |p| p.max(percent));
        self.stability.unstable_percent = Some(p);
        self.stability.unstable_because = Some(why.into());
    }

    /// The median, when the figure was measured and is plausible.
    pub fn median(&self) -> Option<f64> {
        self.measured().map(|s| s.median)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn json_key_names_the_unit() {
        let f = Figure::latency_values("a.b", "b", "per call", vec![1.0, 2.0, 3.0]);
        let j = serde_json::to_value(&f).unwrap();
        assert_eq!(j["ns"]["median"], 2.0);
        assert!(j.get("unavailable").is_none());
        let back: Figure = serde_json::from_value(j).unwrap();
        assert_eq!(back, f);
    }

    #[test]
    fn outliers_are_counted_and_left_out_of_the_second_cv() {
        let mut v = vec![10.0; 20];
        v[3] = 11.0;
        v.push(500.0);
        let f = Figure::latency_values("a.b", "b", "d", v);
        assert_eq!(f.outliers, 2, "the 11 is off a zero MAD, the 500 far off");
        assert_eq!(f.samples.len(), 21);
        assert!(f.cv.unwrap() > 1.0);
        assert!(f.cv_without_outliers.unwrap() < 1e-9);
    }

    #[test]
    fn unavailable_round_trips() {
        let f = Figure::unavailable("a.b", "b", "per call", "no TSC");
        let j = serde_json::to_value(&f).unwrap();
        assert_eq!(j["unavailable"], "no TSC");
        let back: Figure = serde_json::from_value(j).unwrap();
        assert_eq!(back.value, Value::Unavailable("no TSC".into()));
    }

    #[test]
    fn negative_values_are_kept() {
        let f = Figure::latency_values("a.b", "b", "d", vec![-5.0, -4.0, -3.0]);
        assert_eq!(f.median(), Some(-4.0));
        assert_eq!(f.samples.len(), 3);
    }

    #[test]
    fn empty_samples_are_unavailable() {
        let f = Figure::latency_values("a.b", "b", "d", vec![]);
        assert!(matches!(f.value, Value::Unavailable(_)));
    }

    #[test]
    fn bandwidth_divides_bytes_by_time() {
        let s = Samples {
            per_op_ns: vec![1.0, 2.0],
            iters_per_sample: 1,
            warmup_discarded: 0,
            clamped: 0,
            too_short: 0,
        };
        let f = Figure::bandwidth("m.r", "r", "d", s, 4.0);
        assert_eq!(f.value.summary().unwrap().max, 4.0);
        assert_eq!(f.value.summary().unwrap().min, 2.0);
    }
}

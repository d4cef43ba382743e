//! Two passes: [`super::execute`] runs every chosen benchmark twice, the
//! second time only after every benchmark's first pass, each pass with
//! half the time per figure and a set-up of its own (fresh buffers, files,
//! peers). This module merges the two results of one benchmark.
//!
//! Why: a figure measured once, in 50 ms, sees one state of the machine:
//! one placement of its buffer in physical memory, one state of the file
//! system, and on a VM one state of the host (a neighbour on the other
//! hyperthread made a system call 30% dearer for a second at a time,
//! measured on a 2-vCPU VM with nothing else running in it). Its samples
//! agree with each other and still move from run to run. Two passes some
//! seconds apart see two states: their samples together give a median
//! that moves less, and the difference between the passes' medians
//! (`passes_percent` of [`super::figure::Stability`]) shows what one pass
//! alone hides; a figure whose passes differ is marked unstable.

use super::figure::{Figure, UNSTABLE_HALVES_PERCENT};
use super::format::format_value;
use super::model::BenchResult;

/// How many passes a run makes.
pub const PASSES: u32 = 2;

/// Fewer samples than this in a pass and a figure is not a sample set but
/// one derived value (a cache line size, a TLB reach, a byte count): it is
/// kept from the first pass and compared with the second.
const MIN_SAMPLES_TO_POOL: usize = 3;

/// One benchmark's two results as one: times and counts added, notes and
/// figures merged (see [`merge_figure`]).
pub fn merge(first: BenchResult, second: BenchResult) -> BenchResult {
    let mut out = first;
    out.duration_ms = out.duration_ms.saturating_add(second.duration_ms);
    out.involuntary_switches = out
        .involuntary_switches
        .saturating_add(second.involuntary_switches);
    out.threads_at_start = match (out.threads_at_start, second.threads_at_start) {
        (Some(a), Some(b)) => Some(a.max(b)),
        (a, b) => a.or(b),
    };
    out.other_cpu_ms = match (out.other_cpu_ms, second.other_cpu_ms) {
        (Some(a), Some(b)) => Some(a.saturating_add(b)),
        (a, b) => a.or(b),
    };
    out.error = out.error.or(second.error);
    add_notes(&mut out.notes, second.notes);
    out.memlat = out.memlat.or(second.memlat);
    let mut seconds = second.figures;
    let firsts = std::mem::take(&mut out.figures);
    for f in firsts {
        let merged = match seconds.iter().position(|s| s.id == f.id) {
            Some(i) => merge_figure(f, seconds.remove(i)),
            None => f,
        };
        out.figures.push(merged);
    }
    out.figures.extend(seconds);
    out
}

/// A note with every number in it replaced by `#`: the same note of the
/// other pass, with other numbers, has the same shape.
fn shape(note: &str) -> String {
    let mut out = String::with_capacity(note.len());
    let mut in_number = false;
    for c in note.chars() {
        let numeric = c.is_ascii_digit() || (in_number && matches!(c, '.' | ','));
        if numeric && !in_number {
            out.push('#');
        } else if !numeric {
            out.push(c);
        }
        in_number = numeric;
    }
    out
}

/// Adds the second pass's notes that say something the first pass's do
/// not (the same note with the second pass's own numbers is left out).
fn add_notes(notes: &mut Vec<String>, second: Vec<String>) {
    for n in second {
        if !notes.iter().any(|m| shape(m) == shape(&n)) {
            notes.push(n);
        }
    }
}

/// Two passes of one figure: their samples pooled when both passes took
/// enough of them; otherwise (a derived value) the first pass's value,
/// marked unstable when the second differs.
pub fn merge_figure(first: Figure, second: Figure) -> Figure {
    let count = |f: &Figure| f.value.summary().map_or(0, |s| s.count);
    match (count(&first), count(&second)) {
        (0, 0) => first,
        (0, _) => {
            let why = match &first.value {
                super::figure::Value::Unavailable(w) => w.clone(),
                _ => "no sample".into(),
            };
            second.note(format!("first pass unavailable: {why}"))
        }
        (_, 0) => {
            let why = match &second.value {
                super::figure::Value::Unavailable(w) => w.clone(),
                _ => "no sample".into(),
            };
            first.note(format!("second pass unavailable: {why}"))
        }
        (a, b) if a >= MIN_SAMPLES_TO_POOL && b >= MIN_SAMPLES_TO_POOL => {
            let notes = second.notes.clone();
            let mut f = first.with_pass(second);
            add_notes(&mut f.notes, notes);
            f
        }
        _ => {
            let (Some(x), Some(y)) = (
                first.value.summary().map(|s| s.median),
                second.value.summary().map(|s| s.median),
            ) else {
                return first;
            };
            let mut f = first;
            let mid = (x.abs() + y.abs()) / 2.0;
            let diff = if mid > 0.0 {
                (x - y).abs() * 100.0 / mid
            } else {
                0.0
            };
            f.stability.passes_percent = Some(diff);
            if diff > UNSTABLE_HALVES_PERCENT {
                let shown = format_value(&f.value, y);
                f.unstable_because(diff, format!("the second pass gave {shown}"));
            }
            if f.implausible.is_none() {
                f.implausible = second.implausible;
            }
            f
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::bench::registry::find;

    fn fig(id: &str, values: &[f64]) -> Figure {
        Figure::latency_values(id, id, "ns per op", values.to_vec())
    }

    #[test]
    fn passes_pool_their_samples_and_keep_the_difference() {
        let a = fig("x.a", &[10.0, 10.0, 10.0, 10.0]);
        let b = fig("x.a", &[12.0, 12.0, 12.0, 12.0]);
        let m = merge_figure(a, b);
        assert_eq!(m.samples.len(), 8);
        let p = m.stability.passes_percent.unwrap();
        assert!((p - 200.0 / 11.0).abs() < 1e-9, "{p}");
        assert!(m.stability.unstable_percent.is_some(), "18% apart");
    }

    #[test]
    fn agreeing_passes_stay_stable() {
        let a = fig("x.a", &[10.0, 10.1, 9.9, 10.0]);
        let b = fig("x.a", &[10.0, 10.05, 9.95, 10.0]);
        let m = merge_figure(a, b);
        assert_eq!(m.stability.unstable_percent, None);
        assert_eq!(m.median(), Some(10.0));
    }

    #[test]
    fn derived_values_are_kept_and_compared() {
        let a = Figure::bytes("m.line", "line", "d", vec![64.0]);
        let b = Figure::bytes("m.line", "line", "d", vec![128.0]);
        let m = merge_figure(a, b);
        assert_eq!(m.median(), Some(64.0));
        assert_eq!(m.samples, vec![64.0]);
        assert!(m.unstable().is_some());
        assert!(m.stability.unstable_because.is_some());
        let same = merge_figure(
            Figure::bytes("m.line", "line", "d", vec![64.0]),
            Figure::bytes("m.line", "line", "d", vec![64.0]),
        );
        assert_eq!(same.unstable(), None);
    }

    #[test]
    fn results_add_up_and_keep_every_figure() {
        let spec = find("syscall").unwrap();
        let mut a = BenchResult::new(spec);
        a.duration_ms = 100;
        a.involuntary_switches = 2;
        a.threads_at_start = Some(1);
        a.notes.push("n".into());
        a.push(fig("s.a", &[1.0, 1.0, 1.0]));
        a.push(Figure::unavailable("s.b", "b", "d", "no"));
        let mut b = a.clone();
        b.figures.push(fig("s.c", &[2.0, 2.0, 2.0]));
        b.figures[1] = fig("s.b", &[3.0, 3.0, 3.0]);
        let m = merge(a, b);
        assert_eq!(m.duration_ms, 200);
        assert_eq!(m.involuntary_switches, 4);
        assert_eq!(m.notes, vec!["n".to_string()]);
        let mut notes = vec!["parent resident set 4.3 MiB".to_string()];
        add_notes(
            &mut notes,
            vec![
                "parent resident set 12.7 MiB".into(),
                "3 of 9 datagrams lost".into(),
            ],
        );
        assert_eq!(
            notes,
            ["parent resident set 4.3 MiB", "3 of 9 datagrams lost"]
        );
        add_notes(&mut notes, vec!["12 of 1,024 datagrams lost".into()]);
        assert_eq!(notes.len(), 2);
        assert_eq!(shape("ran at 2.11 GB/s, 3 runs"), "ran at # GB/s, # runs");
        let ids: Vec<&str> = m.figures.iter().map(|f| f.id.as_str()).collect();
        assert_eq!(ids, ["s.a", "s.b", "s.c"]);
        assert_eq!(m.figures[0].samples.len(), 6);
        assert_eq!(m.figures[1].median(), Some(3.0));
        assert!(m.figures[1].notes[0].starts_with("first pass unavailable"));
    }
}

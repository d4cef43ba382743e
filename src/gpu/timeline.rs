//! The samples of one sampling session, kept in order, and the GPU figures
//! of any stretch of it: the one run of `tally run`, or each run of `tally
//! compare`, whose bounds are known only after it has ended.
//!
//! Busy time and energy: each GPU sample describes the period since the
//! one before it (utilization is the share of the last sample period in
//! which a kernel ran), so a GPU's time is cut into pieces that end at its
//! samples, each piece at the figures of the sample that ends it; a run
//! takes the part of every piece that lies inside it. Memory: the process
//! lines of one moment (one driver timestamp) are summed per GPU over the
//! tree's processes; a run's peak is the largest sum among the moments
//! that came while it ran.
//!
//! Memory stays bounded however long the session: past [`KEEP`] entries a
//! track merges its oldest pairs. Two pieces become one at their
//! time-weighted means, so the busy time and energy of any stretch that
//! holds both are unchanged; two moments become one at their larger sum,
//! so no peak is lost. Only the bounds of a run blur, and the figures say
//! so.

use std::collections::{BTreeSet, HashMap, VecDeque};

use super::parse::{self, AppLine, GpuLine};
use super::{Gpu, OneGpu};

const MIB: u64 = 1024 * 1024;
/// Pids listed by number in a note, at most.
const LISTED_PIDS: usize = 8;
/// Entries a track keeps before it merges its oldest (about 20 minutes
/// of samples every 20 ms).
pub const KEEP: usize = 1 << 16;

/// Whether a process the driver names belongs to the command's tree.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Membership {
    /// The command or one of its descendants.
    In,
    /// Another process: another user's, another program's.
    Out,
    /// Not in this /proc: another PID namespace (a container), or gone.
    Gone,
}

/// Decides [`Membership`] of `pid` for the tree rooted at `root`.
pub type Judge = Box<dyn FnMut(u32, u32) -> Membership + Send>;

/// A stretch of the session, in CLOCK_MONOTONIC ns: a run from `start` to
/// `end`; its memory moments are those that came from `start` until
/// `held_until` (the next run's start, or the session's end when `None`),
/// since the driver's lines come a little after the moment they describe.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Window {
    pub start: u64,
    pub end: u64,
    pub held_until: Option<u64>,
}

/// One piece of a GPU's time, `(from, to]`, at `util`% and `watts`.
#[derive(Debug, Clone, Copy)]
struct Piece {
    from: u64,
    to: u64,
    util: Option<f64>,
    watts: Option<f64>,
    /// Samples merged into it.
    samples: u32,
}

/// A moment (or merged moments, `first` to `last`) at which the tree held
/// `mib`, the largest of them.
#[derive(Debug, Clone, Copy)]
struct Held {
    first: u64,
    last: u64,
    mib: u64,
}

/// One GPU's samples.
#[derive(Debug, Default)]
struct Track {
    uuid: String,
    index: u32,
    name: String,
    /// Named by the GPU query (not only by the process query).
    named: bool,
    /// Its memory, as the GPU query gives it: no process holds more.
    total_mib: Option<u64>,
    pieces: VecDeque<Piece>,
    held: VecDeque<Held>,
}

/// The process lines of the moment being read.
struct Batch {
    timestamp: String,
    at: u64,
    /// MiB of the tree per track.
    per_track: Vec<(usize, u64)>,
}

/// A session's samples (see the module's text).
pub struct Timeline {
    /// The tree's root, once known: process lines count from then.
    root: Option<u32>,
    tracks: Vec<Track>,
    /// The tree's memory summed over GPUs, per moment.
    total: VecDeque<Held>,
    /// Old entries were merged (see the module's text).
    merged: bool,
    batch: Option<Batch>,
    judged: HashMap<u32, Membership>,
    judge: Judge,
    gone: BTreeSet<u32>,
    /// A process of the tree whose memory the driver did not give.
    mem_unknown: bool,
    bad_lines: u64,
    /// The first line that could not be read (escaped), and why.
    first_bad: Option<(String, String)>,
    interval_ns: u64,
}

impl Timeline {
    /// An empty session sampled every `interval_ns`.
    pub fn new(judge: Judge, interval_ns: u64) -> Timeline {
        Timeline {
            root: None,
            tracks: Vec::new(),
            total: VecDeque::new(),
            merged: false,
            batch: None,
            judged: HashMap::new(),
            judge,
            gone: BTreeSet::new(),
            mem_unknown: false,
            bad_lines: 0,
            first_bad: None,
            interval_ns,
        }
    }

    /// GPUs the GPU query has named so far.
    pub fn gpu_count(&self) -> usize {
        self.tracks.iter().filter(|t| t.named).count()
    }

    /// The first line that could not be read (escaped), and why.
    pub fn first_bad(&self) -> Option<(&str, &str)> {
        self.first_bad
            .as_ref()
            .map(|(line, why)| (line.as_str(), why.as_str()))
    }

    /// The tree's processes descend from `root` (the command, or the
    /// spawner of compare's runs): process lines count from now.
    pub fn root(&mut self, root: u32) {
        self.root = Some(root);
    }

    fn bad(&mut self, line: &str, why: String) {
        self.bad_lines += 1;
        if self.first_bad.is_none() {
            let shown: String = line.chars().take(160).collect();
            self.first_bad = Some((crate::text::escape::escape_text(&shown), why));
        }
    }

    fn track(&mut self, uuid: &str) -> usize {
        match self.tracks.iter().position(|t| t.uuid == uuid) {
            Some(i) => i,
            None => {
                self.tracks.push(Track {
                    uuid: uuid.to_string(),
                    ..Track::default()
                });
                self.tracks.len() - 1
            }
        }
    }

    /// A line of the GPU query, read at `at` (ns).
    pub fn gpu(&mut self, line: &str, at: u64) {
        match parse::gpu_line(line) {
            Ok(l) => self.gpu_sample(l, at),
            Err(why) => self.bad(line, why),
        }
    }

    fn gpu_sample(&mut self, l: GpuLine, at: u64) {
        let interval = self.interval_ns;
        let i = self.track(&l.uuid);
        let t = &mut self.tracks[i];
        t.index = l.index;
        t.name = l.name;
        t.named = true;
        t.total_mib = l.memory_total_mib.or(t.total_mib);
        let from = t
            .pieces
            .back()
            .map_or(at.saturating_sub(interval), |p| p.to)
            .min(at);
        t.pieces.push_back(Piece {
            from,
            to: at,
            util: l.utilization.map(f64::from),
            watts: l.power_watts,
            samples: 1,
        });
        if t.pieces.len() > KEEP {
            merge_oldest(&mut t.pieces, merge_pieces);
            self.merged = true;
        }
    }

    /// A line of the process query, read at `at` (ns).
    pub fn app(&mut self, line: &str, at: u64) {
        let tracks = &self.tracks;
        let total_of = |uuid: &str| {
            tracks
                .iter()
                .find(|t| t.uuid == uuid)
                .and_then(|t| t.total_mib)
        };
        match parse::app_line(line, &total_of) {
            Ok(l) => self.app_sample(l, at),
            Err(why) => self.bad(line, why),
        }
    }

    fn app_sample(&mut self, l: AppLine, at: u64) {
        let Some(root) = self.root else {
            return;
        };
        if self
            .batch
            .as_ref()
            .is_some_and(|b| b.timestamp != l.timestamp)
        {
            self.close_batch();
        }
        let judge = &mut self.judge;
        let member = *self
            .judged
            .entry(l.pid)
            .or_insert_with(|| judge(root, l.pid));
        match member {
            Membership::In => {}
            Membership::Out => return,
            Membership::Gone => {
                self.gone.insert(l.pid);
                return;
            }
        }
        let Some(mib) = l.used_mib else {
            self.mem_unknown = true;
            return;
        };
        let track = self.track(&l.gpu_uuid);
        let batch = self.batch.get_or_insert_with(|| Batch {
            timestamp: l.timestamp.clone(),
            at,
            per_track: Vec::new(),
        });
        match batch.per_track.iter_mut().find(|(t, _)| *t == track) {
            Some((_, sum)) => *sum = sum.saturating_add(mib),
            None => batch.per_track.push((track, mib)),
        }
    }

    fn close_batch(&mut self) {
        let Some(b) = self.batch.take() else {
            return;
        };
        // The tree's processes on one GPU hold no more than it has: a
        // moment beyond that is refused whole.
        for &(track, mib) in &b.per_track {
            if let Some(t) = self.tracks.get(track)
                && let Err(why) =
                    parse::check_mib(mib, "the command's processes' memory", t.total_mib)
            {
                let moment = format!("the moment {} on {}", b.timestamp, t.uuid);
                self.bad(&moment, why);
                return;
            }
        }
        let mut total = 0u64;
        for (track, mib) in b.per_track {
            total = total.saturating_add(mib);
            if let Some(t) = self.tracks.get_mut(track) {
                push_held(&mut t.held, b.at, mib, &mut self.merged);
            }
        }
        push_held(&mut self.total, b.at, total, &mut self.merged);
    }

    /// Forgets what lies wholly before `before` (ns): a run that started
    /// later needs none of it. Which processes are the tree's is judged
    /// again from now (a pid may be reused), and the notes start afresh.
    pub fn prune(&mut self, before: u64) {
        for t in &mut self.tracks {
            // The last piece before it stays: the next sample's piece
            // starts where it ends, so no stretch is left uncovered.
            while t.pieces.get(1).is_some_and(|p| p.to < before) {
                t.pieces.pop_front();
            }
            while t.held.front().is_some_and(|h| h.last < before) {
                t.held.pop_front();
            }
        }
        while self.total.front().is_some_and(|h| h.last < before) {
            self.total.pop_front();
        }
        self.judged.clear();
        self.gone.clear();
        self.mem_unknown = false;
    }

    /// The figures of the stretch `w`; `apps_ok`: whether the process
    /// query has run throughout.
    pub fn figures(&mut self, w: Window, apps_ok: bool) -> Gpu {
        self.close_batch();
        let until = w.held_until.unwrap_or(u64::MAX).max(w.end);
        let mut notes = Vec::new();
        let mut gpus: Vec<OneGpu> = self
            .tracks
            .iter()
            .map(|t| one_gpu(t, w, until, apps_ok, &mut notes))
            .collect();
        gpus.sort_by_key(|g| g.index);
        self.notes_into(&mut notes, apps_ok);
        let gpu_busy_ns = if gpus.is_empty() {
            None
        } else {
            gpus.iter().map(|g| g.busy_ns).sum()
        };
        let gpu_energy_joules = if gpus.is_empty() {
            None
        } else {
            gpus.iter().map(|g| g.energy_joules).sum()
        };
        Gpu {
            gpu_mem_peak_bytes: (apps_ok && !gpus.is_empty())
                .then(|| peak(&self.total, w.start, until) * MIB),
            gpu_busy_ns,
            gpu_energy_joules,
            sample_interval_ns: self.interval_ns,
            source: super::SOURCE.to_string(),
            gpus,
            notes,
        }
    }

    fn notes_into(&self, notes: &mut Vec<String>, apps_ok: bool) {
        if !apps_ok {
            notes.push("the process query of nvidia-smi failed: no GPU memory figure".into());
        }
        if self.mem_unknown {
            notes.push(
                "the driver did not give the GPU memory of a process of the command ([N/A]: MIG, or a container without access): the peak leaves it out"
                    .into(),
            );
        }
        if !self.gone.is_empty() {
            let listed: Vec<String> = self
                .gone
                .iter()
                .take(LISTED_PIDS)
                .map(u32::to_string)
                .collect();
            notes.push(format!(
                "nvidia-smi named {} not in this /proc (pid {}{}): inside a container or another PID namespace the driver names pids of the host, which cannot be matched to the command; their memory is left out",
                crate::units::count(self.gone.len() as u64, "process", "processes"),
                listed.join(", "),
                if self.gone.len() > LISTED_PIDS { ", …" } else { "" }
            ));
        }
        if self.merged {
            notes.push(format!(
                "the session outlasted {KEEP} samples a GPU: older ones were merged in pairs (busy time and energy unchanged, peaks kept; the bounds of a run blur)"
            ));
        }
        if let Some((line, why)) = &self.first_bad {
            notes.push(format!(
                "nvidia-smi printed {} tally could not read, the first: {line} ({why})",
                crate::units::count(self.bad_lines, "line", "lines")
            ));
        }
    }
}

/// One GPU's figures over `w`, its memory moments from `w.start` to `until`.
fn one_gpu(t: &Track, w: Window, until: u64, apps_ok: bool, notes: &mut Vec<String>) -> OneGpu {
    let (mut busy, mut joules) = (Some(0.0f64), Some(0.0f64));
    let mut samples = 0u64;
    let first = t.pieces.partition_point(|p| p.to <= w.start);
    for p in t.pieces.range(first..) {
        if p.from >= w.end {
            break;
        }
        if p.to <= w.end {
            samples += u64::from(p.samples);
        }
        let ns = p.to.min(w.end).saturating_sub(p.from.max(w.start)) as f64;
        add(&mut busy, &mut joules, ns, p);
    }
    // Past the last sample (it came before the end, and nothing after):
    // at the last sample's figures.
    if let Some(last) = t.pieces.back().filter(|p| p.to < w.end) {
        let ns = w.end.saturating_sub(last.to.max(w.start)) as f64;
        add(&mut busy, &mut joules, ns, last);
    }
    if samples == 0 {
        if t.named {
            notes.push(format!(
                "GPU {}: no sample came while the command ran (it ran for less than a sampling period?): no busy time or energy",
                t.index
            ));
        } else {
            // Named only by the process query: a GPU the GPU query never
            // listed (MIG instances are named by MIG uuids).
            notes.push(format!("GPU {} is named by the process query only", t.uuid));
        }
    }
    let measured = samples > 0;
    OneGpu {
        index: t.index,
        name: t.name.clone(),
        uuid: t.uuid.clone(),
        mem_peak_bytes: apps_ok.then(|| peak(&t.held, w.start, until) * MIB),
        busy_ns: busy
            .filter(|_| measured)
            .map(|b| (b / 100.0).round() as u64),
        energy_joules: joules.filter(|_| measured),
        samples,
    }
}

/// Adds `ns` of piece `p`'s figures; an unknown figure makes its sum unknown.
fn add(busy: &mut Option<f64>, joules: &mut Option<f64>, ns: f64, p: &Piece) {
    if ns <= 0.0 {
        return;
    }
    *busy = busy.zip(p.util).map(|(b, u)| b + u * ns);
    *joules = joules.zip(p.watts).map(|(j, w)| j + w * ns / 1e9);
}

/// The largest `mib` of the moments from `from` to `until`; 0 without one.
fn peak(held: &VecDeque<Held>, from: u64, until: u64) -> u64 {
    let first = held.partition_point(|h| h.last < from);
    held.range(first..)
        .take_while(|h| h.first <= until)
        .map(|h| h.mib)
        .max()
        .unwrap_or(0)
}

fn push_held(held: &mut VecDeque<Held>, at: u64, mib: u64, merged: &mut bool) {
    held.push_back(Held {
        first: at,
        last: at,
        mib,
    });
    if held.len() > KEEP {
        merge_oldest(held, |a, b| Held {
            first: a.first,
            last: b.last,
            mib: a.mib.max(b.mib),
        });
        *merged = true;
    }
}

/// Two pieces as one, at their time-weighted figures.
fn merge_pieces(a: Piece, b: Piece) -> Piece {
    let (da, db) = (
        a.to.saturating_sub(a.from) as f64,
        b.to.saturating_sub(b.from) as f64,
    );
    let mean = |x: Option<f64>, y: Option<f64>| {
        let (x, y) = (x?, y?);
        Some(if da + db > 0.0 {
            (x * da + y * db) / (da + db)
        } else {
            y
        })
    };
    Piece {
        from: a.from,
        to: b.to,
        util: mean(a.util, b.util),
        watts: mean(a.watts, b.watts),
        samples: a.samples.saturating_add(b.samples),
    }
}

/// Merges the oldest half of `v` in pairs: a quarter of its room freed.
fn merge_oldest<T: Copy>(v: &mut VecDeque<T>, merge: impl Fn(T, T) -> T) {
    let half = v.len() / 2 / 2 * 2;
    let mut merged: VecDeque<T> = VecDeque::with_capacity(v.len());
    let mut old = v.drain(..half);
    while let (Some(a), Some(b)) = (old.next(), old.next()) {
        merged.push_back(merge(a, b));
    }
    drop(old);
    merged.append(v);
    *v = merged;
}

/// [`Membership`] from /proc: `pid` is in the tree when following parents
/// from it reaches `root`.
pub fn membership(root: u32, pid: u32) -> Membership {
    let proc = crate::procfs::ProcRoot::default();
    let mut at = pid;
    // A chain longer than this is not a process tree tally started.
    for _ in 0..1024 {
        if at == root {
            return Membership::In;
        }
        match crate::procfs::stat::read(&proc, at) {
            None if at == pid => return Membership::Gone,
            None => return Membership::Out,
            Some(s) if s.ppid <= 1 => return Membership::Out,
            Some(s) => at = s.ppid,
        }
    }
    Membership::Out
}

#[cfg(test)]
mod tests {
    use super::*;

    const A: &str = "GPU-aaaaaaaa-0000-0000-0000-000000000000";
    const B: &str = "GPU-bbbbbbbb-0000-0000-0000-000000000000";
    const MS: u64 = 1_000_000;
    const EVERY: u64 = 20 * MS;

    fn judge() -> Judge {
        // 100 and 101 are the command's, 7 another user's, 9 elsewhere.
        Box::new(|_, pid| match pid {
            100 | 101 => Membership::In,
            9 => Membership::Gone,
            _ => Membership::Out,
        })
    }

    fn run(start: u64, end: u64) -> Window {
        Window {
            start,
            end,
            held_until: None,
        }
    }

    #[test]
    fn busy_and_energy_cover_the_wall_time_exactly() {
        let mut t = Timeline::new(judge(), EVERY);
        t.gpu(
            &format!("0, NVIDIA H200, {A}, 90, 500, [N/A], [N/A], 1, [N/A]"),
            0,
        );
        for i in 1..=5 {
            t.gpu(
                &format!("0, NVIDIA H200, {A}, 50, 100, [N/A], [N/A], 1, [N/A]"),
                i * 20 * MS,
            );
        }
        // 10 ms to 120 ms: at 50% and 100 W throughout (the piece that ends
        // at 20 ms is the second sample's).
        let g = t.figures(run(10 * MS, 120 * MS), true);
        let one = &g.gpus[0];
        assert_eq!(one.samples, 5);
        assert_eq!(one.busy_ns, Some(55 * MS));
        assert!((one.energy_joules.unwrap() - 11.0).abs() < 1e-9);
        assert_eq!(g.gpu_busy_ns, Some(55 * MS));
    }

    #[test]
    fn a_run_takes_the_sample_after_its_end_for_its_last_piece() {
        let mut t = Timeline::new(judge(), EVERY);
        t.gpu(&format!("0, H200, {A}, 0, 100, [N/A], [N/A], 1, [N/A]"), 0);
        t.gpu(
            &format!("0, H200, {A}, 0, 100, [N/A], [N/A], 1, [N/A]"),
            20 * MS,
        );
        t.gpu(
            &format!("0, H200, {A}, 100, 100, [N/A], [N/A], 1, [N/A]"),
            40 * MS,
        );
        // 10 to 30 ms: 10 ms at 0%, then 10 ms of the piece that the 40 ms
        // sample (100%) describes.
        let g = t.figures(run(10 * MS, 30 * MS), true);
        assert_eq!(g.gpus[0].busy_ns, Some(10 * MS));
        assert_eq!(g.gpus[0].samples, 1);
    }

    #[test]
    fn memory_peak_sums_the_tree_per_moment_and_leaves_others_out() {
        let mut t = Timeline::new(judge(), EVERY);
        t.app(&format!("t1, 100, 4000, {A}"), 0);
        t.root(100);
        t.gpu(
            &format!("0, H200, {A}, 0, 1, [N/A], [N/A], 1, [N/A]"),
            20 * MS,
        );
        t.gpu(
            &format!("1, H200, {B}, 0, 1, [N/A], [N/A], 1, [N/A]"),
            20 * MS,
        );
        for (l, at) in [
            (format!("t2, 100, 1000, {A}"), 21),
            (format!("t2, 101, 112, {A}"), 21),
            (format!("t2, 7, 9999, {A}"), 21),
            (format!("t2, 101, 500, {B}"), 21),
            (format!("t3, 100, 4112, {A}"), 41),
            (format!("t3, 9, 77, {B}"), 41),
            (format!("t4, 100, [N/A], {A}"), 61),
        ] {
            t.app(&l, at * MS);
        }
        let g = t.figures(run(MS, 70 * MS), true);
        assert_eq!(g.gpus[0].mem_peak_bytes, Some(4112 * MIB));
        assert_eq!(g.gpus[1].mem_peak_bytes, Some(500 * MIB));
        // t2: 1,112 + 500; t3: 4,112.
        assert_eq!(g.gpu_mem_peak_bytes, Some(4112 * MIB));
        assert_eq!(g.notes.len(), 2, "{:?}", g.notes);
        assert!(g.notes[0].contains("[N/A]"));
        assert!(g.notes[1].contains("pid 9"));
    }

    #[test]
    fn each_run_of_a_session_gets_the_moments_of_its_own_stretch() {
        let mut t = Timeline::new(judge(), EVERY);
        t.root(1);
        t.gpu(&format!("0, H200, {A}, 0, 1, [N/A], [N/A], 1, [N/A]"), 0);
        // Run 1 from 10 to 50 ms, run 2 from 60 to 100 ms; a moment of run
        // 1 read at 55 ms, after its end and before run 2.
        for (ts, mib, at) in [("a", 3000, 30), ("b", 2000, 55), ("c", 6000, 80)] {
            t.app(&format!("{ts}, 100, {mib}, {A}"), at * MS);
        }
        for i in 1..=6 {
            t.gpu(
                &format!("0, H200, {A}, 10, 1, [N/A], [N/A], 1, [N/A]"),
                i * 20 * MS,
            );
        }
        let first = Window {
            start: 10 * MS,
            end: 50 * MS,
            held_until: Some(60 * MS),
        };
        assert_eq!(t.figures(first, true).gpu_mem_peak_bytes, Some(3000 * MIB));
        t.prune(50 * MS);
        let second = t.figures(run(60 * MS, 100 * MS), true);
        assert_eq!(second.gpu_mem_peak_bytes, Some(6000 * MIB));
        assert_eq!(second.gpu_busy_ns, Some(4 * MS));
    }

    #[test]
    fn not_available_figures_are_none_never_zero() {
        let mut t = Timeline::new(judge(), EVERY);
        t.root(100);
        t.gpu(
            &format!("0, H200, {A}, [N/A], [Not Supported], [N/A], [N/A], 1, [N/A]"),
            20 * MS,
        );
        t.gpu("garbage", 21 * MS);
        let g = t.figures(run(0, 30 * MS), false);
        assert_eq!(g.gpus[0].busy_ns, None);
        assert_eq!(g.gpus[0].energy_joules, None);
        assert_eq!(g.gpus[0].mem_peak_bytes, None);
        assert_eq!(
            (g.gpu_busy_ns, g.gpu_energy_joules, g.gpu_mem_peak_bytes),
            (None, None, None)
        );
        assert!(
            g.notes.iter().any(|n| n.contains("garbage")),
            "{:?}",
            g.notes
        );
    }

    #[test]
    fn a_run_shorter_than_a_sample_has_no_busy_figure() {
        let mut t = Timeline::new(judge(), EVERY);
        t.gpu(&format!("0, H200, {A}, 10, 100, [N/A], [N/A], 1, [N/A]"), 0);
        let g = t.figures(run(MS, 2 * MS), true);
        assert_eq!(g.gpus[0].busy_ns, None);
        assert!(g.notes[0].contains("no sample came"), "{:?}", g.notes);
    }

    #[test]
    fn a_long_session_stays_bounded_and_keeps_its_totals_and_peak() {
        let mut t = Timeline::new(judge(), EVERY);
        t.root(100);
        let n = 3 * KEEP as u64;
        for i in 0..=n {
            let util = if i % 2 == 0 { 20 } else { 60 };
            t.gpu(
                &format!("0, H200, {A}, {util}, 100, [N/A], [N/A], 1, [N/A]"),
                i * EVERY,
            );
            let mib = if i == n / 3 { 9000 } else { 1000 };
            t.app(&format!("t{i}, 100, {mib}, {A}"), i * EVERY + MS);
        }
        assert!(t.tracks[0].pieces.len() <= KEEP && t.total.len() <= KEEP);
        let g = t.figures(run(0, n * EVERY), true);
        // Half the pieces at 20%, half at 60%: 40% of the whole.
        let whole = (n * EVERY) as f64;
        let busy = g.gpu_busy_ns.unwrap() as f64;
        assert!((busy / whole - 0.4).abs() < 1e-6, "{busy} of {whole}");
        assert!((g.gpu_energy_joules.unwrap() - 100.0 * whole / 1e9).abs() < 1e-6);
        assert_eq!(g.gpu_mem_peak_bytes, Some(9000 * MIB));
        assert!(
            g.notes.iter().any(|n| n.contains("merged")),
            "{:?}",
            g.notes
        );
    }

    /// A process's memory over its GPU's total, or the tree's over it at
    /// one moment, is refused with the reason, and no peak is made of it.
    #[test]
    fn memory_over_the_gpus_total_is_refused_with_the_reason() {
        let mut t = Timeline::new(judge(), EVERY);
        t.root(100);
        t.gpu(&format!("0, H200, {A}, 0, 1, 700, 700, 1, 1000"), 0);
        t.app(&format!("t1, 100, 1001, {A}"), MS);
        t.app(&format!("t2, 100, 600, {A}"), 21 * MS);
        t.app(&format!("t2, 101, 600, {A}"), 21 * MS);
        t.app(&format!("t3, 100, 900, {A}"), 41 * MS);
        let g = t.figures(run(0, 60 * MS), true);
        assert_eq!(g.gpu_mem_peak_bytes, Some(900 * MIB));
        assert!(
            g.notes
                .iter()
                .any(|n| n.contains("2 lines tally could not read")
                    && n.contains(
                        "used memory 1,001 MiB is over the GPU's memory total, 1,000 MiB"
                    )),
            "{:?}",
            g.notes
        );
        let (_, why) = t.first_bad().unwrap();
        assert_eq!(
            why,
            "used memory 1,001 MiB is over the GPU's memory total, 1,000 MiB"
        );
    }

    /// Regression: with one session for every run of `tally run -n`, the
    /// samples before a run were forgotten up to its start, and the piece
    /// the next sample closed began a period before that sample, not
    /// where the last one ended: a late sample left part of the run
    /// uncovered (36% busy where every sample said 38%).
    #[test]
    fn forgetting_the_samples_before_a_run_leaves_none_of_it_uncovered() {
        let mut t = Timeline::new(judge(), EVERY);
        t.gpu(&format!("0, H200, {A}, 38, 100, [N/A], [N/A], 1, [N/A]"), 0);
        t.gpu(
            &format!("0, H200, {A}, 38, 100, [N/A], [N/A], 1, [N/A]"),
            20 * MS,
        );
        // The run starts at 30 ms; the next sample is late, at 90 ms.
        t.prune(30 * MS);
        t.gpu(
            &format!("0, H200, {A}, 38, 100, [N/A], [N/A], 1, [N/A]"),
            90 * MS,
        );
        let g = t.figures(run(30 * MS, 100 * MS), true);
        assert_eq!(g.gpu_busy_ns, Some(70 * MS * 38 / 100));
    }

    #[test]
    fn this_process_is_in_its_own_tree_and_init_is_not() {
        let me = std::process::id();
        assert_eq!(membership(me, me), Membership::In);
        assert_eq!(membership(me, 1), Membership::Out);
        assert_eq!(membership(me, u32::MAX - 1), Membership::Gone);
    }
}

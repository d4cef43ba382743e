//! The speed probe: a fixed piece of work, register arithmetic and a
//! chain of stores and loads on a stack slot (the same every time, about
//! 0.8 ms here), timed before runs and outside their clocks,
//! so that a machine whose CPUs ran slower or faster — other virtual
//! machines on the host, frequency, contention that no process of this
//! machine shows — is seen and said. Within one comparison or one
//! `run -n`, a probe that spreads warns that figures from another time are
//! not comparable; against a baseline whose probes ran at another speed,
//! time figures can be neither a regression nor a pass (see
//! `crate::compare::gate`, and the reference of `crate::bench`).

use serde::{Deserialize, Serialize};

use crate::stats;

/// Steps of the probe's register work: a xorshift generator folded into
/// a sum (about 0.6 ms here).
const STEPS: u64 = 250_000;

/// Steps of the probe's memory work: a sum on a stack slot, each step a
/// load, an add and a store ([`crate::sys::ops::stack_chain`]; 0.2 to
/// 1.4 ms here). Register work alone does not see every slower machine:
/// on the 2-core VM such a chain ran from 0.37 to 2.8 ns a step from one
/// minute to the next, as a C loop over a `volatile` did beside it, while
/// the register work stayed within 5%, and commands' own times moved with
/// it (docs/compare.md).
const STORES: u64 = 500_000;

/// Which work the probes time. Probes of another version (a baseline saved
/// before the memory steps, version 1) time other work and are not
/// compared with these.
pub const VERSION: u32 = 2;

/// The version of probes stored without one: register work only.
pub fn first_version() -> u32 {
    1
}

/// How much of a comparison's time the probes may take: a probe is made
/// once the runs since the last took this many times its own time (at
/// most 1/41, 2.4%: at 1/21 a comparison of `/bin/true` cost 1.07×
/// hyperfine's per run here, with the probes 4.5% of it). Not fewer: at
/// 1/81 a comparison of `/bin/true` cost 2% less per run, but a gate of a
/// 10 ms loop against its baseline, decided in a few dozen runs, then had
/// one probe among them and the rest made back to back after them, which
/// missed the VM's speed moving: the unchanged loop was called a
/// regression once in 5 gates, against none in 5 with this (the same
/// hour; docs/BENCHMARKS.md). The probe stays
/// about a millisecond long, the length with which a busy loop sharing its
/// CPU was seen (docs/compare.md); a shorter one may run within one
/// scheduler slice and miss it.
pub const EVERY: u64 = 40;

/// [`EVERY`] for runs that no baseline judges and none is saved from (a
/// plain comparison, `run -n`): their probes only say whether the
/// machine's speed varied during them, and need not follow it as closely
/// as a gate's (1/101, 1%). At [`EVERY`] a comparison of `/bin/true`
/// spent 2.1% of its time probing (1.068× hyperfine's per run, 1.047×
/// without probes; medians of 20 interleaved repetitions of 1,000 runs,
/// docs/BENCHMARKS.md).
pub const EVERY_UNJUDGED: u64 = 100;

/// Half the interquartile range of the probes, over their median, beyond
/// which the machine's speed is said to have varied. Quartiles, not the
/// 10th and 90th percentiles: of the few probes a short comparison makes,
/// those are the fastest and the slowest, and one probe that an interrupt
/// lengthened, or that ran in a fast moment, made the machine's speed
/// "vary" (in 2 of 6 gates of an unchanged loop on the idle VM, each with
/// two probes a side). 5%, not less: idle, the probes of the 2-core VM
/// spread by up to ±3.3% so measured (two clusters, 1.27–1.29 ms and
/// 1.32–1.37 ms); the stretches the probe is there to see moved it
/// sevenfold.
pub const SPREAD: f64 = 0.05;

/// The fewest probes whose spread is judged, and the probes a comparison
/// that saves a baseline or is compared with one makes at least (those
/// still missing after its runs, see [`Schedule::top_up`]): of fewer, one
/// outlier is a quartile.
pub const FEWEST: usize = 5;

/// How far (a fraction) the probes' median may differ from a baseline's
/// before times measured in the two are not compared: beyond it at the
/// probes' own 99% interval.
pub const DIFFERS: f64 = 0.03;

/// The shortest and the longest a probe can take: its work takes about a
/// millisecond here; a machine a hundred times faster or a thousand
/// times slower stays within. A probe read from a file outside them is no
/// probe of this work.
pub const PROBE_NS: std::ops::RangeInclusive<u64> = 10_000..=1_000_000_000;

/// Checks probes read from a file (`field`, a baseline's), once, at the
/// boundary: each a time a probe can take. The field and the reason when
/// not.
pub fn check_probes(field: &str, probes: &[u64]) -> Result<(), String> {
    match probes
        .iter()
        .enumerate()
        .find(|(_, p)| !PROBE_NS.contains(p))
    {
        Some((i, p)) => Err(format!(
            "{field}[{i}] is {p} ns; a speed probe takes from {} to {} ns (its work is fixed, \
             about a millisecond)",
            crate::units::thousands(*PROBE_NS.start()),
            crate::units::thousands(*PROBE_NS.end())
        )),
        None => Ok(()),
    }
}

/// Why a baseline's probes cannot judge the machine's speed: too few of
/// them (none, in one saved before there were probes). `None` when there
/// are [`FEWEST`] or more.
pub fn unchecked(probes: &[u64]) -> Option<String> {
    match probes.len() {
        n if n >= FEWEST => None,
        0 => Some(
            "the baseline has no speed probe (saved before there were): the machine's speed \
             then and now was not checked"
                .into(),
        ),
        n => Some(format!(
            "the baseline has {n} speed probe{}, fewer than the {FEWEST} that judge a speed: the \
             machine's speed then and now was not checked",
            if n == 1 { "" } else { "s" }
        )),
    }
}

/// Times the probe's work once: nanoseconds.
pub fn measure() -> u64 {
    let start = std::time::Instant::now();
    let mut x: u64 = std::hint::black_box(0x9e37_79b9_7f4a_7c15);
    let mut sum: u64 = 0;
    for _ in 0..std::hint::black_box(STEPS) {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        sum = sum.wrapping_add(x);
    }
    let sum = sum.wrapping_add(crate::sys::ops::stack_chain(std::hint::black_box(STORES)));
    std::hint::black_box(sum);
    u64::try_from(start.elapsed().as_nanos()).unwrap_or(u64::MAX)
}

/// The probes of a comparison or of `run -n`, in the report's JSON as
/// `speed`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Speed {
    /// Which work the probes timed ([`VERSION`]).
    #[serde(default = "first_version")]
    pub version: u32,
    /// Every probe, in order (nanoseconds).
    pub probes_ns: Vec<u64>,
    pub median_ns: f64,
    /// Half the interquartile range over the median.
    pub spread: f64,
    /// With a baseline: these probes' median over its (above 1: this
    /// machine ran slower), when it has probes.
    pub versus_baseline: Option<f64>,
    /// With a baseline: the machine ran at another speed than when the
    /// baseline was saved, or its speed varied (see [`differs`]), so time
    /// figures are judged in proportion ([`Allowance`]).
    pub not_comparable: bool,
    /// With a baseline whose probes differ: how much of a change of time
    /// the machine can account for.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub allowance: Option<Allowance>,
    /// With a baseline of too few probes: why the machine's speed was not
    /// checked (see [`unchecked`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub unchecked: Option<String>,
}

impl Speed {
    /// The summary of `probes`; `None` without any.
    pub fn of(probes: &[u64]) -> Option<Speed> {
        let (median_ns, spread) = spread(probes)?;
        Some(Speed {
            version: VERSION,
            probes_ns: probes.to_vec(),
            median_ns,
            spread,
            versus_baseline: None,
            not_comparable: false,
            allowance: None,
            unchecked: None,
        })
    }

    /// Whether the probes spread beyond [`SPREAD`] (judged of [`FEWEST`]
    /// probes or more).
    pub fn varied(&self) -> bool {
        varied(self.probes_ns.len(), self.spread)
    }

    /// The warning of probes that spread beyond [`SPREAD`], or `None`.
    pub fn warning(&self) -> Option<String> {
        self.varied().then(|| {
            format!(
                "the machine's speed varied ±{:.0}% during these runs (speed probe): figures from another time are not comparable",
                self.spread * 100.0
            )
        })
    }
}

/// When to probe among runs: before the first, then once the runs since
/// the last probe took [`EVERY`] (or [`EVERY_UNJUDGED`]) times its time,
/// so that the probes cost at most that fraction of the runs' time (a
/// probe every run for commands much longer than it, one every few dozen
/// for commands of a millisecond).
#[derive(Debug)]
pub struct Schedule {
    probes: Vec<u64>,
    since_ns: u64,
    /// A probe is due once the runs since the last took this many times
    /// its time ([`EVERY`] or [`EVERY_UNJUDGED`]).
    every: u64,
    /// The CPUs probed in turn: this thread's, read at the first probe
    /// (see [`Schedule::probe`]).
    cpus: Option<Vec<usize>>,
    /// The CPU this thread is kept on between probes (see
    /// [`Schedule::kept_on`]).
    home: Option<usize>,
}

impl Default for Schedule {
    /// The schedule of runs judged against a baseline ([`EVERY`]).
    fn default() -> Schedule {
        Schedule::every(EVERY)
    }
}

impl Schedule {
    /// A schedule that probes once the runs since the last probe took
    /// `every` times its time.
    pub fn every(every: u64) -> Schedule {
        Schedule {
            probes: Vec::new(),
            since_ns: 0,
            every,
            cpus: None,
            home: None,
        }
    }

    /// The schedule of runs that a baseline judges or that one is saved
    /// from (`judged`), or of others ([`EVERY_UNJUDGED`]).
    pub fn for_runs(judged: bool) -> Schedule {
        Schedule::every(if judged { EVERY } else { EVERY_UNJUDGED })
    }

    /// Probes now when it is time; the probe's time when it did.
    pub fn before_run(&mut self) -> Option<u64> {
        self.due().then(|| self.probe())
    }

    /// Whether a probe is due: none yet, or the runs since the last took
    /// [`Schedule::every`] times its time.
    pub fn due(&self) -> bool {
        self.probes
            .last()
            .is_none_or(|p| self.since_ns >= p.saturating_mul(self.every))
    }

    /// How much more of the runs' time until a probe is due; `None` when
    /// none has been made (one is due before the first run).
    pub fn until_due_ns(&self) -> Option<u64> {
        let last = self.probes.last()?;
        Some(
            last.saturating_mul(self.every)
                .saturating_sub(self.since_ns),
        )
    }

    /// Probes now (a caller that must first let runs in flight end asks
    /// [`Schedule::due`] itself); the probe's time.
    ///
    /// Each probe runs on the next of the CPUs this thread may use, in
    /// turn, and the thread may use them all again after it: the CPUs of
    /// a virtual machine need not run at one speed, and the commands run
    /// on any of them. On the 2-core VM a stack-slot chain, timed on each
    /// CPU in turn, took 5.2 ms on CPU 0 and 2.9 ms on CPU 1 (medians of
    /// 15), minute after minute; probes made wherever tally happened to
    /// be saw one of them, and an unchanged loop gated against its
    /// baseline was called a regression at 3.08× [2.80, 3.49] while the
    /// probes agreed (docs/compare.md).
    pub fn probe(&mut self) -> u64 {
        let cpus = self.cpus();
        let p = if cpus.len() > 1 {
            on_cpu(cpus[self.probes.len() % cpus.len()], &cpus, self.home)
        } else {
            measure()
        };
        self.probes.push(p);
        self.since_ns = 0;
        p
    }

    /// This thread is kept on `cpu` (the spawner's, see
    /// `crate::run::spawner`) between probes: each probe is made on its
    /// CPU, and the thread is kept on `cpu` again after it rather than let
    /// run anywhere. Read the CPUs it probes first.
    pub fn kept_on(&mut self, cpu: usize, all: Vec<usize>) {
        self.cpus = Some(all);
        self.home = Some(cpu);
    }

    /// The CPUs probed in turn (read once).
    fn cpus(&mut self) -> Vec<usize> {
        self.cpus
            .get_or_insert_with(|| crate::sys::cpu::allowed_cpus().unwrap_or_default())
            .clone()
    }

    /// A run took `ns`.
    pub fn ran(&mut self, ns: u64) {
        self.since_ns = self.since_ns.saturating_add(ns);
    }

    /// Probes after the last run until there are `fewest`: a short
    /// comparison against a baseline makes too few among its runs to judge
    /// their spread. Outside every run's clock, as the others.
    pub fn top_up(&mut self, fewest: usize) {
        while self.probes.len() < fewest {
            self.probe();
        }
    }

    /// Every probe made, in order.
    pub fn probes(&self) -> &[u64] {
        &self.probes
    }

    /// A schedule that made `probes` (for tests of what reads them).
    #[cfg(test)]
    pub fn made(probes: &[u64]) -> Schedule {
        Schedule {
            probes: probes.to_vec(),
            ..Schedule::default()
        }
    }
}

/// [`measure`] on `cpu`, this thread then let run on `all` again (or kept
/// on `home` again, when given); where it cannot be moved there, where it
/// is.
fn on_cpu(cpu: usize, all: &[usize], home: Option<usize>) -> u64 {
    if crate::sys::cpu::pin_to_cpu(cpu).is_err() {
        return measure();
    }
    let p = measure();
    let _ = match home {
        Some(home) => crate::sys::cpu::pin_to_cpu(home),
        None => crate::sys::cpu::allow_cpus(all),
    };
    p
}

/// The median and the relative spread of `probes` (half the
/// interquartile range over the median).
fn spread(probes: &[u64]) -> Option<(f64, f64)> {
    spread_sorted(&sorted(probes))
}

/// The probes as numbers, ascending.
fn sorted(probes: &[u64]) -> Vec<f64> {
    let mut v: Vec<f64> = probes.iter().map(|p| *p as f64).collect();
    v.sort_by(f64::total_cmp);
    v
}

/// [`spread`] of probes already sorted ([`sorted`]).
fn spread_sorted(v: &[f64]) -> Option<(f64, f64)> {
    let median = stats::median_sorted(v)?;
    let p25 = stats::quantile_sorted(v, 0.25)?;
    let p75 = stats::quantile_sorted(v, 0.75)?;
    (median > 0.0).then(|| (median, (p75 - p25) / 2.0 / median))
}

/// Whether `n` probes of relative spread `spread` say the machine's speed
/// varied: beyond [`SPREAD`], of [`FEWEST`] probes or more.
fn varied(n: usize, spread: f64) -> bool {
    n >= FEWEST && spread > SPREAD
}

/// Whether probes made now and when a baseline was saved say the machine
/// ran at another speed: the ratio of their medians (now over then) when
/// its 99% interval lies beyond 1 ± [`DIFFERS`]; when, of [`FEWEST`]
/// probes a side or more, the medians differ by more than [`DIFFERS`] and
/// both sets' spreads together; or when either set spread beyond
/// [`SPREAD`], of [`FEWEST`] probes or more. `None` when they agree or
/// either set is empty.
///
/// The medians' rule is there because of 5 probes a side the interval
/// lies beyond only when the two sets do not overlap at all: one probe of
/// the baseline's that other work preempted (2.64 ms among four of
/// 0.62–0.63) hid a machine that ran twice as slow, and the gate called it
/// a regression.
pub fn differs(now: &[u64], then: &[u64]) -> Option<f64> {
    let as_f64 = |v: &[u64]| v.iter().map(|p| *p as f64).collect::<Vec<f64>>();
    let (a, b) = (as_f64(now), as_f64(then));
    let (median_now, spread_now) = spread(now)?;
    let (median_then, spread_then) = spread(then)?;
    let medians = median_now / median_then;
    let e = stats::ratio_shift(&a, &b, 0.01).and_then(|e| e.ratio);
    let beyond = e.is_some_and(|(_, low, high)| low > 1.0 + DIFFERS || high < 1.0 - DIFFERS);
    let margin = 1.0 + spread_now + spread_then;
    let apart = now.len() >= FEWEST
        && then.len() >= FEWEST
        && (medians / margin > 1.0 + DIFFERS || medians * margin < 1.0 - DIFFERS);
    (beyond || apart || varied(now.len(), spread_now) || varied(then.len(), spread_then))
        .then(|| e.map_or(medians, |(ratio, _, _)| ratio))
}

/// How much of a change of time the machine's speed can account for:
/// the probes' ratio (now over then, above 1 when this machine ran
/// slower) and the bounds it may lie within: the ratio widened by both
/// sets' spreads. A time that moved beyond
/// what the bounds allow is decided; only what they allow is
/// "inconclusive" (see [`Allowance::stands`]).
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Allowance {
    pub ratio: f64,
    pub low: f64,
    pub high: f64,
    /// Each set's spread (half the interquartile range over the median).
    pub spread_now: f64,
    pub spread_then: f64,
    /// The ratio of the probes' fastest [`FASTEST`] (their quantiles, now
    /// over then): whether the machine had its fastest stretches on both
    /// sides ([`FASTEST_AGREE`]), for the fastest runs of a command to be
    /// compared at all.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub fastest_ratio: Option<f64>,
    /// The ratio of the probes' lower quartiles ([`FAST_STRETCH`], now
    /// over then): how much slower the machine ran in its fast stretches,
    /// the allowance the fastest runs of a command are divided by (with
    /// `ratio`, at least 1).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub fast_ratio: Option<f64>,
}

/// The share of the runs, and of the probes, whose times the gate
/// compares when the typical runs leave a time undecided
/// (`crate::compare::gate`): their 5% quantile.
///
/// On the 2-core VM a 10 ms loop ran in two modes, one about twice as slow
/// as the other (a local `volatile`'s chain of loads and stores), in
/// stretches of tens of milliseconds, and the share of runs in the slow
/// mode went from 35% to 82% between baselines saved a minute apart: the
/// loop's median moved from 8.6 to 16.5 ms, its 5% quantile by ±6%. Of
/// twelve baselines of the loop and twelve of it doing 20% more work,
/// saved in turn (300 runs each), the medians' ratio of the unchanged
/// pairs spread from 0.53× to 1.88× (5th to 95th percentile), and the 5%
/// quantiles', divided by the most the probes allowed, called none of
/// 132 unchanged pairs a regression and 73% of 144 pairs of 20% more work
/// (docs/compare.md). The 10% quantile caught 59%, the 3% one 76% with
/// fewer runs to bound it.
pub const FASTEST: f64 = 0.05;

/// The share of the probes that tells how fast the machine ran in its
/// fast stretches: their lower quartile. Their 5% quantile, the third of
/// about 60 probes, moves with a few probes in a rare faster state that
/// the commands' fastest runs do not share: twelve baselines of the 10 ms
/// loop and twelve of it doing 20% more work, saved in turn (300 runs
/// each), had the probes' 5% quantiles at 628–669 µs in two groups while
/// their medians held 669–677 µs and the loop's fastest runs followed
/// neither; divided by the most the probes' 5% quantiles allowed, 126 of
/// the 144 pairs of 20% more work were called, by their lower quartiles
/// 142, and none of the 264 unchanged pairs either way (the largest
/// low end 0.996×). Where the slow mode holds more than three quarters of
/// the probes, the quartile lies in it and allows more: the safe side.
pub const FAST_STRETCH: f64 = 0.25;

/// How far (a fraction) the probes' fastest may differ from a baseline's
/// for a time's fastest runs to be compared with its fastest at all: the
/// machine at its best then and now. Beyond it, one side may have had no
/// stretch in the machine's fast mode, and the probes, mostly register
/// work, move less than a command of loads and stores does between the
/// modes (1.25× against 2.2× for the 10 ms loop), so no allowance drawn
/// from them would excuse what the modes did. Of the unchanged loop's
/// pairs above, the probes' fastest differed by up to 7% (5th to 95th
/// percentile, 0.93× to 1.075×); with this bound, 72% of the 20% longer
/// loop's pairs were decided, none of the unchanged (67% with the bound of
/// [`FASTEST_WITHIN`] too).
pub const FASTEST_AGREE: f64 = 0.10;

/// How wide (a fraction, high over low less 1) the interval of either
/// side's fastest runs may be for them to be compared: within one of the
/// machine's modes. Measured on the 2-core VM: 2–13% where the runs of a
/// side had a stretch of the fast mode, idle (at the level of a gate of
/// one command, 44 sides of 300 runs), and 5–16% under two busy loops (20
/// sides); 30–100% where the fastest 5% lay between the modes (a side with
/// only a few fast runs), whose ratio read 1.44× for the unchanged loop
/// while the probes' fastest agreed within 6%. At 15% the bound left out
/// a side of the 20% longer loop under the busy loops at 15.04%.
pub const FASTEST_WITHIN: f64 = 0.20;

/// The allowance of probes made now and when a baseline was saved; `None`
/// when either set is empty.
pub fn allowance(now: &[u64], then: &[u64]) -> Option<Allowance> {
    let (now, then) = (sorted(now), sorted(then));
    let (median_now, spread_now) = spread_sorted(&now)?;
    let (median_then, spread_then) = spread_sorted(&then)?;
    let ratio = median_now / median_then;
    // The speed of a typical stretch of either session: its median moved
    // by its spread (half the interquartile range, which one preempted
    // probe does not move, where an interval over pairs of probes spans
    // the slowest).
    let widen = 1.0 + spread_now + spread_then;
    let (low, high) = (ratio / widen, ratio * widen);
    let quantile_ratio = |q: f64| {
        let of = |v: &[f64]| stats::quantile_sorted(v, q).filter(|q| *q > 0.0);
        of(&now).zip(of(&then)).map(|(a, b)| a / b)
    };
    Some(Allowance {
        ratio,
        low,
        high,
        spread_now,
        spread_then,
        fastest_ratio: quantile_ratio(FASTEST),
        fast_ratio: quantile_ratio(FAST_STRETCH),
    })
}

impl Allowance {
    /// Whether an outcome on a time whose ratio's interval is `[lo, hi]`
    /// stands, the machine's speed excused in proportion: a regression
    /// (worse is higher, beyond `1 + limit`) stands when the interval,
    /// divided by the most this machine may have run slower, still lies
    /// beyond the limit; a pass when, divided by the most it may have run
    /// faster, it still lies within. A speed difference excuses a change
    /// of its own size, never one beyond it.
    pub fn stands(&self, regression: bool, lo: f64, hi: f64, limit: f64) -> bool {
        if regression {
            lo / self.high.max(1.0) > 1.0 + limit
        } else {
            hi / self.low.min(1.0) <= 1.0 + limit
        }
    }

    /// [`Allowance::stands`] for a figure of either direction: a time
    /// (worse is higher) as it is, a rate (worse is lower, bound
    /// `1 − limit`) the other way up: a machine `s` times slower makes a
    /// rate `s` times lower, so the rate's interval times the most (for a
    /// regression) or the least (for a pass) the machine may have slowed
    /// must still lie beyond or within.
    pub fn stands_either(
        &self,
        higher_is_better: bool,
        regression: bool,
        lo: f64,
        hi: f64,
        limit: f64,
    ) -> bool {
        if !higher_is_better {
            return self.stands(regression, lo, hi, limit);
        }
        let bound = (1.0 - limit).max(0.0);
        if regression {
            hi * self.high.max(1.0) < bound
        } else {
            lo * self.low.min(1.0) >= bound
        }
    }

    /// Why the machine may account for a change, in words: which set of
    /// probes spread, or how much slower or faster this machine ran, and
    /// the times it could account for.
    pub fn words(&self) -> String {
        format!(
            "{}: the machine could account for a time from {:.2}× to {:.2}× the baseline's",
            self.cause(),
            self.low,
            self.high
        )
    }

    /// [`Allowance::words`] for a figure of either direction: a rate
    /// (higher is better) the machine could account for is the times'
    /// bounds the other way up.
    pub fn words_either(&self, higher_is_better: bool) -> String {
        if !higher_is_better {
            return self.words();
        }
        format!(
            "{}: the machine could account for a rate from {:.2}× to {:.2}× the baseline's",
            self.cause(),
            1.0 / self.high,
            1.0 / self.low
        )
    }

    /// Which set of probes spread, or how much slower or faster this
    /// machine ran.
    fn cause(&self) -> String {
        let varied = |s: f64| s > SPREAD;
        match (varied(self.spread_now), varied(self.spread_then)) {
            (true, true) => format!(
                "the machine's speed varied ±{:.0}% during these runs and ±{:.0}% during the \
                 baseline's (speed probes)",
                self.spread_now * 100.0,
                self.spread_then * 100.0
            ),
            (true, false) => format!(
                "the machine's speed varied ±{:.0}% during these runs (speed probes)",
                self.spread_now * 100.0
            ),
            (false, true) => format!(
                "the machine's speed varied ±{:.0}% while the baseline was saved (speed probes)",
                self.spread_then * 100.0
            ),
            (false, false) if (self.ratio - 1.0).abs() < 0.005 => format!(
                "the speed probes now and when the baseline was saved differ by up to {:.0}%",
                (self.high - 1.0).max(1.0 - self.low) * 100.0
            ),
            (false, false) => format!(
                "this machine ran {} than when the baseline was saved (speed probes)",
                slower_or_faster(self.ratio)
            ),
        }
    }
}

/// `25% slower`, `12% faster`: a probe ratio (now over then) in words.
pub fn slower_or_faster(ratio: f64) -> String {
    if ratio >= 1.0 {
        format!("{:.0}% slower", (ratio - 1.0) * 100.0)
    } else {
        format!("{:.0}% faster", (1.0 / ratio - 1.0) * 100.0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A rate is judged the other way up: a machine 10% slower lowers it
    /// by 10% at most, so a rate 30% lower is a regression and one 8%
    /// lower is not, and the words give the rates it could account for.
    #[test]
    fn rates_are_judged_in_proportion_the_other_way_up() {
        let a = Allowance {
            ratio: 1.1,
            low: 1.05,
            high: 1.15,
            spread_now: 0.01,
            spread_then: 0.01,
            fastest_ratio: None,
            fast_ratio: None,
        };
        assert!(a.stands_either(true, true, 0.65, 0.72, 0.05));
        assert!(!a.stands_either(true, true, 0.90, 0.94, 0.05));
        // A pass stands only if the fastest the machine may have run
        // leaves it within.
        assert!(a.stands_either(true, false, 0.99, 1.02, 0.05));
        // As a time, the same allowance.
        assert!(a.stands_either(false, true, 1.40, 1.50, 0.05));
        assert!(!a.stands_either(false, true, 1.12, 1.20, 0.05));
        let w = a.words_either(true);
        assert!(
            w.contains("a rate from 0.87× to 0.95× the baseline's"),
            "{w}"
        );
        assert!(a.words_either(false).contains("a time from 1.05× to 1.15×"));
    }

    #[test]
    fn the_schedule_probes_first_then_once_the_runs_took_every_times_the_probe() {
        let mut s = Schedule::default();
        let first = s.before_run().expect("a probe before the first run");
        s.ran(first);
        assert_eq!(
            s.before_run(),
            None,
            "one probe's time of runs is not enough"
        );
        s.ran(first.saturating_mul(EVERY));
        assert!(s.before_run().is_some());
        assert_eq!(s.probes().len(), 2);
    }

    /// Probes run on each CPU in turn, and after each the thread may run
    /// on every CPU it could before: the commands started after a probe
    /// inherit no pinning. A thread let run on one CPU probes there only.
    #[test]
    fn probes_take_the_cpus_in_turn_and_leave_the_thread_unpinned() {
        use crate::sys::cpu::{allow_cpus, allowed_cpus, pin_to_cpu};
        let before = allowed_cpus().expect("affinity");
        let mut s = Schedule::default();
        for _ in 0..2 * before.len() {
            s.probe();
            assert_eq!(allowed_cpus().expect("affinity"), before);
        }
        assert_eq!(s.cpus.as_deref(), Some(before.as_slice()));
        if let Some(&last) = before.last() {
            pin_to_cpu(last).expect("pin");
            let mut one = Schedule::default();
            one.probe();
            one.probe();
            assert_eq!(allowed_cpus().expect("affinity"), vec![last]);
            assert_eq!(one.cpus, Some(vec![last]));
            allow_cpus(&before).expect("unpin");
        }
    }

    #[test]
    fn the_probe_does_its_work_in_a_measurable_time() {
        let t = measure();
        assert!(t > 0);
    }

    #[test]
    fn probes_at_another_speed_or_spreading_differ_and_alike_ones_do_not() {
        let steady: Vec<u64> = (0..30).map(|i| 1_000_000 + (i % 5) * 2_000).collect();
        let slower: Vec<u64> = steady.iter().map(|p| p * 5 / 4).collect();
        assert_eq!(differs(&steady, &steady), None);
        let r = differs(&slower, &steady).expect("25% slower");
        assert!((r - 1.25).abs() < 0.01, "{r}");
        assert_eq!(slower_or_faster(r), "25% slower");
        assert_eq!(slower_or_faster(1.0 / 1.25), "25% faster");
        // Spreading by ±30% now: not comparable, whatever the medians.
        let shaky: Vec<u64> = (0..30).map(|i| 700_000 + (i % 10) * 60_000).collect();
        assert!(differs(&shaky, &steady).is_some());
        assert!(Speed::of(&shaky).unwrap().varied());
        assert!(!Speed::of(&steady).unwrap().varied());
        let warning = Speed::of(&shaky).unwrap().warning().expect("a warning");
        assert!(
            warning.starts_with("the machine's speed varied ±")
                && warning.ends_with("figures from another time are not comparable"),
            "{warning}"
        );
        assert_eq!(Speed::of(&steady).unwrap().warning(), None);
        assert_eq!(differs(&[], &steady), None);
    }

    /// Regression: of two probes a side, one that ran in a fast moment
    /// (1.14 ms beside 1.33) made the machine's speed "vary", and the gate
    /// of an unchanged loop against its baseline said inconclusive.
    #[test]
    fn one_odd_probe_among_few_did_not_make_the_machines_speed_vary() {
        let then = [1_322_859, 1_310_418, 1_318_000, 1_330_000, 1_325_000];
        let now = [1_327_458, 1_139_840, 1_320_000, 1_331_000, 1_316_000];
        assert_eq!(differs(&now, &then), None);
        assert!(!Speed::of(&now).unwrap().varied());
        // Two probes are too few to judge a spread at all.
        let two = [1_327_458, 1_139_840];
        assert!(!Speed::of(&two).unwrap().varied());
        assert_eq!(differs(&two, &then[..2]), None);
        // Two odd ones of five are a quartile: that is a spread.
        let shaky = [1_327_458, 1_139_840, 1_320_000, 1_120_000, 1_316_000];
        assert!(Speed::of(&shaky).unwrap().varied());
        assert!(differs(&shaky, &then).is_some());
    }

    /// Regression: under other work, one of the baseline's five probes
    /// was preempted (2.64 ms among four of 0.62–0.63 ms), so the sets
    /// overlapped, the 99% interval of 5 against 5 held 1, and a machine
    /// twice as slow was not seen: the bench gate called a time twice as
    /// long a regression.
    #[test]
    fn one_preempted_probe_hid_a_machine_twice_as_slow() {
        let then = [620_512, 2_640_450, 625_517, 628_197, 627_885];
        let now = [1_269_412, 1_289_745, 1_295_555, 1_301_780, 1_261_558];
        let r = differs(&now, &then).expect("twice as slow");
        assert!((r - 2.0).abs() < 0.1, "{r}");
        // Medians 2% apart, within the threshold: alike.
        let near: Vec<u64> = now.iter().map(|p| p * 102 / 100).collect();
        assert_eq!(differs(&near, &now), None);
        // Of fewer than five a side, only the interval decides.
        assert_eq!(differs(&now[..3], &then[..3]), None);
    }

    #[test]
    fn top_up_probes_until_there_are_the_fewest_judged() {
        let mut s = Schedule::default();
        s.before_run();
        s.top_up(FEWEST);
        assert_eq!(s.probes().len(), FEWEST);
        s.top_up(2);
        assert_eq!(
            s.probes().len(),
            FEWEST,
            "never fewer, never more than asked"
        );
    }
}

#[cfg(test)]
mod allowance_tests {
    use super::*;

    fn around(median: u64, spread_percent: u64) -> Vec<u64> {
        let d = median * spread_percent / 100;
        vec![
            median - d,
            median - d / 2,
            median,
            median + d / 2,
            median + d,
        ]
    }

    #[test]
    fn a_slower_machine_excuses_a_change_of_its_own_size_and_no_more() {
        // This machine ran 2% slower, its probes steady.
        let a = allowance(&around(1_020_000, 1), &around(1_000_000, 1)).unwrap();
        assert!(a.ratio > 1.01 && a.ratio < 1.03, "{a:?}");
        // +19.5% [+18.7, +20.1] beyond a 5% limit: no 2% can explain it.
        assert!(a.stands(true, 1.187, 1.201, 0.05), "{a:?}");
        // +3% [+2, +4] within 5%: passes however the machine moved.
        assert!(a.stands(false, 1.02, 1.04, 0.05), "{a:?}");
        // +6% [+5.5, +6.5] beyond 5%: 2% slower may account for it.
        assert!(!a.stands(true, 1.055, 1.065, 0.05), "{a:?}");
    }

    #[test]
    fn spread_probes_widen_what_the_machine_can_account_for() {
        // The baseline's probes spread ±7%: the case of a 0% difference
        // whose spread made every time figure undecided.
        let a = allowance(&around(1_000_000, 1), &around(1_000_000, 14)).unwrap();
        assert!(a.low < 0.95 && a.high > 1.05, "{a:?}");
        // Twice the work still stands as a regression.
        assert!(a.stands(true, 1.926, 2.012, 0.05), "{a:?}");
        // +8% [+7, +9] beyond 5% is what such a machine could do alone.
        assert!(!a.stands(true, 1.07, 1.09, 0.05), "{a:?}");
        let words = a.words();
        assert!(
            words.contains("varied ±") && words.contains("while the baseline was saved"),
            "{words}"
        );
        assert!(words.contains("could account for a time from"), "{words}");
    }

    /// Regression: with an interval over pairs of probes, one probe
    /// preempted 17 times its time (a build beside the runs) let the
    /// machine account for 0.88× to 17.8×, and twice the work passed as
    /// inconclusive.
    #[test]
    fn one_preempted_probe_did_not_let_the_machine_account_for_anything() {
        let mut now = around(1_000_000, 2);
        now[4] = 17_000_000;
        let a = allowance(&now, &around(1_000_000, 14)).unwrap();
        assert!(a.high < 1.2, "{a:?}");
        assert!(a.stands(true, 1.89, 1.96, 0.05), "{a:?}");
    }

    #[test]
    fn a_faster_machine_does_not_excuse_a_pass_it_may_have_made() {
        // This machine ran 10% faster: a time 3% up may be 13% more work.
        let a = allowance(&around(900_000, 1), &around(1_000_000, 1)).unwrap();
        assert!(!a.stands(false, 1.02, 1.04, 0.05), "{a:?}");
        // While 10% down stays a pass within a 5% limit.
        assert!(a.stands(false, 0.88, 0.92, 0.05), "{a:?}");
        assert!(a.words().contains("faster"), "{}", a.words());
    }

    #[test]
    fn probes_no_probe_can_take_are_refused_naming_the_field() {
        assert!(check_probes("speed_probe_ns", &around(1_000_000, 5)).is_ok());
        let zero = check_probes("speed_probe_ns", &[1_000_000, 0]).unwrap_err();
        assert!(zero.starts_with("speed_probe_ns[1] is 0 ns"), "{zero}");
        let huge = check_probes("x", &[u64::MAX]).unwrap_err();
        assert!(
            huge.starts_with("x[0] is 18446744073709551615 ns"),
            "{huge}"
        );
    }

    #[test]
    fn fewer_probes_than_judge_a_speed_say_the_speed_was_not_checked() {
        assert!(unchecked(&around(1_000_000, 1)).is_none());
        assert!(unchecked(&[]).unwrap().contains("no speed probe"));
        let one = unchecked(&[1_000_000]).unwrap();
        assert!(one.contains("1 speed probe,"), "{one}");
        assert!(unchecked(&[1; 4]).unwrap().contains("4 speed probes"));
    }
}

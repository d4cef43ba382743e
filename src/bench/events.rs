//! events: select against poll against epoll with N descriptors (eventfds),
//! libevent-bench style. Two figures per API and N: the cost of one call
//! that finds 1, 10% or 100% of the N ready (timeout 0, level-triggered),
//! and the wake-up latency of one descriptor among N made ready by a
//! thread on another CPU while this one sleeps in the call. `select`
//! cannot watch descriptors numbered FD_SETSIZE (1024) or above, which
//! the report says where it applies. RLIMIT_NOFILE's soft limit is raised
//! as far as the hard limit allows.

use std::os::fd::{AsRawFd, OwnedFd, RawFd};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant};

use super::harness::Timer;
use super::figure::Figure;
use super::model::{BenchResult, Mode, Section};
use super::spec::{Benchmark, Ctx, Marks, Plot, PlotKind, StepError, step_err};
use crate::sys;
use crate::sys::events::{Epoll, FD_SETSIZE, PollSet};

pub const BENCH: Benchmark = Benchmark {
    name: "events",
    section: Section::Events,
    about: "select vs poll vs epoll: scan cost and wake-up latency by descriptor count",
    heavy: false,
    uses_dir: false,
    switches_by_design: false,
    estimate: |c| {
        let n = counts(c.mode, c.tiny()).len() as u32;
        c.budget_per_figure() * n * 12 + Duration::from_millis(300)
    },
    run,
    plots: &[
        Plot {
            heading: "select / poll / epoll",
            title: "events: cost of one call (timeout 0)",
            figures: "events.scan.",
            kind: PlotKind::Sweep {
                x_label: "descriptors",
                y_label: "ns per call",
                x_base: 2.0,
                marks: Marks::None,
            },
        },
        Plot {
            heading: "select / poll / epoll",
            title: "events: wake-up latency of one ready descriptor among N",
            figures: "events.wake.",
            kind: PlotKind::Sweep {
                x_label: "descriptors",
                y_label: "ns",
                x_base: 2.0,
                marks: Marks::None,
            },
        },
    ],
};

/// Descriptor counts: 16 up to 16384.
pub fn counts(mode: Mode, tiny: bool) -> Vec<usize> {
    if tiny {
        return vec![16, 64];
    }
    match mode {
        Mode::Full => vec![16, 64, 256, 1024, 4096, 16384],
        _ => vec![16, 128, 1024, 16384],
    }
}

/// The ready counts for N descriptors: 1, 10% (at least 1), all.
pub fn active_counts(n: usize) -> [(usize, &'static str); 3] {
    [(1, "1"), ((n / 10).max(1), "10pct"), (n, "all")]
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Api {
    Select,
    Poll,
    Epoll,
}

impl Api {
    fn name(self) -> &'static str {
        match self {
            Api::Select => "select",
            Api::Poll => "poll",
            Api::Epoll => "epoll",
        }
    }
}

/// One of the three APIs set up over a list of descriptors.
enum Waiter {
    Select(Vec<RawFd>),
    Poll(PollSet),
    Epoll(Epoll),
}

impl Waiter {
    fn new(api: Api, fds: &[RawFd]) -> std::io::Result<Waiter> {
        Ok(match api {
            Api::Select => Waiter::Select(fds.to_vec()),
            Api::Poll => Waiter::Poll(PollSet::new(fds)),
            Api::Epoll => Waiter::Epoll(Epoll::new(fds)?),
        })
    }

    fn wait(&mut self, timeout_ms: Option<u32>) -> std::io::Result<usize> {
        match self {
            Waiter::Select(fds) => sys::events::select_read(fds, timeout_ms),
            Waiter::Poll(p) => p.poll(timeout_ms),
            Waiter::Epoll(e) => e.wait(timeout_ms),
        }
    }
}

fn select_reason(n: usize, fds: &[RawFd]) -> Option<String> {
    let max = fds.iter().take(n).copied().max().unwrap_or(0);
    (max as usize >= FD_SETSIZE)
        .then(|| format!("select cannot watch descriptor {max}: FD_SETSIZE is {FD_SETSIZE}"))
}

/// Wake-up latency samples: a helper thread stamps the time and signals
/// `target`; this thread, asleep in `waiter`, notes when it returned.
fn wake_samples(
    ctx: &Ctx<'_>,
    waiter: &mut Waiter,
    target: &OwnedFd,
) -> Result<super::harness::Samples, StepError> {
    let timer: Timer = ctx.h.timer;
    let ack = Arc::new(sys::events::eventfd(false).map_err(step_err("eventfd"))?);
    let stamp = Arc::new(AtomicU64::new(0));
    let stop = Arc::new(AtomicBool::new(false));
    let target_dup = target.try_clone().map_err(step_err("dup an eventfd"))?;
    let cpu = ctx.other_cpu.or(ctx.cpu);
    let helper = {
        let (ack, stamp, stop) = (Arc::clone(&ack), Arc::clone(&stamp), Arc::clone(&stop));
        std::thread::Builder::new()
            .name("tally-events".into())
            .spawn(move || {
                if let Some(c) = cpu {
                    let _ = sys::cpu::pin_to_cpu(c);
                }
                while sys::events::eventfd_take(&ack).is_ok() {
                    if stop.load(Ordering::Acquire) {
                        return;
                    }
                    // Give the waiter time to fall asleep in its call.
                    let t = Instant::now();
                    while t.elapsed() < Duration::from_micros(30) {
                        std::hint::spin_loop();
                    }
                    stamp.store(timer.now(), Ordering::Release);
                    if sys::events::eventfd_signal(&target_dup).is_err() {
                        return;
                    }
                }
            })
            .map_err(step_err("start the signalling thread"))?
    };
    let result = ctx.h.measure_each::<std::io::Error>(&mut |t| {
        sys::events::eventfd_signal(&ack)?;
        let ready = waiter.wait(Some(2000))?;
        let woke = t.now();
        if ready == 0 {
            return Err(std::io::Error::other("no wake-up within 2 s"));
        }
        let _ = sys::events::eventfd_take(target);
        Ok(t.ns(woke.saturating_sub(stamp.load(Ordering::Acquire))))
    });
    stop.store(true, Ordering::Release);
    let _ = sys::events::eventfd_signal(&ack);
    let _ = helper.join();
    result.map_err(step_err("wake-up latency"))
}

fn run(ctx: &mut Ctx<'_>, out: &mut BenchResult) -> Result<(), StepError> {
    let counts = counts(ctx.cfg.mode, ctx.cfg.tiny());
    let want = counts.iter().copied().max().unwrap_or(16);
    let fds = eventfds(want, out);
    let raw: Vec<RawFd> = fds.iter().map(|f| f.as_raw_fd()).collect();
    for &n in &counts {
        ctx.step(format!("{n} descriptors"));
        let Some(set) = raw.get(..n) else {
            for api in [Api::Select, Api::Poll, Api::Epoll] {
                out.push(
                    Figure::unavailable(
                        format!("events.wake.{}.{n}", api.name()),
                        &format!("{} wake-up", api.name()),
                        "ns from a signal to the waiter's return",
                        format!("only {} descriptors could be opened", raw.len()),
                    )
                    .at(n as u64, "fds"),
                );
            }
            continue;
        };
        for api in [Api::Select, Api::Poll, Api::Epoll] {
            if api == Api::Select
                && let Some(why) = select_reason(n, &raw)
            {
                select_unavailable(out, n, why);
                continue;
            }
            api_figures(ctx, out, api, set, &fds[..n])?;
        }
    }
    if ctx.other_cpu.is_none() {
        out.notes
            .push("one CPU: the signalling thread shares it, so wake-ups include a switch".into());
    }
    Ok(())
}

/// Up to `want` eventfds, as many as the descriptor limit (raised as far
/// as it goes) allows.
fn eventfds(want: usize, out: &mut BenchResult) -> Vec<OwnedFd> {
    let limit = sys::events::raise_nofile(want as u64 + 64)
        .or_else(|_| sys::events::nofile_limit().map(|l| l.0))
        .unwrap_or(1024);
    let mut fds: Vec<OwnedFd> = Vec::new();
    while fds.len() < want {
        match sys::events::eventfd(true) {
            Ok(fd) => fds.push(fd),
            Err(e) => {
                out.notes.push(format!(
                    "stopped at {} eventfds: {e} (RLIMIT_NOFILE soft limit {limit}; raise the hard limit with ulimit -Hn)",
                    fds.len()
                ));
                break;
            }
        }
    }
    fds
}

/// select's figures at `n` descriptors, unavailable for `why`.
fn select_unavailable(out: &mut BenchResult, n: usize, why: String) {
    for (_, key) in active_counts(n) {
        out.push(
            Figure::unavailable(
                format!("events.scan.select.{key}.{n}"),
                &format!("select scan, {key} ready"),
                "ns per call",
                why.clone(),
            )
            .at(n as u64, "fds"),
        );
    }
    out.push(
        Figure::unavailable(
            format!("events.wake.select.{n}"),
            "select wake-up",
            "ns per wake-up",
            why,
        )
        .at(n as u64, "fds"),
    );
}

/// The scans (one, 10% and all of them ready) and the wake-up of `api`
/// over the descriptors `set` (the raw numbers of `fds`).
fn api_figures(
    ctx: &Ctx<'_>,
    out: &mut BenchResult,
    api: Api,
    set: &[RawFd],
    fds: &[OwnedFd],
) -> Result<(), StepError> {
    let n = set.len();
    let mut waiter = Waiter::new(api, set).map_err(step_err(format!("set up {}", api.name())))?;
    for (k, key) in active_counts(n) {
        let stride = (n / k).max(1);
        let active: Vec<&OwnedFd> = fds.iter().take(n).step_by(stride).take(k).collect();
        for fd in &active {
            sys::events::eventfd_signal(fd).map_err(step_err("signal an eventfd"))?;
        }
        let s = ctx
            .h
            .measure::<std::io::Error>(&mut |iters, t| {
                let s = t.now();
                for _ in 0..iters {
                    std::hint::black_box(waiter.wait(Some(0))?);
                }
                Ok(t.ns_since(s))
            })
            .map_err(step_err(format!("{} scan", api.name())))?;
        for fd in &active {
            let _ = sys::events::eventfd_take(fd);
        }
        out.push(
            Figure::latency(
                format!("events.scan.{}.{key}.{n}", api.name()),
                &format!("{} scan, {key} ready", api.name()),
                &format!(
                    "ns per {} call (timeout 0) over N eventfds with {} ready, level-triggered",
                    api.name(),
                    match key {
                        "1" => "one",
                        "10pct" => "10% (at least one)",
                        _ => "all",
                    }
                ),
                s,
            )
            .at(n as u64, "fds"),
        );
    }
    let Some(target) = fds.get(n - 1) else {
        return Ok(());
    };
    let s = wake_samples(ctx, &mut waiter, target)?;
    out.push(
        Figure::latency(
            format!("events.wake.{}.{n}", api.name()),
            &format!("{} wake-up", api.name()),
            &format!(
                "ns from another thread's eventfd write (timestamped just before) to the return of {}() sleeping on N descriptors",
                api.name()
            ),
            s,
        )
        .at(n as u64, "fds"),
    );
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_span_16_to_16384() {
        for mode in [Mode::Quick, Mode::Standard, Mode::Full] {
            let c = counts(mode, false);
            assert_eq!(c.first(), Some(&16));
            assert_eq!(c.last(), Some(&16384));
            assert!(c.windows(2).all(|w| w[0] < w[1]));
        }
    }

    #[test]
    fn active_counts_are_within_n() {
        for n in [1usize, 5, 16, 16384] {
            for (k, _) in active_counts(n) {
                assert!(k >= 1 && k <= n);
            }
        }
    }

    #[test]
    fn select_limit_is_reported() {
        assert!(select_reason(2, &[3, 4]).is_none());
        assert!(select_reason(2, &[3, 5000]).unwrap().contains("FD_SETSIZE"));
    }
}

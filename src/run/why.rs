//! Where a run's wall time went: on a CPU (user, kernel), waiting for a
//! CPU, waiting for storage, stalled on memory, and the other waits
//! (sleeping, pipes, children).
//!
//! - On a CPU: `ru_utime` and `ru_stime` from `wait4` (the command, its
//!   threads, and the children it waited for).
//! - Waiting for a CPU: `run_delay` of the command's `/proc/PID/schedstat`,
//!   read once it has exited and before it is reaped (`waitid(WNOWAIT)`):
//!   exact for the command's own process, readable by anyone.
//! - Waiting for storage, stalled on memory: the pressure stall totals
//!   (`io.pressure`, `memory.pressure`, `some`) of a cgroup v2 group made
//!   for the run ([`super::group`]), which count the tasks of the run and
//!   nothing else; without a group, block I/O delays from delay accounting
//!   (`/proc/PID/stat` field 42) where `kernel.task_delayacct` is on.
//! - Other waits: the wall time less the parts measured.
//!
//! A command that ran as one task (its `wait4` cpu is its schedstat cpu)
//! has parts that add up to its wall time. Threads or children make them
//! task time: what every task spent, which can exceed the wall time, and
//! each part says what it may miss.

use super::group::Pressures;
use super::quota::{self, CpuQuota};
use super::report::{MachineLoad, Why, WhyBasis, WhyText};
use crate::procfs::pressure::Pressure;
use crate::procfs::schedstat::{self, SchedStat};
use crate::procfs::{self, ProcRoot};
use crate::sys;

/// A wait above this share of the whole gets a line of advice.
const ADVISE_PERCENT: u64 = 20;
/// A wait above this share of the whole dominates, and is said to.
const DOMINATES_PERCENT: u64 = 50;
/// Below this many clock ticks of wall time, `/proc/stat`'s busy time
/// (whole ticks per CPU) cannot tell the machine's load: 200 ms at 100 Hz.
const LOAD_TICKS: u64 = 20;

/// What is read before the command starts.
#[derive(Debug, Clone, Default)]
pub struct Before {
    /// Every CPU's busy time so far, in clock ticks (`/proc/stat`).
    busy_ticks: Option<u64>,
    /// The throttle counters of the CPU quotas over the command.
    quota: quota::Before,
}

/// Reads what the breakdown needs from before the run.
pub fn before() -> Before {
    Before {
        busy_ticks: machine_busy_ticks(),
        quota: quota::before(),
    }
}

/// What the advice weighs beside a run's figures.
#[derive(Debug, Clone, Default)]
pub struct Context {
    /// The CPU quota over the command and what it did during the run.
    pub cpu_quota: Option<CpuQuota>,
    /// Warm-up runs made before the measured ones (`--warmup`).
    pub warmups: u32,
}

/// A run's figures as read ([`read`]), with their [`Context`].
#[derive(Debug, Clone)]
pub struct Read {
    pub raw: Raw,
    pub context: Context,
}

/// CPUs this process (and so the command, which inherits it) may run
/// on, when its affinity mask allows fewer than `online`.
fn allowed_cpus(online: u32) -> Option<u32> {
    let n = u32::try_from(sys::cpu::allowed_cpu_count().ok()?).ok()?;
    (n > 0 && n < online).then_some(n)
}

fn machine_busy_ticks() -> Option<u64> {
    machine_now().map(|(busy, _)| busy)
}

/// The machine's busy ticks and its CPUs online, from one read of
/// /proc/stat (see [`cpus_listed`]; else asked of the C library).
fn machine_now() -> Option<(u64, u32)> {
    let mut buf = [0u8; 4096];
    let text = procfs::read_small(std::path::Path::new("/proc/stat"), &mut buf).ok()?;
    let busy = procfs::kernel_stat::parse_cpu(text)?.busy;
    Some((busy, cpus_listed(text).unwrap_or_else(sys::online_cpus)))
}

/// The CPUs online in the start of /proc/stat: a `cpuN` line each after
/// the `cpu` line; `None` unless the line after them (`intr`) was reached,
/// so that none was cut off by the buffer.
fn cpus_listed(text: &str) -> Option<u32> {
    let cpus = procfs::lines(text)
        .skip(1)
        .take_while(|l| l.starts_with("cpu") && l.as_bytes().get(3).is_some_and(u8::is_ascii_digit))
        .count();
    let next = procfs::lines(text).nth(cpus + 1)?;
    (cpus > 0 && next.len() >= 4 && !next.starts_with("cpu"))
        .then(|| u32::try_from(cpus).ok())
        .flatten()
}

/// The command's own `/proc/PID/schedstat`, read while it is a zombie.
pub fn read_sched(pid: u32) -> Result<SchedStat, String> {
    let mut buf = [0u8; 128];
    let path = ProcRoot::default().pid_file(pid, "schedstat");
    sched_of(pid, procfs::read_small(&path, &mut buf))
}

/// The figures of `pid`'s `/proc/PID/schedstat` from what reading it
/// gave, or why there are none.
pub fn sched_of(pid: u32, read: std::io::Result<&str>) -> Result<SchedStat, String> {
    match read {
        Ok(text) => schedstat::parse(text)
            .ok_or_else(|| format!("/proc/{pid}/schedstat does not read as three numbers")),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Err(
            "this kernel keeps no scheduler statistics per task (/proc/PID/schedstat: CONFIG_SCHED_INFO off)"
                .into(),
        ),
        Err(e) => Err(format!("cannot read /proc/{pid}/schedstat: {e}")),
    }
}

/// The command's process's figures when its clock started (see
/// [`Raw::before_exec`]): its schedstat `text` then, its time on a CPU
/// from `on_cpu_ns` where the process read its own (schedstat's figure
/// lags a running task's own by up to a tick; see
/// [`sys::process::Outcome::started_on_cpu_ns`]). `None` without the
/// text.
pub fn before_exec(text: Option<&str>, on_cpu_ns: Option<u64>) -> Option<SchedStat> {
    let read = schedstat::parse(text?)?;
    Some(SchedStat {
        on_cpu_ns: on_cpu_ns.unwrap_or(read.on_cpu_ns),
        ..read
    })
}

/// The raw figures of one run, as read.
#[derive(Debug, Clone)]
pub struct Raw {
    pub wall_ns: u64,
    pub user_ns: u64,
    pub system_ns: u64,
    /// The command's own process (its main thread), read at its exit.
    pub sched: Result<SchedStat, String>,
    /// The same process's schedstat as it read it just before `exec`,
    /// when the wall time's clock started: what tally's preparations in
    /// it took (on a CPU, waiting for one), taken out of the parts so
    /// that they cover the clock's interval. `None` when it could not be
    /// read (the parts then include them, and a note says so).
    pub before_exec: Option<SchedStat>,
    /// The run group's `cpu`, `io` and `memory` pressure, each or why not.
    pub cpu_pressure: Result<Pressure, String>,
    pub io_pressure: Result<Pressure, String>,
    pub memory_pressure: Result<Pressure, String>,
    /// Block I/O delay of the command's own process from delay accounting
    /// (ns), when it was read (no group, and delay accounting on).
    pub io_delayacct: Option<Result<u64, String>>,
    pub machine: Option<MachineLoad>,
}

/// Reads the figures of a run that has exited (`pid` not yet reaped):
/// schedstat, the machine's load and the CPU quotas' throttling since
/// `before`, after `warmups` warm-up runs; `group` is what the run's group
/// stalled over the run (see [`super::group`]), or why that is not known.
/// The cpu times are `wait4`'s, set once it has reaped the command.
pub fn read(
    pid: u32,
    group: Result<Pressures, String>,
    before: &Before,
    wall_ns: u64,
    warmups: u32,
) -> Read {
    let sched = read_sched(pid);
    let (cpu_pressure, io_pressure, memory_pressure, io_delayacct) = match group {
        Ok(p) => (p.cpu, p.io, p.memory, None),
        Err(why) => {
            let delayacct =
                match procfs::sysctl::read_int(&ProcRoot::default(), "kernel.task_delayacct") {
                    Some(1) => Some(blkio_delay_ns(pid)),
                    Some(_) => None,
                    None => None,
                };
            (Err(why.clone()), Err(why.clone()), Err(why), delayacct)
        }
    };
    let machine = before.busy_ticks.zip(machine_now()).map(|(a, (b, cpus))| {
        let hz = sys::clock_ticks_per_sec().max(1);
        MachineLoad {
            cpus,
            busy_ns: b.saturating_sub(a).saturating_mul(1_000_000_000 / hz),
            allowed_cpus: allowed_cpus(cpus),
        }
    });
    let raw = Raw {
        wall_ns,
        user_ns: 0,
        system_ns: 0,
        sched,
        before_exec: None,
        cpu_pressure,
        io_pressure,
        memory_pressure,
        io_delayacct,
        machine,
    };
    Read {
        raw,
        context: Context {
            cpu_quota: quota::after(&before.quota),
            warmups,
        },
    }
}

/// Field 42 of the zombie's `/proc/PID/stat`, in ns.
fn blkio_delay_ns(pid: u32) -> Result<u64, String> {
    let text = ProcRoot::default()
        .read_pid(pid, "stat")
        .map_err(|e| format!("cannot read /proc/{pid}/stat: {e}"))?;
    let ticks = procfs::stat::blkio_ticks(&text)
        .ok_or_else(|| format!("/proc/{pid}/stat has no field 42 (delayacct_blkio_ticks)"))?;
    Ok(ticks.saturating_mul(1_000_000_000 / sys::clock_ticks_per_sec().max(1)))
}

/// The whole share of `part` in `whole`, in percent (0 for an empty whole).
pub fn share(part: u64, whole: u64) -> u64 {
    if whole == 0 {
        return 0;
    }
    ((u128::from(part) * 100 + u128::from(whole) / 2) / u128::from(whole)) as u64
}

/// What the parts say beside their figures: the source of each, why one
/// is unavailable, and the notes.
#[derive(Default)]
struct Ledger {
    sources: WhyText,
    unavailable: WhyText,
    notes: Vec<String>,
}

/// The breakdown from the raw figures, without a [`Context`].
pub fn assemble(raw: &Raw) -> Why {
    assemble_in(raw, &Context::default())
}

/// The breakdown from the raw figures, the advice weighing `ctx`.
pub fn assemble_in(raw: &Raw, ctx: &Context) -> Why {
    let mut led = Ledger::default();
    let raw = &since_exec(raw, &mut led);
    let wall = raw.wall_ns;
    let user = raw.user_ns;
    let kernel = raw.system_ns;
    let cpu = user.saturating_add(kernel);
    led.sources.on_cpu_user_ns = Some("rusage (ru_utime)".into());
    led.sources.on_cpu_kernel_ns = Some("rusage (ru_stime)".into());
    let basis = basis_of(raw, cpu);
    let cpu_wait = cpu_wait_part(raw, basis, &mut led);
    let io_wait = io_wait_part(raw, &mut led);
    let memory = memory_part(raw, &mut led);
    let measured = [Some(cpu), cpu_wait, io_wait, memory]
        .iter()
        .flatten()
        .fold(0u64, |a, b| a.saturating_add(*b));
    let other = other_part(raw, basis, measured, &mut led);
    if basis == WhyBasis::Wall && (io_wait.is_none() || memory.is_none()) {
        led.notes.push(
            "other waits include any waiting for storage and stalls on memory, which could not be measured here"
                .into(),
        );
    }
    let total = match basis {
        WhyBasis::Wall => wall,
        WhyBasis::TaskTime => {
            led.notes.push(
                "the command ran as several tasks (threads, or children it waited for): the parts are task time, what its tasks spent added up, and the shares are of their sum"
                    .into(),
            );
            measured.saturating_add(other.unwrap_or(0))
        }
    };
    let mut why = Why {
        of: basis,
        total_ns: total,
        on_cpu_user_ns: Some(user),
        on_cpu_kernel_ns: Some(kernel),
        cpu_wait_ns: cpu_wait,
        io_wait_ns: io_wait,
        memory_stall_ns: memory,
        other_wait_ns: other,
        sources: led.sources,
        unavailable: led.unavailable,
        machine: raw.machine,
        cpu_quota: ctx.cpu_quota.clone(),
        advice: None,
        notes: led.notes,
    };
    why.advice = advice(&why, wall, ctx.warmups);
    why
}

/// `raw` over the wall time's interval: what the command's process spent
/// before `exec` ([`Raw::before_exec`], tally's preparations in it) taken
/// out of its schedstat and of its cpu time (`wait4`'s counts it too; out
/// of the kernel time first, where the preparations' system calls ran).
fn since_exec(raw: &Raw, led: &mut Ledger) -> Raw {
    let mut out = raw.clone();
    let Ok(end) = &raw.sched else {
        return out;
    };
    let Some(start) = raw.before_exec else {
        led.notes.push(
            "the command's process could not read its schedstat before exec: the parts include what tally's preparations in it took before the clock started"
                .into(),
        );
        return out;
    };
    out.sched = Ok(SchedStat {
        on_cpu_ns: end.on_cpu_ns.saturating_sub(start.on_cpu_ns),
        run_delay_ns: end.run_delay_ns.saturating_sub(start.run_delay_ns),
        timeslices: end.timeslices.saturating_sub(start.timeslices),
    });
    let kernel = raw.system_ns.saturating_sub(start.on_cpu_ns);
    let rest = start.on_cpu_ns.saturating_sub(raw.system_ns);
    out.system_ns = kernel;
    out.user_ns = raw.user_ns.saturating_sub(rest);
    out.before_exec = None;
    out
}

/// Wall time when the command ran as one task: wait4's cpu (every thread,
/// every child waited for) is the main thread's own, within 0.5% or
/// 200 µs (rusage is in µs); task time otherwise.
fn basis_of(raw: &Raw, cpu: u64) -> WhyBasis {
    let one_task = match &raw.sched {
        Ok(s) => cpu <= s.on_cpu_ns.saturating_add((s.on_cpu_ns / 200).max(200_000)),
        Err(_) => true,
    };
    if one_task {
        WhyBasis::Wall
    } else {
        WhyBasis::TaskTime
    }
}

/// Waiting for a CPU: schedstat's run delay, or the group's cpu pressure
/// where that sees more (several tasks) or schedstat is missing.
fn cpu_wait_part(raw: &Raw, basis: WhyBasis, led: &mut Ledger) -> Option<u64> {
    let psi_cpu = raw
        .cpu_pressure
        .as_ref()
        .ok()
        .map(|p| p.some_us.saturating_mul(1000));
    match (&raw.sched, basis) {
        (Ok(s), WhyBasis::Wall) => {
            led.sources.cpu_wait_ns = Some("schedstat (run_delay of /proc/PID/schedstat)".into());
            Some(s.run_delay_ns)
        }
        (Ok(s), WhyBasis::TaskTime) => match psi_cpu {
            Some(p) if p > s.run_delay_ns => {
                led.sources.cpu_wait_ns = Some(
                    "PSI cpu of the run's cgroup (some): the time at least one task waited, a lower bound of the tasks' waits added up"
                        .into(),
                );
                Some(p)
            }
            _ => {
                led.sources.cpu_wait_ns = Some(
                    "schedstat (run_delay of /proc/PID/schedstat): the command's main thread only; its other threads' and its children's waits are not seen"
                        .into(),
                );
                Some(s.run_delay_ns)
            }
        },
        (Err(why), _) => match psi_cpu {
            Some(p) => {
                led.sources.cpu_wait_ns = Some("PSI cpu of the run's cgroup (some)".into());
                led.notes.push(format!(
                    "{why}: waiting for a CPU is the run group's pressure"
                ));
                Some(p)
            }
            None => {
                led.unavailable.cpu_wait_ns = Some(why.clone());
                None
            }
        },
    }
}

/// Waiting for storage: the group's io pressure, else delay accounting.
fn io_wait_part(raw: &Raw, led: &mut Ledger) -> Option<u64> {
    match (&raw.io_pressure, &raw.io_delayacct) {
        (Ok(p), _) => {
            led.sources.io_wait_ns = Some("PSI io of the run's cgroup (some)".into());
            Some(p.some_us.saturating_mul(1000))
        }
        (Err(_), Some(Ok(ns))) => {
            led.sources.io_wait_ns = Some(
                "delay accounting (delayacct_blkio_ticks of /proc/PID/stat, in clock ticks): the command's own process"
                    .into(),
            );
            Some(*ns)
        }
        (Err(why), Some(Err(e))) => {
            led.unavailable.io_wait_ns = Some(format!("{why}; delay accounting: {e}"));
            None
        }
        (Err(why), None) => {
            led.unavailable.io_wait_ns = Some(format!(
                "{why}; delay accounting is off (kernel.task_delayacct = 0; root can turn it on)"
            ));
            None
        }
    }
}

/// Stalled on memory: the group's memory pressure.
fn memory_part(raw: &Raw, led: &mut Ledger) -> Option<u64> {
    match &raw.memory_pressure {
        Ok(p) => {
            led.sources.memory_stall_ns = Some("PSI memory of the run's cgroup (some)".into());
            Some(p.some_us.saturating_mul(1000))
        }
        Err(why) => {
            led.unavailable.memory_stall_ns = Some(why.clone());
            None
        }
    }
}

/// Other waits: the wall time less the parts `measured` (one task), or the
/// command's own process's time off a CPU and not waiting for one.
fn other_part(raw: &Raw, basis: WhyBasis, measured: u64, led: &mut Ledger) -> Option<u64> {
    let wall = raw.wall_ns;
    match (basis, &raw.sched) {
        (WhyBasis::Wall, _) => {
            led.sources.other_wait_ns = Some("the wall time less the parts measured".into());
            if measured > wall.saturating_add(wall / 50) {
                led.notes.push(format!(
                    "the parts measured add up to {}% of the wall time: they overlap (a memory stall in reclaim runs on a CPU)",
                    share(measured, wall)
                ));
            }
            Some(wall.saturating_sub(measured))
        }
        (WhyBasis::TaskTime, Ok(s)) => {
            led.sources.other_wait_ns = Some(
                "the command's own process: the wall time it spent neither on a CPU nor waiting for one (waiting for its children among it)"
                    .into(),
            );
            Some(
                wall.saturating_sub(s.on_cpu_ns)
                    .saturating_sub(s.run_delay_ns),
            )
        }
        (WhyBasis::TaskTime, Err(why)) => {
            led.unavailable.other_wait_ns = Some(why.clone());
            None
        }
    }
}

/// One line of advice for the largest wait above [`ADVISE_PERCENT`] of
/// the whole, saying its share; only what the figures support.
fn advice(why: &Why, wall: u64, warmups: u32) -> Option<String> {
    let total = why.total_ns;
    let waits = [
        ("cpu", why.cpu_wait_ns),
        ("io", why.io_wait_ns),
        ("memory", why.memory_stall_ns),
    ];
    let (kind, ns) = waits
        .iter()
        .filter_map(|(k, v)| Some((*k, (*v)?)))
        .filter(|(_, v)| share(*v, total) > ADVISE_PERCENT)
        .max_by_key(|(_, v)| *v)?;
    let part = share(ns, total);
    let how_much = |what: &str| {
        if part > DOMINATES_PERCENT {
            format!("{what} dominates ({part}% of the time)")
        } else {
            format!("{what} is {part}% of the time")
        }
    };
    match kind {
        "cpu" => cpu_advice(why, wall, ns, part),
        "io" => Some(match warmups {
            0 => format!(
                "{}: --cold PATH and warm runs (--warmup N) show the page cache's share",
                how_much("waiting for storage")
            ),
            n => format!(
                "{} after {}: what it reads does not stay in the page cache, or it waits for its writes (fsync); --cold PATH shows a cold run's share",
                how_much("waiting for storage"),
                crate::units::count(u64::from(n), "warm-up run", "warm-up runs")
            ),
        }),
        _ => Some(format!(
            "{} (reclaim, thrashing): the machine, or a memory limit over the command, is short of memory",
            how_much("stalled on memory")
        )),
    }
}

/// `2 CPUs`, `1 CPU it may use (affinity mask; 2 online)`, `0.5 CPU
/// (its quota)`: the CPUs the command may use, and that count.
fn usable_cpus(why: &Why) -> Option<(f64, String)> {
    let m = why.machine?;
    let plural = |n: f64| if n == 1.0 { "" } else { "s" };
    let mut usable = match m.allowed_cpus {
        Some(n) => (
            f64::from(n),
            format!(
                "{n} CPU{} it may use (affinity mask; {} online)",
                plural(f64::from(n)),
                m.cpus
            ),
        ),
        None => (
            f64::from(m.cpus),
            format!("{} CPU{}", m.cpus, plural(f64::from(m.cpus))),
        ),
    };
    if let Some(q) = &why.cpu_quota
        && q.cpus() < usable.0
    {
        usable = (
            q.cpus(),
            format!("{:.1} CPU (its quota, {})", q.cpus(), q.describe()),
        );
    }
    Some(usable)
}

/// Waiting for a CPU (`wait` ns, `part`% of the whole): a quota that
/// throttled the command is named; the command's own runnable tasks
/// beyond the CPUs it may use are its own parallelism; only other work
/// beyond them is an oversubscribed machine.
fn cpu_advice(why: &Why, wall: u64, wait: u64, part: u64) -> Option<String> {
    if let Some(q) = why
        .cpu_quota
        .as_ref()
        .filter(|q| q.throttled_ns > 0 && q.throttled_ns >= wait / 10)
    {
        return Some(format!(
            "waiting for a CPU is {part}% of the time, and a CPU quota throttled the command: {}, {} throttled ({} in all) while it ran; the wait is the quota's, not other work's (raise it: cpu.max, a container's --cpus)",
            q.describe(),
            crate::units::count(q.throttled_periods, "period", "periods"),
            crate::units::time_ns(q.throttled_ns as f64)
        ));
    }
    let cpu = why
        .on_cpu_user_ns
        .unwrap_or(0)
        .saturating_add(why.on_cpu_kernel_ns.unwrap_or(0));
    let wall_f = wall.max(1) as f64;
    let own = (cpu as f64 + wait as f64) / wall_f;
    // For a tree the wait is its lower bound (see `cpu_wait_part`).
    let at_least = if why.of == WhyBasis::TaskTime {
        "at least "
    } else {
        ""
    };
    let (usable, usable_text) = usable_cpus(why)?;
    let m = why.machine?;
    let other = m.busy_ns.saturating_sub(cpu) as f64 / wall_f;
    if own > usable + 0.05 {
        return Some(format!(
            "the command ran {at_least}{own:.1} runnable tasks on {usable_text} on average: more than it may run at once, its own parallelism (other load {:.0}% of a CPU)",
            other * 100.0
        ));
    }
    let tick = 1_000_000_000 / sys::clock_ticks_per_sec().max(1);
    if wall < LOAD_TICKS.saturating_mul(tick) {
        // The machine's load over a run this short is not known.
        return None;
    }
    let runnable = own + other;
    if runnable > usable + 0.05 {
        return Some(format!(
            "the machine is oversubscribed: {at_least}{runnable:.1} runnable tasks on {usable_text} on average, {other:.1} of them other work's"
        ));
    }
    Some(format!(
        "waiting for a CPU is {part}% of the time, though the runnable tasks ({runnable:.1} on average, other load {:.0}% of a CPU) did not exceed {usable_text}: the machine was not short of CPUs on average; the waits came at moments (bursts of other work, wake-up latency)",
        other * 100.0
    ))
}

#[cfg(test)]
mod tests {
    #[test]
    fn the_cpus_online_are_counted_in_proc_stat_only_when_all_were_read() {
        use super::cpus_listed;
        let full = "cpu  1 2 3 4\ncpu0 1 1 1 1\ncpu1 0 1 2 3\nintr 123 4 5\n";
        assert_eq!(cpus_listed(full), Some(2));
        assert_eq!(cpus_listed(&full[..full.find("intr").unwrap() + 2]), None);
        assert_eq!(cpus_listed("cpu  1 2 3 4\ncpu0 1 1 1 1\ncpu1 0"), None);
        assert_eq!(cpus_listed("cpu  1 2 3 4\ncpu0 1 1 1 1\nc"), None);
        let live = std::fs::read_to_string("/proc/stat").unwrap();
        assert_eq!(cpus_listed(&live), Some(crate::sys::online_cpus()));
    }

    use super::*;

    fn raw(wall: u64, user: u64, system: u64, on_cpu: u64, delay: u64) -> Raw {
        Raw {
            wall_ns: wall,
            user_ns: user,
            system_ns: system,
            sched: Ok(SchedStat {
                on_cpu_ns: on_cpu,
                run_delay_ns: delay,
                timeslices: 3,
            }),
            before_exec: Some(SchedStat::default()),
            cpu_pressure: Ok(Pressure::default()),
            io_pressure: Ok(Pressure {
                some_us: 1000,
                full_us: Some(1000),
            }),
            memory_pressure: Ok(Pressure::default()),
            io_delayacct: None,
            machine: Some(MachineLoad {
                cpus: 2,
                busy_ns: 2 * wall,
                allowed_cpus: None,
            }),
        }
    }

    #[test]
    fn one_task_adds_up_to_the_wall_time() {
        let w = assemble(&raw(10_000_000, 5_000_000, 1_000_000, 6_000_000, 2_000_000));
        assert_eq!(w.of, WhyBasis::Wall);
        assert_eq!(w.total_ns, 10_000_000);
        assert_eq!(w.cpu_wait_ns, Some(2_000_000));
        assert_eq!(w.io_wait_ns, Some(1_000_000));
        assert_eq!(w.memory_stall_ns, Some(0));
        assert_eq!(w.other_wait_ns, Some(1_000_000));
        assert!(w.unavailable.io_wait_ns.is_none());
        // 20% waiting for a CPU is not more than 20%: no advice.
        assert_eq!(w.advice, None);
    }

    #[test]
    fn a_dominating_cpu_wait_names_the_load() {
        const S: u64 = 1_000_000_000;
        let w = assemble(&raw(S, S / 2, 0, S / 2, S / 2));
        let advice = w.advice.expect("advice");
        // 1 task of its own (cpu + wait = wall) and 1.5 CPUs of others.
        assert_eq!(
            advice,
            "the machine is oversubscribed: 2.5 runnable tasks on 2 CPUs on average, 1.5 of them other work's"
        );
    }

    const SECOND: u64 = 1_000_000_000;

    /// A one-task run of 1 s: `cpu` on a CPU, `wait` waiting for one,
    /// the machine busy `busy` in all (ns).
    fn one_task(cpu: u64, wait: u64, busy: u64) -> Raw {
        let mut r = raw(SECOND, cpu, 0, cpu, wait);
        r.io_pressure = Ok(Pressure::default());
        r.machine = Some(MachineLoad {
            cpus: 2,
            busy_ns: busy,
            allowed_cpus: None,
        });
        r
    }

    fn quota(throttled_ns: u64) -> CpuQuota {
        CpuQuota {
            file: "/sys/fs/cgroup/cpu/job/cpu.cfs_quota_us".into(),
            quota_us: 10_000,
            period_us: 100_000,
            throttled_periods: throttled_ns / 90_000_000,
            throttled_ns,
        }
    }

    fn advice_in(r: &Raw, ctx: Context) -> String {
        assemble_in(r, &ctx).advice.unwrap_or_default()
    }

    /// Regression: under a CPU quota of 10 ms per 100 ms a 1 s loop read
    /// "89% waiting for a CPU … the machine is oversubscribed: 1.0
    /// runnable tasks on 2 CPUs" on an idle machine. Throttling is named
    /// as the quota, and "oversubscribed" is never said for it.
    #[test]
    fn a_throttling_quota_is_named_and_is_not_oversubscription() {
        let r = one_task(SECOND / 10, SECOND * 89 / 100, SECOND / 10 + SECOND / 25);
        let said = advice_in(
            &r,
            Context {
                cpu_quota: Some(quota(942_000_000)),
                warmups: 0,
            },
        );
        assert!(
            said.starts_with("waiting for a CPU is 89% of the time, and a CPU quota throttled the command: cpu.cfs_quota_us 10,000 per cpu.cfs_period_us 100,000 of /sys/fs/cgroup/cpu/job (0.1 CPU), 10 periods throttled (942.0ms in all)"),
            "{said}"
        );
        assert!(!said.contains("oversubscribed"), "{said}");
    }

    /// Where the quota line must not appear: a quota that did not
    /// throttle the run, or none.
    #[test]
    fn a_quota_that_did_not_throttle_is_not_blamed() {
        // The machine busy with other work: that is the cause.
        let r = one_task(SECOND / 2, SECOND / 2, 3 * SECOND / 2 + SECOND / 2);
        for q in [None, Some(quota(0))] {
            let said = advice_in(
                &r,
                Context {
                    cpu_quota: q.map(|mut q| {
                        q.quota_us = 400_000;
                        q
                    }),
                    warmups: 0,
                },
            );
            assert!(!said.contains("quota throttled"), "{said}");
            assert!(
                said.starts_with("the machine is oversubscribed: 2.5 runnable tasks on 2 CPUs"),
                "{said}"
            );
        }
    }

    /// Regression: `xargs -P 4` on 2 CPUs was "the machine is
    /// oversubscribed … (other load 0% of a CPU)". The command's own tasks
    /// beyond the CPUs are its own parallelism, and said so.
    #[test]
    fn the_commands_own_parallelism_is_not_an_oversubscribed_machine() {
        // Four tasks busy for the whole second on two CPUs: 2 s on a CPU,
        // at least 1 s waiting (the group's PSI `some`), nothing else.
        let mut r = raw(SECOND, 2 * SECOND, 0, SECOND / 100, 0);
        r.cpu_pressure = Ok(Pressure {
            some_us: 1_000_000,
            full_us: Some(0),
        });
        r.io_pressure = Ok(Pressure::default());
        r.machine = Some(MachineLoad {
            cpus: 2,
            busy_ns: 2 * SECOND,
            allowed_cpus: None,
        });
        let said = advice_in(&r, Context::default());
        assert_eq!(
            said,
            "the command ran at least 3.0 runnable tasks on 2 CPUs on average: more than it may run at once, its own parallelism (other load 0% of a CPU)"
        );
    }

    /// Where "oversubscribed" must not appear: runnable tasks no more than
    /// the CPUs the command may use (one CPU allowed of two, one task).
    #[test]
    fn no_more_runnable_tasks_than_cpus_is_never_oversubscribed() {
        let mut r = one_task(SECOND / 2, SECOND / 2, SECOND / 2);
        let said = advice_in(&r, Context::default());
        assert!(!said.contains("oversubscribed"), "{said}");
        assert!(
            said.starts_with("waiting for a CPU is 50% of the time, though the runnable tasks (1.0 on average, other load 0% of a CPU) did not exceed 2 CPUs: the machine was not short of CPUs on average"),
            "{said}"
        );
        // Confined to one CPU of two, with another task on it: 2.0 on 1.
        r.machine = Some(MachineLoad {
            cpus: 2,
            busy_ns: SECOND + SECOND / 2,
            allowed_cpus: Some(1),
        });
        let said = advice_in(&r, Context::default());
        assert_eq!(
            said,
            "the machine is oversubscribed: 2.0 runnable tasks on 1 CPU it may use (affinity mask; 2 online) on average, 1.0 of them other work's"
        );
    }

    /// Regression: a short forking command with other load 0% was
    /// intermittently "oversubscribed": over a run shorter than 20 clock
    /// ticks /proc/stat cannot tell the machine's load, and nothing is
    /// said of it.
    #[test]
    fn a_run_too_short_to_measure_the_load_gets_no_load_advice() {
        let mut r = raw(5_000_000, 2_000_000, 0, 2_000_000, 3_000_000);
        r.io_pressure = Ok(Pressure::default());
        r.machine = Some(MachineLoad {
            cpus: 2,
            busy_ns: 20_000_000,
            allowed_cpus: None,
        });
        assert_eq!(assemble(&r).advice, None);
    }

    /// Regression: "21% waiting for storage" was followed by "waiting for
    /// storage dominates". The share is said, and "dominates" only past
    /// half; with warm-up runs given, they are not suggested.
    #[test]
    fn storage_dominates_only_past_half_and_warm_ups_given_are_not_suggested() {
        let mut r = one_task(SECOND * 3 / 4, 0, SECOND);
        r.io_pressure = Ok(Pressure {
            some_us: 210_000,
            full_us: Some(0),
        });
        let said = advice_in(&r, Context::default());
        assert_eq!(
            said,
            "waiting for storage is 21% of the time: --cold PATH and warm runs (--warmup N) show the page cache's share"
        );
        assert!(!said.contains("dominates"));
        r = one_task(SECOND / 4, 0, SECOND);
        r.io_pressure = Ok(Pressure {
            some_us: 600_000,
            full_us: Some(0),
        });
        let said = advice_in(
            &r,
            Context {
                cpu_quota: None,
                warmups: 2,
            },
        );
        assert!(
            said.starts_with(
                "waiting for storage dominates (60% of the time) after 2 warm-up runs:"
            ),
            "{said}"
        );
        assert!(!said.contains("--warmup"), "{said}");
    }

    /// Where the memory line must not appear: a stall of a fifth or less.
    #[test]
    fn memory_stalls_are_advised_with_their_share_above_a_fifth_only() {
        let mut r = one_task(SECOND / 2, 0, SECOND);
        r.memory_pressure = Ok(Pressure {
            some_us: 200_000,
            full_us: Some(0),
        });
        assert_eq!(assemble(&r).advice, None);
        r.memory_pressure = Ok(Pressure {
            some_us: 300_000,
            full_us: Some(0),
        });
        assert_eq!(
            assemble(&r).advice.as_deref(),
            Some(
                "stalled on memory is 30% of the time (reclaim, thrashing): the machine, or a memory limit over the command, is short of memory"
            )
        );
    }

    #[test]
    fn no_group_means_unavailable_with_the_reason_never_zero() {
        let mut r = raw(1_000_000, 100_000, 0, 100_000, 0);
        let why = "no cgroup v2 group could be made for the run: denied".to_string();
        r.cpu_pressure = Err(why.clone());
        r.io_pressure = Err(why.clone());
        r.memory_pressure = Err(why.clone());
        let w = assemble(&r);
        assert_eq!((w.io_wait_ns, w.memory_stall_ns), (None, None));
        assert!(
            w.unavailable
                .io_wait_ns
                .as_deref()
                .unwrap()
                .contains("denied")
        );
        assert!(
            w.unavailable
                .memory_stall_ns
                .as_deref()
                .unwrap()
                .contains("denied")
        );
        assert_eq!(w.cpu_wait_ns, Some(0));
        assert_eq!(w.other_wait_ns, Some(900_000));
        assert!(w.notes.iter().any(|n| n.contains("could not be measured")));
        r.io_delayacct = Some(Ok(300_000));
        let w = assemble(&r);
        assert_eq!(w.io_wait_ns, Some(300_000));
        assert!(
            w.sources
                .io_wait_ns
                .as_deref()
                .unwrap()
                .contains("delay accounting")
        );
    }

    #[test]
    fn several_tasks_are_task_time_and_say_so() {
        // Two CPUs busy for the whole wall time, the main thread idle.
        let mut r = raw(1_000_000_000, 2_000_000_000, 0, 1_000_000, 0);
        r.cpu_pressure = Ok(Pressure {
            some_us: 900_000,
            full_us: Some(0),
        });
        let w = assemble(&r);
        assert_eq!(w.of, WhyBasis::TaskTime);
        assert_eq!(w.cpu_wait_ns, Some(900_000_000));
        assert!(
            w.sources
                .cpu_wait_ns
                .as_deref()
                .unwrap()
                .contains("lower bound")
        );
        assert_eq!(w.other_wait_ns, Some(999_000_000));
        assert!(w.total_ns > r.wall_ns);
        assert!(w.notes.iter().any(|n| n.contains("task time")));
    }

    #[test]
    fn shares_round_and_never_divide_by_zero() {
        assert_eq!(share(1, 3), 33);
        assert_eq!(share(2, 3), 67);
        assert_eq!(share(5, 0), 0);
        assert_eq!(share(u64::MAX, u64::MAX), 100);
    }
}

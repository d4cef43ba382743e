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
use super::report::{MachineLoad, Why, WhyBasis, WhyText};
use crate::procfs::pressure::Pressure;
use crate::procfs::schedstat::{self, SchedStat};
use crate::procfs::{self, ProcRoot};
use crate::sys;

/// A part above this share of the whole dominates, and gets advice.
const DOMINATES_PERCENT: u64 = 20;

/// What is read before the command starts.
#[derive(Debug, Clone, Copy, Default)]
pub struct Before {
    /// Every CPU's busy time so far, in clock ticks (`/proc/stat`).
    busy_ticks: Option<u64>,
}

/// Reads what the breakdown needs from before the run.
pub fn before() -> Before {
    Before {
        busy_ticks: machine_busy_ticks(),
    }
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
    let cpus = text
        .lines()
        .skip(1)
        .take_while(|l| l.starts_with("cpu") && l.as_bytes().get(3).is_some_and(u8::is_ascii_digit))
        .count();
    let next = text.lines().nth(cpus + 1)?;
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
/// schedstat, and the machine's load since `before`; `group` is what the
/// run's group stalled over the run (see [`super::group`]), or why that is
/// not known. The cpu times are `wait4`'s, set once it has reaped the
/// command.
pub fn read(pid: u32, group: Result<Pressures, String>, before: &Before, wall_ns: u64) -> Raw {
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
        }
    });
    Raw {
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

/// The breakdown from the raw figures.
pub fn assemble(raw: &Raw) -> Why {
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
        advice: None,
        notes: led.notes,
    };
    why.advice = advice(&why, wall);
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

/// One line of advice when a wait dominates: the largest wait above
/// [`DOMINATES_PERCENT`] of the whole.
fn advice(why: &Why, wall: u64) -> Option<String> {
    let total = why.total_ns;
    let waits = [
        ("cpu", why.cpu_wait_ns),
        ("io", why.io_wait_ns),
        ("memory", why.memory_stall_ns),
    ];
    let (kind, ns) = waits
        .iter()
        .filter_map(|(k, v)| Some((*k, (*v)?)))
        .filter(|(_, v)| share(*v, total) > DOMINATES_PERCENT)
        .max_by_key(|(_, v)| *v)?;
    Some(match kind {
        "cpu" => {
            let cpu = why
                .on_cpu_user_ns
                .unwrap_or(0)
                .saturating_add(why.on_cpu_kernel_ns.unwrap_or(0));
            let wall = wall.max(1) as f64;
            let own = (cpu as f64 + ns as f64) / wall;
            match why.machine {
                Some(m) => {
                    let other = m.busy_ns.saturating_sub(cpu) as f64 / wall;
                    let runnable = own + other;
                    let fewer = if runnable <= f64::from(m.cpus) {
                        " — no more than there are CPUs: the command may have been confined to fewer (an affinity mask, a cpuset)"
                    } else {
                        ""
                    };
                    format!(
                        "the machine is oversubscribed: {runnable:.1} runnable tasks on {} CPU{} on average (other load {:.0}% of a CPU){fewer}",
                        m.cpus,
                        if m.cpus == 1 { "" } else { "s" },
                        other * 100.0
                    )
                }
                None => format!(
                    "the machine is oversubscribed: the command alone kept {own:.1} tasks runnable on average"
                ),
            }
        }
        "io" => "waiting for storage dominates: --cold PATH and warm runs (--warmup N) show the page cache's share".into(),
        _ => "reclaim/thrashing: the machine is short of memory".into(),
    })
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
        let w = assemble(&raw(10_000_000, 5_000_000, 0, 5_000_000, 5_000_000));
        let advice = w.advice.expect("advice");
        // 1 task of its own (cpu + wait = wall) and 1.5 CPUs of others.
        assert!(advice.contains("2.5 runnable tasks on 2 CPUs"), "{advice}");
        assert!(advice.contains("other load 150% of a CPU"), "{advice}");
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

//! The `hw` source: the CPU's own counters through `perf_event_open(2)`,
//! `instructions` and `cycles` in user space (`exclude_kernel`,
//! `exclude_hv`, as rustc-perf's `instructions:u`), opened on the command
//! while it waits at tally's gate before `exec`, enabled by the `exec`
//! itself and inherited by every process it starts, read after it has
//! exited (children that exited count in their parent's counter), with
//! `time_enabled`/`time_running` so that multiplexing shows.
//!
//! Machines without a PMU (most VMs, every GitHub-hosted runner) refuse
//! to open them; [`probe`] says why. `TALLY_COUNT_HW_EVENTS=software`
//! counts the software events `task-clock` and `page-faults` instead,
//! which every kernel has: the same plumbing (gate, inheritance, enabling
//! at exec, reading after the wait), for the tests of a machine without a
//! PMU. Its figures are named for what they are, never `instructions`.

use super::{Counted, EventCount, Kind};
use crate::sys::perf::{self, Counter, Event, HwEvent};

/// Set to `software`, the `hw` source counts software events (see the
/// module's text).
pub const EVENTS_VAR: &str = "TALLY_COUNT_HW_EVENTS";

/// The events the `hw` source opens.
fn events() -> [(Event, &'static str); 2] {
    if std::env::var_os(EVENTS_VAR).is_some_and(|v| v == "software") {
        [
            (Event::TaskClock, "task-clock"),
            (Event::PageFaults, "page-faults"),
        ]
    } else {
        [
            (Event::Hardware(HwEvent::Instructions), "instructions"),
            (Event::Hardware(HwEvent::Cycles), "cycles"),
        ]
    }
}

/// Whether the counters can be opened here: on this process, as they
/// will be on the command. The reason and the fix when not.
pub fn probe() -> Result<(), String> {
    let (event, _) = events()[0];
    match perf::open_event(event, 0, true) {
        Ok(_) => Ok(()),
        Err(e) => Err(refused(&e)),
    }
}

/// Why `perf_event_open` refused, in words, with what to do.
pub fn refused(e: &std::io::Error) -> String {
    let paranoid = crate::procfs::sysctl::read_int(
        &crate::procfs::ProcRoot::default(),
        "kernel.perf_event_paranoid",
    );
    match e.raw_os_error() {
        Some(libc::ENOENT) | Some(libc::EOPNOTSUPP) | Some(libc::ENODEV) => {
            "this machine has no hardware performance counters (a VM without a virtual PMU?): \
             --count=sim counts with Valgrind instead"
                .to_string()
        }
        Some(libc::EACCES) | Some(libc::EPERM) => format!(
            "perf_event_open refused ({e}); kernel.perf_event_paranoid is {}: run as root, or \
             lower it to 2 or less (sysctl kernel.perf_event_paranoid=2)",
            paranoid.map_or_else(|| "unknown".to_string(), |p| p.to_string())
        ),
        Some(libc::ENOSYS) => "this kernel has no perf_event_open".to_string(),
        _ => format!("perf_event_open failed: {e}"),
    }
}

/// The counters of one run, opened on the command at its gate.
pub struct HwRun {
    counters: Vec<(&'static str, Counter)>,
    error: Option<String>,
}

/// Opens the counters on `pid`, which waits at its gate.
pub fn attach(pid: u32) -> HwRun {
    let mut run = HwRun {
        counters: Vec::new(),
        error: None,
    };
    for (event, name) in events() {
        match perf::open_event(event, pid, true) {
            Ok(c) => run.counters.push((name, c)),
            Err(e) => {
                run.error = Some(format!("{name}: {}", refused(&e)));
            }
        }
    }
    run
}

impl HwRun {
    /// Reads every counter (after the command has exited and before it
    /// is reaped, or after).
    pub fn finish(self) -> Result<Counted, String> {
        if let Some(e) = self.error {
            return Err(e);
        }
        let mut events = Vec::new();
        let (mut enabled, mut running) = (None, None);
        for (name, mut c) in self.counters {
            let v = c
                .read()
                .map_err(|e| format!("cannot read the {name} counter: {e}"))?;
            enabled = Some(v.time_enabled_ns);
            running = Some(v.time_running_ns);
            // A counter that ran part of the time (multiplexed with
            // others) is scaled to the whole, as perf does, and the
            // times say so.
            let value = if v.time_running_ns > 0 && v.time_running_ns < v.time_enabled_ns {
                u64::try_from(
                    u128::from(v.value) * u128::from(v.time_enabled_ns)
                        / u128::from(v.time_running_ns),
                )
                .unwrap_or(u64::MAX)
            } else {
                v.value
            };
            events.push(EventCount {
                event: name.to_string(),
                value,
            });
        }
        let find = |n: &str| events.iter().find(|e| e.event == n).map(|e| e.value);
        Ok(Counted {
            source: Kind::Hw,
            instructions: find("instructions"),
            cycles: find("cycles"),
            data_reads: None,
            data_writes: None,
            l1_misses: None,
            ll_misses: None,
            estimated_cycles: None,
            processes: 0,
            forked_copies: 0,
            tool_version: None,
            time_enabled_ns: enabled,
            time_running_ns: running,
            events,
            refused: Vec::new(),
            profile: None,
        })
    }
}

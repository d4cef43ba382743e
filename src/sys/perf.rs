//! Hardware counters through `perf_event_open(2)`.
//!
//! Each counter is opened on the child while it waits before `exec`,
//! disabled until `exec` and inherited by its descendants, and read after
//! it exits with `time_enabled`/`time_running`, so multiplexing shows.
//! Machines without a PMU (most VMs) or with a strict
//! `perf_event_paranoid` refuse; the caller reports that as unavailable.

use std::fs::File;
use std::io::{self, Read};
use std::os::fd::FromRawFd;

use super::cvt_long;

const PERF_TYPE_HARDWARE: u32 = 0;
const PERF_TYPE_SOFTWARE: u32 = 1;
const PERF_FLAG_FD_CLOEXEC: libc::c_ulong = 1 << 3;
const PERF_FORMAT_TOTAL_TIME_ENABLED: u64 = 1;
const PERF_FORMAT_TOTAL_TIME_RUNNING: u64 = 2;
/// `perf_event_attr` as of the first ABI version (64 bytes).
const PERF_ATTR_SIZE_VER0: u32 = 64;
const FLAG_DISABLED: u64 = 1 << 0;
const FLAG_INHERIT: u64 = 1 << 1;
const FLAG_EXCLUDE_KERNEL: u64 = 1 << 5;
const FLAG_EXCLUDE_HV: u64 = 1 << 6;
const FLAG_ENABLE_ON_EXEC: u64 = 1 << 12;

/// The generic hardware events tally counts.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum HwEvent {
    Cycles,
    Instructions,
    CacheMisses,
    BranchMisses,
}

impl HwEvent {
    pub const ALL: [HwEvent; 4] = [
        HwEvent::Cycles,
        HwEvent::Instructions,
        HwEvent::CacheMisses,
        HwEvent::BranchMisses,
    ];

    fn config(self) -> u64 {
        match self {
            HwEvent::Cycles => 0,
            HwEvent::Instructions => 1,
            HwEvent::CacheMisses => 3,
            HwEvent::BranchMisses => 5,
        }
    }
}

/// Any event tally counts: a hardware one, or a software one every
/// kernel has (which exercises the same inheritance, enabling at `exec`
/// and reading where no PMU exists).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Event {
    Hardware(HwEvent),
    /// `PERF_COUNT_SW_TASK_CLOCK`: ns on a CPU.
    TaskClock,
    /// `PERF_COUNT_SW_PAGE_FAULTS`.
    PageFaults,
}

impl Event {
    fn kind_and_config(self) -> (u32, u64) {
        match self {
            Event::Hardware(e) => (PERF_TYPE_HARDWARE, e.config()),
            Event::TaskClock => (PERF_TYPE_SOFTWARE, 1),
            Event::PageFaults => (PERF_TYPE_SOFTWARE, 2),
        }
    }
}

#[repr(C)]
#[derive(Default)]
struct PerfEventAttr {
    kind: u32,
    size: u32,
    config: u64,
    sample_period: u64,
    sample_type: u64,
    read_format: u64,
    flags: u64,
    wakeup_events: u32,
    bp_type: u32,
    config1: u64,
}

/// An open counter.
#[derive(Debug)]
pub struct Counter {
    file: File,
}

/// A counter's value with its enabled and running times, in ns.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct CounterValue {
    pub value: u64,
    pub time_enabled_ns: u64,
    pub time_running_ns: u64,
}

/// Opens `event` on process `pid` (0: this process), counting from its next
/// `exec` and in the children it creates. `user_only` excludes the kernel,
/// which `perf_event_paranoid` >= 2 requires of unprivileged callers.
pub fn open(event: HwEvent, pid: u32, user_only: bool) -> io::Result<Counter> {
    open_event(Event::Hardware(event), pid, user_only)
}

/// [`open`] of any [`Event`].
pub fn open_event(event: Event, pid: u32, user_only: bool) -> io::Result<Counter> {
    let (kind, config) = event.kind_and_config();
    let mut flags = FLAG_DISABLED | FLAG_INHERIT | FLAG_ENABLE_ON_EXEC;
    if user_only {
        flags |= FLAG_EXCLUDE_KERNEL | FLAG_EXCLUDE_HV;
    }
    let attr = PerfEventAttr {
        kind,
        size: PERF_ATTR_SIZE_VER0,
        config,
        read_format: PERF_FORMAT_TOTAL_TIME_ENABLED | PERF_FORMAT_TOTAL_TIME_RUNNING,
        flags,
        ..PerfEventAttr::default()
    };
    // SAFETY: `attr` is a repr(C) perf_event_attr of the size it declares and
    // lives for the call; cpu -1 with a pid counts that task on any CPU.
    let fd = cvt_long(unsafe {
        libc::syscall(
            libc::SYS_perf_event_open,
            &attr as *const PerfEventAttr,
            pid as libc::pid_t,
            -1 as libc::c_int,
            -1 as libc::c_int,
            PERF_FLAG_FD_CLOEXEC,
        )
    })?;
    // SAFETY: the call returned a new descriptor that nothing else owns.
    let file = unsafe { File::from_raw_fd(fd as i32) };
    Ok(Counter { file })
}

impl Counter {
    /// Reads the value with its enabled and running times.
    pub fn read(&mut self) -> io::Result<CounterValue> {
        let mut buf = [0u8; 24];
        self.file.read_exact(&mut buf)?;
        let word = |i: usize| {
            let mut b = [0u8; 8];
            b.copy_from_slice(&buf[i * 8..i * 8 + 8]);
            u64::from_ne_bytes(b)
        };
        Ok(CounterValue {
            value: word(0),
            time_enabled_ns: word(1),
            time_running_ns: word(2),
        })
    }
}

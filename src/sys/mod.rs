//! Thin safe wrappers over the system calls tally needs.
//!
//! Every `unsafe` block of the project lives under this module, each with a
//! `// SAFETY:` comment. The wrappers return `std::io::Result` and keep no
//! state of their own beyond what a call needs.

pub mod alarm;
pub mod buffers;
pub mod cache;
pub mod cleanup;
pub mod cpu;
pub mod dir;
pub mod dontfork;
pub mod entry;
pub mod events;
pub mod file;
pub mod helper;
pub mod ipc;
pub mod maps;
pub mod mem;
pub mod ops;
pub mod perf;
pub mod personality;
pub mod privilege;
pub mod process;
pub mod shed;
pub mod sigbench;
pub mod signals;
pub mod spawn;
pub mod tty;
pub mod uname;
pub mod uring;
pub mod user;

use std::io;

/// Turns a `-1` return of a libc call into the thread's `errno`.
pub(crate) fn cvt(ret: libc::c_int) -> io::Result<libc::c_int> {
    if ret == -1 {
        Err(io::Error::last_os_error())
    } else {
        Ok(ret)
    }
}

/// Like [`cvt`] for calls returning `c_long` (raw `syscall`).
pub(crate) fn cvt_long(ret: libc::c_long) -> io::Result<libc::c_long> {
    if ret == -1 {
        Err(io::Error::last_os_error())
    } else {
        Ok(ret)
    }
}

/// The effective user id of this process.
pub fn geteuid() -> u32 {
    // SAFETY: geteuid has no preconditions and cannot fail.
    unsafe { libc::geteuid() }
}

/// The page size of this machine, in bytes.
pub fn page_size() -> u64 {
    // SAFETY: sysconf has no preconditions; a failure returns -1, handled below.
    let size = unsafe { libc::sysconf(libc::_SC_PAGESIZE) };
    if size > 0 { size as u64 } else { 4096 }
}

/// A `timeval` of `d`, its seconds at most the largest the type holds
/// (written without naming `time_t`, whose width the C libraries define).
pub fn timeval(d: std::time::Duration) -> libc::timeval {
    libc::timeval {
        tv_sec: d.as_secs().try_into().unwrap_or(i64::MAX),
        tv_usec: d.subsec_micros().into(),
    }
}

/// CLOCK_MONOTONIC now, in ns: the clock `std::time::Instant` reads, as a
/// number another process (the spawner) can send.
#[inline]
pub fn monotonic_ns() -> u64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: `ts` is a valid, writable timespec; CLOCK_MONOTONIC exists on
    // every Linux, so the call cannot fail (a failure leaves `ts` at 0).
    unsafe { libc::clock_gettime(libc::CLOCK_MONOTONIC, &mut ts) };
    (ts.tv_sec as u64)
        .saturating_mul(1_000_000_000)
        .saturating_add(ts.tv_nsec as u64)
}

/// The name of a signal (`SIGKILL`), or `SIG<number>` for one without a name.
pub fn signal_name(sig: i32) -> String {
    let name = match sig {
        libc::SIGHUP => "SIGHUP",
        libc::SIGINT => "SIGINT",
        libc::SIGQUIT => "SIGQUIT",
        libc::SIGILL => "SIGILL",
        libc::SIGTRAP => "SIGTRAP",
        libc::SIGABRT => "SIGABRT",
        libc::SIGBUS => "SIGBUS",
        libc::SIGFPE => "SIGFPE",
        libc::SIGKILL => "SIGKILL",
        libc::SIGUSR1 => "SIGUSR1",
        libc::SIGSEGV => "SIGSEGV",
        libc::SIGUSR2 => "SIGUSR2",
        libc::SIGPIPE => "SIGPIPE",
        libc::SIGALRM => "SIGALRM",
        libc::SIGTERM => "SIGTERM",
        libc::SIGSTKFLT => "SIGSTKFLT",
        libc::SIGCHLD => "SIGCHLD",
        libc::SIGCONT => "SIGCONT",
        libc::SIGSTOP => "SIGSTOP",
        libc::SIGTSTP => "SIGTSTP",
        libc::SIGTTIN => "SIGTTIN",
        libc::SIGTTOU => "SIGTTOU",
        libc::SIGURG => "SIGURG",
        libc::SIGXCPU => "SIGXCPU",
        libc::SIGXFSZ => "SIGXFSZ",
        libc::SIGVTALRM => "SIGVTALRM",
        libc::SIGPROF => "SIGPROF",
        libc::SIGWINCH => "SIGWINCH",
        libc::SIGIO => "SIGIO",
        libc::SIGPWR => "SIGPWR",
        libc::SIGSYS => "SIGSYS",
        _ => return format!("SIG{sig}"),
    };
    name.to_string()
}

/// Clock ticks per second, the unit of /proc/PID/stat times.
pub fn clock_ticks_per_sec() -> u64 {
    // SAFETY: sysconf has no preconditions; a failure returns -1, handled below.
    let ticks = unsafe { libc::sysconf(libc::_SC_CLK_TCK) };
    if ticks > 0 { ticks as u64 } else { 100 }
}

/// CPUs online (`_SC_NPROCESSORS_ONLN`), at least 1.
pub fn online_cpus() -> u32 {
    // SAFETY: sysconf has no preconditions; a failure returns -1, handled below.
    let n = unsafe { libc::sysconf(libc::_SC_NPROCESSORS_ONLN) };
    u32::try_from(n).unwrap_or(1).max(1)
}

//! CPU-level helpers for `tally bench`: time-stamp counter reads with their
//! fences, a dependent-multiply chain that counts core cycles, CPU pinning,
//! priority, the raw `getpid` syscall and per-thread usage.
//!
//! The TSC reads are inline assembly rather than `core::arch` intrinsics so
//! the fences sit exactly where the measurement needs them.

use std::io;

use super::cvt;

/// Reads the TSC with `rdtscp`, which waits for earlier instructions to
/// finish; the trailing `lfence` keeps later ones from starting early.
#[cfg(target_arch = "x86_64")]
#[inline(always)]
pub fn rdtscp() -> u64 {
    let lo: u32;
    let hi: u32;
    // SAFETY: rdtscp and lfence read a counter and order instructions; they
    // touch no memory. The caller checked the `rdtscp` cpu flag.
    unsafe {
        std::arch::asm!(
            "rdtscp",
            "lfence",
            out("eax") lo,
            out("edx") hi,
            out("ecx") _,
            options(nostack, nomem, preserves_flags)
        );
    }
    (u64::from(hi) << 32) | u64::from(lo)
}

/// Reads the TSC with `lfence; rdtsc; lfence` (for CPUs without rdtscp).
#[cfg(target_arch = "x86_64")]
#[inline(always)]
pub fn lfence_rdtsc() -> u64 {
    let lo: u32;
    let hi: u32;
    // SAFETY: lfence and rdtsc touch no memory; rdtsc exists on every x86_64.
    unsafe {
        std::arch::asm!(
            "lfence",
            "rdtsc",
            "lfence",
            out("eax") lo,
            out("edx") hi,
            options(nostack, nomem, preserves_flags)
        );
    }
    (u64::from(hi) << 32) | u64::from(lo)
}

/// Runs `rounds` iterations of a chain of 16 dependent 64-bit `imul`s:
/// 48 core cycles per round (3-cycle multiply latency on Intel since Core 2
/// and AMD since Zen), whatever the TSC says. Not `add reg, imm`: recent
/// Intel cores fold chains of immediate adds at rename, several per cycle.
/// Returns the rounds done.
#[cfg(target_arch = "x86_64")]
pub fn mul_chain(rounds: u64) -> u64 {
    if rounds == 0 {
        return 0;
    }
    let mut n = rounds;
    let mut x: u64 = 3;
    // SAFETY: register-only arithmetic and a backward branch; no memory.
    unsafe {
        std::arch::asm!(
            "2:",
            "imul {x}, {x}", "imul {x}, {x}", "imul {x}, {x}", "imul {x}, {x}",
            "imul {x}, {x}", "imul {x}, {x}", "imul {x}, {x}", "imul {x}, {x}",
            "imul {x}, {x}", "imul {x}, {x}", "imul {x}, {x}", "imul {x}, {x}",
            "imul {x}, {x}", "imul {x}, {x}", "imul {x}, {x}", "imul {x}, {x}",
            "dec {n}",
            "jnz 2b",
            x = inout(reg) x,
            n = inout(reg) n,
            options(nostack, nomem)
        );
    }
    let _ = (n, x);
    rounds
}

/// Cycles per round of [`mul_chain`] (16 multiplies of 3 cycles).
pub const MUL_CHAIN_CYCLES_PER_ROUND: u64 = 48;

/// `getpid` by raw `syscall(2)`: never answered from a libc cache.
pub fn raw_getpid() -> i64 {
    // SAFETY: SYS_getpid takes no arguments and cannot fail.
    unsafe { libc::syscall(libc::SYS_getpid) }
}

/// The CPUs this thread may run on.
pub fn allowed_cpus() -> io::Result<Vec<usize>> {
    // SAFETY: cpu_set_t is plain data; zeroed is the empty set.
    let mut set: libc::cpu_set_t = unsafe { std::mem::zeroed() };
    // SAFETY: `set` is valid and writable, its size is passed.
    cvt(unsafe { libc::sched_getaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &mut set) })?;
    let max = 8 * std::mem::size_of::<libc::cpu_set_t>();
    // SAFETY: CPU_ISSET reads the set within its size (cpu < max).
    Ok((0..max)
        .filter(|&c| unsafe { libc::CPU_ISSET(c, &set) })
        .collect())
}

/// How many CPUs this process may run on: [`allowed_cpus`]' length,
/// counted by the C library rather than listed.
pub fn allowed_cpu_count() -> io::Result<usize> {
    // SAFETY: cpu_set_t is plain data; zeroed is the empty set.
    let mut set: libc::cpu_set_t = unsafe { std::mem::zeroed() };
    // SAFETY: `set` is valid and writable, its size is passed.
    cvt(unsafe { libc::sched_getaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &mut set) })?;
    // SAFETY: CPU_COUNT reads the set within its size.
    let n = unsafe { libc::CPU_COUNT(&set) };
    usize::try_from(n).map_err(|_| io::Error::from(io::ErrorKind::InvalidData))
}

/// The CPU the calling thread is running on now (`None` where the
/// kernel does not say).
pub fn current_cpu() -> Option<usize> {
    // SAFETY: sched_getcpu has no arguments and no memory preconditions.
    usize::try_from(unsafe { libc::sched_getcpu() }).ok()
}

/// A set of CPUs as the kernel takes it, built once and handed to a child
/// that restores it before `exec` (see `crate::sys::process::PreExec::cpus`).
pub struct CpuMask(libc::cpu_set_t);

impl CpuMask {
    /// The set of `cpus` (those beyond the set's capacity left out).
    pub fn of(cpus: &[usize]) -> CpuMask {
        // SAFETY: cpu_set_t is plain data; zeroed is the empty set.
        let mut set: libc::cpu_set_t = unsafe { std::mem::zeroed() };
        let max = 8 * std::mem::size_of::<libc::cpu_set_t>();
        for &cpu in cpus.iter().filter(|&&c| c < max) {
            // SAFETY: cpu is below the set's capacity (filtered above).
            unsafe { libc::CPU_SET(cpu, &mut set) };
        }
        CpuMask(set)
    }

    /// The set, for a call that takes a `cpu_set_t`.
    pub fn as_ptr(&self) -> *const libc::cpu_set_t {
        &self.0
    }
}

/// Pins the calling thread to one CPU.
pub fn pin_to_cpu(cpu: usize) -> io::Result<()> {
    if cpu >= 8 * std::mem::size_of::<libc::cpu_set_t>() {
        return Err(io::Error::from_raw_os_error(libc::EINVAL));
    }
    // SAFETY: cpu_set_t is plain data; zeroed is the empty set.
    let mut set: libc::cpu_set_t = unsafe { std::mem::zeroed() };
    // SAFETY: cpu is below the set's capacity (checked above).
    unsafe { libc::CPU_SET(cpu, &mut set) };
    // SAFETY: `set` is valid for the call, its size is passed.
    cvt(unsafe { libc::sched_setaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &set) })
        .map(|_| ())
}

/// The calling thread kept on one CPU until this is dropped, which lets
/// it run on the CPUs it had before again (dropped on the same thread).
pub struct Kept {
    before: Vec<usize>,
}

impl Kept {
    /// Keeps the calling thread on `cpu`.
    pub fn on(cpu: usize) -> io::Result<Kept> {
        let before = allowed_cpus()?;
        pin_to_cpu(cpu)?;
        Ok(Kept { before })
    }

    /// The CPUs the thread could run on before, and will again.
    pub fn before(&self) -> &[usize] {
        &self.before
    }
}

impl Drop for Kept {
    fn drop(&mut self) {
        let _ = allow_cpus(&self.before);
    }
}

/// Lets the calling thread run on every CPU in `cpus` again.
pub fn allow_cpus(cpus: &[usize]) -> io::Result<()> {
    let set = CpuMask::of(cpus);
    // SAFETY: `set` is valid for the call, its size is passed.
    cvt(unsafe { libc::sched_setaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), set.as_ptr()) })
        .map(|_| ())
}

/// Sets this process's nice value (negative needs CAP_SYS_NICE).
pub fn set_nice(nice: i32) -> io::Result<()> {
    // SAFETY: setpriority has no memory preconditions.
    cvt(unsafe { libc::setpriority(libc::PRIO_PROCESS, 0, nice) }).map(|_| ())
}

/// Voluntary and involuntary context switches of the calling thread.
pub fn thread_switches() -> io::Result<(u64, u64)> {
    // SAFETY: rusage is plain data; zeroed is a valid value.
    let mut ru: libc::rusage = unsafe { std::mem::zeroed() };
    // SAFETY: `ru` is valid and writable for the call.
    cvt(unsafe { libc::getrusage(libc::RUSAGE_THREAD, &mut ru) })?;
    Ok((
        u64::try_from(ru.ru_nvcsw).unwrap_or(0),
        u64::try_from(ru.ru_nivcsw).unwrap_or(0),
    ))
}

/// Minor and major page faults of this process so far.
pub fn self_faults() -> io::Result<(u64, u64)> {
    // SAFETY: rusage is plain data; zeroed is a valid value.
    let mut ru: libc::rusage = unsafe { std::mem::zeroed() };
    // SAFETY: `ru` is valid and writable for the call.
    cvt(unsafe { libc::getrusage(libc::RUSAGE_THREAD, &mut ru) })?;
    Ok((
        u64::try_from(ru.ru_minflt).unwrap_or(0),
        u64::try_from(ru.ru_majflt).unwrap_or(0),
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn getpid_matches_std() {
        assert_eq!(raw_getpid(), i64::from(std::process::id()));
    }

    #[cfg(target_arch = "x86_64")]
    #[test]
    fn mul_chain_counts_rounds() {
        assert_eq!(mul_chain(0), 0);
        assert_eq!(mul_chain(1000), 1000);
    }

    #[cfg(target_arch = "x86_64")]
    #[test]
    fn tsc_moves_forward() {
        let a = lfence_rdtsc();
        let b = lfence_rdtsc();
        assert!(b >= a);
    }

    #[test]
    fn allowed_cpus_not_empty() {
        assert!(!allowed_cpus().unwrap().is_empty());
        assert_eq!(allowed_cpu_count().unwrap(), allowed_cpus().unwrap().len());
    }
}

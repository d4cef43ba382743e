//! Helper processes tally starts beside a measured command (the GPU
//! sampler's `nvidia-smi`): they die with the thread that started them.

use std::os::unix::process::CommandExt;
use std::process::Command;

/// Makes `cmd`'s process get SIGKILL when the thread that spawns it dies
/// (`PR_SET_PDEATHSIG`), so a helper never outlives a killed tally.
pub fn die_with_parent(cmd: &mut Command) -> &mut Command {
    let parent = std::process::id();
    // SAFETY: the closure runs in the child between fork and exec and
    // makes only async-signal-safe calls (prctl, getppid, kill) on plain
    // integers; it allocates nothing and takes no lock.
    unsafe {
        cmd.pre_exec(move || {
            if libc::prctl(
                libc::PR_SET_PDEATHSIG,
                libc::SIGKILL as libc::c_ulong,
                0,
                0,
                0,
            ) != 0
            {
                return Err(std::io::Error::last_os_error());
            }
            if libc::getppid() as u32 != parent {
                libc::kill(libc::getpid(), libc::SIGKILL);
            }
            Ok(())
        })
    }
}

/// Makes `cmd`'s process start in a process group of its own, so that
/// [`kill_group`] ends it with anything it started, and without ambient
/// capabilities: a helper found on `PATH` gets none of the rights a
/// server started with capabilities holds (`tally serve` under systemd's
/// `AmbientCapabilities=`); it runs as its caller would run it.
pub fn apart(cmd: &mut Command) -> &mut Command {
    cmd.process_group(0);
    // SAFETY: the closure runs in the child between fork and exec and
    // makes one async-signal-safe call (prctl) on constant integers; it
    // allocates nothing and takes no lock. A kernel without ambient
    // capabilities (before 4.3) refuses it and has none to clear.
    unsafe {
        cmd.pre_exec(|| {
            libc::prctl(
                libc::PR_CAP_AMBIENT,
                libc::PR_CAP_AMBIENT_CLEAR_ALL as libc::c_ulong,
                0,
                0,
                0,
            );
            Ok(())
        })
    }
}

/// Sends SIGKILL to every process of the group `pgid`: a helper started
/// [`apart`] (its pid is its group's id) and what it started. Call it
/// before the helper is reaped, so its id cannot have been reused.
pub fn kill_group(pgid: u32) -> std::io::Result<()> {
    let group = libc::pid_t::try_from(pgid)
        .ok()
        .filter(|&g| g > 1)
        .ok_or_else(|| std::io::Error::from_raw_os_error(libc::EINVAL))?;
    // SAFETY: kill has no memory preconditions; `-group` (group > 1)
    // names one process group, never "every process" (-1) nor this
    // process's own group (0).
    if unsafe { libc::kill(-group, libc::SIGKILL) } != 0 {
        return Err(std::io::Error::last_os_error());
    }
    Ok(())
}

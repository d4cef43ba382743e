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

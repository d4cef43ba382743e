//! Forwarding SIGINT, SIGTERM, SIGHUP and SIGQUIT to the measured command.
//!
//! GNU time, hyperfine and perf stat leave the child running when they are
//! told to stop; tally passes the signal on and still reports the run. A
//! signal the terminal sent to the whole foreground process group
//! (`si_code == SI_KERNEL`) already reached the child, so it is only noted,
//! not sent twice.
//!
//! Started with a signal ignored (`nohup`, `trap '' INT`, a shell's
//! background job, many CI runners): tally still acts on SIGINT, SIGTERM
//! and SIGQUIT sent to it — it forwards them and a repeated run stops, so
//! the user's Ctrl-C or a runner's `kill` still ends the work with a
//! report — while the measured command starts with the dispositions tally
//! inherited, as it would without tally (an ignored SIGINT stays ignored
//! in the command, so a forwarded SIGINT does not stop it; a second
//! SIGINT or SIGTERM escalates as below). An ignored SIGHUP stays ignored
//! by tally too: that is what `nohup` asks.
//!
//! Escalation: the second SIGINT or SIGTERM sent to tally (not the
//! terminal's, which reached the command itself) while the same command
//! still runs is not forwarded: the command gets SIGKILL instead. A command
//! that ignores or outlives the first request to stop cannot hold tally,
//! and a caller that asked twice gets its stop. SIGHUP and SIGQUIT never
//! escalate (daemons reload on SIGHUP), and neither does a terminal's
//! Ctrl-C, which interactive commands (editors, shells, REPLs) handle.

use std::io;
use std::sync::atomic::{AtomicBool, AtomicI32, AtomicU32, Ordering};

use super::cvt;

/// The signals tally forwards.
pub const FORWARDED: [i32; 4] = [libc::SIGINT, libc::SIGTERM, libc::SIGHUP, libc::SIGQUIT];

static CHILD: AtomicI32 = AtomicI32::new(0);
/// A signal that arrived while no child was running, to send once one is.
static PENDING: AtomicI32 = AtomicI32::new(0);
/// The pending signal came from the terminal, to the whole foreground
/// group: a child started since got it too, so it is not sent again.
static PENDING_FROM_TTY: AtomicBool = AtomicBool::new(false);
/// The last signal received while a child ran (0: none).
static RECEIVED: AtomicI32 = AtomicI32::new(0);
/// SIGINT/SIGTERM forwarded to the current child.
static STOPS: AtomicU32 = AtomicU32::new(0);
/// The current child was sent SIGKILL at a second SIGINT/SIGTERM.
static ESCALATED: AtomicBool = AtomicBool::new(false);
/// Relay every signal as it came, never escalating (the child forwards
/// and escalates itself: `Forwarder::relay_to`).
static RELAY: AtomicBool = AtomicBool::new(false);
/// The child leads a process group of its own: signals go to the group,
/// the terminal's too, which reached only tally's group
/// ([`Forwarder::signal_groups`]).
static GROUP: AtomicBool = AtomicBool::new(false);
/// Become the reaper of orphaned descendants at the first forwarded
/// signal ([`Forwarder::adopt_orphans_on_signal`]).
static ADOPT: AtomicBool = AtomicBool::new(false);
/// The forwarded signals that were ignored when tally started (bit
/// `1 << sig`): handled by tally, but ignored again in the commands it
/// starts ([`inherited_disposition`]).
static INHERITED_IGNORED: AtomicU32 = AtomicU32::new(0);

/// The disposition a command tally starts should get for forwarded signal
/// `sig`: `SIG_IGN` when tally's caller had it ignored, else `SIG_DFL`.
/// Async-signal-safe (an atomic load), for a child between fork and exec.
pub fn inherited_disposition(sig: i32) -> libc::sighandler_t {
    let bit = 1u32.checked_shl(sig as u32).unwrap_or(0);
    if INHERITED_IGNORED.load(Ordering::Relaxed) & bit != 0 {
        libc::SIG_IGN
    } else {
        libc::SIG_DFL
    }
}

fn is_stop(sig: i32) -> bool {
    sig == libc::SIGINT || sig == libc::SIGTERM
}

extern "C" fn on_signal(sig: libc::c_int, info: *mut libc::siginfo_t, _ctx: *mut libc::c_void) {
    // SAFETY: the kernel passes a valid siginfo_t for SA_SIGINFO handlers;
    // a null pointer is still checked.
    let from_tty = !info.is_null() && unsafe { (*info).si_code } == libc::SI_KERNEL;
    RECEIVED.store(sig, Ordering::SeqCst);
    if ADOPT.load(Ordering::SeqCst) {
        // Before the command can die of the signal: the processes it
        // started and leaves behind come to this process, which ends them.
        // SAFETY: prctl takes plain integers; it is a bare system call,
        // safe in a handler.
        unsafe { libc::prctl(libc::PR_SET_CHILD_SUBREAPER, 1 as libc::c_ulong, 0, 0, 0) };
    }
    let child = CHILD.load(Ordering::SeqCst);
    let group = GROUP.load(Ordering::SeqCst);
    let from_tty = from_tty && !group;
    if child > 0 {
        if !from_tty {
            let relay = RELAY.load(Ordering::SeqCst);
            let send = if !relay && is_stop(sig) && STOPS.fetch_add(1, Ordering::SeqCst) >= 1 {
                ESCALATED.store(true, Ordering::SeqCst);
                libc::SIGKILL
            } else {
                sig
            };
            let target = if group { -child } else { child };
            // SAFETY: kill is async-signal-safe.
            unsafe { libc::kill(target, send) };
        }
    } else {
        PENDING_FROM_TTY.store(from_tty, Ordering::SeqCst);
        PENDING.store(sig, Ordering::SeqCst);
    }
}

/// Blocks the forwarded signals in the calling thread; returns the mask
/// to give back to [`restore_mask`].
pub fn block_forwarded() -> libc::sigset_t {
    // SAFETY: sigset_t is plain data; zeroed is a valid value to fill.
    let mut set: libc::sigset_t = unsafe { std::mem::zeroed() };
    // SAFETY: as above.
    let mut old: libc::sigset_t = unsafe { std::mem::zeroed() };
    // SAFETY: `set` and `old` are valid sigset_t for these calls.
    unsafe {
        libc::sigemptyset(&mut set);
        for sig in FORWARDED {
            libc::sigaddset(&mut set, sig);
        }
        libc::pthread_sigmask(libc::SIG_BLOCK, &set, &mut old);
    }
    old
}

/// Blocks every signal in the calling thread (across a clone, so that no
/// handler of this process runs in the child); returns the mask to give
/// back to [`restore_mask`].
#[inline(always)]
pub fn block_all() -> libc::sigset_t {
    // SAFETY: sigset_t is plain data; sigfillset initialises it.
    let mut all: libc::sigset_t = unsafe { std::mem::zeroed() };
    // SAFETY: as above.
    let mut old: libc::sigset_t = unsafe { std::mem::zeroed() };
    // SAFETY: `all` and `old` are valid sigset_t for the calls.
    unsafe {
        libc::sigfillset(&mut all);
        libc::pthread_sigmask(libc::SIG_SETMASK, &all, &mut old);
    }
    old
}

/// Restores a mask saved by [`block_forwarded`] or [`block_all`].
pub fn restore_mask(old: &libc::sigset_t) {
    // SAFETY: `old` is a valid sigset_t returned by pthread_sigmask.
    unsafe { libc::pthread_sigmask(libc::SIG_SETMASK, old, std::ptr::null_mut()) };
}

/// Installed handlers; dropping it restores the previous dispositions.
pub struct Forwarder {
    previous: Vec<(i32, libc::sigaction)>,
}

impl Forwarder {
    /// Installs the forwarding handler for each signal in [`FORWARDED`],
    /// ignored ones included but for SIGHUP (see the module comment); the
    /// ignored ones are remembered for the commands tally starts.
    pub fn install() -> io::Result<Forwarder> {
        let mut previous = Vec::new();
        for sig in FORWARDED {
            // SAFETY: sigaction is plain data; zeroed is a valid value.
            let mut old: libc::sigaction = unsafe { std::mem::zeroed() };
            // SAFETY: a null new action only queries the current one.
            cvt(unsafe { libc::sigaction(sig, std::ptr::null(), &mut old) })?;
            if old.sa_sigaction == libc::SIG_IGN {
                if sig == libc::SIGHUP {
                    continue;
                }
                INHERITED_IGNORED.fetch_or(1 << sig, Ordering::SeqCst);
            }
            // SAFETY: sigaction is plain data; zeroed is a valid value.
            let mut new: libc::sigaction = unsafe { std::mem::zeroed() };
            new.sa_sigaction = on_signal as *const () as usize;
            new.sa_flags = libc::SA_SIGINFO | libc::SA_RESTART;
            // SAFETY: `new.sa_mask` is a valid sigset_t to initialise.
            unsafe { libc::sigemptyset(&mut new.sa_mask) };
            // SAFETY: `new` is fully initialised and the handler only makes
            // async-signal-safe calls on atomics.
            cvt(unsafe { libc::sigaction(sig, &new, std::ptr::null_mut()) })?;
            previous.push((sig, old));
        }
        Ok(Forwarder { previous })
    }

    /// Starts forwarding to `pid`; a signal that came before is sent now.
    pub fn attach(&self, pid: u32) {
        STOPS.store(0, Ordering::SeqCst);
        ESCALATED.store(false, Ordering::SeqCst);
        CHILD.store(pid as i32, Ordering::SeqCst);
        let pending = PENDING.swap(0, Ordering::SeqCst);
        if pending != 0 {
            RECEIVED.store(pending, Ordering::SeqCst);
            if !PENDING_FROM_TTY.load(Ordering::SeqCst) {
                if is_stop(pending) {
                    STOPS.fetch_add(1, Ordering::SeqCst);
                }
                if GROUP.load(Ordering::SeqCst) {
                    // SAFETY: kill has no memory preconditions.
                    unsafe { libc::kill(-(pid as libc::pid_t), pending) };
                } else {
                    let _ = kill(pid, pending);
                }
            }
        }
    }

    /// Relays every signal to `pid` from now on, as it comes and without
    /// escalating: for a child that runs the commands and forwards (and
    /// escalates) itself. A terminal's signal reached it already and is
    /// only noted, as for any child.
    pub fn relay_to(&self, pid: u32) {
        RELAY.store(true, Ordering::SeqCst);
        self.attach(pid);
    }

    /// From the first forwarded signal on, this process is the reaper of
    /// the descendants its children orphan (`PR_SET_CHILD_SUBREAPER`), so
    /// that what an interrupted command started can be found and ended
    /// (see [`super::process::children`]). Not before: the processes a
    /// command leaves running in an ordinary run are none of tally's.
    pub fn adopt_orphans_on_signal(&self) {
        ADOPT.store(true, Ordering::SeqCst);
    }

    /// Forwards to the process group the child leads (started with
    /// `PreExec::own_group`), the terminal's signals too: they reached
    /// tally's group, not the child's.
    pub fn signal_groups(&self) {
        GROUP.store(true, Ordering::SeqCst);
    }

    /// Whether the last child was sent SIGKILL at a second SIGINT/SIGTERM;
    /// clears it.
    pub fn take_escalated(&self) -> bool {
        ESCALATED.swap(false, Ordering::SeqCst)
    }

    /// Stops forwarding (the child has exited).
    pub fn detach(&self) {
        CHILD.store(0, Ordering::SeqCst);
    }

    /// The signal received while the last child ran, if any; clears it.
    pub fn take_received(&self) -> Option<i32> {
        match RECEIVED.swap(0, Ordering::SeqCst) {
            0 => None,
            sig => Some(sig),
        }
    }

    /// A signal received while no child ran, if any (the user asked to stop
    /// between runs).
    ///
    /// When relaying ([`Forwarder::relay_to`]), any signal received: the
    /// child may be between runs, and no more should start.
    pub fn pending(&self) -> Option<i32> {
        match PENDING.load(Ordering::SeqCst) {
            0 if RELAY.load(Ordering::SeqCst) => match RECEIVED.load(Ordering::SeqCst) {
                0 => None,
                sig => Some(sig),
            },
            0 => None,
            sig => Some(sig),
        }
    }
}

impl Drop for Forwarder {
    fn drop(&mut self) {
        ADOPT.store(false, Ordering::SeqCst);
        GROUP.store(false, Ordering::SeqCst);
        CHILD.store(0, Ordering::SeqCst);
        RELAY.store(false, Ordering::SeqCst);
        for (sig, old) in &self.previous {
            // SAFETY: `old` is the action sigaction returned for this signal.
            unsafe { libc::sigaction(*sig, old, std::ptr::null_mut()) };
        }
    }
}

/// Sends `sig` to process `pid`.
pub fn kill(pid: u32, sig: i32) -> io::Result<()> {
    // SAFETY: kill has no memory preconditions.
    cvt(unsafe { libc::kill(pid as libc::pid_t, sig) }).map(|_| ())
}

/// Makes `cmd` start its program with the forwarded signals ignored that
/// tally's caller had ignored ([`inherited_disposition`]): exec would give
/// it the default action of a signal tally handles. For the helpers tally
/// starts with `std::process::Command` (compare's spawner, `--setup`
/// hooks), so that they and the commands they start see what the user set.
pub fn start_with_inherited_dispositions(
    cmd: &mut std::process::Command,
) -> &mut std::process::Command {
    use std::os::unix::process::CommandExt;
    if INHERITED_IGNORED.load(Ordering::SeqCst) == 0 {
        return cmd;
    }
    // SAFETY: the closure runs in the child between fork and exec and makes
    // only async-signal-safe calls (an atomic load, signal) with constant
    // arguments; it allocates nothing and takes no lock.
    unsafe {
        cmd.pre_exec(|| {
            for sig in FORWARDED {
                if inherited_disposition(sig) == libc::SIG_IGN {
                    libc::signal(sig, libc::SIG_IGN);
                }
            }
            Ok(())
        })
    }
}

/// Makes `cmd` start its program with every signal at its default action
/// and none blocked, whatever this process inherited (a job started by
/// `nohup`, `trap '' INT` or a CI runner has SIGINT or SIGHUP ignored, and
/// exec keeps an ignored signal ignored). The test suite starts every
/// process this way, so a test that interrupts tally does not depend on
/// how the suite itself was started.
pub fn start_with_default_signals(cmd: &mut std::process::Command) -> &mut std::process::Command {
    use std::os::unix::process::CommandExt;
    // SAFETY: the closure runs in the child between fork and exec and makes
    // only async-signal-safe calls (sigaction, sigemptyset, sigprocmask) on
    // values on its own stack; it allocates nothing and takes no lock.
    unsafe {
        cmd.pre_exec(|| {
            let mut dfl: libc::sigaction = std::mem::zeroed();
            dfl.sa_sigaction = libc::SIG_DFL;
            libc::sigemptyset(&mut dfl.sa_mask);
            for sig in 1..=64 {
                if sig != libc::SIGKILL && sig != libc::SIGSTOP {
                    // The C library's own real-time signals refuse (EINVAL);
                    // nothing else to do about them.
                    libc::sigaction(sig, &dfl, std::ptr::null_mut());
                }
            }
            let mut empty: libc::sigset_t = std::mem::zeroed();
            libc::sigemptyset(&mut empty);
            libc::sigprocmask(libc::SIG_SETMASK, &empty, std::ptr::null_mut());
            Ok(())
        })
    }
}

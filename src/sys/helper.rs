//! Helper processes tally starts beside its work (`nvidia-smi`'s sampler
//! and its queries): the one way they are started, read, waited for and
//! ended.
//!
//! - A helper starts in a process group of its own, without ambient
//!   capabilities, with stdin on /dev/null and its stdout and stderr
//!   piped, and gets SIGKILL when the thread that started it dies
//!   (`PR_SET_PDEATHSIG`), so it never outlives a killed tally.
//! - It is ended as a group: what it started goes with it. The group is
//!   sent SIGKILL before the helper is reaped (also when it exited by
//!   itself), while its pid still holds the group's id, so that no other
//!   group can have been given that id by then.
//! - Every wait is bounded: for its exit by the caller's deadline
//!   ([`Helper::wait_until`]), for its reaping after SIGKILL by
//!   [`KILL_WAIT`] (a process stuck in the kernel that SIGKILL cannot end
//!   at once is left, never waited for), and its pipes, read through
//!   [`Pipe`], end when it is stopped even while a process that left its
//!   group still holds them open: no reader waits on a process tally does
//!   not control.

use std::fs::File;
use std::io::{self, Read};
use std::os::fd::{AsRawFd, OwnedFd};
use std::os::unix::process::CommandExt;
use std::process::{Child, Command, ExitStatus, Stdio};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// The longest wait for a helper to be reaped once its group was sent
/// SIGKILL.
pub const KILL_WAIT: Duration = Duration::from_secs(1);
/// Bytes a [`Pipe`] still gives once its helper was stopped: what the
/// helper had written before (a pipe holds 64 KiB; 1 MiB once resized),
/// not an endless stream from a process that left the group.
const AFTER_STOP: usize = 1 << 20;

/// A helper process (see the module's text).
pub struct Helper {
    child: Child,
    pid: u32,
    /// How it ended, once reaped.
    status: Option<ExitStatus>,
    /// The write end of the stop pipe: closed by [`Helper::stop`], which
    /// every [`Pipe`] of this helper sees.
    stop_tx: Option<OwnedFd>,
    stop_rx: Arc<OwnedFd>,
    started: Instant,
}

impl Helper {
    /// Starts `cmd` as a helper: its own process group, no ambient
    /// capabilities, dying with the calling thread, stdin /dev/null,
    /// stdout and stderr piped.
    pub fn start(mut cmd: Command) -> io::Result<Helper> {
        cmd.stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        apart(&mut cmd);
        die_with_parent(&mut cmd);
        let (stop_rx, stop_tx) = super::process::pipe()?;
        let started = Instant::now();
        let child = cmd.spawn()?;
        Ok(Helper {
            pid: child.id(),
            child,
            status: None,
            stop_tx: Some(stop_tx),
            stop_rx: Arc::new(stop_rx),
            started,
        })
    }

    /// Its pid (its process group's id).
    pub fn pid(&self) -> u32 {
        self.pid
    }

    /// When it was started.
    pub fn started(&self) -> Instant {
        self.started
    }

    /// Its stdout, to read (once).
    pub fn stdout(&mut self) -> Option<Pipe> {
        let out = self.child.stdout.take()?;
        Some(self.pipe(OwnedFd::from(out)))
    }

    /// Its stderr, to read (once).
    pub fn stderr(&mut self) -> Option<Pipe> {
        let err = self.child.stderr.take()?;
        Some(self.pipe(OwnedFd::from(err)))
    }

    fn pipe(&self, fd: OwnedFd) -> Pipe {
        Pipe {
            file: File::from(fd),
            stop: Arc::clone(&self.stop_rx),
            left: None,
        }
    }

    /// How it ended, once it has: then what it started is ended too (its
    /// group is sent SIGKILL) and it is reaped. `None` while it runs.
    pub fn exited(&mut self) -> Option<ExitStatus> {
        // An error (ECHILD) would mean another waiter reaped it: none does
        // in tally, and it is left to `stop` as a running one.
        if self.status.is_none() && exited_keep_now(self.pid).unwrap_or(false) {
            // A zombie holding the group's id: end its group, then reap it.
            let _ = kill_group(self.pid);
            self.reap(Instant::now() + KILL_WAIT);
        }
        self.status
    }

    /// Waits until it has exited ([`Helper::exited`]), at most until
    /// `deadline`; `None` when it still runs then.
    pub fn wait_until(&mut self, deadline: Instant) -> Option<ExitStatus> {
        let mut nap = Duration::from_millis(1);
        loop {
            if let Some(status) = self.exited() {
                return Some(status);
            }
            let now = Instant::now();
            if now >= deadline {
                return None;
            }
            std::thread::sleep(nap.min(deadline - now));
            nap = (nap * 2).min(Duration::from_millis(10));
        }
    }

    /// Ends it and what it started (SIGKILL to its group), reaps it
    /// (waiting at most [`KILL_WAIT`]) and ends its pipes' reads. Returns
    /// whether it was reaped: `false` only for a process SIGKILL could not
    /// end in time (stuck in the kernel), which is left.
    pub fn stop(&mut self) -> bool {
        if self.status.is_none() {
            let _ = kill_group(self.pid);
            // Its own pid too, should the group have been left.
            let _ = self.child.kill();
            self.reap(Instant::now() + KILL_WAIT);
        }
        self.stop_tx = None;
        self.status.is_some()
    }

    /// Reaps the child once it has exited, until `deadline`.
    fn reap(&mut self, deadline: Instant) {
        loop {
            match self.child.try_wait() {
                Ok(Some(status)) => {
                    self.status = Some(status);
                    return;
                }
                Ok(None) if Instant::now() < deadline => {
                    std::thread::sleep(Duration::from_millis(1));
                }
                _ => return,
            }
        }
    }
}

impl Drop for Helper {
    fn drop(&mut self) {
        self.stop();
    }
}

/// A pipe from a [`Helper`]: reads block until data comes, the pipe ends,
/// or the helper is stopped; after the stop it gives what is already
/// there (at most 1 MiB) and then ends.
pub struct Pipe {
    file: File,
    stop: Arc<OwnedFd>,
    /// Bytes still given since the stop; `None` before it.
    left: Option<usize>,
}

impl Read for Pipe {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        loop {
            let stopping = self.left.is_some();
            let ready = poll_two(
                self.file.as_raw_fd(),
                (!stopping).then(|| self.stop.as_raw_fd()),
                if stopping { Some(0) } else { None },
            )?;
            match ready {
                Ready::First => {
                    let cap = self.left.map_or(buf.len(), |left| left.min(buf.len()));
                    if cap == 0 {
                        return Ok(0);
                    }
                    let n = self.file.read(&mut buf[..cap])?;
                    if let Some(left) = &mut self.left {
                        *left -= n;
                    }
                    return Ok(n);
                }
                Ready::Second => self.left = Some(AFTER_STOP),
                Ready::Neither => return Ok(0),
            }
        }
    }
}

/// Which of two descriptors [`poll_two`] found ready.
enum Ready {
    First,
    Second,
    /// The timeout passed.
    Neither,
}

/// Polls `first` (and `second`, when given) for input, its end or an
/// error, waiting `timeout_ms` (`None`: until one is ready). `first`
/// wins when both are.
fn poll_two(first: i32, second: Option<i32>, timeout_ms: Option<i32>) -> io::Result<Ready> {
    let mut fds = [first, second.unwrap_or(-1)].map(|fd| libc::pollfd {
        fd,
        events: libc::POLLIN,
        revents: 0,
    });
    loop {
        // SAFETY: `fds` is a valid array of two pollfd; a negative fd is
        // ignored by poll.
        let n = unsafe { libc::poll(fds.as_mut_ptr(), 2, timeout_ms.unwrap_or(-1)) };
        match super::cvt(n) {
            Ok(0) => return Ok(Ready::Neither),
            Ok(_) if fds[0].revents != 0 => return Ok(Ready::First),
            Ok(_) => return Ok(Ready::Second),
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(e),
        }
    }
}

/// Whether child `pid` has exited, leaving it unreaped (`waitid` with
/// `WNOWAIT | WNOHANG`).
fn exited_keep_now(pid: u32) -> io::Result<bool> {
    loop {
        // SAFETY: siginfo_t is plain data; zeroed is a valid value.
        let mut info: libc::siginfo_t = unsafe { std::mem::zeroed() };
        // SAFETY: `info` is a valid, writable siginfo_t for the call.
        let ret = unsafe {
            libc::waitid(
                libc::P_PID,
                pid as libc::id_t,
                &mut info,
                libc::WEXITED | libc::WNOWAIT | libc::WNOHANG,
            )
        };
        match super::cvt(ret) {
            // SAFETY: waitid filled `info`; si_pid stays 0 when none exited.
            Ok(_) => return Ok(unsafe { info.si_pid() } != 0),
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(e),
        }
    }
}

/// Makes `cmd`'s process get SIGKILL when the thread that spawns it dies
/// (`PR_SET_PDEATHSIG`), so a helper never outlives a killed tally.
fn die_with_parent(cmd: &mut Command) -> &mut Command {
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
fn apart(cmd: &mut Command) -> &mut Command {
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

/// Sends SIGKILL to every process of the group `pgid`: a helper (its pid
/// is its group's id) and what it started. Called before the helper is
/// reaped, so its id cannot have been reused.
fn kill_group(pgid: u32) -> std::io::Result<()> {
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

#[cfg(test)]
mod tests {
    use super::*;

    fn sh(script: &str) -> Command {
        let mut cmd = Command::new("/bin/sh");
        cmd.arg("-c").arg(script);
        cmd
    }

    fn alive(pid: u32) -> bool {
        // SAFETY: signal 0 only checks that the process exists.
        unsafe { libc::kill(pid as libc::pid_t, 0) == 0 }
    }

    #[test]
    fn a_grandchild_holding_the_pipe_ends_with_the_group() {
        let mut h = Helper::start(sh("sleep 30 & echo $!; echo done")).unwrap();
        let mut out = h.stdout().unwrap();
        let t0 = Instant::now();
        let status = h.wait_until(t0 + Duration::from_secs(5));
        assert!(status.is_some_and(|s| s.success()), "{status:?}");
        let mut text = String::new();
        out.read_to_string(&mut text).unwrap();
        assert!(t0.elapsed() < Duration::from_secs(5), "{:?}", t0.elapsed());
        let grandchild: u32 = text.lines().next().unwrap().parse().unwrap();
        assert!(text.ends_with("done\n"), "{text}");
        // Reaped by the shell's group's end: gone, or a zombie of init.
        let until = Instant::now() + Duration::from_secs(2);
        while alive(grandchild)
            && std::fs::read_to_string(format!("/proc/{grandchild}/stat"))
                .is_ok_and(|s| !s.contains(") Z"))
        {
            assert!(Instant::now() < until, "grandchild {grandchild} lives");
            std::thread::sleep(Duration::from_millis(5));
        }
    }

    #[test]
    fn a_pipe_held_outside_the_group_ends_at_the_stop() {
        // setsid takes the sleep out of the helper's group.
        let mut h = Helper::start(sh("setsid sleep 3 & echo started")).unwrap();
        let mut out = h.stdout().unwrap();
        let reader = std::thread::spawn(move || {
            let mut text = String::new();
            let _ = out.read_to_string(&mut text);
            text
        });
        assert!(
            h.wait_until(Instant::now() + Duration::from_secs(5))
                .is_some()
        );
        let t0 = Instant::now();
        assert!(h.stop());
        let text = reader.join().unwrap();
        assert_eq!(text, "started\n");
        assert!(t0.elapsed() < Duration::from_secs(1), "{:?}", t0.elapsed());
    }

    #[test]
    fn a_silent_helper_is_waited_for_until_the_deadline_then_stopped() {
        let mut h = Helper::start(sh("exec sleep 30")).unwrap();
        let pid = h.pid();
        let t0 = Instant::now();
        assert_eq!(h.wait_until(t0 + Duration::from_millis(100)), None);
        assert!(t0.elapsed() >= Duration::from_millis(100));
        assert!(h.stop());
        assert!(!alive(pid), "{pid} was reaped");
    }
}

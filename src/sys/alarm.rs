//! A deadline on a stretch of work without a second thread: an
//! `ITIMER_REAL` timer whose SIGALRM handler writes a message prepared
//! beforehand to stderr and, if asked, ends the process.
//!
//! `tally bench` watches each benchmark with one. A watchdog thread would
//! make the measuring process multi-threaded, and a process with two
//! threads shares its descriptor table: every `read`, `write` or `poll`
//! then takes the kernel's reference-counted path to look its descriptor
//! up (`fdget` skips that only for a single-threaded process), which
//! `tally bench syscall` measured as 30% on a 1-byte read
//! (benches/syscall_vs_c.py). A timer costs nothing until it fires.
//!
//! The handler is async-signal-safe: it unlinks the paths armed in
//! [`super::cleanup`], writes the bytes of the message with `write(2)` and
//! calls `_exit(2)` (or returns, for a caller that only wants the message).
//! Timers set by `setitimer` are not inherited across `fork`, so forked
//! peers never get it.

use std::io;
use std::sync::Once;
use std::sync::atomic::{AtomicBool, AtomicPtr, AtomicUsize, Ordering};
use std::time::Duration;

use super::cvt;

static MESSAGE: AtomicPtr<u8> = AtomicPtr::new(std::ptr::null_mut());
static MESSAGE_LEN: AtomicUsize = AtomicUsize::new(0);
static EXIT: AtomicBool = AtomicBool::new(true);
static EXIT_CODE: AtomicUsize = AtomicUsize::new(1);
static INSTALL: Once = Once::new();

extern "C" fn on_alarm(_sig: libc::c_int) {
    let exit = EXIT.load(Ordering::SeqCst);
    if exit {
        super::cleanup::remove_armed();
    }
    let ptr = MESSAGE.load(Ordering::SeqCst);
    let len = MESSAGE_LEN.load(Ordering::SeqCst);
    if !ptr.is_null() && len > 0 {
        // SAFETY: `ptr` and `len` describe the message buffer a live
        // `Deadline` owns (it clears them before freeing it); write(2) is
        // async-signal-safe and a short or failed write is harmless here.
        unsafe { libc::write(libc::STDERR_FILENO, ptr.cast(), len) };
    }
    if exit {
        let code = i32::try_from(EXIT_CODE.load(Ordering::SeqCst)).unwrap_or(1);
        // SAFETY: _exit is async-signal-safe and ends the process at once.
        unsafe { libc::_exit(code) };
    }
}

fn install() -> io::Result<()> {
    // SAFETY: sigaction is plain data; zeroed is a valid value.
    let mut new: libc::sigaction = unsafe { std::mem::zeroed() };
    new.sa_sigaction = on_alarm as *const () as usize;
    // Interrupted system calls resume when the handler returns.
    new.sa_flags = libc::SA_RESTART;
    // SAFETY: `new.sa_mask` is a valid sigset_t to fill.
    unsafe { libc::sigfillset(&mut new.sa_mask) };
    // SAFETY: `new` is initialised; the handler makes only
    // async-signal-safe calls.
    cvt(unsafe { libc::sigaction(libc::SIGALRM, &new, std::ptr::null_mut()) }).map(|_| ())
}

fn set_timer(after: Duration) -> io::Result<()> {
    let value = super::timeval(after);
    let t = libc::itimerval {
        it_interval: libc::timeval {
            tv_sec: 0,
            tv_usec: 0,
        },
        it_value: value,
    };
    // SAFETY: `t` is a valid itimerval; the old value is not wanted.
    cvt(unsafe { libc::setitimer(libc::ITIMER_REAL, &t, std::ptr::null_mut()) }).map(|_| ())
}

/// What the handler does after writing the message.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Then {
    /// Remove the armed scratch paths and `_exit` with this status.
    Exit(u8),
    /// Return: the interrupted work goes on (a long-running server that
    /// only logs a stuck measurement).
    Continue,
}

/// An armed deadline; dropping it disarms the timer. One at a time per
/// process (there is one `ITIMER_REAL`): arming a second replaces the
/// first.
#[derive(Debug)]
pub struct Deadline {
    message: Box<[u8]>,
}

impl Deadline {
    /// After `after`, writes `message` to stderr and does `then`.
    pub fn arm(after: Duration, message: String, then: Then) -> io::Result<Deadline> {
        let mut result = Ok(());
        INSTALL.call_once(|| result = install());
        result?;
        // No alarm may fire while the message changes hands.
        set_timer(Duration::ZERO)?;
        let mut message = message.into_bytes().into_boxed_slice();
        MESSAGE_LEN.store(0, Ordering::SeqCst);
        MESSAGE.store(message.as_mut_ptr(), Ordering::SeqCst);
        MESSAGE_LEN.store(message.len(), Ordering::SeqCst);
        match then {
            Then::Exit(code) => {
                EXIT_CODE.store(usize::from(code), Ordering::SeqCst);
                EXIT.store(true, Ordering::SeqCst);
            }
            Then::Continue => EXIT.store(false, Ordering::SeqCst),
        }
        // A zero duration would disarm: wait at least a microsecond.
        set_timer(after.max(Duration::from_micros(1)))?;
        Ok(Deadline { message })
    }
}

impl Drop for Deadline {
    fn drop(&mut self) {
        let _ = set_timer(Duration::ZERO);
        // Only clear the message if it is still ours (a later deadline may
        // have replaced it).
        if MESSAGE.load(Ordering::SeqCst) == self.message.as_mut_ptr() {
            MESSAGE_LEN.store(0, Ordering::SeqCst);
            MESSAGE.store(std::ptr::null_mut(), Ordering::SeqCst);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_armed_deadline_that_does_not_fire_leaves_nothing_behind() {
        let d = Deadline::arm(Duration::from_secs(60), "late\n".into(), Then::Continue).unwrap();
        assert_eq!(MESSAGE_LEN.load(Ordering::SeqCst), 5);
        drop(d);
        assert!(MESSAGE.load(Ordering::SeqCst).is_null());
        assert_eq!(MESSAGE_LEN.load(Ordering::SeqCst), 0);
    }
}

//! Files to remove if tally dies: temporary copies and scratch files.
//!
//! A [`Guard`] arms one path ([`Guard::arm`]), or one name in an open
//! directory ([`Guard::arm_at`]: no path resolved, however deep the
//! directory). While it lives, a fatal signal (SIGINT,
//! SIGTERM, SIGHUP, SIGQUIT, and the crash signals SIGSEGV, SIGBUS, SIGILL,
//! SIGFPE, SIGABRT) unlinks the path before the process dies of that signal
//! as it would have (the default action is restored and the signal raised
//! again, so the exit status still says which signal it was). Dropping the
//! guard disarms it without removing anything: the owner decides what a
//! normal exit keeps.
//!
//! The handler only calls `unlink` (or `unlinkat`) on paths stored in
//! static buffers, which is async-signal-safe. A signal that was ignored when the first guard was
//! armed stays ignored; a handler someone else installed (e.g. `tally run`'s
//! forwarder) is left in place, so this module does not arm over it.
//! Only SIGKILL and a power cut leave a file behind; callers that can use
//! `O_TMPFILE` avoid even that.

use std::cell::UnsafeCell;
use std::ffi::CString;
use std::io;
use std::os::unix::ffi::OsStrExt;
use std::path::Path;
use std::sync::Once;
use std::sync::atomic::{AtomicBool, AtomicI32, AtomicU8, Ordering};

/// Paths armed at once; more is an error the caller reports.
const SLOTS: usize = 32;
/// Longest path a slot holds, with its NUL (PATH_MAX).
const PATH_CAP: usize = 4096;

/// The signals whose default action would leave a file behind.
pub const FATAL: [i32; 9] = [
    libc::SIGINT,
    libc::SIGTERM,
    libc::SIGHUP,
    libc::SIGQUIT,
    libc::SIGSEGV,
    libc::SIGBUS,
    libc::SIGILL,
    libc::SIGFPE,
    libc::SIGABRT,
];

const FREE: u8 = 0;
const WRITING: u8 = 1;
const ARMED: u8 = 2;
const DYING: u8 = 3;

struct Slot {
    state: AtomicU8,
    /// The directory `path` is a name in (`arm_at`), or -1: a path.
    dir: AtomicI32,
    path: UnsafeCell<[u8; PATH_CAP]>,
}

// SAFETY: `path` is written only by the thread that moved `state` from FREE
// to WRITING, and read (by the handler) only after `state` is ARMED; the
// state transitions are atomic, so no two parties touch the buffer at once.
unsafe impl Sync for Slot {}

#[allow(clippy::declare_interior_mutable_const)]
const EMPTY: Slot = Slot {
    state: AtomicU8::new(FREE),
    dir: AtomicI32::new(-1),
    path: UnsafeCell::new([0; PATH_CAP]),
};
static TABLE: [Slot; SLOTS] = [EMPTY; SLOTS];
static INSTALL: Once = Once::new();

/// Set by [`catch_stops`]: the first SIGINT, SIGTERM or SIGHUP asks the
/// work to stop ([`stop_requested`]) instead of ending the process.
static CATCH_STOPS: AtomicBool = AtomicBool::new(false);
/// The signal that asked the work to stop (0: none yet).
static STOP: AtomicI32 = AtomicI32::new(0);

extern "C" fn on_fatal(sig: libc::c_int) {
    if CATCH_STOPS.load(Ordering::SeqCst)
        && matches!(sig, libc::SIGINT | libc::SIGTERM | libc::SIGHUP)
        && STOP
            .compare_exchange(0, sig, Ordering::SeqCst, Ordering::SeqCst)
            .is_ok()
    {
        // The first: the work stops at its next step and says where.
        return;
    }
    remove_armed();
    // SAFETY: restoring the default action and raising the signal again are
    // async-signal-safe; the process then dies of `sig` as it would have.
    unsafe {
        libc::signal(sig, libc::SIG_DFL);
        let mut set: libc::sigset_t = std::mem::zeroed();
        libc::sigemptyset(&mut set);
        libc::sigaddset(&mut set, sig);
        libc::pthread_sigmask(libc::SIG_UNBLOCK, &set, std::ptr::null_mut());
        libc::raise(sig);
    }
}

/// Unlinks every armed path (from a signal handler: async-signal-safe).
pub(super) fn remove_armed() {
    for slot in &TABLE {
        if slot
            .state
            .compare_exchange(ARMED, DYING, Ordering::SeqCst, Ordering::SeqCst)
            .is_ok()
        {
            let path = slot.path.get().cast::<libc::c_char>();
            let dir = slot.dir.load(Ordering::SeqCst);
            if dir >= 0 {
                // SAFETY: as below; the guard's owner keeps `dir` open
                // while the slot is armed.
                unsafe { libc::unlinkat(dir, path, 0) };
            } else {
                // SAFETY: the slot is ARMED, so its buffer holds a
                // complete NUL-terminated path that nobody writes any
                // more; unlink is async-signal-safe.
                unsafe { libc::unlink(path) };
            }
        }
    }
}

fn install() {
    for sig in FATAL {
        // SAFETY: sigaction is plain data; zeroed is a valid value.
        let mut old: libc::sigaction = unsafe { std::mem::zeroed() };
        // SAFETY: a null new action only queries the current one.
        if unsafe { libc::sigaction(sig, std::ptr::null(), &mut old) } != 0 {
            continue;
        }
        if old.sa_sigaction != libc::SIG_DFL {
            continue;
        }
        // SAFETY: sigaction is plain data; zeroed is a valid value.
        let mut new: libc::sigaction = unsafe { std::mem::zeroed() };
        new.sa_sigaction = on_fatal as *const () as usize;
        new.sa_flags = libc::SA_RESTART;
        // SAFETY: `new.sa_mask` is a valid sigset_t to fill.
        unsafe { libc::sigfillset(&mut new.sa_mask) };
        // SAFETY: `new` is initialised; the handler makes only
        // async-signal-safe calls.
        unsafe { libc::sigaction(sig, &new, std::ptr::null_mut()) };
    }
}

/// From now on the first SIGINT, SIGTERM or SIGHUP does not end the
/// process: it is recorded for [`stop_requested`], and the work stops at
/// its next step, cleans up and says what it did (`tally cp`); a second
/// one ends the process as before (armed paths removed). A signal ignored
/// when tally started stays ignored.
pub fn catch_stops() {
    CATCH_STOPS.store(true, Ordering::SeqCst);
    INSTALL.call_once(install);
}

/// The signal that asked the work to stop, if one came (see
/// [`catch_stops`]).
pub fn stop_requested() -> Option<i32> {
    match STOP.load(Ordering::Relaxed) {
        0 => None,
        sig => Some(sig),
    }
}

/// Ends the process by `sig`, as its default action would (after the work
/// a caught stop asked for is done): the exit status says which signal.
pub fn die_of(sig: i32) -> ! {
    remove_armed();
    // SAFETY: restoring the default action, unblocking and raising the
    // signal; the process ends of it.
    unsafe {
        libc::signal(sig, libc::SIG_DFL);
        let mut set: libc::sigset_t = std::mem::zeroed();
        libc::sigemptyset(&mut set);
        libc::sigaddset(&mut set, sig);
        libc::pthread_sigmask(libc::SIG_UNBLOCK, &set, std::ptr::null_mut());
        libc::raise(sig);
    }
    // A signal whose default is not to end the process (never one of
    // SIGINT, SIGTERM, SIGHUP): exit as a shell reports it.
    std::process::exit(128 + sig)
}

/// An armed path; see the module documentation.
#[derive(Debug)]
pub struct Guard {
    slot: usize,
}

impl Guard {
    /// Arms `path` (made absolute now, so a later `chdir` cannot redirect
    /// it). Fails when the path is too long or all slots are in use.
    pub fn arm(path: &Path) -> io::Result<Guard> {
        let abs = std::path::absolute(path)?;
        Guard::take(-1, abs.as_os_str())
    }

    /// Arms the name `name` in the open directory `dir`, removed with
    /// `unlinkat` (no path resolved, so a directory deeper than PATH_MAX
    /// is no obstacle). The caller keeps `dir` open while the guard lives.
    pub fn arm_at(dir: &std::fs::File, name: &std::ffi::OsStr) -> io::Result<Guard> {
        use std::os::fd::AsRawFd;
        Guard::take(dir.as_raw_fd(), name)
    }

    fn take(dir: i32, path: &std::ffi::OsStr) -> io::Result<Guard> {
        let c = CString::new(path.as_bytes())
            .map_err(|_| io::Error::new(io::ErrorKind::InvalidInput, "path holds a NUL byte"))?;
        let bytes = c.as_bytes_with_nul();
        if bytes.len() > PATH_CAP {
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                "path too long to arm for removal on a signal",
            ));
        }
        INSTALL.call_once(install);
        for (i, slot) in TABLE.iter().enumerate() {
            if slot
                .state
                .compare_exchange(FREE, WRITING, Ordering::SeqCst, Ordering::SeqCst)
                .is_ok()
            {
                // SAFETY: this thread owns the slot (WRITING); the handler
                // reads only ARMED slots.
                unsafe { (&mut (*slot.path.get()))[..bytes.len()].copy_from_slice(bytes) };
                slot.dir.store(dir, Ordering::SeqCst);
                slot.state.store(ARMED, Ordering::SeqCst);
                return Ok(Guard { slot: i });
            }
        }
        Err(io::Error::other(format!(
            "more than {SLOTS} files armed for removal on a signal"
        )))
    }

    /// Whether the path is still armed (not taken by a dying handler).
    pub fn is_armed(&self) -> bool {
        TABLE[self.slot].state.load(Ordering::SeqCst) == ARMED
    }
}

impl Drop for Guard {
    fn drop(&mut self) {
        // A failed exchange means a handler is unlinking it as the process
        // dies: leave the slot to it.
        let _ = TABLE[self.slot].state.compare_exchange(
            ARMED,
            FREE,
            Ordering::SeqCst,
            Ordering::SeqCst,
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn guards_take_and_free_slots() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("x");
        let a = Guard::arm(&p).unwrap();
        let b = Guard::arm(&p).unwrap();
        assert_ne!(a.slot, b.slot);
        assert!(a.is_armed() && b.is_armed());
        let freed = a.slot;
        drop(a);
        assert_eq!(TABLE[freed].state.load(Ordering::SeqCst), FREE);
    }

    #[test]
    fn a_name_armed_in_a_directory_is_removed_through_it() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("x"), b"x").unwrap();
        let d = std::fs::File::open(dir.path()).unwrap();
        let g = Guard::arm_at(&d, std::ffi::OsStr::new("x")).unwrap();
        assert_eq!(TABLE[g.slot].dir.load(Ordering::SeqCst), {
            use std::os::fd::AsRawFd;
            d.as_raw_fd()
        });
        drop(g);
        assert!(dir.path().join("x").exists(), "disarmed, not removed");
    }

    #[test]
    fn long_paths_are_refused() {
        let p = Path::new("/").join("a".repeat(PATH_CAP));
        assert!(Guard::arm(&p).is_err());
    }
}

//! Signal handling as `tally bench signal` times it: installing a handler
//! with `sigaction`, a signal sent to this process with `kill(getpid())`
//! and caught by a handler that counts it, and a protection fault on a
//! page made inaccessible with `mprotect`, caught as SIGSEGV by a handler
//! that makes the page accessible again (the faulting write then
//! completes). Each object restores the previous disposition when dropped.

use std::io;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};

use super::cvt;

/// Signals caught by [`UserSignal`]'s handler.
static CAUGHT: AtomicU64 = AtomicU64::new(0);
/// Faults on the [`FaultPage`] the SIGSEGV handler repaired.
static REPAIRED: AtomicU64 = AtomicU64::new(0);
/// The page [`FaultPage`] guards (0: none), and its length.
static PAGE_ADDR: AtomicUsize = AtomicUsize::new(0);
static PAGE_LEN: AtomicUsize = AtomicUsize::new(0);

extern "C" fn count_signal(_sig: libc::c_int) {
    CAUGHT.fetch_add(1, Ordering::Relaxed);
}

extern "C" fn repair_fault(_sig: libc::c_int, info: *mut libc::siginfo_t, _ctx: *mut libc::c_void) {
    let start = PAGE_ADDR.load(Ordering::SeqCst);
    let len = PAGE_LEN.load(Ordering::SeqCst);
    // SAFETY: the kernel passes a valid siginfo_t to an SA_SIGINFO
    // handler; a null pointer is still checked.
    let addr = if info.is_null() {
        0
    } else {
        unsafe { (*info).si_addr() as usize }
    };
    if start != 0 && addr >= start && addr < start + len {
        // SAFETY: the range is the page FaultPage mapped and still owns
        // (it clears PAGE_ADDR before unmapping); mprotect is a plain
        // system call, safe in a handler.
        unsafe {
            libc::mprotect(
                start as *mut libc::c_void,
                len,
                libc::PROT_READ | libc::PROT_WRITE,
            )
        };
        REPAIRED.fetch_add(1, Ordering::Relaxed);
    } else {
        // A fault elsewhere is a real crash: let it happen as it would
        // have (the faulting instruction runs again, under the default).
        // SAFETY: signal() with SIG_DFL is async-signal-safe.
        unsafe { libc::signal(libc::SIGSEGV, libc::SIG_DFL) };
    }
}

fn query(sig: libc::c_int) -> io::Result<libc::sigaction> {
    // SAFETY: sigaction is plain data; zeroed is a valid value.
    let mut old: libc::sigaction = unsafe { std::mem::zeroed() };
    // SAFETY: a null new action only reads the current one into `old`.
    cvt(unsafe { libc::sigaction(sig, std::ptr::null(), &mut old) })?;
    Ok(old)
}

fn action(handler: usize, flags: libc::c_int) -> libc::sigaction {
    // SAFETY: sigaction is plain data; zeroed is a valid value.
    let mut new: libc::sigaction = unsafe { std::mem::zeroed() };
    new.sa_sigaction = handler;
    new.sa_flags = flags;
    // SAFETY: `new.sa_mask` is a valid sigset_t to initialise.
    unsafe { libc::sigemptyset(&mut new.sa_mask) };
    new
}

fn set(sig: libc::c_int, act: &libc::sigaction) -> io::Result<()> {
    // SAFETY: `act` is fully initialised; the handlers it names only
    // touch atomics and make async-signal-safe system calls.
    cvt(unsafe { libc::sigaction(sig, act, std::ptr::null_mut()) }).map(|_| ())
}

/// A counting handler installed for one signal; dropping it restores
/// what was there before.
pub struct UserSignal {
    sig: libc::c_int,
    act: libc::sigaction,
    previous: libc::sigaction,
}

impl UserSignal {
    /// Installs the counting handler for `sig` (SIGUSR1, say).
    pub fn install(sig: i32) -> io::Result<UserSignal> {
        let previous = query(sig)?;
        let act = action(count_signal as *const () as usize, libc::SA_RESTART);
        set(sig, &act)?;
        Ok(UserSignal { sig, act, previous })
    }

    /// Installs the same handler again: one `sigaction` call, the
    /// operation the install figure times.
    pub fn reinstall(&self) -> io::Result<()> {
        set(self.sig, &self.act)
    }

    /// `kill(getpid(), sig)`: the handler runs before the call returns
    /// when this thread is the one the kernel picks (the caller checks
    /// [`Self::caught`]).
    pub fn raise(&self) -> io::Result<()> {
        // SAFETY: getpid and kill have no memory preconditions.
        cvt(unsafe { libc::kill(libc::getpid(), self.sig) }).map(|_| ())
    }

    /// Signals the handler has caught so far (all signals, all objects).
    pub fn caught() -> u64 {
        CAUGHT.load(Ordering::Relaxed)
    }
}

impl Drop for UserSignal {
    fn drop(&mut self) {
        let _ = set(self.sig, &self.previous);
    }
}

/// One page whose protection faults a SIGSEGV handler repairs; dropping
/// it restores the previous SIGSEGV disposition and unmaps the page.
pub struct FaultPage {
    addr: *mut libc::c_void,
    len: usize,
    previous: libc::sigaction,
}

impl FaultPage {
    /// Maps one read/write page and installs the repairing handler.
    /// Fails with EBUSY while another `FaultPage` lives.
    pub fn new() -> io::Result<FaultPage> {
        let len = usize::try_from(super::page_size()).unwrap_or(4096);
        // SAFETY: an anonymous private mapping with no address hint has
        // no memory preconditions; failure is MAP_FAILED, checked below.
        let addr = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                len,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_PRIVATE | libc::MAP_ANONYMOUS,
                -1,
                0,
            )
        };
        if addr == libc::MAP_FAILED {
            return Err(io::Error::last_os_error());
        }
        if PAGE_ADDR
            .compare_exchange(0, addr as usize, Ordering::SeqCst, Ordering::SeqCst)
            .is_err()
        {
            // SAFETY: unmaps exactly the page just mapped.
            unsafe { libc::munmap(addr, len) };
            return Err(io::Error::from_raw_os_error(libc::EBUSY));
        }
        PAGE_LEN.store(len, Ordering::SeqCst);
        let undo = |e: io::Error| {
            PAGE_ADDR.store(0, Ordering::SeqCst);
            // SAFETY: unmaps exactly the page just mapped.
            unsafe { libc::munmap(addr, len) };
            e
        };
        let previous = query(libc::SIGSEGV).map_err(undo)?;
        let act = action(
            repair_fault as *const () as usize,
            libc::SA_SIGINFO | libc::SA_NODEFER,
        );
        set(libc::SIGSEGV, &act).map_err(undo)?;
        // Touch it once so the fault measured is the protection fault,
        // not the first-touch fault.
        // SAFETY: addr is our own read/write page.
        unsafe { std::ptr::write_volatile(addr.cast::<u8>(), 1) };
        Ok(FaultPage {
            addr,
            len,
            previous,
        })
    }

    /// Makes the page inaccessible and writes to it: the write faults, the
    /// handler makes the page writable again, the write completes.
    pub fn fault_once(&self) -> io::Result<()> {
        // SAFETY: the range is exactly our own live page.
        cvt(unsafe { libc::mprotect(self.addr, self.len, libc::PROT_NONE) })?;
        // SAFETY: the page is ours; the write faults and the handler,
        // installed for as long as `self` lives, restores access before
        // the write is retried.
        unsafe { std::ptr::write_volatile(self.addr.cast::<u8>(), 2) };
        Ok(())
    }

    /// The same two protection changes without the fault:
    /// `mprotect(PROT_NONE)` then `mprotect(PROT_READ|PROT_WRITE)`.
    pub fn protect_unprotect(&self) -> io::Result<()> {
        // SAFETY: the range is exactly our own live page.
        cvt(unsafe { libc::mprotect(self.addr, self.len, libc::PROT_NONE) })?;
        // SAFETY: as above.
        cvt(unsafe { libc::mprotect(self.addr, self.len, libc::PROT_READ | libc::PROT_WRITE) })
            .map(|_| ())
    }

    /// Faults the handler has repaired so far.
    pub fn repaired() -> u64 {
        REPAIRED.load(Ordering::Relaxed)
    }
}

impl Drop for FaultPage {
    fn drop(&mut self) {
        let _ = set(libc::SIGSEGV, &self.previous);
        PAGE_ADDR.store(0, Ordering::SeqCst);
        // SAFETY: unmaps exactly the page mapped in `new`; no reference
        // to it escapes this object.
        unsafe { libc::munmap(self.addr, self.len) };
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn raised_signals_are_caught_and_the_old_action_returns() {
        let before = query(libc::SIGUSR2).unwrap().sa_sigaction;
        {
            let s = UserSignal::install(libc::SIGUSR2).unwrap();
            s.reinstall().unwrap();
            for _ in 0..2 {
                let n0 = UserSignal::caught();
                s.raise().unwrap();
                // The test harness runs threads: the kernel may deliver to
                // another one, a moment later (and two pending signals of
                // one kind merge, so each is awaited before the next).
                let t = std::time::Instant::now();
                while UserSignal::caught() < n0 + 1 && t.elapsed().as_secs() < 5 {
                    std::thread::yield_now();
                }
                assert!(UserSignal::caught() > n0);
            }
        }
        assert_eq!(query(libc::SIGUSR2).unwrap().sa_sigaction, before);
    }

    #[test]
    fn protection_faults_are_repaired() {
        let p = FaultPage::new().unwrap();
        let n0 = FaultPage::repaired();
        p.fault_once().unwrap();
        p.fault_once().unwrap();
        p.protect_unprotect().unwrap();
        assert_eq!(FaultPage::repaired(), n0 + 2);
        assert_eq!(
            FaultPage::new().err().and_then(|e| e.raw_os_error()),
            Some(libc::EBUSY)
        );
        drop(p);
        assert!(FaultPage::new().is_ok());
    }
}

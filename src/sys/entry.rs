//! The binary's entry point, without std's start-up.
//!
//! Everything tally does before it forks is added to the wall time of the
//! command `tally run` measures. std's start-up (`lang_start`) costs about
//! 0.1 ms here: to find the main thread's stack guard it has glibc open
//! and `sscanf` `/proc/self/maps`, then maps an alternate signal stack and
//! installs SIGSEGV/SIGBUS handlers, only to print "has overflowed its
//! stack" instead of dying of SIGSEGV. [`entry_point!`](crate::entry_point)
//! defines the C `main` instead, and [`run`] keeps the parts of std's
//! start-up and shut-down that matter: standard descriptors 0–2 are open,
//! SIGPIPE is ignored (a closed pipe is an `EPIPE` error, as in any Rust
//! program), a panic exits 101, and stdout is flushed at the end.
//! The arguments are the ones the C start-up passes to `main`, kept here
//! ([`args_os`]): without std's start-up, `std::env::args_os` has them
//! only where the C library hands them to `.init_array` functions (glibc
//! does, musl does not).

use std::ffi::c_int;
use std::io::Write;

/// Defines the C `main` of a `#![no_main]` binary, calling `$run` (a
/// `fn() -> u8` returning the exit code) through [`run`].
#[macro_export]
macro_rules! entry_point {
    ($run:path) => {
        // SAFETY: the binary is `#![no_main]`, so this is its only `main`
        // symbol, with the signature the C start-up calls.
        #[unsafe(no_mangle)]
        extern "C" fn main(
            argc: ::std::ffi::c_int,
            argv: *const *const ::std::ffi::c_char,
        ) -> ::std::ffi::c_int {
            // SAFETY: `argc` and `argv` are what the C start-up passed to
            // `main`: `argc` pointers to NUL-terminated strings that live,
            // unchanged, as long as the process.
            unsafe { $crate::sys::entry::keep_args(argc, argv) };
            $crate::sys::entry::run($run)
        }
    };
}

/// `main`'s arguments, as the C start-up passed them: their number and
/// the array (which lives as long as the process), null until kept.
static ARGC: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
static ARGV: std::sync::atomic::AtomicPtr<*const std::ffi::c_char> =
    std::sync::atomic::AtomicPtr::new(std::ptr::null_mut());

/// Keeps the arguments the C start-up passed to `main`, for [`args_os`].
///
/// # Safety
/// `argv` must hold `argc` pointers, each to a NUL-terminated string, all
/// valid and unchanged for the rest of the process (as `main`'s are).
pub unsafe fn keep_args(argc: c_int, argv: *const *const std::ffi::c_char) {
    use std::sync::atomic::Ordering::Relaxed;
    ARGC.store(usize::try_from(argc).unwrap_or(0), Relaxed);
    ARGV.store(argv.cast_mut(), Relaxed);
}

/// The program's arguments, its name first: those kept from `main` (see
/// [`keep_args`]), else std's (a binary with std's own start-up, such as
/// a test).
pub fn args_os() -> Vec<std::ffi::OsString> {
    use std::os::unix::ffi::OsStrExt;
    use std::sync::atomic::Ordering::Relaxed;
    let (argc, argv) = (ARGC.load(Relaxed), ARGV.load(Relaxed));
    if argv.is_null() {
        return std::env::args_os().collect();
    }
    let mut args = Vec::with_capacity(argc);
    for i in 0..argc {
        // SAFETY: `keep_args`'s caller promised `argc` pointers in
        // `argv`, an array that lives, unchanged, as long as the process.
        let p = unsafe { *argv.add(i) };
        if p.is_null() {
            break;
        }
        // SAFETY: each is a NUL-terminated string of the same lifetime.
        let bytes = unsafe { std::ffi::CStr::from_ptr(p) }.to_bytes();
        args.push(std::ffi::OsStr::from_bytes(bytes).to_owned());
    }
    args
}

/// Prepares the process as std would, runs `f` and returns its exit code.
pub fn run(f: fn() -> u8) -> c_int {
    // SAFETY: called first thing in `main`, before any allocation, as the
    // function asks: a child forked by the C library's `fork` (std's
    // `Command` on its fallback path) while another thread allocates
    // finds the allocator's lock free. (tally's own forks, raw `clone3`
    // included, make no allocation in the child before `exec`.)
    unsafe { dlmalloc::enable_alloc_after_fork() };
    open_standard_fds();
    // SAFETY: setting a signal's disposition to SIG_IGN has no preconditions.
    unsafe { libc::signal(libc::SIGPIPE, libc::SIG_IGN) };
    let code = match std::panic::catch_unwind(f) {
        Ok(code) => c_int::from(code),
        // The panic message is already on stderr; 101 is std's exit code.
        Err(_) => 101,
    };
    let _ = std::io::stdout().lock().flush();
    code
}

/// Which of descriptors 0, 1 and 2 were closed when tally started (bit
/// `1 << fd`), before [`open_standard_fds`] put /dev/null there.
static CLOSED_AT_START: std::sync::atomic::AtomicU8 = std::sync::atomic::AtomicU8::new(0);

/// Whether stdout was closed when tally started (`>&-`): what tally writes
/// there goes nowhere, so a report meant for it is an error, and `--watch`
/// has no reader.
pub fn stdout_was_closed() -> bool {
    CLOSED_AT_START.load(std::sync::atomic::Ordering::Relaxed) & (1 << 1) != 0
}

/// Whether stderr was closed when tally started (`2>&-`): a report meant
/// for it would go nowhere, and so would any message.
pub fn stderr_was_closed() -> bool {
    CLOSED_AT_START.load(std::sync::atomic::Ordering::Relaxed) & (1 << 2) != 0
}

/// Opens /dev/null on any of descriptors 0, 1 and 2 that is closed, so that
/// a file tally opens can never become its stdout (std does the same).
fn open_standard_fds() {
    let mut fds = [0, 1, 2].map(|fd| libc::pollfd {
        fd,
        events: 0,
        revents: 0,
    });
    // SAFETY: `fds` is a valid array of three pollfd; the timeout is zero.
    let polled = unsafe { libc::poll(fds.as_mut_ptr(), 3, 0) } != -1;
    for pfd in fds {
        let closed = if polled {
            pfd.revents & libc::POLLNVAL != 0
        } else {
            // poll itself failed (e.g. under a strict seccomp filter).
            // SAFETY: F_GETFD on any descriptor number is harmless.
            let flags = unsafe { libc::fcntl(pfd.fd, libc::F_GETFD) };
            flags == -1
        };
        if closed {
            CLOSED_AT_START.fetch_or(1 << pfd.fd, std::sync::atomic::Ordering::Relaxed);
            // SAFETY: the path is a NUL-terminated literal. The lowest
            // free descriptor is the closed one, since lower ones are open.
            let fd = unsafe { libc::open(c"/dev/null".as_ptr(), libc::O_RDWR) };
            if fd == -1 {
                // Without a safe stdout, stop as std does.
                std::process::abort();
            }
        }
    }
}

//! Process creation as `tally bench` times it: `fork` + `_exit` + wait,
//! `fork` + `execv` + wait, `posix_spawn` + wait. The children do nothing
//! but exit or exec, so only async-signal-safe calls run after `fork`.

use std::ffi::{CStr, CString};
use std::io;

use super::cvt;

/// Waits for `pid`, retrying on EINTR; returns its raw wait status.
fn wait_pid(pid: libc::pid_t) -> io::Result<i32> {
    let mut status = 0;
    loop {
        // SAFETY: `status` is a valid out-pointer for the call.
        let r = unsafe { libc::waitpid(pid, &mut status, 0) };
        if r == pid {
            return Ok(status);
        }
        let err = io::Error::last_os_error();
        if err.kind() != io::ErrorKind::Interrupted {
            return Err(err);
        }
    }
}

fn check_exit(status: i32, what: &str) -> io::Result<()> {
    if libc::WIFEXITED(status) && libc::WEXITSTATUS(status) == 0 {
        Ok(())
    } else {
        Err(io::Error::other(format!(
            "{what}: child ended with wait status {status:#x}"
        )))
    }
}

/// `fork`; the child calls `_exit(0)` at once; the parent waits for it.
pub fn fork_exit_wait() -> io::Result<()> {
    // SAFETY: the child only calls _exit, which is async-signal-safe.
    let pid = unsafe { libc::fork() };
    if pid == 0 {
        // SAFETY: ends the child without running atexit handlers.
        unsafe { libc::_exit(0) };
    }
    let pid = cvt(pid)?;
    check_exit(wait_pid(pid)?, "fork")
}

/// A program path and argv prepared before forking (no allocation after).
pub struct Program {
    path: CString,
    /// The one argument after argv[0], if any (owned: `argv` points in).
    _arg: Option<CString>,
    argv: [*const libc::c_char; 3],
}

impl Program {
    /// Prepares `path` to be run with no arguments.
    pub fn new(path: &CStr) -> Program {
        let path = path.to_owned();
        let argv = [path.as_ptr(), std::ptr::null(), std::ptr::null()];
        Program {
            path,
            _arg: None,
            argv,
        }
    }

    /// Prepares `path` to be run with one argument.
    pub fn with_arg(path: &CStr, arg: &CStr) -> Program {
        let path = path.to_owned();
        let arg = arg.to_owned();
        let argv = [path.as_ptr(), arg.as_ptr(), std::ptr::null()];
        Program {
            path,
            _arg: Some(arg),
            argv,
        }
    }
}

/// `fork`; the child calls `execv(program)`; the parent waits.
pub fn fork_exec_wait(program: &Program) -> io::Result<()> {
    let envp: [*const libc::c_char; 1] = [std::ptr::null()];
    // SAFETY: the child only calls execve and _exit (async-signal-safe)
    // with pointers prepared before the fork.
    let pid = unsafe { libc::fork() };
    if pid == 0 {
        // SAFETY: path and argv are NUL-terminated and outlive the call.
        unsafe {
            libc::execve(program.path.as_ptr(), program.argv.as_ptr(), envp.as_ptr());
            libc::_exit(127)
        };
    }
    let pid = cvt(pid)?;
    check_exit(wait_pid(pid)?, "fork+exec")
}

/// `posix_spawn(program)` (musl and glibc: clone(CLONE_VM|CLONE_VFORK)); waits.
pub fn posix_spawn_wait(program: &Program) -> io::Result<()> {
    let envp: [*mut libc::c_char; 1] = [std::ptr::null_mut()];
    let mut pid: libc::pid_t = 0;
    // SAFETY: path/argv/envp are NUL-terminated arrays that outlive the
    // call; null file actions and attributes mean defaults.
    let r = unsafe {
        libc::posix_spawn(
            &mut pid,
            program.path.as_ptr(),
            std::ptr::null(),
            std::ptr::null(),
            program.argv.as_ptr().cast(),
            envp.as_ptr(),
        )
    };
    if r != 0 {
        return Err(io::Error::from_raw_os_error(r));
    }
    check_exit(wait_pid(pid)?, "posix_spawn")
}

/// Forks; the child closes `close_in_child` (the parent's ends of shared
/// pipes, so EOF can reach it), runs `child` (which must only make
/// async-signal-safe calls: no allocation, no locks) and exits with its
/// return value. Returns the child's pid to the parent.
pub fn fork_with(
    close_in_child: &[std::os::fd::RawFd],
    child: &mut dyn FnMut() -> i32,
) -> io::Result<u32> {
    // SAFETY: the child runs only close, `child` (kept by the caller to
    // async-signal-safe calls) and _exit.
    let pid = unsafe { libc::fork() };
    if pid == 0 {
        for &fd in close_in_child {
            // SAFETY: closes descriptors the child's copy of the caller's
            // objects will never use (the child exits through _exit, so no
            // destructor closes them again).
            unsafe { libc::close(fd) };
        }
        let code = child();
        // SAFETY: ends the child without running atexit handlers.
        unsafe { libc::_exit(code) };
    }
    Ok(cvt(pid)? as u32)
}

/// Waits for a child started by [`fork_with`]; its exit code, or an error
/// when a signal ended it.
pub fn wait_child(pid: u32) -> io::Result<i32> {
    let status = wait_pid(pid as libc::pid_t)?;
    if libc::WIFEXITED(status) {
        Ok(libc::WEXITSTATUS(status))
    } else {
        Err(io::Error::other(format!(
            "child {pid} ended with wait status {status:#x}"
        )))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_way_runs_true() {
        fork_exit_wait().unwrap();
        let p = Program::new(c"/bin/true");
        fork_exec_wait(&p).unwrap();
        posix_spawn_wait(&p).unwrap();
    }

    #[test]
    fn fork_with_returns_the_code() {
        let pid = fork_with(&[], &mut || 3).unwrap();
        assert_eq!(wait_child(pid).unwrap(), 3);
    }

    #[test]
    fn missing_program_is_an_error() {
        let p = Program::new(c"/nonexistent/tally-test");
        assert!(fork_exec_wait(&p).is_err());
        assert!(posix_spawn_wait(&p).is_err());
    }
}

//! Running with more privilege than the caller: a setuid-root or
//! file-capability install lets every user see every process's memory.
//!
//! Such a tally must not widen what its user can do beyond reading memory
//! figures: it lists processes and reads their status, command line and
//! cgroup with the caller's rights (so /proc's `hidepid` hides from it
//! what it hides from the caller) and only memory figures and the `exe`
//! link with more; it refuses every command but `mem`, reads only under /proc
//! (`--procfs` is ignored, `--watch` refused), looks at no path a process
//! or the caller names, and drops back to the caller's ids and to no
//! capabilities as soon as the scan is done, before naming users,
//! formatting or writing anything.

use crate::sys::privilege as sys;

/// How this process relates to its caller.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Privilege {
    /// The caller's own rights.
    Ordinary,
    /// More than the caller, for one scan (a setuid or file-capability
    /// install): `how` says why (for messages).
    Elevated { how: &'static str },
    /// More than the caller, kept for every scan of a long-running
    /// process (`tally serve` started with capabilities): never dropped.
    Kept { how: &'static str },
}

impl Privilege {
    /// Looks at the process's ids and the kernel's `AT_SECURE` flag.
    pub fn detect() -> Privilege {
        let (u, g) = (sys::user_ids(), sys::group_ids());
        let how = if u.real != u.effective || u.real != u.saved {
            "setuid"
        } else if g.real != g.effective || g.real != g.saved {
            "setgid"
        } else if sys::secure_exec() {
            "file capabilities"
        } else {
            return Privilege::Ordinary;
        };
        Privilege::Elevated { how }
    }

    pub fn is_elevated(self) -> bool {
        matches!(self, Privilege::Elevated { .. } | Privilege::Kept { .. })
    }

    /// Takes on the caller's rights until [`sys::Lowered::restore`]: what
    /// the caller may see of /proc (hidepid) is decided with them. A no-op
    /// without privilege.
    pub fn as_caller(self) -> std::io::Result<sys::Lowered> {
        if self.is_elevated() {
            sys::lower_to_real_ids()
        } else {
            Ok(sys::Lowered::unchanged())
        }
    }

    /// What follows a scan: an install's privilege is dropped for good
    /// (becoming the caller again), a kept one stays. Idempotent.
    pub fn end_scan(&mut self) -> std::io::Result<()> {
        if let Privilege::Elevated { .. } = self {
            sys::drop_to_real_ids()?;
            *self = Privilege::Ordinary;
        }
        Ok(())
    }
}

/// A command refused because tally runs with more privilege than its user.
#[derive(Debug, thiserror::Error)]
#[error(
    "this tally is installed with {how} so that every user can run `tally mem`; it runs \
     nothing else: use an ordinary copy (without setuid or capabilities) for other commands"
)]
pub struct Refused {
    pub how: &'static str,
}

/// Checks privilege before anything runs: the one gate `main` calls.
/// Anything but `tally mem` is refused while elevated.
pub fn gate(is_mem: bool) -> Result<Privilege, Refused> {
    let p = Privilege::detect();
    match p {
        Privilege::Elevated { how } if !is_mem => Err(Refused { how }),
        p => Ok(p),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tests_run_ordinary() {
        assert_eq!(Privilege::detect(), Privilege::Ordinary);
        assert!(gate(false).is_ok());
        let mut p = Privilege::Ordinary;
        assert!(p.end_scan().is_ok());
        let mut kept = Privilege::Kept {
            how: "capabilities",
        };
        assert!(kept.end_scan().is_ok());
        assert!(kept.is_elevated(), "a kept privilege stays");
    }
}

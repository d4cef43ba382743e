//! Privilege of this process: whether it runs with more than its caller
//! (setuid, setgid or file capabilities), and dropping back to the caller.

use std::io;

use super::{cvt, cvt_long};

/// The real, effective and saved ids.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ResIds {
    pub real: u32,
    pub effective: u32,
    pub saved: u32,
}

/// `getresuid(2)`.
pub fn user_ids() -> ResIds {
    let (mut r, mut e, mut s) = (0, 0, 0);
    // SAFETY: the three pointers are valid for writes; getresuid cannot fail
    // with valid pointers.
    unsafe { libc::getresuid(&mut r, &mut e, &mut s) };
    ResIds {
        real: r,
        effective: e,
        saved: s,
    }
}

/// `getresgid(2)`.
pub fn group_ids() -> ResIds {
    let (mut r, mut e, mut s) = (0, 0, 0);
    // SAFETY: as above.
    unsafe { libc::getresgid(&mut r, &mut e, &mut s) };
    ResIds {
        real: r,
        effective: e,
        saved: s,
    }
}

/// `AT_SECURE` from the auxiliary vector: the kernel sets it when this
/// program was started setuid, setgid or with file capabilities that gave
/// it more than its caller had.
pub fn secure_exec() -> bool {
    // SAFETY: getauxval has no preconditions; an absent entry returns 0.
    unsafe { libc::getauxval(libc::AT_SECURE) != 0 }
}

#[repr(C)]
struct CapHeader {
    version: u32,
    pid: libc::c_int,
}

#[repr(C)]
#[derive(Clone, Copy, Default)]
struct CapData {
    effective: u32,
    permitted: u32,
    inheritable: u32,
}

const CAP_VERSION_3: u32 = 0x2008_0522;

/// The effective and permitted capability sets of the calling thread, as
/// 64-bit masks.
pub fn capabilities() -> io::Result<(u64, u64)> {
    let data = capget_all()?;
    let [low, high] = data;
    let eff = u64::from(low.effective) | (u64::from(high.effective) << 32);
    let perm = u64::from(low.permitted) | (u64::from(high.permitted) << 32);
    Ok((eff, perm))
}

/// Becomes the real user and group for good: sets every uid and gid to
/// the real one and clears every capability, then checks that it worked.
/// Call it with no other thread running: capabilities are per thread.
pub fn drop_to_real_ids() -> io::Result<()> {
    let uid = user_ids().real;
    let gid = group_ids().real;
    // SAFETY: plain system calls on integers; the C library (musl as
    // glibc) applies them to every thread of the process.
    cvt(unsafe { libc::setresgid(gid, gid, gid) })?;
    // SAFETY: as above.
    cvt(unsafe { libc::setresuid(uid, uid, uid) })?;
    let mut header = CapHeader {
        version: CAP_VERSION_3,
        pid: 0,
    };
    let data = [CapData::default(); 2];
    // SAFETY: header and a two-element data array, as capset version 3
    // expects; empty sets can always be set.
    cvt_long(unsafe {
        libc::syscall(
            libc::SYS_capset,
            &mut header as *mut CapHeader,
            data.as_ptr(),
        )
    })?;
    let (u, g) = (user_ids(), group_ids());
    let (eff, perm) = capabilities()?;
    let all_real = |ids: ResIds, id: u32| ids.real == id && ids.effective == id && ids.saved == id;
    if !all_real(u, uid) || !all_real(g, gid) || eff != 0 || perm != 0 {
        return Err(io::Error::new(
            io::ErrorKind::PermissionDenied,
            "privileges are still held after dropping them",
        ));
    }
    Ok(())
}

fn capget_all() -> io::Result<[CapData; 2]> {
    let mut header = CapHeader {
        version: CAP_VERSION_3,
        pid: 0,
    };
    let mut data = [CapData::default(); 2];
    // SAFETY: header and a two-element data array are what version 3 of
    // capget expects; both outlive the call.
    cvt_long(unsafe {
        libc::syscall(
            libc::SYS_capget,
            &mut header as *mut CapHeader,
            data.as_mut_ptr(),
        )
    })?;
    Ok(data)
}

fn capset_all(data: &[CapData; 2]) -> io::Result<()> {
    let mut header = CapHeader {
        version: CAP_VERSION_3,
        pid: 0,
    };
    // SAFETY: header and a two-element data array, as capset version 3
    // expects; both outlive the call.
    cvt_long(unsafe {
        libc::syscall(
            libc::SYS_capset,
            &mut header as *mut CapHeader,
            data.as_ptr(),
        )
    })?;
    Ok(())
}

/// The caller's rights, taken on for a while by [`lower_to_real_ids`]:
/// [`restore`](Lowered::restore) takes back what this process had.
#[must_use = "restore() takes the rights back; dropping keeps the caller's"]
#[derive(Debug)]
pub struct Lowered {
    saved: Option<(u32, u32, [CapData; 2])>,
}

impl std::fmt::Debug for CapData {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "CapData {{ effective: {:#x} }}", self.effective)
    }
}

impl Lowered {
    /// Nothing to take back: the process has its caller's rights already.
    pub fn unchanged() -> Lowered {
        Lowered { saved: None }
    }

    /// Takes back the effective ids and capabilities held before
    /// [`lower_to_real_ids`], and checks that they are back.
    pub fn restore(self) -> io::Result<()> {
        let Some((euid, egid, caps)) = self.saved else {
            return Ok(());
        };
        // The uid first: going back to an effective uid 0 gives back the
        // capabilities that allow the rest.
        // SAFETY: plain system calls on integers (-1: leave unchanged).
        cvt(unsafe { libc::setresuid(u32::MAX, euid, u32::MAX) })?;
        // SAFETY: as above.
        cvt(unsafe { libc::setresgid(u32::MAX, egid, u32::MAX) })?;
        capset_all(&caps)?;
        let back = capget_all()?;
        let [low, high] = back;
        let [want_low, want_high] = caps;
        if user_ids().effective != euid
            || group_ids().effective != egid
            || low.effective != want_low.effective
            || high.effective != want_high.effective
        {
            return Err(io::Error::new(
                io::ErrorKind::PermissionDenied,
                "the rights held before the caller's view were not given back",
            ));
        }
        Ok(())
    }
}

/// Takes on the caller's rights for a while: the effective uid and gid
/// become the real ones (and with them the filesystem ids that /proc
/// checks) and the effective capability set is emptied; the saved ids and
/// the permitted set are kept, so [`Lowered::restore`] can take back what
/// was held. Checks that the change held. Call it with no other thread
/// running: capabilities are per thread.
pub fn lower_to_real_ids() -> io::Result<Lowered> {
    let (u, g) = (user_ids(), group_ids());
    let caps = capget_all()?;
    let mut none = caps;
    for d in &mut none {
        d.effective = 0;
    }
    capset_all(&none)?;
    // Setting the effective ids to the real ones needs no capability.
    // SAFETY: plain system calls on integers (-1: leave unchanged).
    cvt(unsafe { libc::setresgid(u32::MAX, g.real, u32::MAX) })?;
    // SAFETY: as above.
    cvt(unsafe { libc::setresuid(u32::MAX, u.real, u32::MAX) })?;
    let lowered = Lowered {
        saved: Some((u.effective, g.effective, caps)),
    };
    let (eff, _) = capabilities()?;
    if user_ids().effective != u.real || group_ids().effective != g.real || eff != 0 {
        return Err(io::Error::new(
            io::ErrorKind::PermissionDenied,
            "cannot take on the caller's rights",
        ));
    }
    Ok(lowered)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_test_process_is_not_a_secure_exec() {
        // cargo starts tests without setuid or file capabilities.
        assert!(!secure_exec());
        let u = user_ids();
        assert_eq!(u.real, u.effective);
        assert!(capabilities().is_ok());
    }

    #[test]
    fn lowering_an_ordinary_process_changes_nothing_and_restores() {
        let (u, g) = (user_ids(), group_ids());
        let caps = capabilities().expect("capget");
        let lowered = lower_to_real_ids().expect("lower");
        assert_eq!(user_ids().effective, u.real);
        assert_eq!(capabilities().expect("capget").0, 0);
        lowered.restore().expect("restore");
        assert_eq!((user_ids(), group_ids()), (u, g));
        assert_eq!(capabilities().expect("capget"), caps);
        Lowered::unchanged().restore().expect("nothing to restore");
    }
}

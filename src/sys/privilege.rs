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
    // SAFETY: plain system calls on integers; glibc applies them to every
    // thread of the process.
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
}

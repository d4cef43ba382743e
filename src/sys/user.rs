//! User names and ids through the C library (`/etc/passwd`, LDAP, ... as
//! nsswitch.conf says).

use std::ffi::{CStr, CString};

/// Buffer size for one passwd record; grown on `ERANGE`.
const START_BUF: usize = 1024;
const MAX_BUF: usize = 1 << 20;

/// Looks up a user by id: its name, or `None` if there is no such user.
pub fn name_of(uid: u32) -> Option<String> {
    let mut buf = vec![0 as libc::c_char; START_BUF];
    loop {
        // SAFETY: passwd is plain data; zeroed is a valid value.
        let mut pwd: libc::passwd = unsafe { std::mem::zeroed() };
        let mut result: *mut libc::passwd = std::ptr::null_mut();
        // SAFETY: every pointer is valid for the call and `buf.len()` is the
        // buffer's true length.
        let rc =
            unsafe { libc::getpwuid_r(uid, &mut pwd, buf.as_mut_ptr(), buf.len(), &mut result) };
        if rc == libc::ERANGE && buf.len() < MAX_BUF {
            buf.resize(buf.len() * 2, 0);
            continue;
        }
        if rc != 0 || result.is_null() || pwd.pw_name.is_null() {
            return None;
        }
        // SAFETY: on success pw_name points at a NUL-terminated string
        // inside `buf`, which is still alive.
        let name = unsafe { CStr::from_ptr(pwd.pw_name) };
        return Some(name.to_string_lossy().into_owned());
    }
}

/// Looks up a user by name: its id, or `None` if there is no such user.
pub fn uid_of(name: &str) -> Option<u32> {
    let cname = CString::new(name).ok()?;
    let mut buf = vec![0 as libc::c_char; START_BUF];
    loop {
        // SAFETY: passwd is plain data; zeroed is a valid value.
        let mut pwd: libc::passwd = unsafe { std::mem::zeroed() };
        let mut result: *mut libc::passwd = std::ptr::null_mut();
        // SAFETY: every pointer is valid for the call and `buf.len()` is the
        // buffer's true length.
        let rc = unsafe {
            libc::getpwnam_r(
                cname.as_ptr(),
                &mut pwd,
                buf.as_mut_ptr(),
                buf.len(),
                &mut result,
            )
        };
        if rc == libc::ERANGE && buf.len() < MAX_BUF {
            buf.resize(buf.len() * 2, 0);
            continue;
        }
        if rc != 0 || result.is_null() {
            return None;
        }
        return Some(pwd.pw_uid);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn root_is_uid_zero() {
        assert_eq!(name_of(0).as_deref(), Some("root"));
        assert_eq!(uid_of("root"), Some(0));
        assert_eq!(uid_of("no-such-user-tally-test"), None);
        assert_eq!(uid_of("bad\0name"), None);
    }
}

//! uname(2): the host name and kernel release, for report headers.

use std::io;

/// What uname(2) says about this machine.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Uname {
    /// The node name (the host name of this UTS namespace).
    pub hostname: String,
    /// The kernel release (`uname -r`).
    pub release: String,
}

/// Calls uname(2). Names that are not UTF-8 are converted lossily.
pub fn uname() -> io::Result<Uname> {
    // SAFETY: utsname is plain old data (arrays of c_char), for which all
    // zeroes is a valid value.
    let mut u: libc::utsname = unsafe { std::mem::zeroed() };
    // SAFETY: `u` is a valid, writable utsname for the duration of the call.
    super::cvt(unsafe { libc::uname(&mut u) })?;
    let field = |chars: &[libc::c_char]| {
        // The kernel NUL-terminates every field; should one fill its array,
        // the NUL is missing and the field is read to its end.
        let bytes: Vec<u8> = chars
            .iter()
            .map(|&c| c as u8)
            .take_while(|&b| b != 0)
            .collect();
        String::from_utf8_lossy(&bytes).into_owned()
    };
    Ok(Uname {
        hostname: field(&u.nodename),
        release: field(&u.release),
    })
}

#[cfg(test)]
mod tests {
    #[test]
    fn uname_names_a_kernel() {
        let u = super::uname().expect("uname");
        assert!(!u.release.is_empty());
        assert!(!u.release.contains('\0'));
    }
}

//! The process's address-space layout: whether the kernel randomises it
//! (`personality(2)`'s `ADDR_NO_RANDOMIZE`, what `setarch -R` sets).
//!
//! `tally bench` runs with randomisation off so that every run lays its
//! stack, heap and mappings out alike: with it on, where a mapping or the
//! stack falls moves what some benchmarks measure from one run to the
//! next (an untouched 1 GiB `mmap`+`munmap` read 5.6–9.6 µs over six runs
//! here, 8.5–9.0 µs with randomisation off).

use std::io;

/// `personality(0xffffffff)`: the current persona, unchanged.
fn current() -> io::Result<libc::c_int> {
    // SAFETY: 0xffffffff only queries the persona; no memory is passed.
    let p = unsafe { libc::personality(0xffff_ffff) };
    if p == -1 {
        Err(io::Error::last_os_error())
    } else {
        Ok(p)
    }
}

/// Whether this process's address space is laid out without
/// randomisation.
pub fn layout_fixed() -> bool {
    current().is_ok_and(|p| p & libc::ADDR_NO_RANDOMIZE != 0)
}

/// Turns randomisation off for the next `exec` of this process (the
/// current layout stays as it is until then).
pub fn fix_layout_at_exec() -> io::Result<()> {
    let p = current()?;
    // SAFETY: sets persona flags of this process only; no memory is
    // passed. The flag takes effect at the next exec.
    let r = unsafe { libc::personality((p | libc::ADDR_NO_RANDOMIZE) as libc::c_ulong) };
    if r == -1 {
        return Err(io::Error::last_os_error());
    }
    // Some kernels (seccomp filters, LSMs) accept the call and keep the
    // flag off: check.
    if layout_fixed() {
        Ok(())
    } else {
        Err(io::Error::from_raw_os_error(libc::EPERM))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_persona_can_be_read() {
        assert!(current().is_ok());
    }
}

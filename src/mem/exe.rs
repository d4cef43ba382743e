//! What a process's `exe` link says: the executable's path, without the
//! kernel's ` (deleted)` mark, and its file name. Shared by the scan (which
//! decides from it whether a command line must be read) and the naming.

pub(crate) const DELETED: &[u8] = b" (deleted)";

/// The exe link target without its ` (deleted)` mark, and whether it had one.
pub(crate) fn exe_path(target: &[u8]) -> (&[u8], bool) {
    match target.strip_suffix(DELETED) {
        Some(p) => (p, true),
        None => (target, false),
    }
}

/// Whether the executable's file name starts with the comm (which the
/// kernel cuts to 15 bytes): the process is known by its executable's
/// name. When not, naming by exe looks at `argv[0]` (see `started_as`).
/// An executable run from a memfd (`/memfd:NAME (deleted)`) has no file
/// name its users know, so it never counts as matching: its command line
/// is read and `argv[0]` names it.
pub fn exe_starts_with_comm(exe_target: &[u8], comm: &[u8]) -> bool {
    !is_memfd(exe_target) && (comm.is_empty() || basename(exe_path(exe_target).0).starts_with(comm))
}

/// Whether the exe link names a memfd (a program loaded from memory, as
/// some sandboxes and container runtimes start theirs).
pub(crate) fn is_memfd(exe_target: &[u8]) -> bool {
    exe_target.starts_with(b"/memfd:")
}

/// The last component of `path`.
pub(crate) fn basename(path: &[u8]) -> &[u8] {
    match path.iter().rposition(|&b| b == b'/') {
        Some(i) => path.get(i + 1..).unwrap_or_default(),
        None => path,
    }
}

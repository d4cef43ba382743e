//! `/proc/PID/limits`: resource limits, one per line:
//! `Name   Soft Limit   Hard Limit   Units`.

/// The soft `Max locked memory` limit (RLIMIT_MEMLOCK) in bytes:
/// `Some(None)` when unlimited, `None` without a readable line.
pub fn memlock_soft(text: &str) -> Option<Option<u64>> {
    soft(text, "Max locked memory")
}

/// The soft `Max open files` limit (RLIMIT_NOFILE): `Some(None)` when
/// unlimited, `None` without a readable line.
pub fn nofile_soft(text: &str) -> Option<Option<u64>> {
    soft(text, "Max open files")
}

/// The soft limit of the line named `name`.
fn soft(text: &str, name: &str) -> Option<Option<u64>> {
    let line = text.lines().find(|l| l.starts_with(name))?;
    let soft = line.strip_prefix(name)?.split_whitespace().next()?;
    if soft == "unlimited" {
        return Some(None);
    }
    soft.parse().ok().map(Some)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_the_soft_memlock_limit() {
        let limits = "Limit                     Soft Limit           Hard Limit           Units     \n\
Max processes             63432                63432                processes \n\
Max locked memory         65536                8388608              bytes     \n";
        assert_eq!(memlock_soft(limits), Some(Some(65536)));
        let unlimited =
            "Max locked memory         unlimited            unlimited            bytes\n";
        assert_eq!(memlock_soft(unlimited), Some(None));
        assert_eq!(memlock_soft("Max processes 1 1 processes\n"), None);
        assert_eq!(memlock_soft("Max locked memory\n"), None);
        assert_eq!(memlock_soft("Max locked memory lots lots bytes\n"), None);
        let files =
            "Max open files            1024                 524288               files     \n";
        assert_eq!(nofile_soft(files), Some(Some(1024)));
        assert_eq!(nofile_soft(limits), None);
    }
}

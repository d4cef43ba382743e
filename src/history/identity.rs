//! What identifies a recorded point: the commit (given, or `git rev-parse
//! HEAD` of the working directory, dirty when the work tree differs from
//! it), the branch (given, git's, or the CI's variable), the time, and the
//! machine's fingerprint (CPU model, logical CPUs, kernel, and what counted
//! the figures).
//!
//! git runs as a helper: in a process group of its own, stdin and stderr
//! closed, at most [`GIT_LIMIT`] each, killed with its group past that.

use std::path::Path;
use std::process::Command;
use std::time::Duration;

use super::store::Machine;

/// The longest a git query may take.
pub const GIT_LIMIT: Duration = Duration::from_secs(10);

/// The commit, whether the tree was dirty, and the branch, as found.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Found {
    pub commit: Option<String>,
    pub dirty: bool,
    pub branch: Option<String>,
    /// Why there is no commit (no repository, no git), for a note.
    pub why_none: Option<String>,
}

/// The commit and branch for a recording made in `dir`: `commit` and
/// `branch` as given win; git fills what is missing.
pub fn find(dir: &Path, commit: Option<&str>, branch: Option<&str>) -> Found {
    let mut out = Found {
        commit: commit.map(str::to_string),
        branch: branch.map(str::to_string),
        ..Found::default()
    };
    if out.commit.is_none() {
        match git(dir, &["rev-parse", "--verify", "-q", "HEAD"]) {
            Ok((true, head)) if !head.is_empty() => {
                out.commit = Some(head);
                // Exit 1: the tracked files differ from HEAD.
                out.dirty = matches!(git(dir, &["diff", "--quiet", "HEAD", "--"]), Ok((false, _)));
            }
            Ok(_) => {
                out.why_none =
                    Some("the working directory is not in a git repository with a commit".into())
            }
            Err(e) => out.why_none = Some(e),
        }
    }
    if out.branch.is_none() {
        out.branch = match git(dir, &["rev-parse", "--abbrev-ref", "HEAD"]) {
            Ok((true, b)) if !b.is_empty() && b != "HEAD" => Some(b),
            _ => ci_branch(),
        };
    }
    out
}

/// The branch as CI systems name it where git's HEAD is detached.
fn ci_branch() -> Option<String> {
    [
        "GITHUB_HEAD_REF",
        "GITHUB_REF_NAME",
        "CI_COMMIT_REF_NAME",
        "BUILDKITE_BRANCH",
        "BRANCH_NAME",
    ]
    .iter()
    .find_map(|k| std::env::var(k).ok().filter(|v| !v.is_empty()))
}

/// Runs `git ARGS` in `dir` as a helper: whether it exited 0, and its
/// first line.
fn git(dir: &Path, args: &[&str]) -> Result<(bool, String), String> {
    use std::io::Read;
    let mut cmd = Command::new("git");
    cmd.args(args)
        .current_dir(dir)
        .env("GIT_OPTIONAL_LOCKS", "0");
    let mut helper = crate::sys::helper::Helper::start(cmd)
        .map_err(|e| format!("git cannot be started ({e}): give --commit"))?;
    // Read beside the wait, so that output beyond a pipe's buffer cannot
    // hold git up; the read ends when git does or is stopped.
    let reader = helper.stdout().map(|mut stdout| {
        std::thread::spawn(move || {
            let mut out = Vec::new();
            let _ = stdout.by_ref().take(4096).read_to_end(&mut out);
            out
        })
    });
    let status = helper.wait_until(helper.started() + GIT_LIMIT);
    helper.stop();
    let out = reader.and_then(|t| t.join().ok()).unwrap_or_default();
    let Some(status) = status else {
        return Err(format!(
            "git took over {} s to answer: give --commit",
            GIT_LIMIT.as_secs()
        ));
    };
    let text = String::from_utf8_lossy(&out);
    Ok((
        status.success(),
        text.lines().next().unwrap_or("").trim().to_string(),
    ))
}

/// A machine and its fingerprint: the first 12 hex digits of the SHA-256
/// of what makes it.
pub fn machine(
    cpu_model: Option<String>,
    cpus: Option<i64>,
    kernel: Option<String>,
    counting: Option<(String, Option<String>)>,
) -> Machine {
    let (counting, counting_version) =
        counting.unwrap_or_else(|| (crate::count::CLOCK.into(), None));
    let key = format!(
        "{}\n{}\n{}\n{}\n{}",
        cpu_model.as_deref().unwrap_or("?"),
        cpus.map_or("?".into(), |c| c.to_string()),
        kernel.as_deref().unwrap_or("?"),
        counting,
        counting_version.as_deref().unwrap_or("?")
    );
    let digest = ring::digest::digest(&ring::digest::SHA256, key.as_bytes());
    let fingerprint: String = digest.as_ref()[..6]
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect();
    Machine {
        fingerprint,
        cpu_model,
        cpus,
        kernel,
        counting,
        counting_version,
    }
}

/// A machine in a few words: `Intel(R) Xeon(R), 2 CPUs, 6.18.44, clock`.
pub fn describe(m: &Machine) -> String {
    let mut parts = Vec::new();
    if let Some(c) = &m.cpu_model {
        parts.push(c.clone());
    }
    if let Some(n) = m.cpus {
        parts.push(format!("{n} CPU{}", if n == 1 { "" } else { "s" }));
    }
    if let Some(k) = &m.kernel {
        parts.push(k.clone());
    }
    let mut counting = m.counting.clone();
    if let Some(v) = &m.counting_version {
        counting.push(' ');
        counting.push_str(v);
    }
    parts.push(counting);
    crate::text::escape::escape_text(&parts.join(", "))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fingerprints_change_with_what_makes_a_machine() {
        let a = machine(Some("Xeon".into()), Some(2), Some("6.1".into()), None);
        assert_eq!(a.fingerprint.len(), 12);
        assert_eq!(a.counting, "clock");
        let same = machine(Some("Xeon".into()), Some(2), Some("6.1".into()), None);
        assert_eq!(a, same);
        let counted = machine(
            Some("Xeon".into()),
            Some(2),
            Some("6.1".into()),
            Some(("cachegrind".into(), Some("3.19.0".into()))),
        );
        assert_ne!(a.fingerprint, counted.fingerprint);
        let other_kernel = machine(Some("Xeon".into()), Some(2), Some("6.8".into()), None);
        assert_ne!(a.fingerprint, other_kernel.fingerprint);
        assert_eq!(describe(&counted), "Xeon, 2 CPUs, 6.1, cachegrind 3.19.0");
    }

    #[test]
    fn outside_a_repository_there_is_no_commit_and_why() {
        let dir = tempfile::tempdir().unwrap();
        let f = find(dir.path(), None, None);
        assert_eq!(f.commit, None);
        assert!(f.why_none.is_some());
        let given = find(dir.path(), Some("abc123"), Some("main"));
        assert_eq!(given.commit.as_deref(), Some("abc123"));
        assert_eq!(given.branch.as_deref(), Some("main"));
        assert!(!given.dirty);
    }
}

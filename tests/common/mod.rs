//! Helpers shared by the CLI tests of the page-cache commands.

use std::path::Path;
use std::process::Command;

/// Whether `path` is on a tmpfs, whose page cache is the file itself and
/// cannot be evicted.
pub fn on_tmpfs(path: &Path) -> bool {
    Command::new("stat")
        .args(["-f", "-c", "%T"])
        .arg(path)
        .output()
        .map(|o| String::from_utf8_lossy(&o.stdout).trim() == "tmpfs")
        .unwrap_or(false)
}

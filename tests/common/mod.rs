//! Helpers shared by the CLI tests. Each test file is its own crate and
//! uses only some of them.
#![allow(dead_code)]

use std::path::Path;
use std::process::{Child, Command};

/// Children killed and reaped when dropped, so a failing test leaves none.
pub struct Reaper(pub Vec<Child>);

impl Drop for Reaper {
    fn drop(&mut self) {
        for c in &mut self.0 {
            let _ = c.kill();
            let _ = c.wait();
        }
    }
}

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

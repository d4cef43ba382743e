//! `tally load --mem-limit SIZE`: a memory-limited cgroup for the N
//! processes of one load.
//!
//! cgroup v2 (`memory.max`) where the v2 hierarchy has the memory
//! controller enabled below tally's own cgroup; else cgroup v1
//! (`memory.limit_in_bytes`) on hosts whose memory controller is bound to
//! a v1 hierarchy (hybrid hosts). The group is created beside nothing
//! else: a new directory below tally's own cgroup of that hierarchy. It is
//! removed (`rmdir`, once its processes are gone) when the [`Group`] is
//! dropped, on every way out of the load, SIGINT included (tally's signal
//! handler turns SIGINT into an ordinary return). Only SIGKILL of tally
//! itself leaves the empty directory behind.

use std::fs;
use std::io::{self, Write};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU32, Ordering};

use serde::{Deserialize, Serialize};

use crate::procfs::cgroup;
use crate::text::path::display;

/// Which interface limits the group.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum Via {
    #[serde(rename = "cgroup-v2")]
    V2,
    #[serde(rename = "cgroup-v1")]
    V1,
}

impl Via {
    pub fn name(self) -> &'static str {
        match self {
            Via::V2 => "cgroup v2 memory.max",
            Via::V1 => "cgroup v1 memory.limit_in_bytes",
        }
    }
}

/// A memory-limited cgroup, removed on drop.
#[derive(Debug)]
pub struct Group {
    dir: PathBuf,
    via: Via,
}

static SEQ: AtomicU32 = AtomicU32::new(0);

/// Creates a group limited to `limit_bytes`, or says why none can be.
pub fn create(limit_bytes: u64) -> Result<Group, String> {
    let name = format!(
        "tally-load-{}-{}",
        std::process::id(),
        SEQ.fetch_add(1, Ordering::SeqCst)
    );
    let v2 = match (cgroup::v2_mount(), cgroup::own_unified()) {
        (Some(mount), Some(path)) => {
            let parent = mount.join(path.trim_start_matches('/'));
            let enabled = crate::input::read_proc_text(&parent.join("cgroup.subtree_control"))
                .map(|t| t.split_whitespace().any(|c| c == "memory"))
                .unwrap_or(false);
            if enabled {
                make(&parent.join(&name), Via::V2, "memory.max", limit_bytes)
            } else {
                let controllers = crate::input::read_proc_text(&mount.join("cgroup.controllers"))
                    .unwrap_or_default();
                Err(format!(
                    "the v2 memory controller is not enabled below {} (v2 controllers: {})",
                    display(&parent),
                    match controllers.trim() {
                        "" => "none",
                        c => c,
                    }
                ))
            }
        }
        _ => Err("no cgroup v2 hierarchy mounted".to_string()),
    };
    let v2_reason = match v2 {
        Ok(g) => return Ok(g),
        Err(r) => r,
    };
    let v1 = match (
        cgroup::v1_mount("memory", "memory.limit_in_bytes"),
        cgroup::own_v1("memory"),
    ) {
        (Some(mount), Some(path)) => {
            let parent = mount.join(path.trim_start_matches('/'));
            make(
                &parent.join(&name),
                Via::V1,
                "memory.limit_in_bytes",
                limit_bytes,
            )
        }
        _ => Err("no cgroup v1 memory hierarchy mounted".to_string()),
    };
    v1.map_err(|v1_reason| format!("{v2_reason}; {v1_reason}"))
}

fn make(dir: &Path, via: Via, limit_file: &str, limit: u64) -> Result<Group, String> {
    fs::create_dir(dir).map_err(|e| {
        let hint = if e.kind() == io::ErrorKind::PermissionDenied {
            " — run as root or in a delegated cgroup"
        } else {
            ""
        };
        format!("cannot create {} ({e}){hint}", display(dir))
    })?;
    let group = Group {
        dir: dir.to_path_buf(),
        via,
    };
    write(&group.dir.join(limit_file), &limit.to_string())
        .map_err(|e| format!("cannot set {} ({e})", display(&group.dir.join(limit_file))))?;
    Ok(group)
}

fn write(path: &Path, text: &str) -> io::Result<()> {
    fs::OpenOptions::new()
        .write(true)
        .open(path)?
        .write_all(text.as_bytes())
}

/// The number after `key ` in a `key value` file (memory.events,
/// memory.oom_control).
fn keyed(text: &str, key: &str) -> Option<u64> {
    text.lines().find_map(|l| {
        let (k, v) = l.split_once(' ')?;
        (k == key).then(|| v.trim().parse().ok()).flatten()
    })
}

impl Group {
    pub fn via(&self) -> Via {
        self.via
    }

    pub fn path(&self) -> &Path {
        &self.dir
    }

    /// Moves process `pid` into the group.
    pub fn add(&self, pid: u32) -> io::Result<()> {
        write(&self.dir.join("cgroup.procs"), &pid.to_string())
    }

    /// Processes the kernel's OOM killer killed in the group, when known
    /// (v2 `memory.events`, v1 `memory.oom_control`, Linux 4.13+).
    pub fn oom_kills(&self) -> Option<u64> {
        let file = match self.via {
            Via::V2 => "memory.events",
            Via::V1 => "memory.oom_control",
        };
        keyed(
            &crate::input::read_proc_text(&self.dir.join(file)).ok()?,
            "oom_kill",
        )
    }

    /// The most memory the group used (v2 `memory.peak`, v1
    /// `memory.max_usage_in_bytes`).
    pub fn peak_bytes(&self) -> Option<u64> {
        let file = match self.via {
            Via::V2 => "memory.peak",
            Via::V1 => "memory.max_usage_in_bytes",
        };
        crate::input::read_proc_text(&self.dir.join(file))
            .ok()?
            .trim()
            .parse()
            .ok()
    }
}

impl Drop for Group {
    fn drop(&mut self) {
        // Whatever is still inside (nothing, once the children are
        // reaped) is killed first: a populated group cannot be removed.
        if let Ok(text) = crate::input::read_proc_text(&self.dir.join("cgroup.procs")) {
            for pid in text
                .split_whitespace()
                .filter_map(|p| p.parse::<u32>().ok())
            {
                let _ = crate::sys::signals::kill(pid, libc::SIGKILL);
            }
        }
        // A process just killed leaves the group a moment after it dies.
        for _ in 0..200 {
            match fs::remove_dir(&self.dir) {
                Err(e) if e.raw_os_error() == Some(libc::EBUSY) => {
                    std::thread::sleep(std::time::Duration::from_millis(5));
                }
                _ => return,
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_oom_kills_of_either_version() {
        let v1 = "oom_kill_disable 0\nunder_oom 0\noom_kill 3\n";
        assert_eq!(keyed(v1, "oom_kill"), Some(3));
        let v2 = "low 0\nhigh 0\nmax 12\noom 2\noom_kill 2\noom_group_kill 0\n";
        assert_eq!(keyed(v2, "oom_kill"), Some(2));
        assert_eq!(keyed("oom 1\n", "oom_kill"), None);
        assert_eq!(keyed("oom_kill x\n", "oom_kill"), None);
    }
}

//! The cgroup v2 group of one run: made beside tally's own group before
//! the command starts, joined by the command between `fork` and `exec`
//! (it writes itself into `cgroup.procs`), read once it has exited, and
//! removed once it is reaped. `--tree` reads the group's `cpu.stat`,
//! `memory.peak` and `io.stat`; the breakdown of the wall time
//! (`super::why`) reads its pressure stall totals, which count exactly the
//! tasks of the run.

use std::fs::{self, OpenOptions};
use std::io;
use std::os::fd::OwnedFd;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::Duration;

use crate::procfs::pressure::{self, Pressure};
use crate::procfs::{ProcRoot, cgroup, mountinfo};

static SEQUENCE: AtomicU32 = AtomicU32::new(0);

/// A group made for one run.
pub struct RunGroup {
    path: PathBuf,
    /// The group tally itself is in, where leftovers are moved back.
    parent: PathBuf,
    /// `cgroup.procs` of the group, opened for the command to join by.
    procs_fd: Option<OwnedFd>,
    /// The group's directory, for the command to be cloned into.
    dir_fd: Option<OwnedFd>,
    /// Already removed (or given up on) by [`RunGroup::cleanup`].
    removed: bool,
}

impl Drop for RunGroup {
    /// A run that ended on an error path removes its group too.
    fn drop(&mut self) {
        self.remove(&mut Vec::new());
    }
}

/// The cgroup v2 mount point: where systemd mounts it (unified, or beside
/// v1 controllers), checked with one `statfs` each; else from
/// /proc/self/mountinfo.
fn cgroup2_mount(root: &ProcRoot) -> Option<PathBuf> {
    ["/sys/fs/cgroup", "/sys/fs/cgroup/unified"]
        .into_iter()
        .map(Path::new)
        .find(|p| crate::sys::file::is_cgroup2_mount(p))
        .map(Path::to_path_buf)
        .or_else(|| mountinfo::cgroup2_mount(&root.read("self/mountinfo").ok()?))
}

/// This process's cgroup v2 path (the `0::` line of /proc/self/cgroup).
fn own_cgroup(root: &ProcRoot) -> Option<String> {
    cgroup::parse_unified(&root.read("self/cgroup").ok()?)
}

impl RunGroup {
    /// Makes a fresh group beside tally's own and opens its
    /// `cgroup.procs`; else says why not, in words a user can act on.
    pub fn make() -> Result<RunGroup, String> {
        let proc = ProcRoot::default();
        let (Some(mount), Some(own)) = (cgroup2_mount(&proc), own_cgroup(&proc)) else {
            return Err("no cgroup v2 hierarchy is mounted".into());
        };
        let parent = mount.join(own.trim_start_matches('/'));
        sweep_once(&parent);
        let name = format!(
            "tally-{}-{}",
            std::process::id(),
            SEQUENCE.fetch_add(1, Ordering::Relaxed)
        );
        let path = parent.join(name);
        if let Err(e) = fs::create_dir(&path) {
            let root = crate::sys::geteuid() == 0;
            return Err(cgroup::mkdir_failure(&parent, &e, root));
        }
        match OpenOptions::new()
            .write(true)
            .open(path.join("cgroup.procs"))
        {
            Ok(f) => Ok(RunGroup {
                // Without it the command joins by `cgroup.procs`.
                dir_fd: fs::File::open(&path).ok().map(OwnedFd::from),
                path,
                parent,
                procs_fd: Some(OwnedFd::from(f)),
                removed: false,
            }),
            Err(e) => {
                let _ = fs::remove_dir(&path);
                Err(format!("cannot join a new cgroup v2 group ({e})"))
            }
        }
    }

    /// Where the group is.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The `cgroup.procs` descriptor the command writes itself into.
    pub fn take_procs_fd(&mut self) -> Option<OwnedFd> {
        self.procs_fd.take()
    }

    /// The group's directory descriptor the command is cloned into.
    pub fn take_dir_fd(&mut self) -> Option<OwnedFd> {
        self.dir_fd.take()
    }

    /// The group's `cpu`, `io` or `memory` pressure totals, or why they
    /// cannot be read.
    pub fn pressure(&self, resource: &str) -> Result<Pressure, String> {
        let file = self.path.join(format!("{resource}.pressure"));
        let mut buf = [0u8; 256];
        match crate::procfs::read_small(&file, &mut buf) {
            Ok(text) => pressure::parse(text)
                .ok_or_else(|| format!("{} has no total", crate::text::path::display(&file))),
            Err(e) if e.kind() == io::ErrorKind::NotFound => {
                Err("this kernel keeps no pressure stall information (CONFIG_PSI off)".into())
            }
            Err(e) if e.raw_os_error() == Some(libc::EOPNOTSUPP) => Err(
                "pressure stall information is off (booted with psi=0, or cgroup.pressure is 0)"
                    .into(),
            ),
            Err(e) => Err(format!(
                "cannot read {} ({e})",
                crate::text::path::display(&file)
            )),
        }
    }

    /// After the command was reaped: moves processes it left running back
    /// to tally's own group and removes the group. What it had to do, or
    /// could not, goes to `notes`.
    pub fn cleanup(mut self, notes: &mut Vec<String>) {
        self.remove(notes);
    }

    fn remove(&mut self, notes: &mut Vec<String>) {
        if self.removed {
            return;
        }
        self.removed = true;
        // An empty group (the command and all it started have exited) goes
        // at once; else its processes are moved out first.
        if fs::remove_dir(&self.path).is_ok() {
            return;
        }
        let left = pids_in(&self.path.join("cgroup.procs"));
        if !left.is_empty() {
            let (they, run, were) = match left.len() {
                1 => ("1 process".to_string(), "runs", "it was"),
                n => (format!("{n} processes"), "run", "they were"),
            };
            notes.push(format!(
                "{they} of the tree still {run} after the command exited; {were} moved back to {}",
                self.parent.display()
            ));
            for pid in left {
                let _ = fs::write(self.parent.join("cgroup.procs"), pid.to_string());
            }
        }
        for _ in 0..50 {
            match fs::remove_dir(&self.path) {
                Ok(()) => return,
                Err(e) if e.raw_os_error() == Some(libc::EBUSY) => {
                    std::thread::sleep(Duration::from_millis(2))
                }
                Err(e) => {
                    notes.push(format!("cannot remove {}: {e}", self.path.display()));
                    return;
                }
            }
        }
        notes.push(format!("cannot remove {}: still busy", self.path.display()));
    }
}

/// Once per process: removes the empty groups that a tally killed before
/// it could clean up (SIGKILL, the OOM killer) left beside its own: those
/// named `tally-PID-N` whose PID no longer runs. A group that still holds
/// a process is not empty, and `rmdir` leaves it.
fn sweep_once(parent: &Path) {
    static SWEPT: std::sync::Once = std::sync::Once::new();
    SWEPT.call_once(|| {
        let Ok(entries) = fs::read_dir(parent) else {
            return;
        };
        for entry in entries.flatten() {
            let name = entry.file_name();
            let Some(pid) = name
                .to_str()
                .and_then(|n| n.strip_prefix("tally-"))
                .and_then(|n| n.split_once('-'))
                .and_then(|(pid, seq)| seq.bytes().all(|b| b.is_ascii_digit()).then_some(pid))
                .and_then(|pid| pid.parse::<u32>().ok())
            else {
                continue;
            };
            if pid != std::process::id() && !Path::new(&format!("/proc/{pid}")).exists() {
                let _ = fs::remove_dir(entry.path());
            }
        }
    });
}

/// The pids listed in a `cgroup.procs` file.
pub fn pids_in(procs: &Path) -> Vec<u32> {
    crate::input::read_proc_text(procs)
        .map(|t| t.lines().filter_map(|l| l.trim().parse().ok()).collect())
        .unwrap_or_default()
}

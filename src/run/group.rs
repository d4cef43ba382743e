//! The cgroup v2 group of a session's runs: made beside tally's own group
//! before the first run, each command cloned straight into it, read
//! around each run, and removed after the last (after the report, for a
//! single `tally run`). `--tree` makes one per run and reads its
//! `cpu.stat`, `memory.peak` and `io.stat`; the breakdown of the wall time
//! (`super::why`) reads its pressure stall totals, which count exactly the
//! tasks of the runs: cumulative, so each run's are the difference of a
//! reading after it and one before.
//!
//! Whatever the group cannot do degrades the breakdown, never the run: a
//! group that cannot be made, joined or removed leaves the command running
//! outside it, the parts that need it `unavailable` with the reason. The
//! groups a command makes below the run's (it may: the run's group is
//! its own) are read with it (its totals are hierarchical, and `--tree`
//! walks them), and removed with it, deepest first.

use std::fs::{self, File};
use std::io;
use std::os::fd::{AsFd, BorrowedFd};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::Duration;

use crate::procfs::cgroup;
use crate::procfs::pressure::{self, Pressure};

static SEQUENCE: AtomicU32 = AtomicU32::new(0);

/// The pressure files a group has, in the order of [`Pressures`].
pub const PRESSURE_FILES: [&std::ffi::CStr; 3] =
    [c"cpu.pressure", c"io.pressure", c"memory.pressure"];

/// How deep below a run's group tally looks for groups the command made,
/// and how many it handles: bounded work whatever the command did.
const MOST_DEPTH: usize = 32;
const MOST_GROUPS: usize = 4096;

/// A group made for a session's runs.
pub struct RunGroup {
    /// Below tally's own group, where leftovers are moved back.
    path: PathBuf,
    /// The group's directory: the commands are cloned into it, and its
    /// files are opened through it.
    dir: File,
    /// Its `cpu`, `io` and `memory` pressure files and `cgroup.events`,
    /// opened at their first read and read again from offset 0.
    open: [Option<File>; 4],
    /// Already removed (or given up on) by [`RunGroup::cleanup`].
    removed: bool,
}

impl Drop for RunGroup {
    /// A session that ended on an error path removes its group too.
    fn drop(&mut self) {
        self.remove(&mut Vec::new(), false);
    }
}

/// The `cpu`, `io` and `memory` pressure totals of a group (or their
/// differences over a run), each or why it cannot be had.
#[derive(Debug, Clone)]
pub struct Pressures {
    pub cpu: Result<Pressure, String>,
    pub io: Result<Pressure, String>,
    pub memory: Result<Pressure, String>,
}

impl Pressures {
    /// Of the texts read from the three files (or the errors reading
    /// them), in [`PRESSURE_FILES`]' order; `group` names the group.
    pub fn of_texts(group: &Path, read: [io::Result<&str>; 3]) -> Pressures {
        let [cpu, io, memory] = read;
        let of = |i: usize, r: io::Result<&str>| {
            // The file's path only for a reason it gives: made then, not
            // for every run.
            pressure_of(
                || group.join(PRESSURE_FILES[i].to_string_lossy().as_ref()),
                r,
            )
        };
        Pressures {
            cpu: of(0, cpu),
            io: of(1, io),
            memory: of(2, memory),
        }
    }

    /// The totals of a group just made: zero.
    pub fn zero() -> Pressures {
        let zero = || {
            Ok(Pressure {
                some_us: 0,
                full_us: Some(0),
            })
        };
        Pressures {
            cpu: zero(),
            io: zero(),
            memory: zero(),
        }
    }

    /// What accrued from `before` to these totals (each part unavailable
    /// where either reading was).
    pub fn since(&self, before: &Pressures) -> Pressures {
        let diff =
            |now: &Result<Pressure, String>, then: &Result<Pressure, String>| match (now, then) {
                (Ok(n), Ok(t)) => Ok(Pressure {
                    some_us: n.some_us.saturating_sub(t.some_us),
                    full_us: n.full_us.zip(t.full_us).map(|(n, t)| n.saturating_sub(t)),
                }),
                (Err(e), _) | (_, Err(e)) => Err(e.clone()),
            };
        Pressures {
            cpu: diff(&self.cpu, &before.cpu),
            io: diff(&self.io, &before.io),
            memory: diff(&self.memory, &before.memory),
        }
    }
}

/// The totals of a pressure file from what reading it gave, or why they
/// cannot be had, in words a user can act on: `file` gives the file's
/// path, for those words only.
pub fn pressure_of(
    file: impl FnOnce() -> std::path::PathBuf,
    read: io::Result<&str>,
) -> Result<Pressure, String> {
    match read {
        Ok(text) => pressure::parse(text)
            .ok_or_else(|| format!("{} has no total", crate::text::path::display(&file()))),
        Err(e) if e.kind() == io::ErrorKind::NotFound => {
            Err("this kernel keeps no pressure stall information (CONFIG_PSI off)".into())
        }
        Err(e) if e.raw_os_error() == Some(libc::EOPNOTSUPP) => Err(
            "pressure stall information is off (booted with psi=0, or cgroup.pressure is 0)".into(),
        ),
        Err(e) => Err(format!(
            "cannot read {} ({e})",
            crate::text::path::display(&file())
        )),
    }
}

impl RunGroup {
    /// Makes a fresh group beside tally's own and opens its directory;
    /// else says why not, in words a user can act on.
    pub fn make() -> Result<RunGroup, String> {
        let (Some(mount), Some(own)) = (cgroup::v2_mount(), cgroup::own_unified()) else {
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
        match crate::sys::file::open_dir(&path) {
            Ok(dir) => Ok(RunGroup {
                path,
                dir,
                open: [None, None, None, None],
                removed: false,
            }),
            Err(e) => {
                let _ = fs::remove_dir(&path);
                Err(format!(
                    "cannot open the new cgroup v2 group {} ({e})",
                    crate::text::path::display(&path)
                ))
            }
        }
    }

    /// Where the group is.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The group's directory, which a command is cloned into.
    pub fn dir(&self) -> BorrowedFd<'_> {
        self.dir.as_fd()
    }

    /// Reads file `i` of [`PRESSURE_FILES`] (3: `cgroup.events`) whole
    /// into `buf`, opening it at its first read.
    fn read_open<'b>(&mut self, i: usize, buf: &'b mut [u8]) -> io::Result<&'b str> {
        let name = PRESSURE_FILES.get(i).copied().unwrap_or(c"cgroup.events");
        let slot = self
            .open
            .get_mut(i)
            .ok_or_else(|| io::Error::from(io::ErrorKind::InvalidInput))?;
        if slot.is_none() {
            *slot = Some(crate::sys::file::open_read_at(&self.dir, name)?);
        }
        let Some(file) = slot.as_ref() else {
            return Err(io::Error::from(io::ErrorKind::NotFound));
        };
        let len = read_whole_at(file, buf)?;
        std::str::from_utf8(&buf[..len])
            .map_err(|_| io::Error::new(io::ErrorKind::InvalidData, "not text"))
    }

    /// The group's pressure totals now.
    pub fn pressures(&mut self) -> Pressures {
        let mut bufs = [[0u8; 256]; 3];
        let [a, b, c] = &mut bufs;
        let cpu = self.read_open(0, a);
        let io = self.read_open(1, b);
        let memory = self.read_open(2, c);
        Pressures::of_texts(&self.path, [cpu, io, memory])
    }

    /// Whether any process runs in the group or below it (`populated` of
    /// `cgroup.events`); when that cannot be read, `true`, so that the
    /// caller looks.
    pub fn populated(&mut self) -> bool {
        let mut buf = [0u8; 128];
        match self.read_open(3, &mut buf) {
            Ok(text) => events_populated(text).unwrap_or(true),
            Err(_) => true,
        }
    }

    /// Moves every process left in the group or below it (the command
    /// exited, they did not) back to tally's own group, so that no later
    /// run counts their stalls; what was moved is said in `notes`.
    pub fn move_out_leftovers(&self, notes: &mut Vec<String>) {
        move_out_leftovers(&self.path, None, notes);
    }

    /// The groups below this one (the commands made them), as `cgroup.stat`
    /// counts them.
    pub fn descendants(&self) -> u64 {
        crate::input::read_proc_text(&self.path.join("cgroup.stat"))
            .ok()
            .and_then(|t| {
                t.lines().find_map(|l| {
                    l.strip_prefix("nr_descendants ")
                        .and_then(|n| n.trim().parse().ok())
                })
            })
            .unwrap_or(0)
    }

    /// After the last run: moves processes left running back to tally's
    /// own group, removes the groups the commands made below this one,
    /// deepest first, then this one. What it had to do, or could not,
    /// goes to `notes`.
    pub fn cleanup(mut self, notes: &mut Vec<String>) {
        self.remove(notes, true);
    }

    /// See [`RunGroup::cleanup`]; `say_below`: whether to note the groups
    /// found below (unless said before).
    fn remove(&mut self, notes: &mut Vec<String>, say_below: bool) {
        if self.removed {
            return;
        }
        self.removed = true;
        self.open = [None, None, None, None];
        // An empty group (the command and all it started have exited, and
        // it made no group below) goes at once.
        if fs::remove_dir(&self.path).is_ok() {
            return;
        }
        self.move_out_leftovers(notes);
        let below = groups_below(&self.path, false);
        if say_below && !below.is_empty() {
            notes.push(format!(
                "the command made {} below the run's group {}; removed with it",
                crate::units::count(below.len() as u64, "cgroup", "cgroups"),
                crate::text::path::display(&self.path)
            ));
        }
        // Deepest first: each after every group below it.
        for group in below.iter().rev() {
            if let Err(e) = remove_when_empty(group) {
                notes.push(format!(
                    "cannot remove {}: {e}",
                    crate::text::path::display(group)
                ));
            }
        }
        if let Err(e) = remove_when_empty(&self.path) {
            notes.push(format!(
                "cannot remove {}: {e}",
                crate::text::path::display(&self.path)
            ));
        }
    }
}

/// The breakdown's group of a session: one for all its runs (made before
/// the first, removed after the last), with the pressure totals each run
/// starts from.
pub struct SessionGroup {
    group: Result<RunGroup, String>,
    /// The totals when the last run ended: the next run's start, since
    /// nothing runs in the group between runs; zeros before the first run
    /// (see [`SessionGroup::make`]). `None` after a run that left
    /// processes running in it.
    last: Option<Pressures>,
    /// The groups made below it were said before the report.
    said_below: bool,
}

impl SessionGroup {
    /// Makes the group, or keeps why it could not be made. The kernel
    /// starts a new group's pressure totals at zero, and nothing runs in it
    /// before the first run: that run starts from zeros, read from no file.
    pub fn make() -> SessionGroup {
        let group = RunGroup::make();
        let last = group.is_ok().then(Pressures::zero);
        SessionGroup {
            group,
            last,
            said_below: false,
        }
    }

    /// The group, or why there is none.
    pub fn group(&self) -> Result<&RunGroup, &str> {
        self.group.as_ref().map_err(String::as_str)
    }

    /// The pressure totals a run starts from, or why there are none.
    pub fn before_run(&mut self) -> Result<Pressures, String> {
        let group = self.group.as_mut().map_err(|why| no_group(why))?;
        Ok(match self.last.take() {
            Some(p) => p,
            None => group.pressures(),
        })
    }

    /// After a run that started from `before`, its command in the group
    /// or not (`joined`): what the run's tasks stalled, or why that is not
    /// known. Processes it left running are moved out (said in `notes`).
    pub fn after_run(
        &mut self,
        before: Result<Pressures, String>,
        joined: &crate::sys::process::Joined,
        notes: &mut Vec<String>,
    ) -> Result<Pressures, String> {
        let group = self.group.as_mut().map_err(|why| no_group(why))?;
        let before = before?;
        let after = group.pressures();
        if group.populated() {
            group.move_out_leftovers(notes);
        } else {
            self.last = Some(after.clone());
        }
        outside(joined)?;
        Ok(after.since(&before))
    }

    /// After the last run: the groups the commands made below the
    /// session's, which are removed with it (said before the report).
    pub fn made_below(&mut self) -> Option<String> {
        let group = self.group.as_ref().ok()?;
        let n = group.descendants();
        self.said_below |= n > 0;
        (n > 0).then(|| {
            format!(
                "the command made {} below the run's group {}; removed with it",
                crate::units::count(n, "cgroup", "cgroups"),
                crate::text::path::display(group.path())
            )
        })
    }

    /// Removes the group (see [`RunGroup::cleanup`]); what could not be
    /// done is returned.
    pub fn finish(self) -> Vec<String> {
        let mut notes = Vec::new();
        if let Ok(mut g) = self.group {
            g.remove(&mut notes, !self.said_below);
        }
        notes
    }
}

/// Why the parts that need a group are unavailable when none was made.
pub fn no_group(why: &str) -> String {
    format!("no cgroup v2 group could be made for the run: {why}")
}

/// `Err` with the reason when the command ran outside its group.
pub fn outside(joined: &crate::sys::process::Joined) -> Result<(), String> {
    match joined {
        crate::sys::process::Joined::Outside(e) => Err(format!(
            "the command could not be put in the run's cgroup v2 group and ran outside it ({e}{})",
            match e.raw_os_error() {
                Some(libc::EOPNOTSUPP) =>
                    ": tally's own group is threaded, and a threaded group holds threads, not processes",
                Some(libc::EACCES) | Some(libc::EPERM) =>
                    ": moving a process needs write access to cgroup.procs of the group tally is in, which a half-delegated group does not give",
                Some(libc::ENOSYS) | Some(libc::E2BIG) =>
                    ": this kernel cannot start a process in a group (Linux 5.7+)",
                _ => "",
            }
        )),
        _ => Ok(()),
    }
}

/// Moves every process left in the run's group `path` or below it back
/// to the group above it, tally's own (see [`RunGroup::make`]); what was
/// moved is said in `notes`.
pub fn move_out_leftovers(path: &Path, spare: Option<u32>, notes: &mut Vec<String>) {
    let Some(own) = path.parent() else {
        return;
    };
    let mut left = Vec::new();
    for group in groups_below(path, true) {
        left.extend(
            pids_in(&group.join("cgroup.procs"))
                .into_iter()
                .filter(|&p| Some(p) != spare),
        );
    }
    if left.is_empty() {
        return;
    }
    let (run, were) = match left.len() {
        1 => ("runs", "it was"),
        _ => ("run", "they were"),
    };
    notes.push(format!(
        "{} of the tree still {run} after the command exited; {were} moved back to {} and not measured",
        crate::units::count(left.len() as u64, "process", "processes"),
        crate::text::path::display(own)
    ));
    let procs = own.join("cgroup.procs");
    for pid in left {
        let _ = fs::write(&procs, pid.to_string());
    }
}

/// Waits until process `pid` has left the group at `path` (it is not in
/// its `cgroup.procs`), at most `within`: a process on its way out after
/// a SIGKILL.
pub fn wait_left(path: &Path, pid: u32, within: std::time::Duration) {
    let start = std::time::Instant::now();
    let procs = path.join("cgroup.procs");
    while pids_in(&procs).contains(&pid) && start.elapsed() < within {
        std::thread::sleep(std::time::Duration::from_millis(1));
    }
}

/// Reads a small kernel file whole from offset 0 through an open
/// descriptor, as much as `buf` holds; returns the length.
fn read_whole_at(file: &File, buf: &mut [u8]) -> io::Result<usize> {
    use std::os::unix::fs::FileExt;
    let mut len = 0;
    while len < buf.len() {
        match file.read_at(&mut buf[len..], len as u64) {
            Ok(0) => break,
            Ok(n) => len += n,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(e),
        }
    }
    Ok(len)
}

/// `populated` of a `cgroup.events` text.
pub fn events_populated(text: &str) -> Option<bool> {
    crate::procfs::lines(text).find_map(|l| match l.strip_prefix("populated ")? {
        "0" => Some(false),
        "1" => Some(true),
        _ => None,
    })
}

/// Removes the empty group `path`, waiting a little while the kernel
/// still counts a process that has just left it (`EBUSY`).
fn remove_when_empty(path: &Path) -> io::Result<()> {
    for _ in 0..50 {
        match fs::remove_dir(path) {
            Ok(()) => return Ok(()),
            Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(()),
            Err(e) if e.raw_os_error() == Some(libc::EBUSY) => {
                std::thread::sleep(Duration::from_millis(2))
            }
            Err(e) => return Err(e),
        }
    }
    Err(io::Error::other("still busy"))
}

/// The groups below `top` (with `top` itself first when `with_top`),
/// each before the groups below it: at most [`MOST_GROUPS`], at most
/// [`MOST_DEPTH`] deep.
pub fn groups_below(top: &Path, with_top: bool) -> Vec<PathBuf> {
    let mut found = vec![top.to_path_buf()];
    let mut depth_of = vec![0usize];
    let mut i = 0;
    while i < found.len() && found.len() < MOST_GROUPS {
        let depth = depth_of[i];
        if depth < MOST_DEPTH
            && let Ok(entries) = fs::read_dir(&found[i])
        {
            for entry in entries.flatten() {
                if found.len() >= MOST_GROUPS {
                    break;
                }
                // A group is a directory; the interface files are not.
                if entry.file_type().is_ok_and(|t| t.is_dir()) {
                    found.push(entry.path());
                    depth_of.push(depth + 1);
                }
            }
        }
        i += 1;
    }
    if !with_top {
        found.remove(0);
    }
    found
}

/// Once per process: removes the groups that a tally killed before it
/// could clean up (SIGKILL, the OOM killer) left beside its own: those
/// named `tally-PID-N` whose PID no longer runs, with the groups their
/// commands made below them, deepest first. A group that still holds a
/// process is not empty, and `rmdir` leaves it.
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
                let path = entry.path();
                if fs::remove_dir(&path).is_err() {
                    for group in groups_below(&path, true).iter().rev() {
                        let _ = fs::remove_dir(group);
                    }
                }
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn populated_is_read_from_cgroup_events() {
        assert_eq!(events_populated("populated 0\nfrozen 0\n"), Some(false));
        assert_eq!(events_populated("populated 1\nfrozen 0\n"), Some(true));
        assert_eq!(events_populated("frozen 0\n"), None);
        assert_eq!(events_populated("populated 7\n"), None);
    }

    #[test]
    fn pressure_over_a_run_is_the_difference_of_the_totals() {
        let at = |some_us, full_us| Pressure {
            some_us,
            full_us: Some(full_us),
        };
        let before = Pressures {
            cpu: Ok(at(100, 50)),
            io: Ok(at(7, 7)),
            memory: Err("denied".into()),
        };
        let after = Pressures {
            cpu: Ok(at(160, 55)),
            io: Ok(at(7, 7)),
            memory: Ok(at(9, 9)),
        };
        let run = after.since(&before);
        assert_eq!(run.cpu, Ok(at(60, 5)));
        assert_eq!(run.io, Ok(at(0, 0)));
        assert_eq!(run.memory, Err("denied".into()));
    }

    #[test]
    fn groups_below_are_listed_parents_first_within_bounds() {
        let dir = tempfile::tempdir().unwrap();
        let top = dir.path();
        fs::create_dir_all(top.join("a/b/c")).unwrap();
        fs::create_dir_all(top.join("d")).unwrap();
        fs::write(top.join("a/cgroup.procs"), "").unwrap();
        let below = groups_below(top, false);
        assert_eq!(below.len(), 4, "{below:?}");
        let at = |p: &str| below.iter().position(|b| b == &top.join(p)).unwrap();
        assert!(at("a") < at("a/b") && at("a/b") < at("a/b/c"));
        assert_eq!(
            groups_below(top, true).first().map(PathBuf::as_path),
            Some(top)
        );
    }
}

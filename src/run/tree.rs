//! Whole-tree accounting for `tally run --tree`.
//!
//! The kernel's rusage covers only descendants that were waited for, and
//! `ru_maxrss` is one process's peak. For the whole tree tally puts the
//! command in a fresh cgroup v2 (cpu.stat is always there; memory.peak and
//! io.stat when those controllers are enabled) and otherwise samples /proc
//! every 10 ms: the sum of the tree's resident sets, and each process's
//! last-seen cpu time (a lower bound: what ran between samples is missed).

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::thread::JoinHandle;
use std::time::Duration;

use super::group::{RunGroup, groups_below, pids_in};
use super::report::TreeUsage;
use crate::procfs::stat::{self, Stat};
use crate::procfs::{ProcRoot, for_each_key_number};
use crate::sys;

const SAMPLE_EVERY: Duration = Duration::from_millis(10);

#[derive(Default)]
struct Sampled {
    peak_rss_bytes: u64,
    /// Last-seen (user, system) ticks per pid.
    cpu_ticks: HashMap<u32, (u64, u64)>,
    /// Samples that found at least one live process of the tree.
    samples: u64,
}

pub struct Tree {
    cgroup: Option<RunGroup>,
    sampler: Option<(Arc<AtomicBool>, JoinHandle<Sampled>)>,
    /// The command's pid, once started.
    root: u32,
    notes: Vec<String>,
    /// Why no cgroup could be made, when none was.
    group_error: Option<String>,
}

impl Tree {
    /// Creates the cgroup, or notes why it could not and plans to sample.
    pub fn prepare() -> Tree {
        let mut tree = Tree {
            cgroup: None,
            sampler: None,
            root: 0,
            notes: Vec::new(),
            group_error: None,
        };
        match RunGroup::make() {
            Ok(group) => tree.cgroup = Some(group),
            Err(why) => {
                tree.notes.push(format!("{why}; sampled /proc instead"));
                tree.group_error = Some(why);
            }
        }
        tree
    }

    /// The run's cgroup, or why none could be made.
    pub fn group(&self) -> Result<&RunGroup, &str> {
        match (&self.cgroup, &self.group_error) {
            (Some(g), _) => Ok(g),
            (None, Some(why)) => Err(why),
            (None, None) => Err("no cgroup was made"),
        }
    }

    /// The run's cgroup to read, or why there is none.
    pub fn group_mut(&mut self) -> Result<&mut RunGroup, &str> {
        match (&mut self.cgroup, &self.group_error) {
            (Some(g), _) => Ok(g),
            (None, Some(why)) => Err(why),
            (None, None) => Err("no cgroup was made"),
        }
    }

    /// The command could not be put in the group (`why`): its figures are
    /// sampled from /proc, and the group is only removed.
    pub fn not_joined(&mut self, why: String) {
        if let Some(g) = self.cgroup.take() {
            g.cleanup(&mut self.notes);
        }
        self.notes.push(format!("{why}; sampled /proc instead"));
        self.group_error = Some(why);
    }

    fn has_memory_peak(&self) -> bool {
        self.cgroup
            .as_ref()
            .is_some_and(|c| c.path().join("memory.peak").exists())
    }

    /// The command started as `pid`: sample memory unless the cgroup
    /// records its peak itself.
    pub fn started(&mut self, pid: u32) {
        self.root = pid;
        if self.has_memory_peak() {
            return;
        }
        let stop = Arc::new(AtomicBool::new(false));
        let members = self.cgroup.as_ref().map(|c| c.path().to_path_buf());
        let flag = Arc::clone(&stop);
        let spawned = std::thread::Builder::new()
            .name("tally-tree-sampler".into())
            .stack_size(64 * 1024)
            .spawn(move || sample(pid, members, &flag));
        match spawned {
            Ok(handle) => self.sampler = Some((stop, handle)),
            Err(e) => self
                .notes
                .push(format!("cannot start the /proc sampler: {e}")),
        }
    }

    /// The command has exited (not yet reaped): collect the figures.
    pub fn finish(&mut self) -> TreeUsage {
        let root = self.root;
        let members = self.cgroup.as_ref().map(|c| c.path().to_path_buf());
        let sampled = self.sampler.take().and_then(|(stop, handle)| {
            stop.store(true, Ordering::SeqCst);
            let mut s = handle.join().ok()?;
            // One last sample now, while the command is an unreaped zombie:
            // a command shorter than the sampling period would otherwise
            // leave no sample at all ("0 processes seen", "0kB").
            sample_once(root, members.as_deref(), &mut s, &mut HashMap::new());
            Some(s)
        });
        let mut usage = TreeUsage {
            method: if self.cgroup.is_some() {
                "cgroup-v2"
            } else {
                "proc-sampling"
            }
            .into(),
            cgroup: self.cgroup.as_ref().map(|c| c.path().display().to_string()),
            user_us: None,
            system_us: None,
            peak_memory_bytes: None,
            memory_method: String::new(),
            storage_read_bytes: None,
            storage_write_bytes: None,
            processes_seen: None,
            samples: None,
            raised_to_command: Vec::new(),
            notes: std::mem::take(&mut self.notes),
        };
        if let Some(cg) = &self.cgroup {
            if let Ok(text) = crate::input::read_proc_text(&cg.path().join("cpu.stat")) {
                for_each_key_number(&text.replace(' ', ":"), |k, v| match k {
                    "user_usec" => usage.user_us = Some(v),
                    "system_usec" => usage.system_us = Some(v),
                    _ => {}
                });
            }
            if let Ok(text) = crate::input::read_proc_text(&cg.path().join("memory.peak")) {
                usage.peak_memory_bytes = text.trim().parse().ok();
                usage.memory_method = "memory.peak of the cgroup".into();
            }
            if let Ok(text) = crate::input::read_proc_text(&cg.path().join("io.stat")) {
                let (mut r, mut w) = (0u64, 0u64);
                for word in text.split_whitespace() {
                    if let Some(v) = word.strip_prefix("rbytes=") {
                        r = r.saturating_add(v.parse().unwrap_or(0));
                    } else if let Some(v) = word.strip_prefix("wbytes=") {
                        w = w.saturating_add(v.parse().unwrap_or(0));
                    }
                }
                usage.storage_read_bytes = Some(r);
                usage.storage_write_bytes = Some(w);
            }
        }
        if let Some(s) = sampled {
            usage.samples = Some(s.samples);
            if s.samples == 0 {
                usage.notes.push(
                    "not sampled: no process of the tree was alive at any 10 ms sample".into(),
                );
            } else {
                usage.processes_seen = Some(s.cpu_ticks.len() as u64);
            }
            if usage.peak_memory_bytes.is_none() {
                if s.samples > 0 {
                    usage.peak_memory_bytes = Some(s.peak_rss_bytes);
                    usage.memory_method = if self.cgroup.is_some() {
                        "sum of resident sets sampled every 10 ms: the cgroup has no memory controller"
                            .into()
                    } else {
                        "sum of resident sets sampled every 10 ms".into()
                    };
                } else {
                    usage.memory_method =
                        "not sampled: the tree ended before the first 10 ms sample".into();
                }
            }
            if self.cgroup.is_none() {
                let hz = sys::clock_ticks_per_sec();
                let (u, st) = s.cpu_ticks.values().fold((0u64, 0u64), |(a, b), (u, s)| {
                    (a.saturating_add(*u), b.saturating_add(*s))
                });
                usage.user_us = Some(u.saturating_mul(1_000_000) / hz.max(1));
                usage.system_us = Some(st.saturating_mul(1_000_000) / hz.max(1));
                usage
                    .notes
                    .push("cpu is a lower bound: each process's last sampled time".into());
            }
        }
        if usage.memory_method.is_empty() {
            usage.memory_method = "unavailable".into();
        }
        usage
    }

    /// After the command was reaped: moves processes it left running back
    /// to tally's own cgroup and removes the cgroup.
    pub fn cleanup(self, usage: &mut TreeUsage) {
        if let Some(cg) = self.cgroup {
            cg.cleanup(&mut usage.notes);
        }
    }
}

/// Members of the tree rooted at `root`: from the cgroup when there is one
/// (its own processes and those of every group below it, which the
/// command may have made and moved into), else every process whose parent
/// chain reaches `root`.
fn members(tree_root: u32, cgroup: Option<&Path>, stats: &mut HashMap<u32, Stat>) -> Vec<u32> {
    stats.clear();
    let root = ProcRoot::default();
    if let Some(group) = cgroup {
        let pids: Vec<u32> = groups_below(group, true)
            .iter()
            .flat_map(|g| pids_in(&g.join("cgroup.procs")))
            .collect();
        for pid in &pids {
            if let Some(s) = stat::read(&root, *pid) {
                stats.insert(*pid, s);
            }
        }
        return pids;
    }
    for pid in root.pids().into_iter().flatten() {
        if let Some(s) = stat::read(&root, pid) {
            stats.insert(pid, s);
        }
    }
    let mut tree = vec![tree_root];
    let mut i = 0;
    while i < tree.len() {
        let parent = tree[i];
        tree.extend(
            stats
                .iter()
                .filter(|(_, s)| s.ppid == parent)
                .map(|(p, _)| *p),
        );
        i += 1;
    }
    tree
}

/// Takes one sample of the tree into `out`.
fn sample_once(
    root: u32,
    cgroup: Option<&Path>,
    out: &mut Sampled,
    stats: &mut HashMap<u32, Stat>,
) {
    let page = sys::page_size();
    let pids = members(root, cgroup, stats);
    let mut rss = 0u64;
    let mut alive = false;
    // One read of /proc/PID/stat per process gives both its resident
    // set and its cpu; vanished processes are simply not counted.
    for pid in pids {
        if let Some(s) = stats.get(&pid) {
            alive |= !s.zombie;
            rss = rss.saturating_add(s.rss_pages.saturating_mul(page));
            let e = out.cpu_ticks.entry(pid).or_default();
            *e = (e.0.max(s.utime), e.1.max(s.stime));
        }
    }
    if alive {
        out.samples += 1;
        out.peak_rss_bytes = out.peak_rss_bytes.max(rss);
    }
}

fn sample(root: u32, cgroup: Option<PathBuf>, stop: &AtomicBool) -> Sampled {
    let mut out = Sampled::default();
    let mut stats = HashMap::new();
    while !stop.load(Ordering::SeqCst) {
        sample_once(root, cgroup.as_deref(), &mut out, &mut stats);
        std::thread::sleep(SAMPLE_EVERY);
    }
    out
}

/// Raises each tree figure that came out below the command's own (the
/// `wait4` figures of the command and the descendants it waited for,
/// which the tree contains): sampling misses what ran or peaked between
/// samples, and the command's first moments after `fork` are charged to
/// tally's cgroup. Each changed figure is named in `raised_to_command`
/// and a note gives what was measured.
///
/// Cpu: the total becomes at least the command's; its split between user
/// and kernel is an estimate from clock ticks on both sides, so it is
/// moved only as far as needed for each part to be at least the
/// command's, keeping the total (raising each part on its own would count
/// the same time twice when the two estimates split it differently).
pub fn raise_to_command(usage: &mut TreeUsage, own: &sys::process::ChildUsage) {
    use crate::units::thousands;
    let own_user = crate::units::micros(own.user);
    let own_system = crate::units::micros(own.system);
    if let (Some(user), Some(system)) = (usage.user_us, usage.system_us) {
        let total = user
            .saturating_add(system)
            .max(own_user.saturating_add(own_system));
        let new_user = user.max(own_user).min(total.saturating_sub(own_system));
        let new_system = total.saturating_sub(new_user);
        if (new_user, new_system) != (user, system) {
            if new_user != user {
                usage.raised_to_command.push("user_us".into());
            }
            if new_system != system {
                usage.raised_to_command.push("system_us".into());
            }
            let measured = user.saturating_add(system);
            // Nothing said below the figures' own resolution, a clock tick
            // (a regression: a 1 µs difference was reconciled in a line).
            let tick_us = 1_000_000 / sys::clock_ticks_per_sec().max(1);
            let moved = new_user.abs_diff(user).max(new_system.abs_diff(system));
            let said = moved >= tick_us;
            let note = if measured < total {
                format!(
                    "cpu measured for the tree, {}µs ({}µs user + {}µs kernel), was below the command's own {}µs (wait4), which the tree contains: shown as {}µs + {}µs",
                    thousands(measured),
                    thousands(user),
                    thousands(system),
                    thousands(total),
                    thousands(new_user),
                    thousands(new_system)
                )
            } else {
                format!(
                    "the tree's user/kernel split ({}µs + {}µs) put a part below the command's own ({}µs + {}µs, wait4); both are estimates from clock ticks: shown as {}µs + {}µs, the same total",
                    thousands(user),
                    thousands(system),
                    thousands(own_user),
                    thousands(own_system),
                    thousands(new_user),
                    thousands(new_system)
                )
            };
            if said {
                usage.notes.push(note);
            }
            usage.user_us = Some(new_user);
            usage.system_us = Some(new_system);
        }
    }
    let own_rss = own.max_rss_kib.saturating_mul(1024);
    if let Some(peak) = usage.peak_memory_bytes
        && peak < own_rss
    {
        usage.peak_memory_bytes = Some(own_rss);
        usage.raised_to_command.push("peak_memory_bytes".into());
        usage.notes.push(format!(
                "peak memory measured for the tree, {}KiB, was below the command's own ru_maxrss, {}KiB, which the tree contains: raised to it",
                thousands(peak / 1024),
                thousands(own_rss / 1024)
            ));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sys::process::ChildUsage;

    fn usage(user: u64, system: u64, peak: Option<u64>) -> TreeUsage {
        TreeUsage {
            method: "proc-sampling".into(),
            cgroup: None,
            user_us: Some(user),
            system_us: Some(system),
            peak_memory_bytes: peak,
            memory_method: String::new(),
            storage_read_bytes: None,
            storage_write_bytes: None,
            processes_seen: None,
            samples: None,
            raised_to_command: Vec::new(),
            notes: Vec::new(),
        }
    }

    fn own(user_us: u64, system_us: u64, rss_kib: u64) -> ChildUsage {
        ChildUsage {
            user: Duration::from_micros(user_us),
            system: Duration::from_micros(system_us),
            max_rss_kib: rss_kib,
            ..ChildUsage::default()
        }
    }

    #[test]
    fn tree_below_the_command_is_raised_to_it() {
        let mut u = usage(100, 50, Some(4096));
        raise_to_command(&mut u, &own(300, 200, 8));
        assert_eq!((u.user_us, u.system_us), (Some(300), Some(200)));
        assert_eq!(u.peak_memory_bytes, Some(8192));
        assert_eq!(
            u.raised_to_command,
            ["user_us", "system_us", "peak_memory_bytes"]
        );
    }

    #[test]
    fn a_different_split_moves_but_keeps_the_total() {
        // The cgroup said 0 + 5427, wait4 said 3372 + 1237: the total is
        // the tree's, each part at least the command's.
        let mut u = usage(0, 5427, None);
        raise_to_command(&mut u, &own(3372, 1237, 0));
        assert_eq!((u.user_us, u.system_us), (Some(3372), Some(2055)));
        assert_eq!(u.raised_to_command, ["user_us", "system_us"]);
    }

    /// Regression: --tree printed its reconciliation of a 1 µs difference
    /// ("cpu measured for the tree, 99,084µs … was below the command's own
    /// 99,085µs … shown as 73,076µs + 26,009µs").
    #[test]
    fn a_difference_below_a_clock_tick_is_not_said() {
        let mut u = usage(73_076, 26_008, None);
        raise_to_command(&mut u, &own(73_000, 26_085, 0));
        assert_eq!(u.user_us.unwrap() + u.system_us.unwrap(), 99_085);
        assert!(u.notes.is_empty(), "{:?}", u.notes);
        // A difference of a tick or more is said.
        let mut u = usage(0, 5427, None);
        raise_to_command(&mut u, &own(33_720, 1237, 0));
        assert_eq!(u.notes.len(), 1, "{:?}", u.notes);
    }

    #[test]
    fn a_tree_above_the_command_is_left_alone() {
        let mut u = usage(5000, 900, Some(1 << 20));
        raise_to_command(&mut u, &own(300, 200, 8));
        assert_eq!((u.user_us, u.system_us), (Some(5000), Some(900)));
        assert!(u.raised_to_command.is_empty() && u.notes.is_empty());
    }
}

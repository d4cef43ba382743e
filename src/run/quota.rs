//! The CPU quotas over a command: the cgroup limits on how much CPU time
//! it may have, and how often they throttled it while it ran. A task a
//! quota holds back waits runnable (schedstat counts it as waiting for a
//! CPU) though CPUs are idle: that wait is throttling, not an
//! oversubscribed machine, and the advice names the quota instead.
//!
//! Every group from this process's own up to the root of each hierarchy
//! that carries the cpu controller is looked at, once per process: cgroup
//! v2 `cpu.max` (`QUOTA PERIOD`, or `max`) and v1 `cpu.cfs_quota_us` with
//! `cpu.cfs_period_us` (`-1`: none). The command stays in tally's v1
//! groups, and its v2 group (see `super::group`) is made below tally's
//! own, so the same groups hold it. Around each run their `cpu.stat` is
//! read: v2 `nr_throttled` and `throttled_usec`, v1 `nr_throttled` and
//! `throttled_time` (ns). Every number is checked where it is read: a
//! quota the kernel could not have set (a period outside 1 ms to 1 s, a
//! quota under 1 ms) leaves the group out.

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use crate::procfs::{self, cgroup};

/// A quota over the command, and what it did during one run.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct CpuQuota {
    /// The file that sets it, in cgroupfs (`…/cpu.max`,
    /// `…/cpu.cfs_quota_us`).
    pub file: String,
    /// CPU time allowed per period, µs.
    pub quota_us: u64,
    pub period_us: u64,
    /// Periods in which the group was throttled while the command ran.
    pub throttled_periods: u64,
    /// Time the group was throttled while the command ran, ns.
    pub throttled_ns: u64,
}

impl CpuQuota {
    /// The quota in CPUs (`0.1` for 10 ms per 100 ms).
    pub fn cpus(&self) -> f64 {
        self.quota_us as f64 / self.period_us.max(1) as f64
    }

    /// `cpu.cfs_quota_us 10,000 per cpu.cfs_period_us 100,000 (0.1 CPU)`
    /// or `cpu.max 10,000 per 100,000 µs (0.1 CPU)`, after the group.
    pub fn describe(&self) -> String {
        let shown = crate::units::thousands;
        let (dir, name) = match self.file.rsplit_once('/') {
            Some((dir, name)) => (dir, name),
            None => ("", self.file.as_str()),
        };
        let limit = if name == "cpu.max" {
            format!(
                "cpu.max {} per {} µs",
                shown(self.quota_us),
                shown(self.period_us)
            )
        } else {
            format!(
                "cpu.cfs_quota_us {} per cpu.cfs_period_us {}",
                shown(self.quota_us),
                shown(self.period_us)
            )
        };
        format!("{limit} of {dir} ({:.1} CPU)", self.cpus())
    }
}

/// A group with a quota: where its `cpu.stat` is, and the quota.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Limited {
    dir: PathBuf,
    file: &'static str,
    quota_us: u64,
    period_us: u64,
    /// v2 counts throttled time in µs, v1 in ns.
    v2: bool,
}

/// Throttle counters of a group: periods throttled and time throttled, ns.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Throttled {
    periods: u64,
    ns: u64,
}

/// The counters of every quota group before a run.
#[derive(Debug, Clone, Default)]
pub struct Before(Vec<Option<Throttled>>);

/// The quota groups of this process, found once.
fn groups() -> &'static [Limited] {
    static GROUPS: std::sync::OnceLock<Vec<Limited>> = std::sync::OnceLock::new();
    GROUPS.get_or_init(find)
}

/// The groups with a quota over this process. A process in a
/// hierarchy's root (no group of its own there) needs no mount looked up:
/// the root holds no quota.
fn find() -> Vec<Limited> {
    let mut found = Vec::new();
    if let Some(path) = cgroup::own_unified().filter(|p| cgroup::below_root(p))
        && let Some(mount) = cgroup::v2_mount()
    {
        for dir in up_from(mount, &path) {
            if let Some((quota_us, period_us)) = read_v2_max(&dir) {
                found.push(Limited {
                    dir,
                    file: "cpu.max",
                    quota_us,
                    period_us,
                    v2: true,
                });
            }
        }
    }
    if let Some(path) = cgroup::own_v1("cpu").filter(|p| cgroup::below_root(p))
        && let Some(mount) = cgroup::v1_mount("cpu", "cpu.cfs_period_us")
    {
        for dir in up_from(&mount, &path) {
            if let Some((quota_us, period_us)) = read_v1_quota(&dir) {
                found.push(Limited {
                    dir,
                    file: "cpu.cfs_quota_us",
                    quota_us,
                    period_us,
                    v2: false,
                });
            }
        }
    }
    found
}

/// The directories from `path`'s group in the hierarchy mounted at
/// `mount` up to the hierarchy's root (which holds no quota), the deepest
/// first; at most 64 levels (the kernel allows no deeper by default).
fn up_from(mount: &Path, path: &str) -> Vec<PathBuf> {
    let parts: Vec<&str> = path
        .split('/')
        .filter(|p| !p.is_empty() && *p != "." && *p != "..")
        .collect();
    (1..=parts.len().min(64))
        .rev()
        .map(|n| {
            parts[..n]
                .iter()
                .fold(mount.to_path_buf(), |d, p| d.join(p))
        })
        .collect()
}

fn small(path: &Path) -> Option<String> {
    let mut buf = [0u8; 512];
    procfs::read_small(path, &mut buf).ok().map(str::to_string)
}

/// A quota and period the kernel accepts: a period of 1 ms to 1 s, a
/// quota of at least 1 ms.
fn plausible(quota_us: u64, period_us: u64) -> Option<(u64, u64)> {
    ((1_000..=1_000_000).contains(&period_us) && quota_us >= 1_000).then_some((quota_us, period_us))
}

/// `cpu.max` of a v2 group: `None` for `max` (no quota) or text the
/// kernel would not write.
fn read_v2_max(dir: &Path) -> Option<(u64, u64)> {
    parse_v2_max(&small(&dir.join("cpu.max"))?)
}

fn parse_v2_max(text: &str) -> Option<(u64, u64)> {
    let mut f = text.split_whitespace();
    let (quota, period) = (f.next()?, f.next()?);
    if f.next().is_some() {
        return None;
    }
    plausible(quota.parse().ok()?, period.parse().ok()?)
}

/// `cpu.cfs_quota_us` and `cpu.cfs_period_us` of a v1 group: `None` for
/// `-1` (no quota).
fn read_v1_quota(dir: &Path) -> Option<(u64, u64)> {
    let quota = small(&dir.join("cpu.cfs_quota_us"))?;
    let period = small(&dir.join("cpu.cfs_period_us"))?;
    plausible(quota.trim().parse().ok()?, period.trim().parse().ok()?)
}

/// The throttle counters of `cpu.stat` (`v2`: time in µs, else ns).
fn parse_stat(text: &str, v2: bool) -> Option<Throttled> {
    let field = |key: &str| {
        procfs::lines(text).find_map(|l| {
            let (k, v) = procfs::split_once_byte(l, b' ')?;
            (k == key).then(|| v.trim().parse::<u64>().ok()).flatten()
        })
    };
    let periods = field("nr_throttled")?;
    let ns = if v2 {
        field("throttled_usec")?.saturating_mul(1000)
    } else {
        field("throttled_time")?
    };
    Some(Throttled { periods, ns })
}

fn throttled(g: &Limited) -> Option<Throttled> {
    parse_stat(&small(&g.dir.join("cpu.stat"))?, g.v2)
}

/// Reads the counters before a run (nothing without a quota).
pub fn before() -> Before {
    Before(groups().iter().map(throttled).collect())
}

/// After the run: the quota that throttled the command most, with what
/// it did; else the tightest quota over it, unthrottled. `None` without
/// any quota.
pub fn after(before: &Before) -> Option<CpuQuota> {
    let runs: Vec<CpuQuota> = groups()
        .iter()
        .zip(&before.0)
        .map(|(g, was)| {
            let now = throttled(g);
            let d = match (was, now) {
                (Some(a), Some(b)) => Throttled {
                    periods: b.periods.saturating_sub(a.periods),
                    ns: b.ns.saturating_sub(a.ns),
                },
                _ => Throttled::default(),
            };
            CpuQuota {
                file: crate::text::path::display(&g.dir.join(g.file)),
                quota_us: g.quota_us,
                period_us: g.period_us,
                throttled_periods: d.periods,
                throttled_ns: d.ns,
            }
        })
        .collect();
    pick(runs)
}

fn pick(quotas: Vec<CpuQuota>) -> Option<CpuQuota> {
    let most = quotas.iter().max_by_key(|q| q.throttled_ns)?;
    if most.throttled_ns > 0 {
        return Some(most.clone());
    }
    quotas
        .into_iter()
        .min_by(|a, b| a.cpus().total_cmp(&b.cpus()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cpu_max_reads_a_quota_and_max_is_none() {
        assert_eq!(parse_v2_max("10000 100000\n"), Some((10_000, 100_000)));
        assert_eq!(parse_v2_max("max 100000\n"), None);
        assert_eq!(parse_v2_max("10000 100000 7\n"), None);
        // Not what the kernel would write: left out.
        assert_eq!(parse_v2_max("10 100000\n"), None);
        assert_eq!(parse_v2_max("10000 5000000\n"), None);
        assert_eq!(parse_v2_max("-5 100000\n"), None);
    }

    #[test]
    fn cpu_stat_reads_throttling_in_v1_and_v2() {
        let v1 =
            "nr_periods 20\nnr_throttled 11\nthrottled_time 942000000\nnr_bursts 0\nburst_time 0\n";
        assert_eq!(
            parse_stat(v1, false),
            Some(Throttled {
                periods: 11,
                ns: 942_000_000
            })
        );
        let v2 = "usage_usec 1\nuser_usec 1\nsystem_usec 0\nnr_periods 20\nnr_throttled 11\nthrottled_usec 942000\n";
        assert_eq!(
            parse_stat(v2, true),
            Some(Throttled {
                periods: 11,
                ns: 942_000_000
            })
        );
        // A group without the cpu controller's throttle keys.
        assert_eq!(parse_stat("usage_usec 5\n", true), None);
        assert_eq!(
            parse_stat("nr_throttled x\nthrottled_time 1\n", false),
            None
        );
    }

    #[test]
    fn the_groups_go_up_from_the_own_one_deepest_first() {
        let up = up_from(Path::new("/sys/fs/cgroup/cpu"), "/a/b/../c");
        assert_eq!(
            up,
            [
                PathBuf::from("/sys/fs/cgroup/cpu/a/b/c"),
                PathBuf::from("/sys/fs/cgroup/cpu/a/b"),
                PathBuf::from("/sys/fs/cgroup/cpu/a"),
            ]
        );
        assert!(up_from(Path::new("/m"), "/").is_empty());
    }

    #[test]
    fn the_most_throttling_quota_is_named_else_the_tightest() {
        let q = |file: &str, quota_us, throttled_ns| CpuQuota {
            file: file.into(),
            quota_us,
            period_us: 100_000,
            throttled_periods: u64::from(throttled_ns > 0),
            throttled_ns,
        };
        let picked = pick(vec![q("a", 10_000, 0), q("b", 50_000, 5)]).unwrap();
        assert_eq!(picked.file, "b");
        let picked = pick(vec![q("a", 50_000, 0), q("b", 10_000, 0)]).unwrap();
        assert_eq!(picked.file, "b");
        assert_eq!(pick(Vec::new()), None);
        assert_eq!(
            q("/sys/fs/cgroup/cpu/job/cpu.cfs_quota_us", 10_000, 0).describe(),
            "cpu.cfs_quota_us 10,000 per cpu.cfs_period_us 100,000 of /sys/fs/cgroup/cpu/job (0.1 CPU)"
        );
        assert_eq!(
            q("/sys/fs/cgroup/job/cpu.max", 150_000, 0).describe(),
            "cpu.max 150,000 per 100,000 µs of /sys/fs/cgroup/job (1.5 CPU)"
        );
    }
}

//! From what a store holds to the series people ask about: the points of
//! each command and figure, one series per machine fingerprint (and per
//! tool) unless asked to mix them, in the order they were recorded, each
//! searched for change points ([`super::edivisive`]).

use std::collections::HashMap;

use super::edivisive::{self, Analysis, Params};
use super::report::{ChangeOut, CommitOut, MachineOut, SeriesOut};
use super::store::{Loaded, MachineRow, Query, Snapshot, StoreError, Value};

/// The values of one series on one machine (and tool).
struct Group {
    /// An index into [`Loaded::series`].
    series: usize,
    /// An index into [`Plan::keys`].
    group: usize,
    /// In no order until [`one`] sorts them.
    values: Vec<Value>,
}

/// Which series and points to read.
#[derive(Debug, Clone, Default, PartialEq, Eq, serde::Serialize)]
pub struct Selection {
    /// Commands to keep (`*` and `?` as in a shell); all when empty.
    pub commands: Vec<String>,
    /// Figures to keep, by their stored name or that name without its
    /// unit (`wall` for `wall_ns`), `*` and `?` allowed; all when empty.
    pub figures: Vec<String>,
    pub branch: Option<String>,
    /// Points recorded at or after this (ns since the epoch).
    pub since_ns: Option<i64>,
    /// Machines whose fingerprint starts with this, or whose description
    /// holds it.
    pub machine: Option<String>,
    /// Mix machines (and tools) in one series.
    pub all_machines: bool,
}

/// `*` any run of characters, `?` one.
pub fn glob(pattern: &str, text: &str) -> bool {
    let (p, t): (Vec<char>, Vec<char>) = (pattern.chars().collect(), text.chars().collect());
    let (mut pi, mut ti, mut star, mut mark) = (0, 0, None, 0);
    while ti < t.len() {
        if pi < p.len() && (p[pi] == '?' || p[pi] == t[ti]) {
            pi += 1;
            ti += 1;
        } else if pi < p.len() && p[pi] == '*' {
            star = Some(pi);
            mark = ti;
            pi += 1;
        } else if let Some(s) = star {
            pi = s + 1;
            mark += 1;
            ti = mark;
        } else {
            return false;
        }
    }
    p[pi..].iter().all(|c| *c == '*')
}

/// Whether `figure` (in `unit`) answers to `pattern`: its name, or its name
/// without the unit's suffix.
pub fn figure_matches(pattern: &str, figure: &str, unit: &str) -> bool {
    glob(pattern, figure)
        || figure
            .strip_suffix(&format!("_{unit}"))
            .is_some_and(|bare| glob(pattern, bare))
}

impl Selection {
    /// The store query: `--since`, and the series `--command`/`--figure`
    /// keep (found from the series table, read first).
    pub fn query(&self) -> Query {
        Query {
            since_ns: self.since_ns,
            ..Query::default()
        }
    }

    fn keeps_series(&self, command: &str, figure: &str, unit: &str) -> bool {
        (self.commands.is_empty() || self.commands.iter().any(|p| glob(p, command)))
            && (self.figures.is_empty()
                || self.figures.iter().any(|p| figure_matches(p, figure, unit)))
    }

    fn keeps_machine(&self, m: &MachineRow) -> bool {
        self.machine.as_ref().is_none_or(|want| {
            m.machine.fingerprint.starts_with(want.as_str())
                || super::identity::describe(&m.machine).contains(want.as_str())
        })
    }
}

/// Whether a larger value of a figure in `unit` is better (a rate or a
/// frequency) rather than worse (a time, a size, a count).
pub fn higher_is_better(unit: &str) -> bool {
    matches!(unit, "gb_per_s" | "bytes_per_second" | "mhz" | "hz") || unit.ends_with("_per_s")
}

/// The commits, the machines and the series of a report.
pub type Built = (Vec<CommitOut>, Vec<MachineOut>, Vec<SeriesOut>);

/// A series analysed, keyed by (series, group) for the report's order.
type Keyed = ((usize, usize), SeriesOut);

/// What is known of each point before the values are read: whether the
/// selection keeps it, its group (machine and tool) and its place in the
/// order recorded.
struct Plan {
    point_ok: Vec<bool>,
    /// An index into `keys`.
    group_of: Vec<u32>,
    keys: Vec<String>,
    /// Each point's place in the order recorded (time, then id).
    rank: Vec<u32>,
}

impl Plan {
    fn new(loaded: &Loaded, sel: &Selection) -> Plan {
        let point_ok: Vec<bool> = loaded
            .points
            .iter()
            .map(|p| {
                sel.branch
                    .as_ref()
                    .is_none_or(|b| p.meta.branch.as_ref() == Some(b))
                    && loaded
                        .machine(p.machine_id)
                        .is_some_and(|m| sel.keeps_machine(m))
            })
            .collect();
        let mut order: Vec<u32> = (0..loaded.points.len() as u32).collect();
        order.sort_by_key(|&i| {
            let p = &loaded.points[i as usize];
            (p.meta.recorded_at_ns, p.id)
        });
        let mut rank = vec![0u32; order.len()];
        for (r, &i) in order.iter().enumerate() {
            rank[i as usize] = r as u32;
        }
        // A point's group (its machine and tool, unless all machines are
        // asked for), as a rank in the groups' sorted order: worked out
        // once a point, not once a value, and a key made once a group
        // (points in a row tend to share theirs).
        let mut found: Vec<String> = Vec::new();
        let mut slot_of: HashMap<(i64, &str), u32> = HashMap::new();
        let mut last: Option<((i64, &str), u32)> = None;
        let point_slot: Vec<u32> = loaded
            .points
            .iter()
            .map(|p| {
                let at = if sel.all_machines {
                    (0, "")
                } else {
                    (p.machine_id, p.meta.tool.as_str())
                };
                if let Some((k, slot)) = last
                    && k == at
                {
                    return slot;
                }
                let slot = *slot_of.entry(at).or_insert_with(|| {
                    found.push(if sel.all_machines {
                        String::new()
                    } else {
                        let fp = loaded
                            .machine(at.0)
                            .map_or("", |m| m.machine.fingerprint.as_str());
                        format!("{fp}\u{0}{}", at.1)
                    });
                    (found.len() - 1) as u32
                });
                last = Some((at, slot));
                slot
            })
            .collect();
        let mut keys: Vec<String> = found.clone();
        keys.sort_unstable();
        keys.dedup();
        let rank_of: Vec<u32> = found
            .iter()
            .map(|k| keys.binary_search(k).map_or(u32::MAX, |g| g as u32))
            .collect();
        let group_of = point_slot.iter().map(|&s| rank_of[s as usize]).collect();
        Plan {
            point_ok,
            group_of,
            keys,
            rank,
        }
    }

    /// The groups of one series' values (most series are one group whole:
    /// moved, not copied).
    fn groups(&self, series: usize, vals: Vec<Value>) -> Vec<Group> {
        let group = |v: &Value| -> Option<usize> {
            let i = v.point as usize;
            if !self.point_ok.get(i).copied().unwrap_or(false) {
                return None;
            }
            self.group_of
                .get(i)
                .map(|&g| g as usize)
                .filter(|&g| g < self.keys.len())
        };
        let first = vals.first().and_then(group);
        if let Some(g) = first.filter(|&g| vals.iter().all(|v| group(v) == Some(g))) {
            return vec![Group {
                series,
                group: g,
                values: vals,
            }];
        }
        let mut by: Vec<Vec<Value>> = vec![Vec::new(); self.keys.len()];
        for v in vals {
            if let Some(g) = group(&v) {
                by[g].push(v);
            }
        }
        by.into_iter()
            .enumerate()
            .filter(|(_, values)| !values.is_empty())
            .map(|(group, values)| Group {
                series,
                group,
                values,
            })
            .collect()
    }
}

/// The series of a store as `sel` selects them, each analysed with
/// `params`, and the commits and machines they refer to. The values are
/// read series by series (`snap`, after `loaded`), and threads analyse
/// the series already read while the next is read.
pub fn build(
    snap: &mut Snapshot<'_>,
    loaded: &Loaded,
    sel: &Selection,
    params: &Params,
) -> Result<Built, StoreError> {
    // The commits are made while the series are analysed.
    let commits = || -> Vec<CommitOut> {
        loaded
            .points
            .iter()
            .map(|p| {
                CommitOut::of(
                    p,
                    loaded
                        .machine(p.machine_id)
                        .map(|m| m.machine.fingerprint.as_str()),
                )
            })
            .collect()
    };
    let plan = Plan::new(loaded, sel);
    let (mut series, commits) = analyse_all(snap, loaded, sel, &plan, params, commits)?;
    series.sort_by_key(|(key, _)| *key);
    let series: Vec<SeriesOut> = series.into_iter().map(|(_, s)| s).collect();
    let mut used: Vec<&str> = series.iter().filter_map(|s| s.machine.as_deref()).collect();
    used.sort_unstable();
    used.dedup();
    let machines_out: Vec<MachineOut> = loaded
        .machines
        .iter()
        .filter(|m| used.contains(&m.machine.fingerprint.as_str()))
        .map(MachineOut::of)
        .collect();
    Ok((commits, machines_out, series))
}

/// Each series read, analysed, keyed by (series, group) for the report's
/// order. Threads take the series from a queue as they are read.
fn analyse_all<T>(
    snap: &mut Snapshot<'_>,
    loaded: &Loaded,
    sel: &Selection,
    plan: &Plan,
    params: &Params,
    meanwhile: impl FnOnce() -> T,
) -> Result<(Vec<Keyed>, T), StoreError> {
    let threads = std::thread::available_parallelism()
        .map_or(1, |n| n.get())
        .clamp(1, 8);
    let keeps = |si: usize| {
        let s = &loaded.series[si];
        sel.keeps_series(&s.command, &s.figure, &s.unit)
    };
    let analysed = |g: Group| ((g.series, g.group), one(g, loaded, &plan.rank, params));
    if threads == 1 {
        let mut out = Vec::new();
        snap.values(loaded, &mut |si, vals| {
            if keeps(si) {
                out.extend(plan.groups(si, vals).into_iter().map(analysed));
            }
        })?;
        return Ok((out, meanwhile()));
    }
    let (tx, rx) = std::sync::mpsc::channel::<Group>();
    let rx = std::sync::Mutex::new(rx);
    std::thread::scope(|scope| {
        let handles: Vec<_> = (0..threads)
            .map(|_| {
                scope.spawn(|| {
                    let mut done = Vec::new();
                    loop {
                        let next = rx.lock().ok().and_then(|r| r.recv().ok());
                        let Some(g) = next else {
                            break;
                        };
                        done.push(analysed(g));
                    }
                    done
                })
            })
            .collect();
        let read = snap.values(loaded, &mut |si, vals| {
            if keeps(si) {
                for g in plan.groups(si, vals) {
                    // A thread that ended early has panicked; the join says so.
                    let _ = tx.send(g);
                }
            }
        });
        drop(tx);
        // What the caller needs besides, made while the threads analyse.
        let also = meanwhile();
        let mut out = Vec::new();
        for h in handles {
            // A thread that panicked loses no series unsaid: the panic goes on.
            out.extend(h.join().unwrap_or_else(|e| std::panic::resume_unwind(e)));
        }
        read.map(|()| (out, also))
    })
}

/// The standard error of a point's median, from its MAD and count: about
/// 1.2533 σ / √n, σ ≈ 1.4826 MAD; 0 for one sample.
pub fn noise(mad: f64, n: u32) -> f64 {
    if n < 2 {
        0.0
    } else {
        1.2533 * 1.4826 * mad / f64::from(n).sqrt()
    }
}

/// A point's noise: its median's standard error, at least `floor` (a
/// fraction, [`crate::count::repeat_floor`]) of its median where the
/// series is counted.
fn point_noise(v: &Value, floor: Option<f64>) -> f64 {
    let own = noise(v.mad, v.n);
    floor.map_or(own, |f| own.max(f * v.median.abs()))
}

fn one(group: Group, loaded: &Loaded, rank: &[u32], params: &Params) -> SeriesOut {
    let Group {
        series: si,
        mut values,
        ..
    } = group;
    values.sort_by_key(|v| rank.get(v.point as usize).copied().unwrap_or(u32::MAX));
    let s = &loaded.series[si];
    let x: Vec<f64> = values.iter().map(|v| v.median).collect();
    let first = values.first().map(|v| &loaded.points[v.point as usize]);
    // A count is no more exact than its source repeats it.
    let floor = first
        .and_then(|p| loaded.machine(p.machine_id))
        .and_then(|m| crate::count::repeat_floor(&m.machine.counting));
    let e: Vec<f64> = values.iter().map(|v| point_noise(v, floor)).collect();
    let analysis = edivisive::analyze(&x, &e, params);
    let machine = first.and_then(|p| {
        loaded
            .machine(p.machine_id)
            .map(|m| m.machine.fingerprint.clone())
    });
    let higher = higher_is_better(&s.unit);
    let changes = |a: &Analysis| -> (Vec<ChangeOut>, Option<ChangeOut>) {
        let mut bounds: Vec<usize> = a.change_points.iter().map(|c| c.index).collect();
        bounds.insert(0, 0);
        bounds.push(x.len());
        let cps = a
            .change_points
            .iter()
            .enumerate()
            .map(|(k, c)| {
                ChangeOut::of(
                    c,
                    &values,
                    &x,
                    &a.outliers,
                    (bounds[k], bounds[k + 1], bounds[k + 2]),
                    higher,
                )
            })
            .collect();
        let pending = a.pending.as_ref().map(|c| {
            let lo = a.change_points.last().map_or(0, |l| l.index);
            ChangeOut::of(c, &values, &x, &a.outliers, (lo, c.index, x.len()), higher)
        });
        (cps, pending)
    };
    let (change_points, pending) = changes(&analysis);
    SeriesOut {
        command: s.command.clone(),
        figure: s.figure.clone(),
        unit: s.unit.clone(),
        tool: first.map(|p| p.meta.tool.clone()).unwrap_or_default(),
        machine,
        higher_is_better: higher,
        points: values,
        outliers: analysis.outliers.iter().map(|&i| i as u32).collect(),
        change_points,
        pending,
    }
}

/// The median of `x[lo..hi]` without the outliers.
pub fn segment_median(x: &[f64], outliers: &[usize], lo: usize, hi: usize) -> f64 {
    let mut v: Vec<f64> = (lo..hi.min(x.len()))
        .filter(|i| outliers.binary_search(i).is_err())
        .map(|i| x[i])
        .collect();
    if v.is_empty() {
        return f64::NAN;
    }
    let odd = v.len() % 2 == 1;
    let m = v.len() / 2;
    let (below, mid, _) = v.select_nth_unstable_by(m, f64::total_cmp);
    if odd {
        *mid
    } else {
        (below.iter().copied().fold(f64::NEG_INFINITY, f64::max) + *mid) / 2.0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn globs_and_figure_names() {
        assert!(glob("gzip*", "gzip -9 -c x"));
        assert!(glob("syscall.?etpid", "syscall.getpid"));
        assert!(!glob("gzip", "gzip -9"));
        assert!(glob("*", ""));
        assert!(figure_matches("wall", "wall_ns", "ns"));
        assert!(figure_matches("wall_ns", "wall_ns", "ns"));
        assert!(figure_matches("max_rss", "max_rss_bytes", "bytes"));
        assert!(!figure_matches("wall", "wall_clock", "count"));
        assert!(figure_matches("instructions", "instructions", "count"));
    }

    #[test]
    fn rates_are_better_higher() {
        assert!(higher_is_better("gb_per_s"));
        assert!(!higher_is_better("ns"));
        assert!(!higher_is_better("count"));
    }

    /// Regression: a counted series whose pids grew a digit between two
    /// commits (the same work, 38 instructions more of 12 million) had a
    /// change point there, certain because exact counts have no spread.
    #[test]
    fn a_pid_one_digit_longer_is_no_change_point_in_a_counted_series() {
        let counts = [
            12_153_647.0,
            12_153_647.0,
            12_153_647.0,
            12_153_647.0,
            12_153_685.0,
            12_153_685.0,
            13_318_985.0,
            13_318_985.0,
        ];
        let points = |floor: Option<f64>| -> (Vec<f64>, Vec<f64>) {
            let values: Vec<Value> = counts
                .iter()
                .enumerate()
                .map(|(i, &median)| Value {
                    point: i as u32,
                    median,
                    mad: 0.0,
                    n: 1,
                })
                .collect();
            let e = values.iter().map(|v| point_noise(v, floor)).collect();
            (counts.to_vec(), e)
        };
        let found = |floor: Option<f64>| -> Vec<usize> {
            let (x, e) = points(floor);
            edivisive::analyze(&x, &e, &Params::default())
                .change_points
                .iter()
                .map(|c| c.index)
                .collect()
        };
        assert_eq!(found(None), vec![4, 6], "without the floor: the bug");
        let sim = crate::count::repeat_floor("sim");
        assert_eq!(found(sim), vec![6]);
        assert_eq!(found(crate::count::repeat_floor("hw")), vec![6]);
        assert_eq!(crate::count::repeat_floor("clock"), None);
        // A change of a tenth of a percent over ten points a side is one.
        let mut x = vec![1e7; 10];
        x.extend(vec![1.001e7; 10]);
        let e: Vec<f64> = x.iter().map(|m| m * sim.unwrap()).collect();
        let cps = edivisive::analyze(&x, &e, &Params::default()).change_points;
        assert_eq!(cps.iter().map(|c| c.index).collect::<Vec<_>>(), vec![10]);
    }

    #[test]
    fn a_points_noise_is_its_medians_standard_error() {
        assert_eq!(noise(5.0, 1), 0.0);
        assert!((noise(1.0, 100) - 0.185_81).abs() < 1e-4);
    }
}

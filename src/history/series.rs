//! From what a store holds to the series people ask about: the points of
//! each command and figure, one series per machine fingerprint (and per
//! tool) unless asked to mix them, in the order they were recorded, each
//! searched for change points ([`super::edivisive`]).

use std::collections::HashMap;

use super::edivisive::{self, Analysis, Params};
use super::report::{ChangeOut, CommitOut, MachineOut, SeriesOut};
use super::store::{Loaded, MachineRow, Query, Value};

/// The values of one series on one machine (and tool), in commit order.
struct Group {
    /// An index into [`Loaded::series`].
    series: usize,
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
            series: None,
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

/// The series of `loaded` as `sel` selects them, each analysed with
/// `params`, and the commits and machines they refer to.
pub fn build(
    mut loaded: Loaded,
    sel: &Selection,
    params: &Params,
) -> (Vec<CommitOut>, Vec<MachineOut>, Vec<SeriesOut>) {
    let machines: HashMap<i64, &MachineRow> = loaded.machines.iter().map(|m| (m.id, m)).collect();
    let commits: Vec<CommitOut> = loaded
        .points
        .iter()
        .map(|p| {
            CommitOut::of(
                p,
                machines
                    .get(&p.machine_id)
                    .map(|m| m.machine.fingerprint.as_str()),
            )
        })
        .collect();
    let point_ok: Vec<bool> = loaded
        .points
        .iter()
        .map(|p| {
            sel.branch
                .as_ref()
                .is_none_or(|b| p.meta.branch.as_ref() == Some(b))
                && machines
                    .get(&p.machine_id)
                    .is_some_and(|m| sel.keeps_machine(m))
        })
        .collect();
    // Each point's place in the order recorded (time, then id), once.
    let mut order: Vec<u32> = (0..loaded.points.len() as u32).collect();
    order.sort_by_key(|&i| {
        let p = &loaded.points[i as usize];
        (p.meta.recorded_at_ns, p.id)
    });
    let mut rank = vec![0u32; order.len()];
    for (r, &i) in order.iter().enumerate() {
        rank[i as usize] = r as u32;
    }
    // Each point's group (its machine and tool, unless all machines are
    // asked for), as a rank in the groups' sorted order: worked out once a
    // point, not once a value.
    let key_of = |i: usize| -> String {
        if sel.all_machines {
            return String::new();
        }
        let p = &loaded.points[i];
        let fp = machines
            .get(&p.machine_id)
            .map_or("", |m| m.machine.fingerprint.as_str());
        format!("{fp}\u{0}{}", p.meta.tool)
    };
    let point_keys: Vec<String> = (0..loaded.points.len()).map(key_of).collect();
    let mut keys: Vec<&str> = point_keys.iter().map(String::as_str).collect();
    keys.sort_unstable();
    keys.dedup();
    let group_of: Vec<u32> = point_keys
        .iter()
        .map(|k| keys.binary_search(&k.as_str()).map_or(u32::MAX, |g| g as u32))
        .collect();
    let mut groups: Vec<Group> = Vec::new();
    let all_values = std::mem::take(&mut loaded.values);
    for (si, (s, vals)) in loaded.series.iter().zip(all_values).enumerate() {
        if !sel.keeps_series(&s.command, &s.figure, &s.unit) {
            continue;
        }
        let group = |v: &Value| -> Option<usize> {
            let i = v.point as usize;
            if !point_ok.get(i).copied().unwrap_or(false) {
                return None;
            }
            group_of.get(i).map(|&g| g as usize).filter(|&g| g < keys.len())
        };
        // Most series are one group whole: moved, not copied.
        let first = vals.first().and_then(group);
        let mut by: Vec<Vec<Value>> = match first {
            Some(g) if vals.iter().all(|v| group(v) == Some(g)) => {
                let mut by = vec![Vec::new(); keys.len()];
                by[g] = vals;
                by
            }
            _ => {
                let mut by = vec![Vec::new(); keys.len()];
                for v in vals {
                    if let Some(g) = group(&v) {
                        by[g].push(v);
                    }
                }
                by
            }
        };
        for values in by.iter_mut() {
            if values.is_empty() {
                continue;
            }
            let mut values = std::mem::take(values);
            values.sort_by_key(|v| rank.get(v.point as usize).copied().unwrap_or(u32::MAX));
            groups.push(Group {
                series: si,
                values,
            });
        }
    }
    let series: Vec<SeriesOut> = analyse_all(groups, &loaded, params);
    let mut used: Vec<&str> = series.iter().filter_map(|s| s.machine.as_deref()).collect();
    used.sort_unstable();
    used.dedup();
    let machines_out: Vec<MachineOut> = loaded
        .machines
        .iter()
        .filter(|m| used.contains(&m.machine.fingerprint.as_str()))
        .map(MachineOut::of)
        .collect();
    (commits, machines_out, series)
}

/// Analyses every group, on as many threads as there are CPUs (at most 8).
fn analyse_all(groups: Vec<Group>, loaded: &Loaded, params: &Params) -> Vec<SeriesOut> {
    let threads = std::thread::available_parallelism()
        .map_or(1, |n| n.get())
        .clamp(1, 8)
        .min(groups.len());
    if threads <= 1 {
        return groups.into_iter().map(|g| one(g, loaded, params)).collect();
    }
    // A queue the threads take series from, one at a time, so a long
    // series does not leave the others' threads idle.
    let count = groups.len();
    let queue = std::sync::Mutex::new(groups.into_iter().enumerate());
    let mut out: Vec<Option<SeriesOut>> = (0..count).map(|_| None).collect();
    std::thread::scope(|scope| {
        let handles: Vec<_> = (0..threads)
            .map(|_| {
                scope.spawn(|| {
                    let mut done = Vec::new();
                    loop {
                        let next = queue.lock().ok().and_then(|mut q| q.next());
                        let Some((i, g)) = next else {
                            break;
                        };
                        done.push((i, one(g, loaded, params)));
                    }
                    done
                })
            })
            .collect();
        for h in handles {
            for (i, s) in h.join().unwrap_or_default() {
                out[i] = Some(s);
            }
        }
    });
    out.into_iter().flatten().collect()
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

fn one(group: Group, loaded: &Loaded, params: &Params) -> SeriesOut {
    let Group { series: si, values } = group;
    let s = &loaded.series[si];
    let x: Vec<f64> = values.iter().map(|v| v.median).collect();
    let e: Vec<f64> = values.iter().map(|v| noise(v.mad, v.n)).collect();
    let analysis = edivisive::analyze(&x, &e, params);
    let first = values.first().map(|v| &loaded.points[v.point as usize]);
    let machine = first.and_then(|p| {
        loaded
            .machines
            .iter()
            .find(|m| m.id == p.machine_id)
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

    #[test]
    fn a_points_noise_is_its_medians_standard_error() {
        assert_eq!(noise(5.0, 1), 0.0);
        assert!((noise(1.0, 100) - 0.185_81).abs() < 1e-4);
    }
}

//! From processes to rows: filter, group, total, sort, cut.

use std::collections::HashMap;

use regex::Regex;
use serde::{Deserialize, Serialize};

pub use super::columns::SortKey;
use super::name::{NameMode, program_name};
pub use super::rows::{Group, SwapRest, Totals};
use super::scan::ProcSample;

/// What one row stands for.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, clap::ValueEnum, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum GroupBy {
    /// One row per program (see --name).
    #[default]
    Program,
    /// One row per process.
    Pid,
    /// One row per user (real uid).
    User,
    /// One row per control group: the container or systemd unit.
    Cgroup,
}

/// How processes become rows.
#[derive(Debug, Clone, Default)]
pub struct Grouping {
    pub by: GroupBy,
    pub name: NameMode,
    pub split_args: bool,
    /// Keep processes whose program name matches.
    pub filter: Option<Regex>,
    /// Keep processes of this real uid.
    pub uid: Option<u32>,
    pub sort: SortKey,
    pub reverse: bool,
    /// Keep the N rows with the largest sort key.
    pub top: Option<usize>,
    /// May look at paths named by processes (`[updated]` marks); false
    /// while running with more privilege than the user.
    pub check_replaced: bool,
}

/// Rows, the total over every kept process, and how many rows `top` hid.
pub fn group(samples: &[ProcSample], g: &Grouping) -> (Vec<Group>, Totals, u64) {
    let mut rows: Vec<Group> = Vec::new();
    let mut index: HashMap<String, usize> = HashMap::new();
    let mut users: HashMap<u32, String> = HashMap::new();
    let mut total = Totals::default();
    for s in samples {
        let uid = s.status.as_ref().and_then(|st| st.real_uid);
        if g.uid.is_some() && uid != g.uid {
            continue;
        }
        let program = program_name(s, g.name, g.split_args, g.check_replaced);
        if g.filter.as_ref().is_some_and(|re| !re.is_match(&program)) {
            continue;
        }
        let key = match g.by {
            GroupBy::Program => program.clone(),
            GroupBy::Pid => s.pid.to_string(),
            GroupBy::User => match uid {
                Some(uid) => users
                    .entry(uid)
                    .or_insert_with(|| {
                        crate::sys::user::name_of(uid).unwrap_or_else(|| uid.to_string())
                    })
                    .clone(),
                None => "?".to_string(),
            },
            GroupBy::Cgroup => s.cgroup.clone().unwrap_or_else(|| "?".to_string()),
        };
        let slot = *index.entry(key.clone()).or_insert_with(|| {
            rows.push(Group {
                name: if g.by == GroupBy::Pid {
                    program.clone()
                } else {
                    key
                },
                pid: (g.by == GroupBy::Pid).then_some(s.pid),
                ..Group::default()
            });
            rows.len() - 1
        });
        if let Some(row) = rows.get_mut(slot) {
            row.add(s);
        }
        total.add(s);
    }
    total.groups = rows.len() as u64;
    sort(&mut rows, g.sort);
    let mut hidden = 0;
    if let Some(n) = g.top {
        let cut = rows.len().saturating_sub(n);
        hidden = cut as u64;
        rows.drain(..cut);
    }
    if g.reverse {
        rows.reverse();
    }
    (rows, total, hidden)
}

fn sort(rows: &mut [Group], key: SortKey) {
    // The figure a row sorts by (`None`: by name only).
    let of = |g: &Group| match key {
        SortKey::Column(i) => g.figures.get(i),
        SortKey::Count => Some(g.processes),
        SortKey::Name => None,
    };
    rows.sort_by(|a, b| {
        of(a)
            .cmp(&of(b))
            .then_with(|| a.name.cmp(&b.name))
            .then_with(|| a.pid.cmp(&b.pid))
    });
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::mem::scan::Source;
    use crate::procfs::smaps_rollup::MemFigures;
    use crate::procfs::status::Status;

    fn proc(pid: u32, exe: &str, uid: u32, pss_kb: u64, private_kb: u64) -> ProcSample {
        ProcSample {
            pid,
            mem: MemFigures {
                rss_kb: pss_kb * 2,
                pss_kb,
                private_clean_kb: 0,
                private_dirty_kb: private_kb,
                swap_kb: 3,
                swap_pss_kb: Some(1),
            },
            source: Source::SmapsRollup,
            exe: Some(exe.as_bytes().to_vec()),
            status: Some(Status {
                name: b"c".to_vec(),
                real_uid: Some(uid),
                ..Status::default()
            }),
            comm: None,
            cmdline: None,
            cgroup: None,
            gpu: crate::mem::columns::GpuBytes::NotMeasured,
        }
    }

    fn samples() -> Vec<ProcSample> {
        vec![
            proc(1, "/bin/a", 0, 100, 60),
            proc(2, "/bin/b", 0, 10, 5),
            proc(3, "/bin/a", 4_000_000, 50, 50),
            proc(4, "/bin/c", 4_000_000, 30, 1),
        ]
    }

    #[test]
    fn groups_add_up_and_sort_ascending() {
        let (rows, total, hidden) = group(&samples(), &Grouping::default());
        let names: Vec<&str> = rows.iter().map(|r| r.name.as_str()).collect();
        assert_eq!(names, ["b", "c", "a"]);
        assert_eq!(hidden, 0);
        assert_eq!(total.processes, 4);
        assert_eq!(total.groups, 3);
        assert_eq!(total.figures.of("pss").unwrap(), 190 * 1024);
        assert_eq!(
            total.figures.of("swap").unwrap(),
            4 * 1024,
            "SwapPss, not Swap"
        );
        let a = rows.last().expect("a");
        assert_eq!(a.pids, [1, 3]);
        let f = |k| a.figures.of(k).unwrap();
        assert_eq!(f("private") + f("shared"), f("pss"));
    }

    #[test]
    fn top_reverse_uid_and_sort_keys() {
        let g = Grouping {
            top: Some(2),
            reverse: true,
            ..Grouping::default()
        };
        let (rows, total, hidden) = group(&samples(), &g);
        let names: Vec<&str> = rows.iter().map(|r| r.name.as_str()).collect();
        assert_eq!(names, ["a", "c"]);
        assert_eq!(hidden, 1);
        assert_eq!(total.processes, 4, "the total covers hidden rows");
        let g = Grouping {
            uid: Some(4_000_000),
            by: GroupBy::Pid,
            sort: SortKey::Column(0),
            ..Grouping::default()
        };
        let (rows, total, _) = group(&samples(), &g);
        assert_eq!(
            rows.iter().map(|r| r.pid).collect::<Vec<_>>(),
            [Some(4), Some(3)]
        );
        assert_eq!(total.figures.of("pss").unwrap(), 80 * 1024);
        let g = Grouping {
            sort: SortKey::Count,
            ..Grouping::default()
        };
        let (rows, _, _) = group(&samples(), &g);
        assert_eq!(rows.last().map(|r| r.name.as_str()), Some("a"));
    }

    #[test]
    fn filter_matches_the_program_name() {
        let g = Grouping {
            filter: Some(Regex::new("^[ab]$").expect("regex")),
            by: GroupBy::User,
            ..Grouping::default()
        };
        let (rows, total, _) = group(&samples(), &g);
        assert_eq!(total.processes, 3);
        let mut names: Vec<&str> = rows.iter().map(|r| r.name.as_str()).collect();
        names.sort();
        // A uid without a passwd entry shows as the number.
        assert_eq!(names, ["4000000", "root"]);
    }
}

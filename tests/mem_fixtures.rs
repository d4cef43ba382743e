//! `tally mem` on fixture trees (tests/fixtures/proc, see make.py there):
//! exact totals, odd processes, naming, grouping, options and formats.

mod common;

use std::path::{Path, PathBuf};

use assert_cmd::Command;
use predicates::prelude::*;
use serde_json::Value;

fn tree(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/proc")
        .join(name)
}

fn tally(tree_name: &str) -> Command {
    let mut cmd = common::tally();
    cmd.arg("mem").arg("--procfs").arg(tree(tree_name));
    cmd
}

fn json(tree_name: &str, extra: &[&str]) -> Value {
    let out = tally(tree_name)
        .args(["--format", "json"])
        .args(extra)
        .output()
        .expect("runs");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).expect("valid JSON")
}

fn u(v: &Value) -> u64 {
    v.as_u64().expect("a number")
}

/// Sum of every `Pss:` line of a process's rollup, or of its full smaps.
fn pss_kb_from_files(tree_name: &str, pid: u64) -> u64 {
    let dir = tree(tree_name).join(pid.to_string());
    let text = std::fs::read_to_string(dir.join("smaps_rollup"))
        .or_else(|_| std::fs::read_to_string(dir.join("smaps")))
        .expect("a memory file");
    text.lines()
        .filter_map(|l| l.strip_prefix("Pss:"))
        .map(|rest| {
            rest.split_whitespace()
                .next()
                .and_then(|n| n.parse::<u64>().ok())
                .expect("a kB figure")
        })
        .sum()
}

fn names(report: &Value) -> Vec<String> {
    report["groups"]
        .as_array()
        .expect("groups")
        .iter()
        .map(|g| g["name"].as_str().expect("name").to_string())
        .collect()
}

/// Every invariant a report must hold: shared = PSS − private per row,
/// rows add up to the total, pids match the counts.
fn check_invariants(r: &Value) {
    assert_eq!(r["schema_version"], 2);
    let groups = r["groups"].as_array().expect("groups");
    let (mut pss, mut private, mut shared, mut swap, mut procs) = (0, 0, 0, 0, 0);
    for g in groups {
        assert_eq!(
            u(&g["private_bytes"]) + u(&g["shared_bytes"]),
            u(&g["pss_bytes"]),
            "shared = PSS - private in {g}"
        );
        assert_eq!(
            u(&g["processes"]),
            g["pids"].as_array().expect("pids").len() as u64
        );
        assert_eq!(u(&g["pss_bytes"]) % 1024, 0, "whole kB, no rounding");
        pss += u(&g["pss_bytes"]);
        private += u(&g["private_bytes"]);
        shared += u(&g["shared_bytes"]);
        swap += u(&g["swap_bytes"]);
        procs += u(&g["processes"]);
    }
    if u(&r["hidden_groups"]) == 0 {
        let t = &r["total"];
        assert_eq!(u(&t["pss_bytes"]), pss);
        assert_eq!(u(&t["private_bytes"]), private);
        assert_eq!(u(&t["shared_bytes"]), shared);
        assert_eq!(u(&t["swap_bytes"]), swap);
        assert_eq!(u(&t["processes"]), procs);
        assert_eq!(u(&t["groups"]), groups.len() as u64);
    }
}

#[test]
fn typical_total_equals_the_sum_of_pss_to_the_kb() {
    let r = json("typical", &[]);
    check_invariants(&r);
    let pids: Vec<u64> = r["groups"]
        .as_array()
        .expect("groups")
        .iter()
        .flat_map(|g| g["pids"].as_array().expect("pids").iter().map(u))
        .collect();
    assert_eq!(pids.len(), 4, "four processes in the tree");
    let expected_kb: u64 = pids.iter().map(|&p| pss_kb_from_files("typical", p)).sum();
    // 249 + 249 + 14,603 + 562 kB, read off the fixture files.
    assert_eq!(expected_kb, 15_663);
    assert_eq!(u(&r["total"]["pss_bytes"]), expected_kb * 1024);
    assert_eq!(r["swap_source"], "SwapPss");
    assert_eq!(u(&r["read_from_smaps"]), 0);
    assert_eq!(
        names(&r),
        ["sleep", "bash", "python3.11"],
        "ascending by RAM used"
    );
    assert_eq!(r["groups"][0]["pids"], serde_json::json!([101, 102]));
}

#[test]
fn odd_processes_are_skipped_and_counted_never_fatal() {
    let r = json("odd", &[]);
    check_invariants(&r);
    let s = &r["skipped"];
    assert_eq!(u(&s["ended"]), 2, "400 (no smaps_rollup) and 401 (no exe)");
    assert_eq!(u(&s["no_memory"]), 2, "kernel thread 2 and zombie 300");
    assert_eq!(u(&s["denied"]), 0);
    assert_eq!(u(&r["total"]["processes"]), 5);
    let mut n = names(&r);
    n.sort();
    assert_eq!(
        n,
        [
            "my prog (x)\\x0asecond line",
            "python3.11",
            "server [deleted]",
            "sh [updated]",
            "sleep"
        ]
    );
    // 600 is read from the full smaps (THPeligible, ProtectionKey lines).
    assert_eq!(u(&r["read_from_smaps"]), 1);
    let expected_kb: u64 = [200, 500, 501, 600, 700]
        .iter()
        .map(|&p| pss_kb_from_files("odd", p))
        .sum();
    assert_eq!(u(&r["total"]["pss_bytes"]), expected_kb * 1024);
    // 700 has no SwapPss and 2048 kB of Swap; 600 has no SwapPss either.
    assert_eq!(r["swap_source"], "Swap");
    assert_eq!(u(&r["total"]["swap_bytes"]), 2048 * 1024);
}

#[test]
fn smaps_without_rollup_on_an_old_kernel() {
    let r = json("old-kernel", &[]);
    check_invariants(&r);
    assert_eq!(u(&r["read_from_smaps"]), 2);
    assert_eq!(r["swap_source"], "Swap");
    let expected_kb = pss_kb_from_files("old-kernel", 11) + pss_kb_from_files("old-kernel", 12);
    assert_eq!(u(&r["total"]["pss_bytes"]), expected_kb * 1024);
    tally("old-kernel")
        .args(["--unit", "m"])
        .assert()
        .success()
        .stdout(predicate::str::contains("Swap* MiB"))
        .stdout(predicate::str::contains("no SwapPss"));
}

#[test]
fn name_with_a_newline_stays_on_one_line() {
    let out = tally("odd").arg("--by").arg("pid").output().expect("runs");
    let text = String::from_utf8(out.stdout).expect("utf-8");
    let line = text
        .lines()
        .find(|l| l.contains("my prog (x)"))
        .expect("the odd name");
    assert!(
        line.ends_with("my prog (x)\\x0asecond line [200]"),
        "{line}"
    );
    // Header, 5 rows, rule, total, footnote.
    assert_eq!(text.lines().count(), 9, "{text}");
}

#[test]
fn naming_exe_comm_argv0_and_split_args() {
    let r = json("odd", &["--name", "comm", "--pid", "200"]);
    assert_eq!(
        names(&r),
        ["my prog (x)\\x0ase"],
        "comm as the kernel escapes it"
    );
    let r = json("odd", &["--name", "argv0", "--pid", "200"]);
    assert_eq!(names(&r), ["my"], "argv0 up to its first space");
    let r = json("odd", &["--split-args", "--pid", "200"]);
    assert_eq!(names(&r), ["my prog (x)\\x0asecond line --flag"]);
    let r = json("typical", &["--name", "comm", "--split-args"]);
    let n = names(&r);
    assert!(n.contains(&"sleep 1000".to_string()), "{n:?}");
    assert!(n.contains(&"sleep 1001".to_string()), "{n:?}");
    assert!(
        n.iter().any(|x| x.starts_with("python3 -c import time")),
        "{n:?}"
    );
    let r = json("typical", &["--name", "argv0"]);
    let mut n = names(&r);
    n.sort();
    assert_eq!(n, ["bash", "python3", "sleep"]);
}

#[test]
fn group_by_user_cgroup_and_pid() {
    let r = json("typical", &["--by", "user"]);
    check_invariants(&r);
    assert_eq!(names(&r), ["root", "nobody"]);
    assert_eq!(u(&r["groups"][1]["processes"]), 1);
    let r = json("typical", &["--by", "cgroup"]);
    check_invariants(&r);
    let mut n = names(&r);
    n.sort();
    assert_eq!(
        n,
        [
            "/system.slice/cron.service",
            "/user.slice/user-0.slice/session-1.scope"
        ]
    );
    let r = json("typical", &["--by", "pid"]);
    check_invariants(&r);
    assert_eq!(r["groups"].as_array().expect("groups").len(), 4);
    assert!(
        r["groups"]
            .as_array()
            .expect("groups")
            .iter()
            .all(|g| g["pid"].is_u64())
    );
}

#[test]
fn filters_pid_user_and_regex() {
    let r = json("typical", &["--filter", "^sleep$"]);
    assert_eq!(u(&r["total"]["processes"]), 2);
    let r = json("typical", &["--pid", "101,103"]);
    assert_eq!(u(&r["total"]["processes"]), 2);
    let r = json("typical", &["--pid", "101", "--pid", "999"]);
    assert_eq!(u(&r["total"]["processes"]), 1);
    assert_eq!(r["warnings"], serde_json::json!(["no process 999"]));
    for user in ["nobody", "65534"] {
        let r = json("typical", &["--user", user]);
        assert_eq!(u(&r["total"]["processes"]), 1, "--user {user}");
        assert_eq!(names(&r), ["python3.11"]);
    }
}

#[test]
fn sort_reverse_top_and_total_only() {
    let r = json("typical", &["--sort", "count"]);
    assert_eq!(names(&r).last().map(String::as_str), Some("sleep"));
    let r = json("typical", &["--sort", "name"]);
    assert_eq!(names(&r), ["bash", "python3.11", "sleep"]);
    let r = json("typical", &["--reverse"]);
    assert_eq!(names(&r), ["python3.11", "bash", "sleep"]);
    let r = json("typical", &["--top", "1"]);
    check_invariants(&r);
    assert_eq!(names(&r), ["python3.11"]);
    assert_eq!(u(&r["hidden_groups"]), 2);
    assert_eq!(u(&r["total"]["processes"]), 4, "the total still covers all");
    let out = tally("typical").arg("--total-only").output().expect("runs");
    let text = String::from_utf8(out.stdout).expect("utf-8");
    // ps_mem's -t: one figure, the RAM used by every process counted.
    assert_eq!(text, "15.3 MiB\n");
    let out = tally("typical").arg("-t").output().expect("runs");
    assert_eq!(String::from_utf8_lossy(&out.stdout), "15.3 MiB\n");
    let out = tally("typical").output().expect("runs");
    let text = String::from_utf8(out.stdout).expect("utf-8");
    assert!(text.contains("TOTAL (4 processes, 3 programs)"), "{text}");
}

#[test]
fn units() {
    let k = tally("typical")
        .args(["--unit", "k", "--total-only"])
        .output()
        .expect("runs");
    assert!(String::from_utf8_lossy(&k.stdout).contains("15,663"));
    let b = tally("typical")
        .args(["--unit", "b", "--total-only"])
        .output()
        .expect("runs");
    assert!(String::from_utf8_lossy(&b.stdout).contains("16,038,912"));
    let g = tally("typical")
        .args(["--unit", "g", "--total-only"])
        .output()
        .expect("runs");
    assert!(String::from_utf8_lossy(&g.stdout).contains("0.0"));
    let h = tally("typical")
        .args(["--human", "--total-only"])
        .output()
        .expect("runs");
    assert!(String::from_utf8_lossy(&h.stdout).contains("15.3 MiB"));
    let csv = tally("typical")
        .args(["--format", "csv"])
        .output()
        .expect("runs");
    let text = String::from_utf8_lossy(&csv.stdout).into_owned();
    assert!(
        text.starts_with(
            "program,processes,private_bytes,shared_bytes,pss_bytes,swap_bytes,rss_bytes,\
             swap_not_attributed_bytes\n"
        ),
        "{text}"
    );
    assert!(
        text.ends_with("TOTAL,4,15114240,924672,16038912,0,23715840,0\n"),
        "{text}"
    );
}

/// The JSON header's values that change with the machine, the moment and
/// the release, replaced by their names.
fn redact_json_header(text: &str) -> String {
    text.lines()
        .map(|line| {
            for key in ["tally_version", "timestamp", "hostname", "kernel"] {
                if let Some(rest) = line.strip_prefix(&format!("  \"{key}\": ")) {
                    let comma = if rest.ends_with(',') { "," } else { "" };
                    return format!("  \"{key}\": \"[{key}]\"{comma}\n");
                }
            }
            format!("{line}\n")
        })
        .collect()
}

#[test]
fn output_formats_snapshot() {
    for format in ["human", "csv", "markdown", "prometheus", "json"] {
        let out = tally("typical")
            .args(["--format", format])
            .output()
            .expect("runs");
        assert!(out.status.success());
        insta::assert_snapshot!(
            format!("typical_{format}"),
            redact_json_header(&String::from_utf8_lossy(&out.stdout))
        );
    }
    let out = tally("odd").args(["--by", "pid"]).output().expect("runs");
    insta::assert_snapshot!("odd_by_pid_human", String::from_utf8_lossy(&out.stdout));
}

#[test]
fn human_fits_columns_by_cutting_names_in_the_middle_never_the_total() {
    let out = tally("odd")
        .args(["--by", "pid"])
        .env("COLUMNS", "70")
        .output()
        .expect("runs");
    assert!(out.status.success());
    let text = String::from_utf8_lossy(&out.stdout);
    let lines: Vec<&str> = text.lines().collect();
    let total = lines
        .iter()
        .position(|l| l.contains("TOTAL ("))
        .expect("a TOTAL line");
    // The table rows fit; the pid of a cut name stays.
    assert!(
        lines[..total].iter().all(|l| l.chars().count() <= 70),
        "{text}"
    );
    assert!(
        lines
            .iter()
            .any(|l| l.contains('…') && l.ends_with("[500]")),
        "{text}"
    );
    // The TOTAL line keeps every word: on a terminal too narrow for it
    // it goes on in the lines under it, broken at spaces, never cut.
    let rest = lines[total..]
        .iter()
        .take_while(|l| !l.starts_with('*'))
        .map(|l| l.trim())
        .collect::<Vec<_>>()
        .join(" ");
    assert!(rest.ends_with("(this kernel has no SwapPss)"), "{text}");
    assert!(lines.iter().all(|l| l.chars().count() <= 70), "{text}");
    // Without a width nothing is cut.
    let plain = tally("odd").args(["--by", "pid"]).output().expect("runs");
    assert!(!String::from_utf8_lossy(&plain.stdout).contains('…'));
}

#[test]
fn bad_input_gets_a_clear_error() {
    common::tally()
        .args(["mem", "--procfs", "/nonexistent/tally-procfs"])
        .assert()
        .code(1)
        .stderr(predicate::str::contains(
            "cannot list processes in /nonexistent/tally-procfs",
        ))
        .stderr(predicate::str::contains("--procfs"));
    let empty = tempfile::tempdir().expect("tempdir");
    common::tally()
        .args(["mem", "--procfs"])
        .arg(empty.path())
        .assert()
        .code(1)
        .stderr(predicate::str::contains("no process directories"));
    tally("typical")
        .args(["--filter", "("])
        .assert()
        .code(2)
        .stderr(predicate::str::contains("not a valid regular expression"));
    tally("typical")
        .args(["--user", "no-such-user-tally"])
        .assert()
        .code(2)
        .stderr(predicate::str::contains(
            "no user named `no-such-user-tally`",
        ));
    for bad in [
        ["--watch", "0"],
        ["--top", "0"],
        ["--pid", "x"],
        ["--sort", "size"],
    ] {
        tally("typical").args(bad).assert().code(2);
    }
    tally("typical")
        .args(["--unit", "k", "--human"])
        .assert()
        .code(2);
}

#[test]
fn cgroup_v1_only_names_the_systemd_unit() {
    let r = json("old-kernel", &["--by", "cgroup"]);
    assert_eq!(names(&r), ["/system.slice/old.service"]);
    assert_eq!(u(&r["groups"][0]["processes"]), 2);
}

fn group<'a>(r: &'a Value, name: &str) -> Option<&'a Value> {
    r["groups"]
        .as_array()
        .expect("groups")
        .iter()
        .find(|g| g["name"] == name)
}

#[test]
fn split_args_keeps_titles_padded_with_nuls_apart() {
    // postgres and nginx rewrite their arguments as a title and pad the
    // rest with NULs: the padding is no argument.
    let r = json("names", &["--split-args", "--filter", "^(postgres|nginx) "]);
    check_invariants(&r);
    for (name, processes) in [
        ("postgres 15/main: checkpointer", 1),
        ("postgres 15/main: walwriter", 1),
        ("postgres 15/main: background writer", 1),
        (
            "postgres -D /var/lib/postgresql/15/main -c \
             config_file=/etc/postgresql/15/main/postgresql.conf",
            1,
        ),
        ("nginx worker process", 2),
        (
            "nginx master process /usr/sbin/nginx -g daemon on; master_process on;",
            1,
        ),
    ] {
        let g = group(&r, name).unwrap_or_else(|| panic!("no row {name:?}: {:?}", names(&r)));
        assert_eq!(u(&g["processes"]), processes, "{name}");
    }
    assert_eq!(u(&r["total"]["groups"]), 6, "{:?}", names(&r));
}

#[test]
fn program_started_through_a_link_is_named_as_started() {
    // Debian's redis-server is a link to redis-check-rdb.
    let r = json("names", &[]);
    let n = names(&r);
    assert!(n.contains(&"redis-server".to_string()), "{n:?}");
    assert!(!n.iter().any(|x| x.contains("redis-check-rdb")), "{n:?}");
    let r = json("names", &["--filter", "^redis-server$"]);
    assert_eq!(u(&r["total"]["processes"]), 1);
    let r = json("names", &["--filter", "^redis-server ", "--split-args"]);
    assert_eq!(names(&r), ["redis-server 127.0.0.1:6379"]);
    // A process that renamed itself keeps its executable's name, and a
    // comm that starts the executable's file name does not replace it.
    let r = json("names", &["--pid", "331,332"]);
    let mut n = names(&r);
    n.sort();
    assert_eq!(n, ["firefox-esr", "python3.11"]);
    let r = json("names", &["--filter", "^postgres$"]);
    assert_eq!(u(&r["total"]["processes"]), 4);
    // The typical tree names as before.
    let r = json("typical", &[]);
    assert_eq!(names(&r), ["sleep", "bash", "python3.11"]);
}

#[test]
fn swap_of_shared_memory_is_reported_as_not_attributed() {
    // meminfo: 1,048,572 kB of swap, 611,324 kB free: 437,248 kB in use;
    // the processes' SwapPss: 100 + 3 × 50 + 2 × 24 MiB = 305,152 kB.
    let rest_kb = 437_248 - 305_152;
    let r = json("names", &[]);
    let t = &r["total"];
    assert_eq!(u(&t["swap_bytes"]), 305_152 * 1024);
    let rest = &t["swap_not_attributed"];
    assert_eq!(u(&rest["bytes"]), rest_kb * 1024);
    assert_eq!(u(&rest["swap_used_bytes"]), 437_248 * 1024);
    assert!(rest.get("unavailable").is_none());
    // A filter keeps rows, not the machine's swap: still known.
    let r = json("names", &["--filter", "^nginx$"]);
    assert_eq!(
        u(&r["total"]["swap_not_attributed"]["bytes"]),
        rest_kb * 1024
    );
    let text = |args: &[&str]| {
        let out = tally("names").args(args).output().expect("runs");
        assert!(out.status.success());
        String::from_utf8(out.stdout).expect("utf-8")
    };
    let human = text(&[]);
    assert!(
        human.contains(
            "TOTAL (11 processes, 6 programs); swap not attributed to a process: 129.0 MiB"
        ),
        "{human}"
    );
    let csv = text(&["--format", "csv"]);
    assert!(
        csv.lines()
            .next()
            .is_some_and(|h| h.ends_with(",swap_not_attributed_bytes"))
    );
    assert!(csv.ends_with(&format!(",{}\n", rest_kb * 1024)), "{csv}");
    let md = text(&["--format", "markdown"]);
    assert!(md.trim_end().ends_with("| 129.0 |"), "{md}");
    let prom = text(&["--format", "prometheus"]);
    assert!(
        prom.contains(&format!(
            "tally_mem_total_swap_not_attributed_bytes {}\n",
            rest_kb * 1024
        )),
        "{prom}"
    );
    // Not every process read: unavailable, and why, in every format.
    let r = json("names", &["--pid", "301"]);
    let rest = &r["total"]["swap_not_attributed"];
    assert!(rest["bytes"].is_null());
    assert_eq!(rest["unavailable"], "--pid reads only some processes");
    let human = text(&["--pid", "301"]);
    assert!(
        human.contains(
            "swap not attributed to a process: unavailable (--pid reads only some processes)"
        ),
        "{human}"
    );
    let csv = text(&["--pid", "301", "--format", "csv"]);
    assert!(
        csv.trim_end()
            .ends_with(",unavailable: --pid reads only some processes"),
        "{csv}"
    );
    let prom = text(&["--pid", "301", "--format", "prometheus"]);
    assert!(!prom.contains("swap_not_attributed"), "{prom}");
    // Without SwapPss it cannot be told either.
    let r = json("odd", &[]);
    assert_eq!(
        r["total"]["swap_not_attributed"]["unavailable"],
        "this kernel has no SwapPss"
    );
    // A machine without swap: nothing to attribute, nothing said.
    let r = json("typical", &[]);
    assert_eq!(u(&r["total"]["swap_not_attributed"]["bytes"]), 0);
    assert!(!text(&["--total-only"]).is_empty());
    let out = tally("typical").arg("--total-only").output().expect("runs");
    assert!(!String::from_utf8_lossy(&out.stdout).contains("swap not attributed"));
}

#[test]
fn non_utf8_names_keep_every_byte_in_valid_json() {
    for args in [
        &["--by", "pid", "--split-args"][..],
        &["--by", "cgroup"][..],
        &["--name", "argv0"][..],
    ] {
        let r = json("names", args);
        check_invariants(&r);
    }
    let r = json("names", &["--pid", "341", "--split-args"]);
    assert_eq!(names(&r), ["app\\xff --name=\\xfe"]);
    let r = json("names", &["--pid", "341", "--by", "cgroup"]);
    assert_eq!(names(&r), ["/system.slice/caf\\xe9.service"]);
    let out = tally("names")
        .args(["--by", "pid", "--split-args"])
        .output()
        .expect("runs");
    let text = String::from_utf8(out.stdout).expect("human output is UTF-8");
    assert!(text.contains("app\\xff --name=\\xfe [341]"), "{text}");
}

#[test]
fn a_procfs_path_with_odd_bytes_is_escaped_in_the_error() {
    use std::os::unix::ffi::OsStrExt;
    let path = std::ffi::OsStr::from_bytes(b"/nonexistent/tally-\xff\x1b[31m-procfs");
    let out = common::tally()
        .args(["mem", "--procfs"])
        .arg(path)
        .output()
        .expect("runs");
    assert_eq!(out.status.code(), Some(1));
    let stderr = String::from_utf8(out.stderr).expect("UTF-8 message");
    assert!(!stderr.contains('\x1b'), "{stderr:?}");
    assert!(stderr.contains("tally-\\xff\\x1b[31m-procfs"), "{stderr:?}");
}

#[test]
fn unwritable_stderr_keeps_the_exit_codes() {
    let full = || std::fs::OpenOptions::new().write(true).open("/dev/full");
    let Ok(_) = full() else {
        common::skip!("no /dev/full");
    };
    let code = |args: &[&str]| {
        common::tally_std()
            .args(args)
            .stdout(std::process::Stdio::null())
            .stderr(full().expect("/dev/full"))
            .status()
            .expect("runs")
            .code()
    };
    let typical = tree("typical");
    let typical = typical.to_str().expect("UTF-8 path");
    // A note at the end (a PID that does not exist), then success.
    assert_eq!(
        code(&["mem", "--procfs", typical, "--pid", "101,999"]),
        Some(0)
    );
    assert_eq!(
        code(&["mem", "--procfs", "/nonexistent/tally-procfs"]),
        Some(1)
    );
    assert_eq!(
        code(&["mem", "--procfs", typical, "--user", "no-such-user-tally"]),
        Some(2)
    );
    assert_eq!(code(&["mem", "--procfs", typical, "--top", "0"]), Some(2));
}

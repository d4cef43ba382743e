//! A user's first hour, round three: each test is named after what misled
//! or annoyed a new user, and runs the binary under test ($TALLY_BIN).
//! Counts, structure and invariants only: no test asserts a duration.

mod common;

use std::path::{Path, PathBuf};
use std::process::{Output, Stdio};
use std::time::{Duration, Instant};

use common::{command, tally, tally_std};
use serde_json::Value;

fn scratch(name: &str) -> tempfile::TempDir {
    tempfile::Builder::new()
        .prefix(&format!("first-hour-{name}-"))
        .tempdir_in(env!("CARGO_TARGET_TMPDIR"))
        .expect("scratch dir")
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

/// `tally ARGS` in `dir`: its output.
fn run_in(dir: &Path, args: &[&str]) -> Output {
    tally_std()
        .args(args)
        .current_dir(dir)
        .output()
        .expect("tally runs")
}

/// `tally compare ARGS --format json` in `dir`.
fn compare_json(dir: &Path, args: &[&str]) -> Value {
    let out = tally_std()
        .arg("compare")
        .args(args)
        .args(["--format", "json"])
        .current_dir(dir)
        .output()
        .expect("tally runs");
    serde_json::from_slice(&out.stdout)
        .unwrap_or_else(|e| panic!("no JSON ({e}): {}", text(&out.stderr)))
}

fn versus<'a>(r: &'a Value, i: usize, figure: &str) -> &'a Value {
    r["commands"][i]["versus_reference"]
        .as_array()
        .expect("versus_reference")
        .iter()
        .find(|v| v["figure"] == figure)
        .unwrap_or_else(|| panic!("no {figure} for command {i}"))
}

/// Item 1: "xz … wall time: the difference hangs on outliers (#3 run 3):
/// without them the ratio is 41.8× [0.0, inf], not beyond 1%": runs
/// dropped until no interval could be made were taken as evidence.
#[test]
fn outliers_that_leave_too_few_runs_for_an_interval_are_not_said_to_decide_a_difference() {
    let dir = scratch("outliers");
    std::fs::write(dir.path().join("count"), "0").unwrap();
    // The third measured run (the warm-up is the counter's 0) is one
    // slow outlier among 0.5 s runs, by construction; `true` stays far
    // below them even on a loaded machine.
    let slow = "sh -c 'n=$(cat count); echo $((n+1)) > count; \
                if [ $n = 3 ]; then sleep 1.5; else sleep 0.5; fi'";
    let r = compare_json(dir.path(), &["-w", "1", "-r", "6", "true", slow]);
    let runs: Vec<u64> = r["commands"][1]["runs"]
        .as_array()
        .unwrap()
        .iter()
        .map(|x| x["wall_ns"].as_u64().unwrap())
        .collect();
    let mut others: Vec<u64> = runs
        .iter()
        .copied()
        .enumerate()
        .filter(|(i, _)| *i != 2)
        .map(|x| x.1)
        .collect();
    others.sort_unstable();
    assert!(
        runs[2] > 2 * others[others.len() / 2],
        "an outlier by construction: {runs:?}"
    );
    assert_eq!(versus(&r, 1, "wall_ns")["verdict"], "higher", "{r}");
    for w in r["warnings"].as_array().unwrap() {
        let w = w.as_str().unwrap();
        assert!(
            !(w.contains("hangs on outliers") && w.contains("inf")),
            "an interval that cannot be made is no evidence: {w}"
        );
        assert!(
            !(w.contains("wall time: the difference hangs on outliers")),
            "a 100× difference does not hang on one outlier: {w}"
        );
    }
}

/// Item 2: `bench --quick` gave three clocks for one core (4,035, 3918 and
/// 3,094 MHz) and from them i64 mul latency 2.29 cycles where 3 is its
/// value by construction.
#[test]
fn bench_quick_has_one_core_clock_and_says_when_its_check_fails() {
    let out = tally()
        .args(["bench", "--quick", "timer", "ops"])
        .env("COLUMNS", "400")
        .output()
        .expect("tally bench runs");
    assert!(out.status.success(), "{}", text(&out.stderr));
    let report = text(&out.stdout);
    // Every number before "MHz" on a line that names the core clock.
    let mhz = |line: &str, after: &str| -> Option<f64> {
        let rest = line.split(after).nth(1)?;
        let number: String = rest
            .trim_start()
            .chars()
            .take_while(|c| c.is_ascii_digit() || *c == ',' || *c == '.')
            .filter(|c| *c != ',')
            .collect();
        number.parse().ok()
    };
    let mut clocks = Vec::new();
    for line in report.lines() {
        for key in ["core ", "core frequency", "core runs at", "the core clock,"] {
            if let Some(v) = mhz(line, key)
                && (line.contains("MHz") || key == "core frequency")
                && v > 100.0
            {
                clocks.push((key, v, line.to_string()));
            }
        }
    }
    let header = clocks
        .iter()
        .find(|c| c.0 == "core ")
        .unwrap_or_else(|| panic!("no core clock in the header:\n{report}"));
    assert!(
        clocks.iter().any(|c| c.0 == "the core clock,"),
        "ops gives its clock:\n{report}"
    );
    for (_, v, line) in &clocks {
        assert_eq!(*v, header.1, "one clock in every line: {line}\n{report}");
    }
    // The check: i64 mul latency within 10% of its 3 cycles, or flagged.
    let mul = report
        .lines()
        .find(|l| l.trim_start().starts_with("i64 mul latency"))
        .expect("i64 mul latency row");
    let cycles: f64 = mul
        .split_whitespace()
        .rev()
        .nth(1)
        .and_then(|c| c.parse().ok())
        .unwrap_or_else(|| panic!("no cycles in {mul}"));
    let flagged = report.contains("clock check FAILED: i64 mul latency is");
    assert!(
        (cycles / 3.0 - 1.0).abs() <= 0.10 || flagged,
        "{cycles} cycles and no failed check:\n{report}"
    );
    assert!(!((cycles / 3.0 - 1.0).abs() <= 0.10 && flagged), "{report}");
}

/// Item 5: `--export-json FILE` and `--export-csv FILE` wrote tally's schema:
/// hyperfine's scripts failed on `json.load(f)["results"]`, and the CSV's
/// `median` held `wall_ns` in one row and `cpu_us` in the next.
#[test]
fn hyperfines_export_spellings_give_hyperfines_shapes() {
    let dir = scratch("exports");
    let p = |n: &str| dir.path().join(n);
    tally()
        .args(["compare", "-N", "-r", "3", "true", "sleep 0.01"])
        .arg("--export-json")
        .arg(p("h.json"))
        .arg("--export-csv")
        .arg(p("h.csv"))
        .arg("--export-markdown")
        .arg(p("h.md"))
        .assert()
        .success();
    let json: Value = serde_json::from_str(&std::fs::read_to_string(p("h.json")).unwrap()).unwrap();
    let results = json["results"].as_array().expect("results[]");
    assert_eq!(results.len(), 2);
    for r in results {
        assert_eq!(r["times"].as_array().map(Vec::len), Some(3), "{r}");
        assert!(
            r["mean"].as_f64().is_some_and(|m| m > 0.0 && m < 10.0),
            "seconds: {r}"
        );
    }
    let csv = std::fs::read_to_string(p("h.csv")).unwrap();
    let mut lines = csv.lines();
    assert_eq!(
        lines.next(),
        Some("command,mean,stddev,median,user,system,min,max")
    );
    let rows: Vec<&str> = lines.collect();
    assert_eq!(rows.len(), 2, "one row per command: {csv}");
    for row in rows {
        let median: f64 = row.split(',').nth(3).unwrap().parse().unwrap();
        assert!(
            median > 0.0 && median < 10.0,
            "the median wall time, seconds: {row}"
        );
    }
    let md = std::fs::read_to_string(p("h.md")).unwrap();
    assert!(
        md.starts_with("| Command | Mean [ms] | Min [ms] | Max [ms] | Relative |"),
        "{md}"
    );
    // Commands that are not timed keep tally's own shapes.
    let out = run_in(dir.path(), &["mem", "--export-json", "m.json"]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let mem: Value = serde_json::from_str(&std::fs::read_to_string(p("m.json")).unwrap()).unwrap();
    assert!(mem["groups"].is_array(), "{mem}");
}

/// Item 6: The compare page's legend said "dot: ratio of medians" beside the
/// Hodges–Lehmann estimate (medians of 1,568 and 1,604 KiB labelled
/// 1.008×). Also 16: the table cut "same within" and repeated a cut
/// command label on every row. Pictures: see the closing note.
#[test]
fn the_compare_page_says_what_its_dot_is_and_cuts_no_verdict() {
    let out = tally()
        .args([
            "compare",
            "-N",
            "-r",
            "6",
            "true",
            "sleep 0.01",
            "--html",
            "-",
        ])
        .args(["--threshold", "50%"])
        .output()
        .expect("tally runs");
    assert!(out.status.success(), "{}", text(&out.stderr));
    let page = text(&out.stdout);
    assert!(page.contains("dot: the ratio, Hodges–Lehmann"), "legend");
    assert!(page.contains("(not the ratio of the medians)"), "legend");
    assert!(!page.contains("dot: ratio of medians"), "the old legend");
    let table = page
        .split("<table class=\"ratios\">")
        .nth(1)
        .expect("ratio table");
    let table = table.split("</table>").next().unwrap();
    // Each verdict whole: a same-within verdict names its threshold.
    if table.contains("same within") {
        assert!(table.contains("same within 50%"), "{table}");
    }
    // The command column holds numbers; the names are listed once above.
    assert!(!table.contains('…'), "nothing cut: {table}");
    assert!(
        page.contains("<p>Commands: #1 <code>true</code>"),
        "key of the commands"
    );
}

/// Item 7: `-r 3` and `-r 5`, the habit for slow commands, gave every figure
/// "1.04× [0.00, inf] too few runs (need 6)" and nothing else.
#[test]
fn three_runs_give_medians_ranges_whether_they_overlap_and_the_runs_a_verdict_needs() {
    let dir = scratch("few");
    let out = run_in(
        dir.path(),
        &["compare", "-N", "-r", "3", "sleep 0.01", "sleep 0.3"],
    );
    assert!(out.status.success(), "{}", text(&out.stderr));
    let human = text(&out.stdout);
    assert!(!human.contains("[0.00, inf]"), "{human}");
    assert!(human.contains("median (range)"), "{human}");
    let wall: Vec<&str> = human
        .lines()
        .skip_while(|l| *l != "wall time")
        .skip(1)
        .take(2)
        .collect();
    assert!(
        wall.iter()
            .any(|l| l.contains("too few runs (need ") && l.contains("): ranges apart")),
        "{human}"
    );
    assert!(
        wall.iter().all(|l| l.contains(" … ")),
        "each row its range: {human}"
    );
    // Paragraphs are wrapped: read them as one line.
    let flat = human.split_whitespace().collect::<Vec<_>>().join(" ");
    assert!(
        flat.contains("ranges apart (ratio of medians): wall time"),
        "{human}"
    );
    assert!(
        flat.contains("the ranges of a command and itself lie apart by chance once in 10"),
        "{human}"
    );
    // No verdict claimed: the JSON says too few runs, and the ranges.
    let r = compare_json(dir.path(), &["-N", "-r", "3", "sleep 0.01", "sleep 0.3"]);
    let i = if r["reference"] == 0 { 1 } else { 0 };
    let v = versus(&r, i, "wall_ns");
    assert_eq!(v["verdict"], "too-few-runs");
    assert_eq!(v["ranges_overlap"], false);
    // More than these 3 (how many more, the family's size sets: 5 of each
    // reach 2 in C(10, 5) = 0.008, 6 of each 0.002).
    assert!(v["runs_needed"].as_u64().is_some_and(|n| n > 3), "{v}");
}

/// Item 8: `compare 'cmd'` with one command was refused ("use tally run -n");
/// `hyperfine 'cmd'` is the commonest call there is.
#[test]
fn compare_with_one_command_gives_hyperfines_summary() {
    let out = tally()
        .args(["compare", "-N", "-r", "3", "sleep 0.01"])
        .output()
        .expect("tally runs");
    assert!(out.status.success(), "{}", text(&out.stderr));
    let human = text(&out.stdout);
    assert!(human.contains("wall time (mean ± σ):"), "{human}");
    assert!(human.contains("[user: "), "{human}");
    assert!(human.contains("range (min … max):"), "{human}");
    assert!(human.contains("3 runs"), "{human}");
    assert!(
        !human.contains("reference"),
        "nothing to compare with: {human}"
    );
}

/// Item 9: All-zero figures read "major faults 0 / 0 — undecided", identical
/// counts "voluntary switches 1 / 1 1.00× [1.00, 9.00] undecided (over
/// 10,000 runs)", beside other all-zero figures said to be unchanged.
#[test]
fn figures_whose_medians_did_not_move_share_the_unchanged_line() {
    let dir = scratch("still");
    let args = ["-N", "-r", "10", "sleep 0.01", "sleep 0.05"];
    let out = run_in(dir.path(), &[&["compare"][..], &args[..]].concat());
    assert!(out.status.success(), "{}", text(&out.stderr));
    let human = text(&out.stdout);
    // A block is a figure's label on a line of its own, its rows under it.
    let rows = |label: &str| -> Vec<String> {
        human
            .lines()
            .skip_while(|l| *l != label)
            .skip(1)
            .take_while(|l| l.starts_with("  #"))
            .map(String::from)
            .collect()
    };
    for fig in tally::run::report::FIGURES {
        if fig.headline || !human.lines().any(|l| l == fig.label) {
            continue;
        }
        let rows = rows(fig.label);
        assert!(
            rows.iter()
                .any(|r| ["slower", "faster", "less", "more", "ranges apart"]
                    .iter()
                    .any(|w| r.contains(w))),
            "a block for a figure that does not differ: {}\n{human}",
            fig.label
        );
    }
    let unchanged = human
        .lines()
        .find(|l| l.starts_with("unchanged:"))
        .unwrap_or_else(|| panic!("{human}"));
    assert!(unchanged.contains("major faults (0)"), "{human}");
    assert!(
        !human.contains("undecided (over 10,000 runs)") || human.contains("--all-figures"),
        "{human}"
    );
    // --all-figures shows every block.
    let all = run_in(
        dir.path(),
        &[&["compare", "--all-figures"][..], &args[..]].concat(),
    );
    assert!(
        text(&all.stdout).lines().any(|l| l == "minor faults"),
        "{}",
        text(&all.stdout)
    );
}

/// Item 11: The gate's Markdown said "+4090.3%" where the human report said
/// "41.9×"; a row "other waits | 0µs | 253.0µs | — | | slower" had no
/// ratio.
#[test]
fn ratios_read_in_one_unit_in_every_format() {
    let dir = scratch("unit");
    for format in ["human", "markdown"] {
        let out = run_in(
            dir.path(),
            &[
                "compare",
                "-N",
                "-r",
                "8",
                "--fail-on",
                "wall=5%",
                "true",
                "sleep 0.05",
                "--format",
                format,
            ],
        );
        let report = text(&out.stdout);
        assert!(report.contains('×'), "{report}");
        for line in report.lines() {
            // A ratio as a change in percent: "+4090.3%", "[+18.1, +22.4]".
            let percent_ratio = line.split_whitespace().any(|w| {
                let w = w.trim_matches(|c| c == '|' || c == '[' || c == ']' || c == ',');
                (w.starts_with('+') || w.starts_with('-'))
                    && w.ends_with('%')
                    && w[1..w.len() - 1].parse::<f64>().is_ok()
            });
            assert!(
                !percent_ratio,
                "{format}: a ratio in percent: {line}\n{report}"
            );
        }
        assert!(report.contains("1.05×"), "the limit as a ratio: {report}");
    }
}

/// Item 12: Numbers that did not scale: "peak memory 217,320KiB", a ratio of 1
/// to 625 printed "0.00×".
#[test]
fn memory_scales_and_a_tiny_ratio_keeps_its_digits() {
    let dir = scratch("scale");
    // dd reads into a 256 MiB buffer: a peak of about 257 MiB.
    let big = "dd if=/dev/zero of=/dev/null bs=256M count=1";
    let out = run_in(dir.path(), &["run", "--", "sh", "-c", big]);
    let report = text(&out.stderr);
    assert!(out.status.success(), "{report}");
    let peak = report
        .lines()
        .find(|l| l.starts_with("tally: peak memory"))
        .unwrap_or_else(|| panic!("{report}"));
    assert!(
        peak.contains("MiB (ru_maxrss)") && !peak.contains("KiB"),
        "{peak}"
    );
    // Against dd's peak, true's is a few hundredths of a percent of it.
    let out = run_in(
        dir.path(),
        &["compare", "-N", "-r", "6", "--reference", "2", "true", big],
    );
    let human = text(&out.stdout);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let rows: Vec<&str> = human
        .lines()
        .skip_while(|l| *l != "peak memory")
        .skip(1)
        .take(2)
        .collect();
    assert!(rows.iter().any(|r| r.contains("MiB")), "{rows:?}");
    let ratio = rows
        .iter()
        .find(|r| !r.contains("reference"))
        .and_then(|r| r.split_whitespace().find(|w| w.ends_with('×')))
        .unwrap_or_else(|| panic!("{human}"));
    assert!(
        ratio.starts_with("0.0") && ratio.len() > "0.00×".len(),
        "{ratio}"
    );
}

/// Item 13: `--tree` printed its reconciliation of a 1 µs discrepancy ("cpu
/// measured for the tree, 99,084µs … below the command's own 99,085µs").
#[test]
fn the_tree_says_nothing_below_a_clock_tick() {
    for _ in 0..5 {
        let out = tally()
            .args(["run", "--tree", "--", "sh", "-c", "true; true"])
            .output()
            .expect("tally runs");
        let report = text(&out.stderr);
        for line in report.lines().filter(|l| l.contains("shown as")) {
            // "… (U + K) … shown as A + B": the parts as measured and as
            // shown; the other form gives the total first.
            let numbers: Vec<u64> = line
                .replace("wait4", "")
                .split(|c: char| !c.is_ascii_digit() && c != ',')
                .filter_map(|n| n.replace(',', "").parse().ok())
                .collect();
            let at = usize::from(line.contains("cpu measured for the tree"));
            let (u, k) = (numbers[at], numbers[at + 1]);
            let (a, b) = (numbers[numbers.len() - 2], numbers[numbers.len() - 1]);
            let tick_us = 10_000;
            let moved = u.abs_diff(a).max(k.abs_diff(b));
            assert!(moved >= tick_us, "said below a tick ({moved} µs): {line}");
        }
    }
}

/// Item 14: GNU time's `-f '%e %M'` and `-a` were refused with nothing in
/// their place, and `tally run --format json -- cmd | jq` got nothing.
#[test]
fn gnu_times_format_string_and_append_work_and_a_format_sent_past_a_pipe_is_said() {
    let dir = scratch("template");
    let out = run_in(
        dir.path(),
        &["run", "-f", "%e %M %x %{minor_faults}", "--", "true"],
    );
    assert!(out.status.success(), "{}", text(&out.stderr));
    let line = text(&out.stderr);
    let words: Vec<&str> = line.split_whitespace().collect();
    assert_eq!(words.len(), 4, "{line:?}");
    assert!(
        words[0].contains('.') && words[0].parse::<f64>().is_ok(),
        "{line:?}"
    );
    assert!(words[1].parse::<u64>().is_ok_and(|kib| kib > 0), "{line:?}");
    assert_eq!(words[2], "0");
    assert!(words[3].parse::<u64>().is_ok(), "{line:?}");
    for _ in 0..2 {
        let out = run_in(
            dir.path(),
            &["run", "-f", "%C %x", "-a", "-o", "log", "--", "false"],
        );
        assert_eq!(out.status.code(), Some(1));
    }
    let log = std::fs::read_to_string(dir.path().join("log")).unwrap();
    assert_eq!(
        log.matches("false 1\n").count(),
        2,
        "appended twice: {log:?}"
    );
    let out = run_in(dir.path(), &["run", "-f", "%K", "--", "true"]);
    assert!(
        text(&out.stderr).contains("not measured by Linux"),
        "{}",
        text(&out.stderr)
    );
    // A machine format with stdout a pipe and stderr a terminal: said
    // once, on the terminal (`script` gives the shell a terminal).
    if common::have("script") {
        let line = format!(
            "{} run --format json -- true | cat > /dev/null",
            common::tally_bin().display()
        );
        let out = command("script")
            .args(["-qec", &line, "/dev/null"])
            .stdin(Stdio::null())
            .output()
            .unwrap();
        let shown = text(&out.stdout);
        assert_eq!(
            shown.matches("goes to stderr, not to the pipe").count(),
            1,
            "{shown}"
        );
    } else {
        common::skip_part!("script is not installed: the note to a terminal is not looked at");
    }
    // Stderr taken by a file or a pipe gets the report alone.
    let out = tally_std()
        .args(["run", "--format", "json", "--", "true"])
        .stdout(Stdio::piped())
        .output()
        .unwrap();
    assert!(!text(&out.stderr).contains("not to the pipe"));
    assert!(serde_json::from_slice::<Value>(&out.stderr).is_ok());
    let out = tally_std()
        .args(["run", "--format", "json", "-o", "-", "--", "true"])
        .stdout(Stdio::piped())
        .output()
        .unwrap();
    assert!(!text(&out.stderr).contains("not to the pipe"));
    assert!(serde_json::from_slice::<Value>(&out.stdout).is_ok());
}

/// Item 15: `tally cache DIR` said "no regular files found (1 path skipped)",
/// and `compare -h` was 139 lines.
#[test]
fn cache_of_a_directory_says_r_and_compare_h_is_short() {
    let dir = scratch("cache");
    std::fs::write(dir.path().join("f"), vec![1u8; 8192]).unwrap();
    let out = tally().arg("cache").arg(dir.path()).output().unwrap();
    assert!(
        text(&out.stdout).contains("a directory was named; -r takes the files under it"),
        "{}",
        text(&out.stdout)
    );
    let short = text(&tally().args(["compare", "-h"]).output().unwrap().stdout);
    let long = text(&tally().args(["compare", "--help"]).output().unwrap().stdout);
    let (s, l) = (short.lines().count(), long.lines().count());
    assert!(s <= 100 && s * 2 < l, "-h {s} lines, --help {l}");
    assert!(long.contains("Exit status") && !short.contains("Exit status"));
}

/// Item 16: In text tables a long command showed as "#2" alone.
#[test]
fn a_long_command_keeps_what_tells_it_apart_in_every_row() {
    let long = |tag: &str| format!("sleep 0.01 # a long shared comment that runs on, {tag}");
    let out = tally()
        .args(["compare", "-r", "3"])
        .arg(long("first"))
        .arg(long("second"))
        .output()
        .unwrap();
    let human = text(&out.stdout);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let rows: Vec<&str> = human.lines().filter(|l| l.starts_with("  #")).collect();
    assert!(rows.len() > 4, "{human}");
    for r in rows.iter().skip(2) {
        assert!(r.contains("first") || r.contains("second"), "{r}\n{human}");
    }
}

/// Item 16: Plot legends were cut ("anonymous,…ge written").
#[test]
fn plot_legends_keep_whole_names() {
    let dir = scratch("legend");
    let out = run_in(
        dir.path(),
        &["bench", "--quick", "mmap", "--html", "b.html"],
    );
    assert!(out.status.success(), "{}", text(&out.stderr));
    let page = std::fs::read_to_string(dir.path().join("b.html")).unwrap();
    assert!(!page.contains("anonymous,…"), "a legend cut");
    assert!(
        page.contains(">anonymous, every page<")
            || page.contains(">anonymous, every page written<"),
        "the legend whole, in lines"
    );
}

/// A tmux session of `width` columns running `script` (in `dir`), its
/// screen joined back into whole lines (`capture-pane -J`): a line the
/// terminal wrapped comes back longer than the width.
fn tmux_lines(dir: &Path, width: u16, script: &str) -> Option<Vec<String>> {
    let socket = format!("tally-test-{}-{width}", std::process::id());
    let tmux = |args: &[&str]| {
        command("tmux")
            .args(["-L", &socket, "-f", "/dev/null"])
            .args(args)
            .current_dir(dir)
            .output()
    };
    let done = dir.join(format!("done-{width}"));
    let body = format!("{script}; touch {}; sleep 600", done.display());
    let started = tmux(&[
        "new-session",
        "-d",
        "-x",
        &width.to_string(),
        "-y",
        "200",
        "-s",
        "t",
        "sh",
        "-c",
        &body,
    ])
    .ok()?;
    if !started.status.success() {
        return None;
    }
    let deadline = Instant::now() + Duration::from_secs(240);
    while !done.exists() && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(100));
    }
    let shown = tmux(&["capture-pane", "-p", "-J", "-S", "-", "-t", "t"]);
    let _ = tmux(&["kill-server"]);
    assert!(done.exists(), "the commands did not end in 240 s");
    Some(
        text(&shown.ok()?.stdout)
            .lines()
            .map(String::from)
            .collect(),
    )
}

/// The commands whose reports the width tests look at, as one script.
fn every_report(bin: &Path) -> String {
    let t = bin.display();
    [
        format!("{t} run -- sh -c 'gzip -c data | wc -c; ls -lR /usr/share/doc/dpkg > /dev/null'"),
        format!("{t} run -n 3 -- true"),
        format!("{t} run --tree -v -- sh -c 'ls /usr > /dev/null'"),
        format!("{t} compare -N -r 4 --fail-on wall=5% true 'sleep 0.01'"),
        format!("{t} compare -r 3 'sleep 0.01 # a long shared comment, first' 'sleep 0.01 # a long shared comment, second'"),
        format!("{t} mem"),
        format!("{t} cache -r ."),
        format!("{t} cache ."),
        format!("{t} load data"),
        format!("{t} cp data copy"),
        format!("{t} bench --quick syscall"),
    ]
    .join("; ")
}

/// Item 10: Width: `run`'s report was wrapped near 100 columns whatever the
/// terminal, so at 80 it broke mid-word ("50% o / n a CPU"); a
/// multi-process run's first line was 131 characters.
#[test]
fn no_report_breaks_a_word_at_80_or_120_columns_and_piped_lines_stay_whole() {
    if !common::have("tmux") {
        common::skip_without_tool!(
            "tmux",
            "the reports are looked at in a terminal of 80 and 120 columns"
        );
    }
    let dir = scratch("width");
    std::fs::write(dir.path().join("data"), vec![b'x'; 1 << 20]).unwrap();
    let bin: PathBuf = common::tally_bin();
    let script = every_report(&bin);
    for width in [80u16, 120] {
        let Some(lines) = tmux_lines(dir.path(), width, &script) else {
            panic!("tmux did not start");
        };
        let long: Vec<&String> = lines
            .iter()
            .filter(|l| l.chars().count() > usize::from(width))
            .collect();
        assert!(
            long.is_empty(),
            "at {width} columns the terminal wrapped these lines:\n{}",
            long.iter()
                .map(|l| l.as_str())
                .collect::<Vec<_>>()
                .join("\n")
        );
        assert!(
            lines.iter().any(|l| l.starts_with("tally: took")),
            "{lines:?}"
        );
    }
    // Piped, nothing is cut: the long names and every column are whole.
    let out = command("sh")
        .arg("-c")
        .arg(script)
        .current_dir(dir.path())
        .env_remove("COLUMNS")
        .output()
        .unwrap();
    let piped = format!("{}{}", text(&out.stdout), text(&out.stderr));
    assert!(
        piped.contains("sleep 0.01 # a long shared comment, second"),
        "{piped}"
    );
    assert!(
        piped.contains("block in"),
        "load keeps every column: {piped}"
    );
    assert!(!piped.contains("columns hidden"), "{piped}");
}

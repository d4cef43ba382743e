//! CLI tests of the stream, memsys and ops benchmarks and spawn's static
//! exec: counts, structure and monotone sweeps of tiny runs, never timings.

mod common;

use serde_json::Value;

/// Runs `tally bench NAMES --budget-ms 2 --format json` and parses it.
fn run_json(names: &[&str]) -> Value {
    let out = common::tally()
        .arg("bench")
        .args(names)
        .args(["--budget-ms", "2", "--max-mem", "8M", "--format", "json"])
        .assert()
        .success()
        .get_output()
        .stdout
        .clone();
    serde_json::from_slice(&out).expect("bench JSON parses")
}

fn bench<'a>(r: &'a Value, name: &str) -> &'a Value {
    r["benchmarks"]
        .as_array()
        .expect("benchmarks")
        .iter()
        .find(|b| b["name"] == name)
        .unwrap_or_else(|| panic!("{name} missing"))
}

fn ids(b: &Value) -> Vec<String> {
    b["figures"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| f["id"].as_str().unwrap().to_string())
        .collect()
}

fn xs(b: &Value, prefix: &str) -> Vec<u64> {
    b["figures"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|f| f["id"].as_str().unwrap().starts_with(prefix))
        .map(|f| f["x"].as_u64().expect("a sweep point has x"))
        .collect()
}

#[test]
fn stream_has_four_kernels_and_the_read_reference_on_one_and_all_threads() {
    let r = run_json(&["stream"]);
    let b = bench(&r, "stream");
    assert!(b["error"].is_null(), "{}", b["error"]);
    let cpus = r["machine"]["logical_cpus"].as_u64().unwrap();
    let got = ids(b);
    let mut want = Vec::new();
    for k in ["copy", "scale", "add", "triad", "read"] {
        want.push(format!("stream.{k}.1"));
        if cpus > 1 {
            want.push(format!("stream.{k}.all"));
        }
    }
    assert_eq!(got, want);
    for f in b["figures"].as_array().unwrap() {
        let def = f["definition"].as_str().unwrap();
        let id = f["id"].as_str().unwrap();
        let per = if id.contains(".add.") || id.contains(".triad.") {
            "24 B per element"
        } else if id.contains(".read.") {
            "8 B per element"
        } else {
            "16 B per element"
        };
        assert!(def.contains(per), "{id}: {def}");
        assert!(f.get("gb_per_s").is_some() || f.get("unavailable").is_some());
    }
    let notes = b["notes"].to_string();
    assert!(notes.contains("last-level cache"), "{notes}");
}

#[test]
fn memsys_sweeps_are_complete_and_monotone() {
    let r = run_json(&["memsys"]);
    let b = bench(&r, "memsys");
    assert!(b["error"].is_null(), "{}", b["error"]);
    assert_eq!(
        xs(b, "memsys.stride."),
        [8, 16, 32, 64, 128, 256, 512, 1024],
        "every stride once, rising"
    );
    assert_eq!(xs(b, "memsys.mlp."), [1, 2, 4, 8, 16], "the MLP curve");
    let tlb = xs(b, "memsys.tlb_4k.");
    assert!(tlb.len() >= 2, "{tlb:?}");
    assert!(tlb.windows(2).all(|w| w[1] == 2 * w[0]), "{tlb:?}");
    assert_eq!(tlb[0], 16 * 4096, "from 16 pages of 4 KiB");
    let huge = xs(b, "memsys.tlb_2m.");
    assert!(huge.windows(2).all(|w| w[1] == 2 * w[0]), "{huge:?}");
    // The derived figures are there: a size, or unavailable with why.
    let figs = b["figures"].as_array().unwrap();
    for id in ["memsys.line", "memsys.tlb_reach_4k", "memsys.tlb_reach_2m"] {
        let f = figs
            .iter()
            .find(|f| f["id"] == id)
            .unwrap_or_else(|| panic!("{id} missing"));
        match f.get("unavailable") {
            Some(why) => assert!(!why.as_str().unwrap().is_empty(), "{id}"),
            None => assert!(f["bytes"]["median"].as_f64().unwrap() > 0.0, "{id}"),
        }
    }
    // No huge-page curve without a huge-page reach figure saying why.
    if huge.is_empty() {
        let f = figs
            .iter()
            .find(|f| f["id"] == "memsys.tlb_reach_2m")
            .unwrap();
        assert!(f["unavailable"].as_str().unwrap().contains("huge"));
    }
}

#[test]
fn ops_has_latency_and_throughput_of_every_operation_with_cycles() {
    let r = run_json(&["ops"]);
    let b = bench(&r, "ops");
    assert!(b["error"].is_null(), "{}", b["error"]);
    let got = ids(b);
    assert_eq!(got.len(), 2 * 12);
    for kind in ["latency", "throughput"] {
        for ty in ["i32", "i64", "f32", "f64"] {
            for op in ["add", "mul", "div"] {
                let id = format!("ops.{kind}.{ty}_{op}");
                assert!(got.contains(&id), "{id} missing");
            }
        }
    }
    for f in b["figures"].as_array().unwrap() {
        let id = f["id"].as_str().unwrap();
        if f.get("unavailable").is_some() {
            continue;
        }
        assert!(f.get("ns").is_some(), "{id}: always in ns");
        let note = f["notes"][0].as_str().unwrap();
        assert!(
            note.ends_with(" cycles") || note == "cycles unavailable",
            "{id}: {note}"
        );
    }
    // Cycles are in cycles only where the clock is known, and the notes say so.
    let notes = b["notes"].to_string();
    match r["machine"]["core_mhz"].as_f64() {
        Some(_) => assert!(notes.contains("core clock"), "{notes}"),
        None => assert!(notes.contains("cycles unavailable"), "{notes}"),
    }
}

#[test]
fn spawn_times_a_static_exec_beside_the_dynamic_one() {
    let r = run_json(&["spawn"]);
    let b = bench(&r, "spawn");
    let got = ids(b);
    let at = |id: &str| got.iter().position(|g| g == id);
    let stat = at("spawn.fork_exec_static").expect("static exec figure");
    assert_eq!(at("spawn.fork_exec").map(|d| d < stat), Some(true));
    let f = &b["figures"][stat];
    // Measured when the binary under test is static (the shipped build is),
    // unavailable and saying why when it is not.
    let bin = std::fs::read(common::tally_bin()).expect("the binary under test");
    match tally::bench::spawn::elf_is_dynamic(&bin) {
        Some(false) => assert!(f.get("ns").is_some(), "{f}"),
        _ => assert!(
            f["unavailable"]
                .as_str()
                .unwrap()
                .contains("dynamically linked"),
            "{f}"
        ),
    }
    assert!(
        f["definition"]
            .as_str()
            .unwrap()
            .contains("statically linked")
    );
}

#[test]
fn hidden_exit_mode_exits_at_once_and_silently() {
    let out = common::tally()
        .arg("__tally-bench-exit-at-once")
        .assert()
        .success()
        .get_output()
        .clone();
    assert!(out.stdout.is_empty() && out.stderr.is_empty());
    // Only alone: with anything after it, it is an ordinary bad argument.
    common::tally()
        .args(["__tally-bench-exit-at-once", "x"])
        .assert()
        .code(2);
}

#[test]
fn human_bench_lines_fit_100_columns() {
    let out = common::tally()
        .args([
            "bench",
            "syscall",
            "spawn",
            "ops",
            "membw",
            "stream",
            "memsys",
            "memlat",
            "--budget-ms",
            "2",
            "--max-mem",
            "8M",
        ])
        .env("COLUMNS", "200")
        .assert()
        .success()
        .get_output()
        .stdout
        .clone();
    let text = String::from_utf8(out).unwrap();
    for line in text.lines() {
        assert!(
            line.chars().count() <= 100,
            "{} chars: {line}",
            line.chars().count()
        );
    }
    assert!(text.contains("figure"), "a header names the columns");
    assert!(
        text.contains("  ns\n") || text.contains("  µs\n"),
        "units in their own column"
    );
}

#[test]
fn quick_list_names_the_new_benchmarks() {
    let out = common::tally().args(["bench", "--list"]).assert().success();
    let text = String::from_utf8(out.get_output().stdout.clone()).unwrap();
    for name in ["ops", "stream", "memsys", "spawn"] {
        assert!(
            text.lines()
                .any(|l| l.split_whitespace().next() == Some(name)),
            "{name} not listed"
        );
    }
}

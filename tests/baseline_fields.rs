//! Every number read from a baseline is validated once, where it is read:
//! a corrupt value is refused naming the field and the reason, never
//! turned into a verdict.

mod common;

use std::path::Path;
use std::time::Duration;

use serde_json::{Value, json};

fn tally_in(dir: &Path, args: &[&str]) -> (Option<i32>, String) {
    let out = common::tally()
        .args(args)
        .current_dir(dir)
        .timeout(Duration::from_secs(120))
        .output()
        .expect("tally runs");
    (
        out.status.code(),
        format!(
            "{}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        ),
    )
}

fn read_json(path: &Path) -> Value {
    serde_json::from_slice(&std::fs::read(path).expect("read")).expect("json")
}

/// `other_cpu_percent` of ±1e308 gave a 300-digit warning, `failed_runs`
/// 4294967295 for 3 runs and exit codes of −2^31 went into the report,
/// `u64::MAX` samples and all-zero wall times into the statistics. Each
/// is now "corrupt", naming the field.
#[test]
fn corrupt_compare_baseline_values_became_verdicts() {
    let dir = tempfile::tempdir().expect("tempdir");
    let (code, text) = tally_in(
        dir.path(),
        &[
            "compare",
            "-n",
            "3",
            "--save-baseline",
            "b.json",
            "-o",
            "/dev/null",
            "true",
        ],
    );
    assert_eq!(code, Some(0), "{text}");
    let good = read_json(&dir.path().join("b.json"));
    type Mutation = fn(&mut Value);
    let cases: [(&str, Mutation, &str); 7] = [
        (
            "huge other_cpu_percent",
            |v| v["other_cpu_percent"] = json!(1e308),
            "other_cpu_percent is 1e308",
        ),
        (
            "negative other_cpu_percent",
            |v| v["other_cpu_percent"] = json!(-1e308),
            "other_cpu_percent is -1e308",
        ),
        (
            "failed_runs over runs",
            |v| v["commands"][0]["failed_runs"] = json!(4294967295u64),
            "failed_runs is 4294967295, more than its 3 runs",
        ),
        (
            "failed_runs against exit codes",
            |v| v["commands"][0]["failed_runs"] = json!(2),
            "failed_runs is 2, but 0 of its exit_codes",
        ),
        (
            "exit code out of range",
            |v| {
                v["commands"][0]["exit_codes"][0] = json!(-2147483648i64);
                v["commands"][0]["failed_runs"] = json!(1);
            },
            "exit_codes holds -2147483648; an exit status is 0 to 255",
        ),
        (
            "u64::MAX sample",
            |v| v["commands"][0]["samples"]["max_rss_bytes"][1] = json!(u64::MAX),
            "samples.max_rss_bytes holds 18446744073709551615",
        ),
        (
            "zero wall time",
            |v| v["commands"][0]["samples"]["wall_ns"] = json!([0, 0, 0]),
            "samples.wall_ns holds 0",
        ),
    ];
    for (what, mutate, words) in cases {
        let mut v = good.clone();
        mutate(&mut v);
        std::fs::write(dir.path().join("bad.json"), v.to_string()).expect("write");
        let (code, text) = tally_in(
            dir.path(),
            &["compare", "-n", "3", "--baseline", "bad.json", "true"],
        );
        assert_eq!(code, Some(1), "{what}: {text}");
        assert!(text.contains("bad.json is corrupt"), "{what}: {text}");
        assert!(text.contains(words), "{what}: {text}");
        assert!(text.lines().all(|l| l.len() < 400), "{what}: {text}");
    }
}

/// In a bench baseline, negative medians gave "-4.15× ✓ better" while the
/// gate said "regression -43368%"; a `schema_version` of 4294967298 was
/// reported as "0".
#[test]
fn corrupt_bench_baseline_values_became_verdicts() {
    let dir = tempfile::tempdir().expect("tempdir");
    let (code, text) = tally_in(
        dir.path(),
        &[
            "bench", "timer", "--quick", "--format", "json", "-o", "old.json",
        ],
    );
    assert_eq!(code, Some(0), "{text}");
    let good = read_json(&dir.path().join("old.json"));
    let first_measured = |v: &Value| -> (usize, usize) {
        for (i, b) in v["benchmarks"]
            .as_array()
            .expect("benchmarks")
            .iter()
            .enumerate()
        {
            for (j, f) in b["figures"].as_array().expect("figures").iter().enumerate() {
                if f["ns"]["median"].is_number() && f["implausible"].is_null() {
                    return (i, j);
                }
            }
        }
        panic!("no figure in ns: {v}");
    };
    let (i, j) = first_measured(&good);
    let mut v = good.clone();
    let f = &mut v["benchmarks"][i]["figures"][j];
    for key in ["min", "median", "mean", "max", "p95"] {
        f["ns"][key] = json!(-4.15);
    }
    f["samples"] = json!([-4.15, -4.15, -4.15]);
    std::fs::write(dir.path().join("bad.json"), v.to_string()).expect("write");
    for extra in [&[][..], &["--fail-on", "timer.*=5%"][..]] {
        let mut args = vec!["bench", "timer", "--quick", "--baseline", "bad.json"];
        args.extend_from_slice(extra);
        let (code, text) = tally_in(dir.path(), &args);
        assert_eq!(code, Some(1), "{text}");
        assert!(text.contains("bad.json is corrupt"), "{text}");
        assert!(text.contains("median -4.15 is negative"), "{text}");
        assert!(
            !text.contains("better") && !text.contains("regression"),
            "{text}"
        );
    }
    let mut v = good.clone();
    v["schema_version"] = json!(4294967298u64);
    std::fs::write(dir.path().join("bad.json"), v.to_string()).expect("write");
    let (code, text) = tally_in(
        dir.path(),
        &["bench", "timer", "--quick", "--baseline", "bad.json"],
    );
    assert_eq!(code, Some(1), "{text}");
    assert!(text.contains("schema_version 4294967298"), "{text}");
}

/// `--name x --name x` was accepted: a baseline saved with it matched both
/// commands to the first stored `x`, and an unchanged gate reported a
/// regression of +2434%. Two `-P` of one name lost the second silently,
/// `-L x a,b -L x c` dropped `c`. Each is refused, naming the fix; so is a
/// baseline saved of two commands of one name.
#[test]
fn duplicate_names_matched_the_wrong_command() {
    let dir = tempfile::tempdir().expect("tempdir");
    let cases: [(&[&str], &str); 4] = [
        (
            &[
                "compare",
                "-n",
                "2",
                "--name",
                "x",
                "--name",
                "x",
                "true",
                "sleep 0.01",
            ],
            "--name x is given to commands 1 and 2",
        ),
        (
            &[
                "compare", "-n", "2", "-P", "n", "1", "2", "-P", "n", "3", "4", "true {n}",
            ],
            "parameter n is given twice",
        ),
        (
            &[
                "compare", "-n", "2", "-L", "x", "a,b", "-L", "x", "c", "true {x}",
            ],
            "parameter x is given twice",
        ),
        (
            &[
                "compare",
                "-n",
                "2",
                "--save-baseline",
                "b.json",
                "true",
                "true",
            ],
            "commands 1 and 2 are both named true",
        ),
    ];
    for (args, words) in cases {
        let (code, text) = tally_in(dir.path(), args);
        assert_eq!(code, Some(2), "{args:?}: {text}");
        assert!(text.contains(words), "{args:?}: {text}");
        assert!(!dir.path().join("b.json").exists());
    }
}

//! A new user's first hour: the peers' spellings (hyperfine, GNU time,
//! ps_mem, smem, vmtouch, fincore, cp, node_exporter) either work as the
//! peer means them or are answered with what tally calls them, through
//! the binary under test. Each test is named after what misled or
//! annoyed.

mod common;

use common::{require, tally};
use predicates::prelude::*;

/// `tally compare --output null A B` (hyperfine's option for the
/// commands' output) wrote the report to a file named `./null`, printed
/// nothing and exited 0.
#[test]
fn compare_output_null_is_refused_not_a_file_named_null() {
    let dir = tempfile::tempdir().unwrap();
    for word in ["null", "pipe", "inherit"] {
        tally()
            .current_dir(dir.path())
            .args(["compare", "-N", "-n", "2", "--output", word, "true", "true"])
            .assert()
            .code(2)
            .stderr(predicate::str::contains(format!(
                "did you mean --command-output {word}"
            )))
            .stderr(predicate::str::contains(format!("./{word}")));
        assert!(
            !dir.path().join(word).exists(),
            "a file named {word} was made"
        );
    }
    // A report file so named is still possible, spelled as a path.
    tally()
        .current_dir(dir.path())
        .args(["compare", "-N", "-n", "2", "-o", "./null", "true", "true"])
        .assert()
        .success();
    assert!(dir.path().join("null").exists());
}

/// `tally run -o null -- true` took the same fast path as any -o FILE.
#[test]
fn run_output_null_is_refused_with_quiet_command() {
    let dir = tempfile::tempdir().unwrap();
    tally()
        .current_dir(dir.path())
        .args(["run", "-o", "null", "--", "true"])
        .assert()
        .code(125)
        .stderr(predicate::str::contains("--quiet-command"));
    assert!(!dir.path().join("null").exists());
}

/// hyperfine's `-r N` was "unexpected argument '-r'" with advice to pass
/// it after `--`; GNU-time-and-hyperfine's `-w N` on run the same.
#[test]
fn runs_and_warmup_take_hyperfines_short_spellings() {
    let out = tally()
        .args([
            "run", "-r", "3", "-w", "1", "--format", "json", "--", "true",
        ])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let report: serde_json::Value = serde_json::from_slice(&out.stderr).unwrap();
    let runs = report["runs"].as_array().map(Vec::len);
    assert_eq!(runs, Some(3), "{report}");
    tally()
        .args(["compare", "-N", "-r", "2", "-w", "1", "true", "true"])
        .assert()
        .success();
}

/// hyperfine's `--export-json FILE`, `--export-csv FILE` and
/// `--export-markdown FILE` were unknown.
#[test]
fn export_json_csv_markdown_spellings_write_their_files() {
    let dir = tempfile::tempdir().unwrap();
    let p = |n: &str| dir.path().join(n);
    tally()
        .args(["compare", "-N", "-n", "2", "true", "true"])
        .arg("--export-json")
        .arg(p("r.json"))
        .arg("--export-csv")
        .arg(p("r.csv"))
        .arg("--export-markdown")
        .arg(p("r.md"))
        .assert()
        .success();
    let json: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(p("r.json")).unwrap()).unwrap();
    assert!(json.is_object());
    assert!(std::fs::read_to_string(p("r.csv")).unwrap().contains(','));
    assert!(std::fs::read_to_string(p("r.md")).unwrap().contains('|'));
}

/// hyperfine's `--command-name` was unknown; its `-n NAME` said "invalid
/// digit found in string".
#[test]
fn command_name_works_and_dash_n_name_is_answered() {
    let out = tally()
        .args(["compare", "-N", "-n", "2", "--format", "json"])
        .args(["--command-name", "first", "--command-name", "second"])
        .args(["true", "true"])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        text.contains("\"first\"") && text.contains("\"second\""),
        "{text}"
    );
    tally()
        .args(["compare", "-n", "fast", "true", "true"])
        .assert()
        .code(2)
        .stderr(predicate::str::contains("-n is the number of runs"))
        .stderr(predicate::str::contains("--name \"fast\""))
        .stderr(predicate::str::contains("invalid digit").not());
}

/// `--reference CMD` (hyperfine takes a command) said "invalid digit
/// found in string".
#[test]
fn reference_takes_a_command_as_hyperfine_does() {
    // One of the commands given: it is the reference, nothing more runs.
    let out = tally()
        .args(["compare", "-N", "-n", "2", "--format", "json"])
        .args(["--reference", "/bin/echo b", "/bin/echo a", "/bin/echo b"])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let report: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(
        report["commands"].as_array().map(Vec::len),
        Some(2),
        "{report}"
    );
    assert_eq!(report["reference"], 1, "{report}");
    // Another command: it runs too, first, as the reference.
    let out = tally()
        .args(["compare", "-N", "-n", "2", "--format", "json"])
        .args(["--reference", "/bin/echo ref", "/bin/echo a", "/bin/echo b"])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let report: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(
        report["commands"].as_array().map(Vec::len),
        Some(3),
        "{report}"
    );
    assert_eq!(report["reference"], 0, "{report}");
    // A place still works, and a place beyond the commands is refused.
    tally()
        .args([
            "compare",
            "-N",
            "-n",
            "2",
            "--reference",
            "2",
            "true",
            "true",
        ])
        .assert()
        .success();
    tally()
        .args([
            "compare",
            "-N",
            "-n",
            "2",
            "--reference",
            "0",
            "true",
            "true",
        ])
        .assert()
        .code(2)
        .stderr(predicate::str::contains("give 1 for the first command"));
}

/// Peers' options that mean something else here were clap's bare
/// "unexpected argument"; each now says what tally calls it.
#[test]
fn peer_options_are_answered_with_tallys_name() {
    let cases: &[(&[&str], u8, &str)] = &[
        (
            &["compare", "--style", "basic", "true", "true"],
            2,
            "hyperfine's --style",
        ),
        (&["run", "-p", "--", "true"], 125, "GNU time's -p"),
        (&["mem", "-S"], 2, "always shows swap"),
        (&["mem", "-u"], 2, "--by user"),
        (&["mem", "-d"], 2, "--by pid"),
        (&["cache", "-J", "/etc/hostname"], 2, "--format json"),
        (&["cp", "-a", "/etc/hostname", "/nonexistent/x"], 2, "-r -p"),
        (&["serve", "--web.listen-address", ":9643"], 2, "--listen"),
    ];
    for (args, code, says) in cases {
        tally()
            .args(*args)
            .assert()
            .code(i32::from(*code))
            .stderr(predicate::str::contains(*says))
            .stderr(predicate::str::contains("unexpected argument").not());
    }
}

/// vmtouch's `-t`, `-e` and `-l` (touch, evict, lock) were unknown on
/// `tally cache`.
#[test]
fn cache_takes_vmtouchs_t_and_e() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("f");
    std::fs::write(&file, vec![7u8; 1 << 16]).unwrap();
    for flag in ["-t", "-e"] {
        tally().args(["cache", flag]).arg(&file).assert().success();
    }
    // -l is --lock (held until interrupted): its help names vmtouch's -l.
    tally()
        .args(["cache", "--help"])
        .assert()
        .success()
        .stdout(predicate::str::contains("-l, --lock"))
        .stdout(predicate::str::contains("-t, --warm"))
        .stdout(predicate::str::contains("-e, --evict"));
}

/// `mem -h` meant --human, not help; ps_mem's `-p PID` and `-t` were
/// unknown.
#[test]
fn mem_dash_h_is_help_and_ps_mems_p_and_t_work() {
    tally()
        .args(["mem", "-h"])
        .assert()
        .success()
        .stdout(predicate::str::contains("Usage: tally mem"));
    let me = std::process::id().to_string();
    tally()
        .args(["mem", "-p", &me, "--format", "json"])
        .assert()
        .success();
    tally().args(["mem", "-t"]).assert().success();
}

/// `serve --listen :9643` and `localhost:9643` (node_exporter's forms)
/// were "invalid socket address syntax".
#[test]
fn serve_listen_takes_port_only_and_host_names() {
    // Parsing only: a bad config file stops serve after the address is
    // read, so nothing listens.
    let dir = tempfile::tempdir().unwrap();
    let bad = dir.path().join("bad.toml");
    std::fs::write(&bad, "this is = = not toml").unwrap();
    for listen in [":9643", "localhost:9643", "127.0.0.1:9643", "[::1]:9643"] {
        tally()
            .args(["serve", "--listen", listen, "--config"])
            .arg(&bad)
            .assert()
            .code(1)
            .stderr(predicate::str::contains("invalid socket address").not());
    }
    for (listen, says) in [
        ("9643", "has no port"),
        (":0", "is not a port"),
        ("host:99999", "is not a port"),
        ("a b:1", "neither an address nor a host name"),
    ] {
        tally()
            .args(["serve", "--listen", listen])
            .assert()
            .code(2)
            .stderr(predicate::str::contains(says));
    }
}

/// One reader of hyperfine's `--export-json` schema (its
/// `BenchmarkResult`: `results[]` with `command`, `mean`, `stddev`,
/// `median`, `user`, `system`, `min`, `max`, `times`, `exit_codes`), as
/// its scripts and CI actions read it. Returns each command and its times.
fn read_hyperfine_schema(text: &str) -> Vec<(String, Vec<f64>)> {
    let doc: serde_json::Value = serde_json::from_str(text).expect("JSON");
    let results = doc["results"].as_array().expect("results[]");
    results
        .iter()
        .map(|r| {
            let num = |k: &str| {
                r[k].as_f64()
                    .unwrap_or_else(|| panic!("{k} is a number: {r}"))
            };
            let times: Vec<f64> = r["times"]
                .as_array()
                .expect("times[]")
                .iter()
                .map(|t| t.as_f64().expect("a time in seconds"))
                .collect();
            let codes = r["exit_codes"].as_array().expect("exit_codes[]");
            assert_eq!(codes.len(), times.len(), "an exit code per run: {r}");
            assert!(codes.iter().all(|c| c.as_i64() == Some(0) || c.is_null()));
            let (min, max, mean, median) = (num("min"), num("max"), num("mean"), num("median"));
            let sum: f64 = times.iter().sum();
            assert!(
                (mean - sum / times.len() as f64).abs() < 1e-9,
                "mean of times: {r}"
            );
            assert!(min <= median && median <= max, "{r}");
            assert!(times.iter().all(|&t| (min..=max).contains(&t)), "{r}");
            assert!(num("stddev") >= 0.0 && num("user") >= 0.0 && num("system") >= 0.0);
            // Seconds, not nanoseconds: a sleep of 10 ms is about 0.01.
            assert!(times.iter().all(|&t| (0.005..5.0).contains(&t)), "{r}");
            (r["command"].as_str().expect("command").to_owned(), times)
        })
        .collect()
}

/// hyperfine's JSON consumers (its plot scripts, CI actions reading
/// `results[].times`) could not read tally's JSON: `--export hyperfine=`
/// is read by the same reader as hyperfine's own `--export-json`.
#[test]
fn hyperfine_export_reads_as_hyperfines_own() {
    require!(common::tool("hyperfine", "hyperfine"));
    let dir = tempfile::tempdir().unwrap();
    let (theirs, ours) = (dir.path().join("hf.json"), dir.path().join("tally.json"));
    let commands = ["sleep 0.01", "sleep 0.02"];
    let status = common::command("hyperfine")
        .args(["-N", "-r", "3", "--style", "none", "--export-json"])
        .arg(&theirs)
        .args(commands)
        .stdout(std::process::Stdio::null())
        .status()
        .unwrap();
    assert!(status.success());
    tally()
        .args(["compare", "-N", "-n", "3", "--export"])
        .arg(format!("hyperfine={}", ours.display()))
        .args(commands)
        .assert()
        .success();
    let read = |p: &std::path::Path| read_hyperfine_schema(&std::fs::read_to_string(p).unwrap());
    let (theirs, ours) = (read(&theirs), read(&ours));
    let names = |r: &[(String, Vec<f64>)]| {
        r.iter()
            .map(|(c, t)| (c.clone(), t.len()))
            .collect::<Vec<_>>()
    };
    assert_eq!(names(&theirs), names(&ours));
    assert_eq!(
        names(&ours),
        [("sleep 0.01".to_owned(), 3), ("sleep 0.02".to_owned(), 3)]
    );
    // And run's report has the same form, one result.
    let out = tally()
        .args([
            "run",
            "-n",
            "2",
            "--format",
            "hyperfine",
            "--",
            "sleep",
            "0.01",
        ])
        .output()
        .unwrap();
    assert!(out.status.success());
    let run = read_hyperfine_schema(&String::from_utf8_lossy(&out.stderr));
    assert_eq!(names(&run), [("sleep 0.01".to_owned(), 2)]);
}

//! CLI tests of the output options shared by every command: `-o -`,
//! `--export FORMAT=FILE`, the JSON header, man pages and completions.

mod common;

use std::path::Path;

use serde_json::Value;

/// A scratch directory under the target dir, removed when dropped.
fn scratch(name: &str) -> tempfile::TempDir {
    tempfile::Builder::new()
        .prefix(&format!("outputs-{name}-"))
        .tempdir_in(env!("CARGO_TARGET_TMPDIR"))
        .expect("create scratch dir")
}

fn entries(dir: &Path) -> Vec<String> {
    let mut v: Vec<String> = std::fs::read_dir(dir)
        .expect("read dir")
        .map(|e| e.expect("entry").file_name().to_string_lossy().into_owned())
        .collect();
    v.sort();
    v
}

/// `tally run -o -` wrote its report to a file named `-` in the current
/// directory; `-` is stdout, as everywhere else.
#[test]
fn run_output_dash_created_a_file_named_dash() {
    let dir = scratch("run-dash");
    let out = common::tally()
        .current_dir(dir.path())
        .args(["run", "--format", "json", "-o", "-", "--", "true"])
        .output()
        .expect("tally runs");
    assert_eq!(out.status.code(), Some(0), "{out:?}");
    let report: Value = serde_json::from_slice(&out.stdout).expect("JSON on stdout");
    assert_eq!(report["runs"][0]["exit"]["code"], 0, "{report}");
    assert!(
        !String::from_utf8_lossy(&out.stderr).contains("\"schema_version\""),
        "the report went to stderr too"
    );
    assert_eq!(entries(dir.path()), Vec::<String>::new(), "no file named -");
}

/// The clap path (an `=` form the fast scanner leaves to clap) reads `-`
/// the same way.
#[test]
fn run_output_dash_through_clap_is_stdout() {
    let dir = scratch("run-dash-clap");
    let out = common::tally()
        .current_dir(dir.path())
        .args(["run", "--output=-", "--format=csv", "--", "true"])
        .output()
        .expect("tally runs");
    assert_eq!(out.status.code(), Some(0), "{out:?}");
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.lines().count() >= 2, "CSV on stdout: {text:?}");
    assert_eq!(entries(dir.path()), Vec::<String>::new(), "no file named -");
}

/// A command line of every command that reports, each quick and harmless,
/// run in `dir` (a scratch file `data` is there).
fn every_command(dir: &Path) -> Vec<(&'static str, Vec<String>)> {
    let fixtures = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures/proc/typical");
    let d = dir.display().to_string();
    let s = |v: &[&str]| v.iter().map(|a| a.to_string()).collect::<Vec<_>>();
    vec![
        ("run", s(&["run", "-n", "2", "--", "true"])),
        ("mem", s(&["mem", "--procfs", fixtures])),
        (
            "bench",
            s(&[
                "bench",
                "timer",
                "--budget-ms",
                "2",
                "--max-mem",
                "1M",
                "--dir",
                &d,
            ]),
        ),
        ("cache", s(&["cache", "data"])),
        ("cp", s(&["cp", "data", "copy"])),
        ("load", s(&["load", "--methods", "read", "--warm", "data"])),
    ]
}

fn scratch_with_data(name: &str) -> tempfile::TempDir {
    let dir = scratch(name);
    std::fs::write(dir.path().join("data"), vec![7u8; 256 << 10]).expect("write data");
    dir
}

/// Every command that reports takes `--export`, and an export is the
/// report of the same run: `--format json` on stdout (run: `-o`) and
/// `--export json=FILE` hold the same document, byte for byte.
#[test]
fn every_command_exports_the_report_it_prints() {
    for i in 0..every_command(Path::new(".")).len() {
        let dir = scratch_with_data(&format!("export-{i}"));
        let (name, argv) = every_command(dir.path()).swap_remove(i);
        let mut cmd = common::tally();
        cmd.current_dir(dir.path()).arg(&argv[0]).args([
            "--format",
            "json",
            "--export",
            "json=exported.json",
        ]);
        if name == "run" {
            cmd.args(["-o", "printed.json"]);
        }
        let out = cmd.args(&argv[1..]).output().expect("tally runs");
        assert_eq!(out.status.code(), Some(0), "{name}: {out:?}");
        let printed = if name == "run" {
            std::fs::read(dir.path().join("printed.json")).expect("printed")
        } else {
            out.stdout.clone()
        };
        let exported = std::fs::read(dir.path().join("exported.json")).expect("exported");
        let v: Value = serde_json::from_slice(&exported).expect("exported JSON");
        assert_eq!(v["schema_version"], 2, "{name}: {v}");
        assert_eq!(
            String::from_utf8_lossy(&printed),
            String::from_utf8_lossy(&exported),
            "{name}: the export is not the printed report"
        );
    }
}

/// `--export json=-` writes the JSON document on stdout.
#[test]
fn export_json_dash_is_stdout() {
    let dir = scratch("export-dash");
    let out = common::tally()
        .current_dir(dir.path())
        .args(["run", "--export", "json=-", "--", "true"])
        .output()
        .expect("tally runs");
    assert_eq!(out.status.code(), Some(0), "{out:?}");
    let v: Value = serde_json::from_slice(&out.stdout).expect("JSON on stdout");
    assert_eq!(v["runs"][0]["exit"]["code"], 0);
    assert!(String::from_utf8_lossy(&out.stderr).contains("wall"));
    assert_eq!(entries(dir.path()), Vec::<String>::new(), "no file named -");
}

/// A bad FORMAT is a usage error (run: 125, its own failure; others: 2),
/// and the command is not run.
#[test]
fn export_of_unknown_format_is_a_usage_error() {
    let dir = scratch("export-bad-format");
    for (argv, code) in [
        (
            &["run", "--export", "yaml=x", "--", "touch", "ran"][..],
            125,
        ),
        (&["run", "--export", "json", "--", "touch", "ran"], 125),
        (&["run", "--export", "json=", "--", "touch", "ran"], 125),
        (&["cache", "--export", "yaml=x", "."], 2),
        (&["cp", "--export", "prometheus=x", "a", "ran"], 2),
        (&["load", "--export", "prometheus=x", "a"], 2),
    ] {
        let out = common::tally()
            .current_dir(dir.path())
            .args(argv)
            .output()
            .expect("tally runs");
        assert_eq!(out.status.code(), Some(code), "{argv:?}: {out:?}");
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(err.contains("export"), "{argv:?}: {err}");
        assert_eq!(entries(dir.path()), Vec::<String>::new(), "{argv:?} ran");
    }
}

/// An export FILE that cannot be created fails before anything is
/// measured (run: 125 and the command never ran; cp: 1 and nothing copied).
#[test]
fn export_to_unwritable_file_fails_before_measuring() {
    let dir = scratch_with_data("export-unwritable");
    for (argv, code) in [
        (
            &[
                "run",
                "--export",
                "json=no/such/dir/r.json",
                "--",
                "touch",
                "ran",
            ][..],
            125,
        ),
        (
            &["cp", "--export", "json=no/such/dir/r.json", "data", "ran"],
            1,
        ),
        (&["mem", "--export", "csv=no/such/dir/r.csv"], 1),
    ] {
        let out = common::tally()
            .current_dir(dir.path())
            .args(argv)
            .output()
            .expect("tally runs");
        assert_eq!(out.status.code(), Some(code), "{argv:?}: {out:?}");
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(err.contains("no/such/dir/r."), "{argv:?}: {err}");
        assert_eq!(
            entries(dir.path()),
            vec!["data".to_string()],
            "{argv:?} ran"
        );
        assert!(out.stdout.is_empty(), "{argv:?} reported");
    }
}

/// Reports from many machines can be compared: every command's JSON
/// carries `schema_version`, `tally_version`, an RFC 3339 UTC timestamp,
/// the hostname and the kernel release, each once, at the top level.
#[test]
fn every_commands_json_says_which_tally_when_and_where() {
    let release = std::fs::read_to_string("/proc/sys/kernel/osrelease")
        .map(|s| s.trim().to_string())
        .ok();
    for i in 0..every_command(Path::new(".")).len() {
        let dir = scratch_with_data(&format!("header-{i}"));
        let (name, argv) = every_command(dir.path()).swap_remove(i);
        let out = common::tally()
            .current_dir(dir.path())
            .arg(&argv[0])
            .args(["--export", "json=-"])
            .args(&argv[1..])
            .output()
            .expect("tally runs");
        assert_eq!(out.status.code(), Some(0), "{name}: {out:?}");
        // run prints its human summary on stderr; the others on stdout,
        // before the JSON document.
        let text = String::from_utf8_lossy(&out.stdout);
        let start = text.find("{\n").expect("a JSON document");
        let doc = &text[start..];
        let v: Value = serde_json::from_str(doc).expect("JSON");
        assert_eq!(v["schema_version"], 2, "{name}");
        assert_eq!(v["tally_version"], env!("CARGO_PKG_VERSION"), "{name}");
        let ts = v["timestamp"].as_str().expect("timestamp");
        let b = ts.as_bytes();
        assert!(
            ts.len() == 20
                && b[4] == b'-'
                && b[7] == b'-'
                && b[10] == b'T'
                && b[13] == b':'
                && b[16] == b':'
                && b[19] == b'Z',
            "{name}: {ts}"
        );
        assert!(
            v["hostname"].as_str().is_some_and(|h| !h.is_empty()),
            "{name}"
        );
        if let Some(release) = &release {
            assert_eq!(v["kernel"].as_str(), Some(release.as_str()), "{name}");
        }
        for key in [
            "schema_version",
            "tally_version",
            "timestamp",
            "hostname",
            "kernel",
        ] {
            let top = format!("\n  \"{key}\":");
            assert_eq!(doc.matches(&top).count(), 1, "{name}: {key} once");
        }
    }
}

/// `tally man` printed one page for everything, with no EXIT STATUS or
/// EXAMPLES; every subcommand now has its page, `tally man SUBCOMMAND`.
#[test]
fn man_pages_per_subcommand_have_exit_status_and_examples() {
    for (sub, title) in [
        (None, ".TH TALLY 1"),
        (Some("run"), ".TH TALLY-RUN 1"),
        (Some("mem"), ".TH TALLY-MEM 1"),
        (Some("bench"), ".TH TALLY-BENCH 1"),
        (Some("cache"), ".TH TALLY-CACHE 1"),
        (Some("cp"), ".TH TALLY-CP 1"),
        (Some("load"), ".TH TALLY-LOAD 1"),
    ] {
        let out = common::tally()
            .arg("man")
            .args(sub)
            .output()
            .expect("tally runs");
        assert_eq!(out.status.code(), Some(0), "{sub:?}: {out:?}");
        let page = String::from_utf8_lossy(&out.stdout);
        assert!(page.contains(title), "{sub:?}: {page}");
        assert!(page.contains("EXIT STATUS"), "{sub:?}");
        assert!(page.contains("EXAMPLES"), "{sub:?}");
    }
    let run = common::tally().args(["man", "run"]).output().expect("runs");
    let page = String::from_utf8_lossy(&run.stdout);
    assert!(
        page.contains("\\-\\-export"),
        "run's options are on its page"
    );
    assert!(page.contains("\\fB125\\fR"), "run's own exit codes");
    common::tally().args(["man", "nosuch"]).assert().code(2);
}

/// `tally man --dir DIR` installs every page the top page lists, readable
/// by all, and leaves no temporary file; a missing DIR is a clear error.
#[test]
fn man_dir_installs_every_page() {
    let dir = tempfile::tempdir().expect("tempdir");
    let out = common::tally()
        .args(["man", "--dir"])
        .arg(dir.path())
        .output()
        .expect("tally runs");
    assert_eq!(out.status.code(), Some(0), "{out:?}");
    let mut names: Vec<String> = std::fs::read_dir(dir.path())
        .expect("read dir")
        .map(|e| e.expect("entry").file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    for want in [
        "tally.1",
        "tally-run.1",
        "tally-mem.1",
        "tally-cp.1",
        "tally-man.1",
    ] {
        assert!(names.iter().any(|n| n == want), "{want} in {names:?}");
    }
    assert!(
        names
            .iter()
            .all(|n| n.ends_with(".1") && !n.starts_with('.')),
        "{names:?}"
    );
    let listed = String::from_utf8_lossy(&out.stdout);
    assert_eq!(listed.lines().count(), names.len(), "{listed}");
    use std::os::unix::fs::PermissionsExt;
    let run = dir.path().join("tally-run.1");
    let mode = std::fs::metadata(&run).expect("page").permissions().mode();
    assert_eq!(mode & 0o777, 0o644);
    let page = std::fs::read_to_string(&run).expect("page");
    assert!(
        page.starts_with(".ie") || page.contains(".TH TALLY-RUN 1"),
        "{page}"
    );
    common::tally()
        .args(["man", "--dir"])
        .arg(dir.path().join("missing"))
        .assert()
        .code(1)
        .stderr(predicates::str::contains(
            "missing/tally.1: No such file or directory",
        ));
}

/// After `--` in `tally run -- …` bash offered tally's own options; it
/// now completes commands, then files.
#[test]
fn bash_completes_commands_after_run_double_dash() {
    let out = common::tally()
        .args(["completions", "bash"])
        .output()
        .expect("tally runs");
    assert_eq!(out.status.code(), Some(0));
    let script = String::from_utf8_lossy(&out.stdout);
    let run = script.find("tally__subcmd__run)").expect("the run case");
    let case = &script[run..];
    let end = case.find(";;").expect("end of the case");
    assert!(case[..end].contains("compgen -c"), "{}", &case[..end]);
    common::require!(common::tool("bash", "bash"));
    let dir = scratch("complete");
    let file = dir.path().join("script.bash");
    std::fs::write(&file, script.as_bytes()).expect("write script");
    let complete = |words: &str, cword: usize| -> Vec<String> {
        let probe = format!(
            "source {}; COMP_WORDS=({words}); COMP_CWORD={cword}; \
             cur=${{COMP_WORDS[COMP_CWORD]}}; prev=${{COMP_WORDS[COMP_CWORD-1]}}; \
             _tally tally \"$cur\" \"$prev\"; printf '%s\\n' \"${{COMPREPLY[@]}}\"",
            file.display()
        );
        let out = common::command("bash")
            .arg("-c")
            .arg(probe)
            .output()
            .expect("bash runs");
        String::from_utf8_lossy(&out.stdout)
            .lines()
            .map(String::from)
            .collect()
    };
    let commands = complete("tally run -n 3 -- bas", 5);
    assert!(commands.iter().any(|c| c == "bash"), "{commands:?}");
    assert!(!commands.iter().any(|c| c.starts_with('-')), "{commands:?}");
    let options = complete("tally run --tr", 2);
    assert_eq!(options, vec!["--tree".to_string()]);
    let after = complete("tally run -- ls --", 4);
    assert!(!after.iter().any(|c| c == "--tree"), "{after:?}");
}

//! Every string that did not come from tally (a name, a command, anything
//! read from a baseline or the machine) goes through one escaper in every
//! text format and message: no escape sequence, OSC title, bell, line
//! break or bidirectional control reaches the terminal or breaks the
//! `tally:` prefix.

mod common;

use std::path::Path;
use std::time::Duration;

use serde_json::Value;

/// An ESC colour, an OSC window title ended by BEL, a line break and a
/// right-to-left override.
const HOSTILE: &str = "x\u{1b}[31mred\u{1b}]0;TITLE\u{7}\nnewline\u{202e}txt";

/// What must never reach a terminal.
fn assert_clean(what: &str, text: &str) {
    for bad in ['\u{1b}', '\u{7}', '\u{202e}', '\r'] {
        assert!(!text.contains(bad), "{what}: {bad:?} passed: {text}");
    }
}

/// Every line of stderr is a `tally:` line (a line break in a name does
/// not start an unprefixed one).
fn assert_prefixed(what: &str, stderr: &str) {
    for line in stderr.lines() {
        assert!(line.starts_with("tally:"), "{what}: {line:?} in {stderr}");
    }
}

fn run(args: &[&str], dir: &Path) -> (Option<i32>, String, String) {
    let out = common::tally()
        .args(args)
        .current_dir(dir)
        .timeout(Duration::from_secs(120))
        .output()
        .expect("tally runs");
    (
        out.status.code(),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// A `--name` and a command holding escape sequences were printed raw in
/// compare's human, Markdown and CSV output, and in its warnings.
#[test]
fn compare_printed_names_and_commands_raw() {
    let dir = tempfile::tempdir().expect("tempdir");
    let command = format!("true '{HOSTILE}'");
    for format in ["human", "markdown", "csv"] {
        let (code, out, err) = run(
            &[
                "compare", "-n", "2", "--format", format, "-o", "-", "--name", HOSTILE, "--name",
                "f", &command, "false", "-i",
            ],
            dir.path(),
        );
        assert_eq!(code, Some(0), "{format}: {err}");
        assert_clean(format, &out);
        assert_clean(format, &err);
        assert_prefixed(format, &err);
        // Escaped, not dropped: the bytes are there to read back (in
        // Markdown in a code span, where a backslash shows as it is).
        let escaped = "x\\x1b[31mred\\x1b]0;TITLE\\x07";
        assert!(out.contains(escaped), "{format}: {out}");
    }
    // A failure names the command escaped.
    let (code, _, err) = run(
        &[
            "compare", "-n", "2", "--name", HOSTILE, "--name", "other", "false", "false",
        ],
        dir.path(),
    );
    assert_eq!(code, Some(1), "{err}");
    assert_clean("failure", &err);
    assert_prefixed("failure", &err);
}

/// A baseline's stored `name`, `tally_version`, `kernel`, `cpu_model`,
/// `options.shell` and `options.cold` were printed raw in the warnings of
/// a comparison against it.
#[test]
fn compare_printed_strings_read_from_a_baseline_raw() {
    let dir = tempfile::tempdir().expect("tempdir");
    let (code, _, err) = run(
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
        dir.path(),
    );
    assert_eq!(code, Some(0), "{err}");
    let path = dir.path().join("b.json");
    let mut v: Value = serde_json::from_slice(&std::fs::read(&path).expect("read")).expect("json");
    v["tally_version"] = HOSTILE.into();
    v["machine"]["kernel"] = HOSTILE.into();
    v["machine"]["cpu_model"] = HOSTILE.into();
    v["options"]["shell"] = HOSTILE.into();
    v["options"]["cold"] = serde_json::json!([HOSTILE]);
    v["commands"][0]["name"] = HOSTILE.into();
    std::fs::write(&path, serde_json::to_vec(&v).expect("json")).expect("write");
    for format in ["human", "markdown", "csv"] {
        let (code, out, err) = run(
            &[
                "compare",
                "-n",
                "3",
                "--baseline",
                "b.json",
                "--format",
                format,
                "-o",
                "-",
                "true",
            ],
            dir.path(),
        );
        assert_eq!(code, Some(0), "{format}: {err}");
        assert_clean(format, &out);
        assert_clean(format, &err);
        assert_prefixed(format, &err);
        let all = format!("{out}{err}");
        // The name, and the warnings' version, CPU, kernel, shell and
        // --cold: each said, escaped.
        if format == "human" {
            let said = all.matches("x\\x1b[31mred\\x1b]0;TITLE\\x07").count();
            assert!(said >= 6, "{format}: {said} times: {all}");
        }
    }
}

/// bench's comparison with a baseline printed the baseline's
/// `machine.cpu_model` and `kernel` raw, and its figure ids in a
/// `--fail-on` message; a `mode` it cannot read reached the parse error
/// raw.
#[test]
fn bench_printed_strings_read_from_a_baseline_raw() {
    let dir = tempfile::tempdir().expect("tempdir");
    let (code, _, err) = run(
        &[
            "bench", "timer", "--quick", "--format", "json", "-o", "old.json",
        ],
        dir.path(),
    );
    assert_eq!(code, Some(0), "{err}");
    let path = dir.path().join("old.json");
    let mut v: Value = serde_json::from_slice(&std::fs::read(&path).expect("read")).expect("json");
    v["machine"]["cpu_model"] = HOSTILE.into();
    v["machine"]["kernel"] = HOSTILE.into();
    v["benchmarks"][0]["figures"][0]["id"] = format!("zz{HOSTILE}").into();
    std::fs::write(&path, serde_json::to_vec(&v).expect("json")).expect("write");
    let (code, out, err) = run(
        &[
            "bench",
            "timer",
            "--quick",
            "--baseline",
            "old.json",
            "-o",
            "-",
        ],
        dir.path(),
    );
    assert_eq!(code, Some(0), "{err}");
    assert_clean("human", &out);
    assert_clean("human", &err);
    assert!(out.contains("x\\x1b[31mred"), "{out}");
    // Figure ids from the baseline in a --fail-on message.
    let (code, out, err) = run(
        &[
            "bench",
            "timer",
            "--quick",
            "--baseline",
            "old.json",
            "--fail-on",
            "nothing.*=5%",
        ],
        dir.path(),
    );
    assert_eq!(code, Some(2), "{err}");
    assert_clean("--fail-on", &format!("{out}{err}"));
    assert_prefixed("--fail-on", &err);
    // A mode it cannot read.
    v["mode"] = HOSTILE.into();
    std::fs::write(&path, serde_json::to_vec(&v).expect("json")).expect("write");
    let (code, out, err) = run(
        &["bench", "timer", "--quick", "--baseline", "old.json"],
        dir.path(),
    );
    assert_eq!(code, Some(1), "{err}");
    assert_clean("mode", &format!("{out}{err}"));
    assert_prefixed("mode", &err);
}

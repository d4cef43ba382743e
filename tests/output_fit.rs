//! A new user's first hour, the output side: what a file, a pipe and a
//! terminal get from the binary under test. Each test is named after what
//! misled or annoyed.

mod common;

use std::process::Stdio;

use common::tally;

/// `tally load FILE > file` cut the table to 100 columns: peak RSS,
/// minor faults and block-in vanished from the file without a note.
#[test]
fn a_table_written_to_a_file_keeps_every_column() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("data.bin");
    std::fs::write(&file, vec![7u8; 1 << 20]).unwrap();
    let out = tally()
        .env_remove("COLUMNS")
        .args(["load", "--warm"])
        .arg(&file)
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{text}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let header = text
        .lines()
        .find(|l| l.contains("peak RSS"))
        .unwrap_or_else(|| panic!("no header with every column:\n{text}"));
    for column in ["cpu µs", "kernel", "peak RSS", "minor flt", "block in"] {
        assert!(header.contains(column), "{column} missing: {header}");
    }
    assert!(!text.contains("hidden"), "{text}");
}

/// With a width to fit (`COLUMNS=60`, as a narrow terminal), the columns
/// left out are said by name, with the fix, instead of vanishing.
#[test]
fn columns_left_out_of_a_narrow_table_are_named() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("data.bin");
    std::fs::write(&file, vec![7u8; 1 << 20]).unwrap();
    let out = tally()
        .env("COLUMNS", "60")
        .args(["load", "--warm"])
        .arg(&file)
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{text}");
    let said: String = text
        .lines()
        .skip_while(|l| !l.contains("hidden ("))
        .map(str::trim)
        .collect::<Vec<_>>()
        .join(" ");
    assert!(
        said.contains("hidden (") && said.contains("--format csv or json for every column"),
        "{text}"
    );
    assert!(
        said.contains("block in"),
        "the first column left out: {said}"
    );
}

/// The bytes `line` writes on a pseudo-terminal (script(1)) with `TERM`
/// set to `term`; `None` when script(1) is missing (recorded as a skip by
/// the caller).
fn on_a_terminal(line: &str, term: &str) -> Option<Vec<u8>> {
    if !common::have("script") {
        return None;
    }
    let out = common::command("script")
        .args(["-qec", line, "/dev/null"])
        .env("TERM", term)
        .env_remove("NO_COLOR")
        .stdin(Stdio::null())
        .output()
        .expect("script runs");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stdout)
    );
    Some(out.stdout)
}

/// `TERM=dumb` (Emacs' shell, some CI logs) still got bold escapes, which
/// such a terminal prints raw. On a capable terminal the header is bold;
/// on a dumb one nothing carries an escape.
#[test]
fn term_dumb_gets_no_escapes() {
    let line = format!("{} cache /etc/passwd", common::tally_bin().display());
    let Some(capable) = on_a_terminal(&line, "xterm") else {
        common::skip_without_tool!("script", "Debian package bsdutils");
    };
    let bold = b"\x1b[1m";
    assert!(
        capable.windows(bold.len()).any(|w| w == bold),
        "no bold header on a terminal: {}",
        String::from_utf8_lossy(&capable)
    );
    let dumb = on_a_terminal(&line, "dumb").expect("script ran a moment ago");
    assert!(
        !dumb.contains(&0x1b),
        "an escape on TERM=dumb: {:?}",
        String::from_utf8_lossy(&dumb)
    );
    assert!(String::from_utf8_lossy(&dumb).contains("/etc/passwd"));
}

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
    for column in ["cpu", "kernel", "peak RSS", "minor flt", "block in"] {
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

/// What tally said on stderr, its `tally:` lines joined into one text.
fn said(stderr: &str) -> String {
    stderr
        .split("tally:")
        .map(str::trim)
        .collect::<Vec<_>>()
        .join(" ")
}

/// No warning when the first run was much slower than the rest (a cache
/// it filled), where hyperfine suggests `--warmup`. A command whose first
/// run sleeps 0.3 s and the others not: `run -n 4` names the first run
/// and the fix; with `--warmup 1` that run is left out, and so is the
/// warning.
#[test]
fn a_slow_first_run_is_said_with_warmup_as_the_fix() {
    let dir = tempfile::tempdir().unwrap();
    let script = "if [ ! -e done ]; then touch done; sleep 0.3; fi";
    let out = tally()
        .current_dir(dir.path())
        .args(["run", "-n", "4", "--", "sh", "-c", script])
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{err}");
    let text = said(&err);
    assert!(
        text.contains("wall time: the first run took")
            && text.contains("warm-up runs (--warmup 1) leave it out"),
        "{err}"
    );
    std::fs::remove_file(dir.path().join("done")).unwrap();
    let out = tally()
        .current_dir(dir.path())
        .args(["run", "-n", "4", "--warmup", "1", "-u", "us", "--"])
        .args(["sh", "-c", script])
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{err}");
    // The sleeping run was the warm-up: any first run named now is not it
    // (a first measured run can still be slower for other reasons).
    if let Some(rest) = said(&err).split("the first run took ").nth(1) {
        let us: String = rest
            .chars()
            .take_while(|c| c.is_ascii_digit() || *c == ',')
            .filter(char::is_ascii_digit)
            .collect();
        let us: u64 = us.parse().expect("a number of µs");
        assert!(us < 250_000, "the warm-up's sleep was measured: {err}");
    }
}

/// Compare's report showed median ± MAD only, where hyperfine's users
/// look for mean ± σ and min … max: both are in the human report, for
/// wall time, per command.
#[test]
fn compare_shows_mean_sigma_and_min_max_as_hyperfine_does() {
    let out = tally()
        .env_remove("COLUMNS")
        .args([
            "compare",
            "-N",
            "-n",
            "5",
            "-u",
            "us",
            "/bin/true",
            "/bin/echo",
        ])
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{text}");
    let header = text
        .lines()
        .find(|l| l.starts_with("wall time") && l.contains("mean ± σ"))
        .unwrap_or_else(|| panic!("no mean ± σ table:\n{text}"));
    assert!(header.contains("min … max"), "{header}");
    let rows: Vec<&str> = text
        .lines()
        .skip_while(|l| *l != header)
        .skip(1)
        .take(2)
        .collect();
    for row in &rows {
        assert!(
            row.contains("µs ± ") && row.contains("µs … ") && row.ends_with("µs"),
            "{row}\n{text}"
        );
    }
    assert!(rows[0].contains("#1") && rows[1].contains("#2"), "{text}");
}

/// `tally compare 'sleep 0.01'` compared the command with itself ("Holm-
/// adjusted over 0 figures"). One command is refused, with `run -n` as
/// the fix, before anything runs; one command against its stored runs
/// (`--baseline`), or stored for later (`--save-baseline`), still works.
/// One command was refused ("use tally run -n"); `hyperfine CMD` is the
/// commonest call there is: it is now summarised as hyperfine does.
#[test]
fn one_command_given_to_compare_gets_hyperfines_summary() {
    let dir = tempfile::tempdir().unwrap();
    let marker = dir.path().join("ran");
    let touch = format!("touch {}", marker.display());
    let out = tally()
        .current_dir(dir.path())
        .args(["compare", "-n", "2", &touch])
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{err}");
    assert!(
        String::from_utf8_lossy(&out.stdout).contains("wall time (mean ± σ):"),
        "{err}"
    );
    assert!(marker.exists(), "the command ran");
    // One command stored, then compared against what was stored.
    for args in [
        ["--save-baseline", "b.json", "true"],
        ["--baseline", "b.json", "true"],
    ] {
        let out = tally()
            .current_dir(dir.path())
            .args(["compare", "-n", "3", "-o", "/dev/null"])
            .args(args)
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "{args:?}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
    // A parameter scan of one command is several commands.
    let out = tally()
        .args(["compare", "-n", "2", "-P", "n", "1", "2", "true {n}"])
        .output()
        .unwrap();
    assert!(out.status.success(), "{out:?}");
}

/// The figure after `took` and before `wall time`: `1.105s`.
fn took(err: &str) -> &str {
    err.split("took ")
        .nth(1)
        .and_then(|rest| rest.split(" wall time").next())
        .unwrap_or_else(|| panic!("no `took … wall time`: {err}"))
}

/// `run -- sleep 1.2` said `1,204,704µs`, and no command took
/// `-u/--time-unit`. Times scale (ns, µs, ms, s) in human output by
/// default, `-u` fixes one unit on run, compare, load and bench, and JSON
/// keeps its integers.
#[test]
fn times_scale_to_their_unit_and_time_unit_fixes_one() {
    let out = tally()
        .args(["run", "--", "sleep", "1.1"])
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{err}");
    let wall = took(&err);
    assert!(
        wall.starts_with("1.") && wall.ends_with('s') && !wall.ends_with("µs"),
        "{wall}: {err}"
    );
    assert!(!err.contains(",µs") && !wall.contains(','), "{err}");
    let out = tally()
        .args(["run", "-u", "us", "--", "sleep", "0.2"])
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    let wall = took(&err);
    assert!(wall.ends_with("µs") && wall.contains(','), "{wall}: {err}");
    // Every time in the repeated-run table in the unit asked for.
    let out = tally()
        .args(["run", "-n", "2", "--time-unit", "ms", "--", "sleep", "0.05"])
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    let row = err
        .lines()
        .find(|l| l.contains("wall time"))
        .unwrap_or_else(|| panic!("no wall time row: {err}"));
    assert_eq!(row.matches("ms").count(), 5, "{row}");
    // JSON keeps its integers.
    let out = tally()
        .args(["run", "--format", "json", "-u", "s", "--", "true"])
        .output()
        .unwrap();
    let report: serde_json::Value = serde_json::from_slice(&out.stderr).unwrap();
    assert!(report["runs"][0]["wall_ns"].is_u64(), "{report}");
    // compare and load take it too.
    let out = tally()
        .args([
            "compare",
            "-N",
            "-n",
            "3",
            "-u",
            "s",
            "/bin/true",
            "/bin/echo",
        ])
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{text}");
    let row = text
        .lines()
        .find(|l| l.contains(" ± ") && l.contains("#1"))
        .unwrap_or_else(|| panic!("no mean ± σ row: {text}"));
    assert!(row.contains("s ± ") && !row.contains("µs"), "{row}");
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("data.bin");
    std::fs::write(&file, vec![7u8; 1 << 20]).unwrap();
    let out = tally()
        .env_remove("COLUMNS")
        .args(["load", "--warm", "-u", "ns", "--methods", "read"])
        .arg(&file)
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{text}");
    let row = text
        .lines()
        .find(|l| l.contains("read") && l.contains("ns"))
        .unwrap_or_else(|| panic!("no read row in ns: {text}"));
    assert!(!row.contains("µs"), "{row}");
}

/// `--help` at 80 columns split quoted example commands across lines, and
/// the man pages reflowed them (`'python3 load.py --mmap` / `model.bin'`)
/// and repeated them under NOTES. Every example line of `--help` fits
/// whole (a line that goes on says so with `\`), and the man page keeps
/// each example on one unbreakable line, listed once.
#[test]
fn examples_are_never_split_across_lines_nor_repeated_in_notes() {
    let subcommands = [
        "run", "compare", "bench", "mem", "cache", "cp", "load", "serve",
    ];
    for sub in subcommands {
        let out = tally()
            .env("COLUMNS", "80")
            .args([sub, "--help"])
            .output()
            .unwrap();
        let help = String::from_utf8_lossy(&out.stdout);
        assert!(out.status.success(), "{sub}: {help}");
        let examples: Vec<&str> = help
            .lines()
            .skip_while(|l| *l != "Examples:")
            .skip(1)
            .take_while(|l| !l.trim().is_empty())
            .collect();
        assert!(!examples.is_empty(), "{sub}: no examples: {help}");
        for (i, line) in examples.iter().enumerate() {
            let goes_on = i > 0 && examples[i - 1].ends_with('\\');
            assert!(
                goes_on || line.starts_with("  tally ") || line.starts_with("  find "),
                "{sub}: an example split at 80 columns: {line:?}\n{help}"
            );
        }
        let out = tally().args(["man", sub]).output().unwrap();
        let page = String::from_utf8_lossy(&out.stdout);
        assert!(out.status.success(), "{sub}");
        let section = |name: &str| -> String {
            page.split(".SH ")
                .find(|s| s.starts_with(name))
                .unwrap_or_default()
                .to_string()
        };
        let shown = section("EXAMPLES");
        assert!(shown.contains("\n.nh\n"), "{sub}: hyphenated: {shown}");
        let tags: Vec<&str> = shown
            .lines()
            .filter(|l| l.starts_with("\\fBtally"))
            .collect();
        assert!(!tags.is_empty(), "{sub}: {shown}");
        for tag in &tags {
            let bare = tag.replace("\\ ", "");
            assert!(!bare.contains(' '), "{sub}: a breakable example: {tag}");
        }
        let notes = section("NOTES");
        assert!(!notes.contains("Examples:"), "{sub}: {notes}");
        assert!(!notes.contains("Exit status:"), "{sub}: {notes}");
        assert!(
            !notes.lines().any(|l| l.trim_start().starts_with("tally ")),
            "{sub}: NOTES repeat an example: {notes}"
        );
    }
}

/// `compare --export markdown=FILE` without a gate was one table of every
/// figure of every command, raw nanoseconds and 16-digit floats. The
/// compact summary (a headline, a small table per command, times scaled)
/// is compare's Markdown; CSV keeps the full table.
#[test]
fn compare_markdown_is_the_compact_summary_with_scaled_times() {
    let out = tally()
        // The reference named: the two take about the same wall time, so
        // the fastest, the default reference, is either.
        .args(["compare", "-N", "-n", "3", "--reference", "1"])
        .args(["--format", "markdown", "/bin/true", "/bin/echo"])
        .output()
        .unwrap();
    let md = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{md}");
    assert!(md.starts_with("**tally compare**: \\#2 "), "{md}");
    assert!(md.contains("\n#### `"), "{md}");
    let tables = md.lines().filter(|l| l.starts_with("| figure |")).count();
    assert_eq!(tables, 1, "one table for the one compared command: {md}");
    let wall = md
        .lines()
        .find(|l| l.starts_with("| wall time |"))
        .unwrap_or_else(|| panic!("no wall time row: {md}"));
    let cells: Vec<&str> = wall.split('|').map(str::trim).collect();
    for cell in &cells[2..4] {
        assert!(
            ["ns", "µs", "ms", "s"].iter().any(|u| cell.ends_with(u)),
            "{cell}: {wall}"
        );
        assert!(cell.len() < 12, "not scaled: {cell}");
    }
    assert!(!md.contains("wall_ns"), "the full table: {md}");
    let out = tally()
        .args(["compare", "-N", "-n", "3", "--format", "csv"])
        .args(["/bin/true", "/bin/echo"])
        .output()
        .unwrap();
    let csv = String::from_utf8_lossy(&out.stdout);
    assert!(csv.contains("wall_ns"), "{csv}");
}

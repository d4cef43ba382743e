//! The one output stage (src/report/output.rs): every command that
//! reports takes `--format F -o FILE` the same way, refuses a format it
//! does not have before any work, writes a file only when it is complete,
//! keeps stdout to one document, and fails when its report cannot be
//! written.

mod common;

use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::{Duration, Instant};

use common::tally;

const FORMATS: [&str; 6] = ["human", "json", "csv", "markdown", "prometheus", "html"];

/// A small file to cache, copy and load.
fn data_file(dir: &Path) -> PathBuf {
    let path = dir.join("data.bin");
    std::fs::write(&path, vec![7u8; 256 << 10]).expect("write data");
    path
}

/// The arguments of `command` reporting in `format` to `out`, on small
/// inputs in `dir`.
fn invocation(command: &str, format: &str, out: &Path, dir: &Path) -> Vec<String> {
    let out = out.to_string_lossy().into_owned();
    let data = data_file(dir).to_string_lossy().into_owned();
    let base = ["--format".to_string(), format.to_string(), "-o".into(), out];
    let mut args: Vec<String> = vec![command.into()];
    args.extend(base);
    match command {
        "run" => args.extend(["--", "true"].map(String::from)),
        "compare" => args.extend(["-N", "-n", "6", "/bin/true", "/bin/true"].map(String::from)),
        "mem" => args.extend(["--pid".to_string(), std::process::id().to_string()]),
        "cache" => args.push(data),
        "cp" => {
            args.push(data);
            args.push(dir.join("copy.bin").to_string_lossy().into_owned());
        }
        "load" => {
            args.extend(["--warm", "--runs", "1", "--methods", "read", &data].map(String::from))
        }
        "bench" => args.extend(["syscall", "--budget-ms", "2"].map(String::from)),
        other => panic!("no invocation for {other}"),
    }
    args
}

fn promtool() -> Option<PathBuf> {
    std::env::var_os("PATH").and_then(|paths| {
        std::env::split_paths(&paths)
            .map(|d| d.join("promtool"))
            .find(|p| p.is_file())
    })
}

/// Whether `text` is a valid `format` document; the reason when not.
fn valid(format: &str, text: &str) -> Result<(), String> {
    match format {
        "human" => (!text.trim().is_empty())
            .then_some(())
            .ok_or("empty".into()),
        "json" => serde_json::from_str::<serde_json::Value>(text)
            .map(|_| ())
            .map_err(|e| e.to_string()),
        "csv" => {
            let mut reader = csv::ReaderBuilder::new()
                .flexible(false)
                .from_reader(text.as_bytes());
            let rows = reader.records().count();
            let width = reader.headers().map_err(|e| e.to_string())?.len();
            let mut again = csv::ReaderBuilder::new()
                .flexible(false)
                .from_reader(text.as_bytes());
            for r in again.records() {
                r.map_err(|e| format!("not rectangular: {e}"))?;
            }
            (rows > 0 && width > 1)
                .then_some(())
                .ok_or(format!("{rows} rows of {width} columns"))
        }
        "markdown" => text
            .lines()
            .any(|l| l.starts_with("|") && l.contains("---"))
            .then_some(())
            .ok_or("no table".into()),
        "prometheus" => match promtool() {
            Some(p) => {
                let (status, said) = common::promtool_check_metrics(&p, text);
                (status.success() && said.trim().is_empty())
                    .then_some(())
                    .ok_or(said)
            }
            None => text
                .contains("# TYPE")
                .then_some(())
                .ok_or("no # TYPE line".into()),
        },
        "html" => text.contains("<svg").then_some(()).ok_or("no <svg".into()),
        _ => Err("unknown format".into()),
    }
}

#[test]
fn every_command_writes_every_format_it_has_and_refuses_the_rest_before_any_work() {
    if promtool().is_none() {
        common::skip_part!(
            "promtool is not installed: Prometheus text checked by its # TYPE lines"
        );
    }
    let mut refused = Vec::new();
    for command in ["run", "compare", "mem", "cache", "cp", "load", "bench"] {
        for format in FORMATS {
            let dir = tempfile::tempdir().expect("tempdir");
            let out = dir.path().join(format!("report.{format}"));
            let args = invocation(command, format, &out, dir.path());
            let result = tally().args(&args).output().expect("tally runs");
            let err = String::from_utf8_lossy(&result.stderr);
            let code = result.status.code();
            if code == Some(2) || (command == "run" && code == Some(125)) {
                // Refused: named, and before any work.
                assert!(
                    err.contains(&format!("has no {format} report")),
                    "{command} {format}: {err}"
                );
                assert!(!out.exists(), "{command} {format}: a report file was left");
                assert!(
                    !dir.path().join("copy.bin").exists(),
                    "{command} {format}: cp copied before refusing"
                );
                refused.push(format!("{command} {format}"));
                continue;
            }
            assert!(
                matches!(code, Some(0) | Some(1)),
                "{command} {format}: {code:?} {err}"
            );
            let text = std::fs::read_to_string(&out)
                .unwrap_or_else(|e| panic!("{command} {format}: no report file ({e}): {err}"));
            if let Err(why) = valid(format, &text) {
                panic!("{command} {format}: not a valid {format} document: {why}\n{text}");
            }
            // Nothing but the report in the directory: no temporary left.
            let left: Vec<_> = common::entries(dir.path())
                .into_iter()
                .filter(|p| {
                    p.file_name()
                        .is_some_and(|n| n.to_string_lossy().starts_with('.'))
                })
                .collect();
            assert!(left.is_empty(), "{command} {format}: left {left:?}");
        }
    }
    eprintln!("refused: {refused:?}");
    assert!(refused.len() <= 7, "{} refused: {refused:?}", refused.len());
    for format in ["human", "json", "csv", "markdown"] {
        assert!(
            !refused.iter().any(|r| r.ends_with(&format!(" {format}"))),
            "{format} refused: {refused:?}"
        );
    }
}

/// `-o FILE` truncated FILE before anything was measured: `echo old >
/// r.json; tally run --format json -o r.json -- typo` left it empty.
#[test]
fn an_earlier_report_survives_a_failed_command() {
    let dir = tempfile::tempdir().expect("tempdir");
    let file = dir.path().join("r.json");
    std::fs::write(&file, "old\n").expect("write");
    let out = tally()
        .args(["run", "--format", "json", "-o"])
        .arg(&file)
        .args(["--", "no-such-command-here"])
        .output()
        .expect("tally runs");
    assert_eq!(out.status.code(), Some(127));
    assert_eq!(std::fs::read_to_string(&file).expect("read"), "old\n");
    // The same for compare.
    let out = tally()
        .args(["compare", "--format", "json", "-o"])
        .arg(&file)
        .args(["-N", "-n", "3", "no-such-command-here", "/bin/true"])
        .output()
        .expect("tally runs");
    assert_ne!(out.status.code(), Some(0));
    assert_eq!(std::fs::read_to_string(&file).expect("read"), "old\n");
    assert_eq!(common::entries(dir.path()), [file], "no temporary left");
}

/// ... and a kill in the middle of `run -n 50 -o r.json`.
#[test]
fn an_earlier_report_survives_a_kill() {
    let dir = tempfile::tempdir().expect("tempdir");
    let file = dir.path().join("r.json");
    std::fs::write(&file, "old\n").expect("write");
    let ready = dir.path().join("ready");
    let script = format!("touch {}; sleep 0.1", ready.display());
    let child = common::tally_std()
        .args(["run", "-n", "50", "--format", "json", "-o"])
        .arg(&file)
        .args(["--", "sh", "-c", &script])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("tally starts");
    let start = Instant::now();
    while !ready.exists() {
        assert!(start.elapsed() < Duration::from_secs(20), "never ran");
        std::thread::sleep(Duration::from_millis(10));
    }
    let pid = child.id();
    let _reaper = common::Reaper(vec![child]);
    let killed = common::command("kill")
        .args(["-KILL", &pid.to_string()])
        .status()
        .expect("kill");
    assert!(killed.success());
    std::thread::sleep(Duration::from_millis(300));
    assert_eq!(std::fs::read_to_string(&file).expect("read"), "old\n");
    let left: Vec<PathBuf> = common::entries(dir.path())
        .into_iter()
        .filter(|p| p != &file && p != &ready)
        .collect();
    assert!(left.is_empty(), "left behind: {left:?}");
}

/// `run --format json -o - -- echo hello` wrote `hello` into the JSON
/// stream; `compare --export json=-` wrote the human report and the JSON
/// onto one stdout; two writers to stdout were accepted.
#[test]
fn stdout_carries_one_document() {
    let out = tally()
        .args(["run", "--format", "json", "-o", "-", "--", "echo", "hello"])
        .output()
        .expect("tally runs");
    assert_eq!(out.status.code(), Some(0));
    let doc: serde_json::Value = serde_json::from_slice(&out.stdout).expect("one JSON document");
    assert_eq!(doc["runs"].as_array().map(Vec::len), Some(1));
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("hello"),
        "the command's output went to stderr"
    );
    let out = tally()
        .args(["compare", "-N", "-n", "3", "--export", "json=-"])
        .args(["/bin/true", "/bin/true"])
        .output()
        .expect("tally runs");
    assert_eq!(out.status.code(), Some(0));
    serde_json::from_slice::<serde_json::Value>(&out.stdout).expect("stdout is pure JSON");
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("median"),
        "the human report went to stderr"
    );
    for two in [
        &["-o", "-", "--export", "json=-"][..],
        &["--export", "json=-", "--export", "csv=-"],
        &["--format", "csv", "--export", "json=-"],
    ] {
        let out = tally()
            .args(["compare", "-N", "-n", "3"])
            .args(two)
            .args(["/bin/true", "/bin/true"])
            .output()
            .expect("tally runs");
        assert_eq!(out.status.code(), Some(2), "{two:?}");
        assert!(out.stdout.is_empty(), "{two:?}");
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(err.contains("both write to stdout"), "{two:?}: {err}");
    }
}

/// Write failures passed silently: `tally --help >/dev/full` exited 0,
/// and `mem --watch` with stdout closed ran forever.
#[test]
fn a_report_that_cannot_be_written_is_an_error() {
    if !Path::new("/dev/full").exists() {
        common::skip!("no /dev/full");
    }
    let full = || {
        std::fs::OpenOptions::new()
            .write(true)
            .open("/dev/full")
            .expect("/dev/full")
    };
    for args in [&["--help"][..], &["mem"], &["cache", "/etc/hostname"]] {
        let out = common::tally_std()
            .args(args)
            .stdout(full())
            .output()
            .expect("tally runs");
        assert_eq!(out.status.code(), Some(1), "{args:?}");
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(err.contains("No space left"), "{args:?}: {err}");
    }
    // stdout closed: said at once, before any work.
    let out = common::command("sh")
        .arg("-c")
        .arg(format!(
            "exec {} mem --watch 0.1 >&-",
            common::tally_bin().display()
        ))
        .stderr(Stdio::piped())
        .spawn()
        .expect("sh");
    let out = common::wait_or_kill(out, Duration::from_secs(20));
    assert_eq!(out.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&out.stderr).contains("stdout is closed"));
}

/// `cp --format html` and `cache --format html` copied or evicted first,
/// then exited 1.
#[test]
fn a_format_a_command_does_not_have_is_refused_before_any_work() {
    let dir = tempfile::tempdir().expect("tempdir");
    let src = data_file(dir.path());
    let dst = dir.path().join("copy.bin");
    let out = tally()
        .args(["cp", "--format", "html"])
        .arg(&src)
        .arg(&dst)
        .output()
        .expect("tally runs");
    assert_eq!(out.status.code(), Some(2));
    assert!(!dst.exists(), "cp copied before refusing");
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("cp has no html report; --format takes"),
        "{err}"
    );
    let out = tally()
        .args(["cache", "--evict", "--format", "html"])
        .arg(&src)
        .output()
        .expect("tally runs");
    assert_eq!(out.status.code(), Some(2));
    // An unwritable -o is said before the copy too.
    let out = tally()
        .args(["cp", "--format", "json", "-o", "/no/such/dir/r.json"])
        .arg(&src)
        .arg(&dst)
        .output()
        .expect("tally runs");
    assert_eq!(out.status.code(), Some(1));
    assert!(!dst.exists(), "cp copied before failing on -o");
}

/// `-o /dev/full` was "put in place" like a regular file: the device node
/// was replaced by a regular file holding the report. A device, a FIFO or
/// a pipe named by `-o` is written as it is, never replaced.
#[test]
fn a_device_or_a_fifo_named_by_o_is_written_not_replaced() {
    use std::os::unix::fs::FileTypeExt;
    let out = tally()
        .args(["run", "--format", "json", "-o", "/dev/null", "--", "true"])
        .output()
        .expect("tally runs");
    assert_eq!(out.status.code(), Some(0), "{out:?}");
    let null = std::fs::metadata("/dev/null").expect("/dev/null");
    assert!(null.file_type().is_char_device(), "/dev/null was replaced");
    let dir = tempfile::tempdir().expect("tempdir");
    let fifo = dir.path().join("fifo");
    let made = common::command("mkfifo")
        .arg(&fifo)
        .status()
        .expect("mkfifo");
    assert!(made.success());
    let reader = common::command("cat")
        .arg(&fifo)
        .stdout(Stdio::piped())
        .spawn()
        .expect("cat");
    // The reader first (a FIFO nobody reads is refused, never waited on):
    // until cat holds it open.
    let fd_dir = format!("/proc/{}/fd", reader.id());
    let opened = || {
        std::fs::read_dir(&fd_dir).is_ok_and(|fds| {
            fds.filter_map(Result::ok)
                .any(|fd| std::fs::read_link(fd.path()).is_ok_and(|t| t == fifo))
        })
    };
    let start = std::time::Instant::now();
    while !opened() && start.elapsed() < Duration::from_secs(10) {
        std::thread::sleep(Duration::from_millis(10));
    }
    let out = tally()
        .args(["run", "--format", "json", "-o"])
        .arg(&fifo)
        .args(["--", "true"])
        .output()
        .expect("tally runs");
    assert_eq!(out.status.code(), Some(0), "{out:?}");
    let read = common::wait_or_kill(reader, Duration::from_secs(20));
    serde_json::from_slice::<serde_json::Value>(&read.stdout).expect("the report came through");
    let kind = std::fs::symlink_metadata(&fifo).expect("fifo").file_type();
    assert!(kind.is_fifo(), "the FIFO was replaced");
}

/// `mem`'s human lines were 170 columns wide and `load`'s table 128: the
/// human output of every command fits a 100-column terminal (`COLUMNS`
/// says how wide), stdout and stderr alike. Off a terminal (a pipe, a
/// file, a CI log) nothing is fitted, so nothing is cut: see
/// `output_fit::a_table_written_to_a_file_keeps_every_column`.
#[test]
fn human_output_fits_100_columns() {
    let dir = tempfile::tempdir().expect("tempdir");
    let data = data_file(dir.path());
    let data = data.to_str().expect("utf-8 path");
    let cases: [&[&str]; 6] = [
        &["run", "-n", "5", "--", "true"],
        &["compare", "-N", "-n", "6", "/bin/true", "/bin/echo"],
        &["mem"],
        &["bench", "syscall", "--budget-ms", "2"],
        &["cache", data, "/etc/hostname"],
        &["load", "--runs", "1", data],
    ];
    for args in cases {
        let out = tally()
            .env("COLUMNS", "100")
            .args(args)
            .output()
            .expect("tally runs");
        for stream in [&out.stdout, &out.stderr] {
            let text = String::from_utf8_lossy(stream);
            let long: Vec<&str> = text.lines().filter(|l| l.chars().count() > 100).collect();
            assert!(long.is_empty(), "{args:?}: {long:#?}");
        }
    }
}

/// A report's formats follow from its forms: a format made from a
/// form every report has (a table) reaches every report, one that
/// needs a page only those with one.
#[test]
fn a_reports_formats_follow_from_its_forms() {
    use tally::report::Report;
    let names =
        |f: Vec<tally::report::Format>| f.iter().map(|f| f.name()).collect::<Vec<_>>().join(" ");
    assert_eq!(
        names(tally::run::report::RunReport::formats()),
        "human json csv markdown prometheus html hyperfine hyperfine-csv hyperfine-markdown"
    );
    assert_eq!(
        names(tally::copy::report::CopyReport::formats()),
        "human json csv markdown"
    );
    assert_eq!(
        names(tally::compare::baseline::BaselineFile::formats()),
        "json"
    );
    for f in tally::report::Format::all() {
        assert_eq!(
            tally::run::report::RunReport::has(f),
            tally::run::report::RunReport::FORMS.contains(&f.spec().needs)
        );
    }
}

/// Streams `rows` of the report `whole` (whose streamed form is `head`
/// and `tail`) through every format `R` has, each into a file of its own,
/// and checks each text against `whole` rendered at once: a format is its
/// file and its line in `formats!`, and a report written row by row gets
/// it from there, with the same text.
fn every_format_streams_as_whole<R, S>(
    whole: &R,
    rows: &[S::Row],
    mut head: S,
    tail: impl Fn(&mut S),
) where
    R: tally::report::Report + tally::report::Document,
    S: tally::report::output::Streamed,
{
    use tally::report::{Export, Format, Output, Request, Style};
    let dir = tempfile::tempdir().expect("tempdir");
    let formats: Vec<Format> = R::formats();
    assert!(formats.len() >= 4, "{formats:?}");
    let path = |f: Format| dir.path().join(f.name());
    let request = Request {
        format: formats[0],
        output: Some(path(formats[0])),
        exports: formats[1..]
            .iter()
            .map(|f| Export {
                format: *f,
                path: path(*f),
                flag: "--export",
            })
            .collect(),
        append: false,
    };
    let output = Output::open::<R>(&request, "test", None).expect("open");
    let mut stream = output.stream::<S>();
    for row in rows {
        stream.row(&head, row);
    }
    tail(&mut head);
    let failed = stream.finish(&head);
    assert!(failed.is_empty(), "{failed:?}");
    for format in formats {
        let streamed = std::fs::read_to_string(path(format)).expect("read");
        let mut at_once = Vec::new();
        tally::report::render(whole, format, Style::PLAIN, &mut at_once).expect("render");
        let at_once = String::from_utf8(at_once).expect("utf-8");
        if format == Format::MARKDOWN {
            // Its alignment row is declared when streamed, not guessed from
            // rows that are not all there yet.
            let body = |t: &str| t.lines().skip(2).map(String::from).collect::<Vec<_>>();
            assert_eq!(body(&streamed), body(&at_once), "{format}");
        } else {
            assert_eq!(streamed, at_once, "{format}");
        }
    }
}

#[test]
fn every_format_writes_cache_and_cp_reports_row_by_row_as_it_writes_them_whole() {
    use tally::cache::report::{Action, CacheReport, CacheStream, FileReport, PathProblem, Shown};
    use tally::copy::report::{CopyReport, CopyStream, FileCopy, Method};
    use tally::pagecache::{Method as Residence, Residency};
    let files: Vec<FileReport> = (0..12u64)
        .map(|i| FileReport {
            path: format!("/data/f{i:02} name").into(),
            size_bytes: 4096 * (i + 1),
            residency: Residency::Known {
                method: Residence::Cachestat,
                cached_pages: i % 4,
                dirty_pages: Some(0),
                writeback_pages: Some(0),
            },
            before: None,
            stayed_reason: None,
            read_bytes: None,
            map_percent: None,
        })
        .collect();
    let problems = vec![PathProblem::new(
        Path::new("/data/gone"),
        "not found".into(),
    )];
    let mut whole = CacheReport {
        schema_version: tally::report::SCHEMA_VERSION,
        action: Action::Status,
        page_size_bytes: 4096,
        files: files.clone(),
        total: Default::default(),
        problems: problems.clone(),
    };
    whole.total_up();
    // The human report's default: the rows with the most cached (here all
    // of them, in the order found), and the totals of all (with --all,
    // rows are written as they come, in columns of a width fixed
    // beforehand).
    let mut head = CacheStream::new(Action::Status, 4096, Shown::default());
    for f in &files {
        head.add(f);
    }
    every_format_streams_as_whole(&whole, &files, head, |s: &mut CacheStream| {
        s.tail.problems = problems.clone();
    });

    let copies: Vec<FileCopy> = (0..12u64)
        .map(|i| FileCopy {
            source: format!("/src/f{i}").into(),
            destination: format!("/dst/f{i}").into(),
            size_bytes: 1 << (10 + i),
            data_bytes: 1 << (10 + i),
            method: Method::CopyFileRange,
            wall_ns: 1000 * i,
            source_cached_before_pages: Some(0),
            source_cached_after_pages: Some(0),
            destination_cached_pages: None,
            notes: Vec::new(),
        })
        .collect();
    let whole = CopyReport {
        schema_version: tally::report::SCHEMA_VERSION,
        files: copies.clone(),
        directories: 2,
        symlinks: 1,
        problems: Vec::new(),
        interrupted: None,
    };
    every_format_streams_as_whole(
        &whole,
        &copies,
        CopyStream::default(),
        |s: &mut CopyStream| {
            s.tail.directories = 2;
            s.tail.symlinks = 1;
        },
    );
}

//! Every file format tally reads, fed mutated real files: a compare
//! baseline and a bench baseline made by the binary under test, serve's
//! configuration (TOML) and the exporters' web configuration (YAML). Each
//! case flips bytes, truncates, deletes or duplicates lines, puts huge,
//! negative or fractional numbers and values of the wrong type in place of
//! numbers, or control characters in place of text. Every case must end
//! within its time limit, under a bound on its memory, without a panic,
//! and either be taken or be refused by a message that names the file and
//! what in it is wrong (a field, a line, or what kind of document it is).
//! The generator is seeded: a failure names its seed and its case, and
//! reruns the same.

mod common;

use std::path::Path;
use std::process::Stdio;
use std::time::{Duration, Instant};

/// Cases per format: a few seconds each.
const CASES: u64 = 300;

/// Memory a case may map (`ulimit -v`, KiB): a reader that allocated by
/// what a file claims, not by what it holds, is stopped here.
const MEMORY_KIB: u64 = 2 << 20;

/// A case's time limit: every reader here is done in milliseconds.
const LIMIT: Duration = Duration::from_secs(10);

/// xorshift64*: small, seeded, the same on every machine.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }

    fn below(&mut self, n: usize) -> usize {
        (self.next() % n.max(1) as u64) as usize
    }
}

/// Values put where a number or a string stood.
const STAND_INS: [&str; 22] = [
    "18446744073709551616",
    "18446744073709551615",
    "9223372036854775808",
    "-9223372036854775809",
    "4294967295",
    "4294967298",
    "-1",
    "-2147483648",
    "0",
    "1e308",
    "-1e308",
    "1e-308",
    "0.5",
    "-0.0",
    "\"1\"",
    "\"\\u001b]0;title\\u0007\\u202e\"",
    "true",
    "null",
    "[]",
    "{}",
    "\"\"",
    "\"x\"",
];

/// The byte ranges of the numbers in `text` (a digit run, with its sign,
/// fraction and exponent).
fn numbers(text: &[u8]) -> Vec<(usize, usize)> {
    let mut found = Vec::new();
    let mut i = 0;
    while i < text.len() {
        let starts = text[i].is_ascii_digit()
            && (i == 0 || !(text[i - 1].is_ascii_alphanumeric() || text[i - 1] == b'_'));
        if starts {
            let from = if i > 0 && text[i - 1] == b'-' {
                i - 1
            } else {
                i
            };
            let mut j = i;
            while j < text.len() && (text[j].is_ascii_digit() || b".eE+-".contains(&text[j])) {
                j += 1;
            }
            found.push((from, j));
            i = j;
        } else {
            i += 1;
        }
    }
    found
}

/// The byte ranges of the lines of `text`, each with its newline.
fn lines(text: &[u8]) -> Vec<(usize, usize)> {
    let mut found = Vec::new();
    let mut start = 0;
    for (i, b) in text.iter().enumerate() {
        if *b == b'\n' {
            found.push((start, i + 1));
            start = i + 1;
        }
    }
    if start < text.len() {
        found.push((start, text.len()));
    }
    found
}

fn splice(text: &[u8], (from, to): (usize, usize), with: &[u8]) -> Vec<u8> {
    [&text[..from], with, &text[to..]].concat()
}

/// One mutation of `text`.
fn mutate_once(rng: &mut Rng, text: &[u8]) -> Vec<u8> {
    if text.is_empty() {
        return b"{".to_vec();
    }
    match rng.below(7) {
        0 => {
            let mut t = text.to_vec();
            let at = rng.below(t.len());
            t[at] ^= 1 << rng.below(8);
            t
        }
        1 => text[..rng.below(text.len())].to_vec(),
        2 | 3 => {
            let ls = lines(text);
            let line = ls[rng.below(ls.len())];
            let copy = text[line.0..line.1].to_vec();
            let twice = [copy.clone(), copy].concat();
            splice(text, line, if rng.below(2) == 0 { &[] } else { &twice })
        }
        4 | 5 => {
            let ns = numbers(text);
            if ns.is_empty() {
                return text[..rng.below(text.len())].to_vec();
            }
            let n = ns[rng.below(ns.len())];
            splice(text, n, STAND_INS[rng.below(STAND_INS.len())].as_bytes())
        }
        _ => {
            // A string's text replaced: control characters, or 64 KiB.
            let quotes: Vec<usize> = (0..text.len()).filter(|i| text[*i] == b'"').collect();
            if quotes.len() < 2 {
                return text[..rng.below(text.len())].to_vec();
            }
            let q = rng.below(quotes.len() - 1);
            let with = if rng.below(2) == 0 {
                "\\u001b[2J\\u202ex\\r\\ny".to_string()
            } else {
                "A".repeat(64 << 10)
            };
            splice(text, (quotes[q] + 1, quotes[q + 1]), with.as_bytes())
        }
    }
}

/// How a case ended.
struct Ended {
    code: Option<i32>,
    signal: Option<i32>,
    stderr: String,
}

/// Runs the binary under test with `args` in `dir`, under the memory
/// bound; past [`LIMIT`] it is killed.
fn run_case(dir: &Path, args: &[&str]) -> Ended {
    use std::os::unix::process::ExitStatusExt;
    let err_path = dir.join("stderr");
    let err = std::fs::File::create(&err_path).expect("stderr file");
    let mut child = common::command("sh")
        .arg("-c")
        .arg(format!("ulimit -v {MEMORY_KIB} && exec \"$0\" \"$@\""))
        .arg(common::tally_bin())
        .args(args)
        .current_dir(dir)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(err)
        .spawn()
        .expect("sh runs");
    let start = Instant::now();
    let status = loop {
        if let Some(s) = child.try_wait().expect("try_wait") {
            break Some(s);
        }
        if start.elapsed() > LIMIT {
            let _ = child.kill();
            let _ = child.wait();
            break None;
        }
        std::thread::sleep(Duration::from_millis(2));
    };
    let stderr =
        String::from_utf8_lossy(&std::fs::read(&err_path).unwrap_or_default()).into_owned();
    match status {
        Some(s) => Ended {
            code: s.code(),
            signal: s.signal(),
            stderr,
        },
        None => Ended {
            code: None,
            signal: None,
            stderr: format!("(hung past {LIMIT:?}) {stderr}"),
        },
    }
}

/// Every key of a JSON, TOML or YAML document, roughly: the words before
/// a `:` or `=`, quoted or not.
fn keys_of(text: &str) -> Vec<String> {
    let mut keys: Vec<String> = text
        .lines()
        .filter_map(|l| {
            let l = l
                .trim()
                .trim_start_matches('[')
                .trim_start_matches('-')
                .trim();
            let end = l.find([':', '='])?;
            let key = l[..end].trim().trim_matches('"').trim_end_matches(']');
            (!key.is_empty() && key.len() < 40 && !key.contains(' ')).then(|| key.to_string())
        })
        .collect();
    keys.sort();
    keys.dedup();
    keys
}

/// A format under test: its real file, how it is fed to tally, and what
/// a case may end with.
struct Format {
    what: &'static str,
    file: &'static str,
    seed: u64,
    /// The arguments, with the file's name among them.
    args: Vec<String>,
    /// Exit codes and a stderr part that mean the file was taken.
    taken: Vec<(i32, &'static str)>,
    /// Parts of stderr that name the document as a whole (not JSON, cut
    /// short, another kind): a refusal with no field to name.
    whole: Vec<&'static str>,
}

fn fuzz(dir: &Path, format: &Format, real: &[u8]) {
    let text = String::from_utf8_lossy(real);
    let keys = keys_of(&text);
    assert!(keys.len() > 3, "{}: too few keys in {text}", format.what);
    let args: Vec<&str> = format.args.iter().map(String::as_str).collect();
    let mut rng = Rng(format.seed);
    let mut refused = 0;
    for case in 0..CASES {
        let mut bytes = real.to_vec();
        for _ in 0..=rng.below(3) {
            bytes = mutate_once(&mut rng, &bytes);
        }
        std::fs::write(dir.join(format.file), &bytes).expect("write the case");
        let e = run_case(dir, &args);
        let at = format!("{} case {case} (seed {:#x})", format.what, format.seed);
        let shown = || {
            // The lines of the case that the real file does not hold.
            let t = String::from_utf8_lossy(&bytes);
            let changed: Vec<String> = t
                .lines()
                .enumerate()
                .filter(|(_, l)| !text.lines().any(|r| r == *l))
                .map(|(i, l)| format!("{}: {}", i + 1, l.chars().take(200).collect::<String>()))
                .take(20)
                .collect();
            format!(
                "{at}:\n--- stderr\n{}\n--- lines changed (of {} in the case, {} in the real file)\n{}",
                e.stderr,
                t.lines().count(),
                text.lines().count(),
                changed.join("\n")
            )
        };
        assert!(
            e.signal.is_none(),
            "killed by signal {:?}: {}",
            e.signal,
            shown()
        );
        let Some(code) = e.code else {
            panic!("{}", shown());
        };
        assert!(
            code != 101 && !e.stderr.contains("panicked"),
            "panicked: {}",
            shown()
        );
        if format
            .taken
            .iter()
            .any(|(c, part)| *c == code && e.stderr.contains(part))
        {
            continue;
        }
        refused += 1;
        if std::env::var_os("TALLY_FUZZ_SHOW").is_some() {
            eprintln!("{at}: {}", e.stderr.lines().next().unwrap_or(""));
        }
        assert!(
            code == 1 || code == 2,
            "exit {code}, neither taken nor refused: {}",
            shown()
        );
        assert!(
            e.stderr.starts_with("tally: ") && e.stderr.contains(format.file),
            "the refusal names no file: {}",
            shown()
        );
        let names = keys.iter().any(|k| e.stderr.contains(k.as_str()))
            || e.stderr.contains(&format!("{}:", format.file))
            || format.whole.iter().any(|w| e.stderr.contains(w));
        assert!(names, "the refusal names no field: {}", shown());
    }
    eprintln!("{}: {CASES} cases, {refused} refused", format.what);
}

/// A real file made by the binary under test in `dir`: `args` write it to
/// `name`.
fn made(dir: &Path, args: &[&str], name: &str) -> Vec<u8> {
    let out = common::tally_std()
        .args(args)
        .current_dir(dir)
        .output()
        .expect("tally runs");
    assert!(out.status.success(), "{out:?}");
    std::fs::read(dir.join(name)).expect("the file tally wrote")
}

#[test]
fn mutated_compare_baselines_are_taken_or_refused_by_field() {
    let dir = tempfile::tempdir().expect("tempdir");
    let real = made(
        dir.path(),
        &[
            "compare",
            "-n",
            "3",
            "--save-baseline",
            "saved.json",
            "--name",
            "t",
            "--name",
            "u",
            "true",
            "true x",
        ],
        "saved.json",
    );
    let format = Format {
        what: "compare baseline",
        file: "base.json",
        seed: 0x35c0_4ba5_e11e,
        args: [
            "compare",
            "-n",
            "3",
            "--baseline",
            "base.json",
            "--format",
            "json",
        ]
        .map(String::from)
        .to_vec(),
        taken: vec![(0, "")],
        whole: vec![
            "truncated",
            "not JSON",
            "is empty",
            "of another kind",
            "report",
        ],
    };
    fuzz(dir.path(), &format, &real);
}

#[test]
fn mutated_bench_baselines_are_taken_or_refused_by_field() {
    let dir = tempfile::tempdir().expect("tempdir");
    let real = made(
        dir.path(),
        &["bench", "timer", "--format", "json", "-o", "saved.json"],
        "saved.json",
    );
    // A glob that matches no figure: a baseline that was read whole
    // stops there (exit 2) before any benchmark runs.
    let format = Format {
        what: "bench baseline",
        file: "old.json",
        seed: 0xbe4c_4ba5_e11e,
        args: [
            "bench",
            "--baseline",
            "old.json",
            "--fail-on",
            "zz.no.such=5%",
        ]
        .map(String::from)
        .to_vec(),
        taken: vec![(2, "matches no figure of the baseline")],
        whole: vec!["is not a `tally bench --format json` report"],
    };
    fuzz(dir.path(), &format, &real);
}

/// `serve` at an address it cannot listen on: a configuration it took
/// ends there, after it was read.
fn serve_args(flag: &str, file: &str) -> Vec<String> {
    ["serve", "--listen", "192.0.2.1:9", flag, file]
        .map(String::from)
        .to_vec()
}

#[test]
fn mutated_serve_configs_are_taken_or_refused_by_line() {
    let dir = tempfile::tempdir().expect("tempdir");
    let real = b"min_interval = 5\n\
        [mem]\nby = \"program\"\nname = \"exe\"\nsplit_args = false\ntop = 20\n\
        [cache]\npaths = [\"/srv/model.bin\", \"/var/lib/postgresql\"]\n\
        [[run]]\nname = \"dns\"\ncommand = [\"getent\", \"hosts\", \"example.com\"]\n\
        interval = 60\ntimeout = 30\n\
        [bench]\nenabled = true\nnames = [\"syscall\", \"ctxswitch\"]\ninterval = 3600\n\
        [limits]\nmax_connections = 64\nhandshake_timeout = 10\nheader_timeout = 10\n\
        max_header_bytes = 8192\nwrite_timeout = 30\n";
    let format = Format {
        what: "serve config",
        file: "serve.toml",
        seed: 0x0005_e4ec_0f16,
        args: serve_args("--config", "serve.toml"),
        taken: vec![(1, "cannot listen on 192.0.2.1:9")],
        whole: vec!["is not UTF-8"],
    };
    fuzz(dir.path(), &format, real);
}

#[test]
fn mutated_web_configs_are_taken_or_refused_by_line() {
    let dir = tempfile::tempdir().expect("tempdir");
    let hash = bcrypt::hash("secret", 4).expect("bcrypt");
    let real = format!(
        "http_server_config:\n  headers:\n    X-Frame-Options: deny\n    \
         Strict-Transport-Security: max-age=31536000\n\
         rate_limit:\n  interval: 1s\n  burst: 20\n\
         basic_auth_users:\n  prometheus: '{hash}'\n  grafana: '{hash}'\n"
    );
    let format = Format {
        what: "web config",
        file: "web.yml",
        seed: 0x3ebc_0f16,
        args: serve_args("--web-config", "web.yml"),
        taken: vec![(1, "cannot listen on 192.0.2.1:9")],
        whole: vec!["is not UTF-8"],
    };
    fuzz(dir.path(), &format, real.as_bytes());
}

//! The configuration file of `tally serve` (TOML), read once at start-up:
//! every mistake is reported then, with its line, never at scrape time.
//!
//! ```toml
//! # Seconds: a scrape sooner than this after the last scan gets its result.
//! min_interval = 5
//!
//! [mem]
//! by = "program"          # program, user or cgroup
//! name = "exe"            # exe, comm or argv0
//! split_args = false
//! top = 20                # the rest summed into one `other` row
//!
//! [cache]
//! paths = ["/srv/model.bin", "/var/lib/postgresql"]
//!
//! [[run]]
//! name = "dns"
//! command = ["getent", "hosts", "example.com"]
//! interval = 60
//! timeout = 30
//! # count = "sim"        # counted work too (auto, hw or sim; docs/count.md)
//!
//! [bench]
//! enabled = true
//! names = ["syscall", "ctxswitch", "memlat"]
//! interval = 3600
//!
//! [limits]                # what a client may take (the defaults shown)
//! max_connections = 64    # open at once; the oldest idle one makes room
//! handshake_timeout = 10  # seconds to finish the TLS handshake
//! header_timeout = 10     # seconds to send the request head
//! max_header_bytes = 8192 # the request line and headers
//! write_timeout = 30      # seconds to take the answer
//! ```

use std::ops::Range;
use std::path::{Path, PathBuf};
use std::time::Duration;

use super::number::Number;
use serde::Deserialize;
use toml::Spanned;

use crate::mem::group::GroupBy;
use crate::mem::name::NameMode;

/// The whole configuration, validated.
#[derive(Debug, Clone, PartialEq)]
pub struct Config {
    /// A scrape within this time of the last scan gets the cached result.
    pub min_interval: Duration,
    /// `None`: the mem collector is switched off.
    pub mem: Option<Mem>,
    pub cache: Vec<PathBuf>,
    pub run: Vec<RunCheck>,
    /// `None`: the bench collector is switched off (the default).
    pub bench: Option<Bench>,
    /// What a client may take of the server.
    pub limits: crate::serve::http::Limits,
}

/// The mem collector.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Mem {
    pub by: GroupBy,
    pub name: NameMode,
    pub split_args: bool,
    /// Rows exported per scrape; the rest are summed into `other`.
    pub top: usize,
}

/// One periodic command of the run collector.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RunCheck {
    /// The `check` label; unique.
    pub name: String,
    pub command: Vec<String>,
    pub interval: Duration,
    /// The command is killed when it runs longer.
    pub timeout: Duration,
    /// Counted work (`tally run --count`): the source, when asked for.
    pub count: Option<crate::count::Choice>,
}

/// The bench collector.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Bench {
    pub names: Vec<String>,
    pub interval: Duration,
}

/// The benchmarks the bench collector runs unless told: short, and what
/// a machine that has become slow shows first.
pub const DEFAULT_BENCHMARKS: [&str; 3] = ["syscall", "ctxswitch", "memlat"];

/// The default number of rows of the mem collector.
pub const DEFAULT_TOP: usize = 30;

impl Default for Config {
    fn default() -> Config {
        Config {
            min_interval: Duration::from_secs(5),
            mem: Some(Mem {
                by: GroupBy::Program,
                name: NameMode::Exe,
                split_args: false,
                top: DEFAULT_TOP,
            }),
            cache: Vec::new(),
            run: Vec::new(),
            bench: None,
            limits: crate::serve::http::Limits::default(),
        }
    }
}

/// How much of a configuration is read: [`crate::input::CONFIG`]'s 1 MiB.
pub const BOUND: crate::input::Bound = crate::input::Bound {
    what: "serve configuration",
    fix: "give a TOML file of at most 1 MiB (see docs/fleet.md)",
    ..crate::input::CONFIG
};

/// A configuration that cannot be used: where, and what is wrong.
#[derive(Debug, thiserror::Error)]
pub enum ConfigError {
    /// It names the file, the cap or type, and the fix.
    #[error(transparent)]
    Read(#[from] crate::input::InputError),
    #[error("{}:{line}: {message}", crate::text::path::display(path))]
    Invalid {
        path: PathBuf,
        line: usize,
        message: String,
    },
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct File {
    min_interval: Option<Spanned<Number>>,
    mem: Option<MemFile>,
    cache: Option<CacheFile>,
    #[serde(default)]
    run: Vec<Spanned<RunFile>>,
    bench: Option<Spanned<BenchFile>>,
    limits: Option<LimitsFile>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct LimitsFile {
    max_connections: Option<Spanned<Number>>,
    handshake_timeout: Option<Spanned<Number>>,
    header_timeout: Option<Spanned<Number>>,
    max_header_bytes: Option<Spanned<Number>>,
    write_timeout: Option<Spanned<Number>>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct MemFile {
    enabled: Option<bool>,
    by: Option<Spanned<String>>,
    name: Option<Spanned<String>>,
    split_args: Option<bool>,
    top: Option<Spanned<Number>>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct CacheFile {
    enabled: Option<bool>,
    #[serde(default)]
    paths: Vec<Spanned<String>>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RunFile {
    name: Spanned<String>,
    command: Spanned<Vec<String>>,
    interval: Option<Spanned<Number>>,
    timeout: Option<Spanned<Number>>,
    count: Option<Spanned<String>>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct BenchFile {
    enabled: Option<bool>,
    names: Option<Spanned<Vec<String>>>,
    interval: Option<Spanned<Number>>,
}

/// Reads and checks the file at `path`.
pub fn load(path: &Path) -> Result<Config, ConfigError> {
    let text = crate::input::read_text(path, &BOUND)?;
    parse(&text).map_err(|(line, message)| ConfigError::Invalid {
        path: path.to_path_buf(),
        line,
        message,
    })
}

/// The 1-based line of byte offset `at` in `text`.
fn line_of(text: &str, at: usize) -> usize {
    text.as_bytes()
        .iter()
        .take(at)
        .filter(|&&b| b == b'\n')
        .count()
        + 1
}

/// Parses a configuration; an error is its line and the message.
pub fn parse(text: &str) -> Result<Config, (usize, String)> {
    let file: File = toml::from_str(text).map_err(|e| {
        let line = e.span().map_or(1, |s| line_of(text, s.start));
        let message = e.message().trim_end();
        // The parser says "duplicate key" alone: name the key, at its span.
        let key = e
            .span()
            .and_then(|s| text.get(s))
            .filter(|k| message == "duplicate key" && !k.is_empty() && k.len() <= 60);
        match key {
            Some(k) => (
                line,
                format!(
                    "the key {} is given twice; keep one",
                    crate::text::escape_text(k.trim())
                ),
            ),
            None => (line, crate::text::escape_text(message)),
        }
    })?;
    let src = Source { text };
    let mut cfg = Config::default();
    if let Some(v) = &file.min_interval {
        cfg.min_interval = src.seconds(v, "min_interval", 0.0, 3600.0)?;
    }
    if let Some(m) = file.mem {
        cfg.mem = m.config(&src, cfg.mem.take())?;
    }
    if let Some(c) = file.cache
        && c.enabled != Some(false)
    {
        for p in &c.paths {
            if p.get_ref().is_empty() || !p.get_ref().starts_with('/') {
                return Err(src.at(
                    p.span(),
                    format!(
                        "cache.paths: {:?} is not an absolute path; give the full path of a file or directory",
                        p.get_ref()
                    ),
                ));
            }
            cfg.cache.push(PathBuf::from(p.get_ref()));
        }
    }
    for r in &file.run {
        let check = r.get_ref().check(&src, &cfg.run)?;
        cfg.run.push(check);
    }
    if let Some(b) = &file.bench {
        let b = b.get_ref();
        if b.enabled != Some(false) {
            cfg.bench = Some(b.config(&src)?);
        }
    }
    if let Some(l) = &file.limits {
        l.apply(&src, &mut cfg.limits)?;
    }
    Ok(cfg)
}

/// The text of a configuration, to say where a value stands.
struct Source<'a> {
    text: &'a str,
}

impl Source<'_> {
    /// `message` at the line of `span`.
    fn at(&self, span: Range<usize>, message: String) -> (usize, String) {
        (line_of(self.text, span.start), message)
    }

    /// A number of seconds from `min` to `max`.
    fn seconds(
        &self,
        value: &Spanned<Number>,
        what: &str,
        min: f64,
        max: f64,
    ) -> Result<Duration, (usize, String)> {
        let v = value.get_ref();
        if let Some(x) = v.real().filter(|x| (min..=max).contains(x)) {
            Ok(Duration::from_secs_f64(x))
        } else {
            Err(self.at(
                value.span(),
                format!("{what} must be between {min} and {max} seconds, not {v}"),
            ))
        }
    }

    /// A count from `min` to `max`.
    fn count(
        &self,
        value: &Spanned<Number>,
        what: &str,
        min: usize,
        max: usize,
    ) -> Result<usize, (usize, String)> {
        let v = value.get_ref();
        v.whole()
            .and_then(|n| usize::try_from(n).ok())
            .filter(|n| (min..=max).contains(n))
            .ok_or_else(|| {
                self.at(
                    value.span(),
                    format!("{what} must be between {min} and {max}, not {v}"),
                )
            })
    }
}

impl MemFile {
    /// The `[mem]` collector over `current` (the default); `None` when
    /// it is disabled.
    fn config(&self, src: &Source, current: Option<Mem>) -> Result<Option<Mem>, (usize, String)> {
        if self.enabled == Some(false) {
            return Ok(None);
        }
        let mut mem = current.unwrap_or(Mem {
            by: GroupBy::Program,
            name: NameMode::Exe,
            split_args: false,
            top: DEFAULT_TOP,
        });
        if let Some(by) = &self.by {
            mem.by = match by.get_ref().as_str() {
                "program" => GroupBy::Program,
                "user" => GroupBy::User,
                "cgroup" => GroupBy::Cgroup,
                other => {
                    return Err(src.at(
                        by.span(),
                        format!(
                            "mem.by: unknown grouping {other:?}; use \"program\", \"user\" or \"cgroup\""
                        ),
                    ));
                }
            };
        }
        if let Some(name) = &self.name {
            mem.name = match name.get_ref().as_str() {
                "exe" => NameMode::Exe,
                "comm" => NameMode::Comm,
                "argv0" => NameMode::Argv0,
                other => {
                    return Err(src.at(
                        name.span(),
                        format!(
                            "mem.name: unknown name {other:?}; use \"exe\", \"comm\" or \"argv0\""
                        ),
                    ));
                }
            };
        }
        mem.split_args = self.split_args.unwrap_or(false);
        if let Some(top) = &self.top {
            let n = top.get_ref();
            mem.top = n
                .whole()
                .and_then(|n| usize::try_from(n).ok())
                .filter(|n| (1..=10_000).contains(n))
                .ok_or_else(|| {
                    src.at(
                        top.span(),
                        format!(
                            "mem.top must be between 1 and 10000 (it bounds the series per scrape), not {n}"
                        ),
                    )
                })?;
        }
        Ok(Some(mem))
    }
}

impl RunFile {
    /// One `[[run]]` check; `earlier` are those before it.
    fn check(&self, src: &Source, earlier: &[RunCheck]) -> Result<RunCheck, (usize, String)> {
        let name = self.name.get_ref();
        let good_name = !name.is_empty()
            && name.len() <= 64
            && name
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || b"_-.".contains(&b));
        if !good_name {
            return Err(src.at(
                self.name.span(),
                format!(
                    "run.name {name:?}: use 1 to 64 letters, digits, `_`, `-` or `.` (it is the `check` label)"
                ),
            ));
        }
        if earlier.iter().any(|c| &c.name == name) {
            return Err(src.at(
                self.name.span(),
                format!("run.name {name:?} is used twice; each check needs its own name"),
            ));
        }
        if self.command.get_ref().first().is_none_or(String::is_empty) {
            return Err(src.at(
                self.command.span(),
                "run.command: give the program and its arguments, e.g. [\"getent\", \"hosts\", \"example.com\"]"
                    .to_string(),
            ));
        }
        let interval = match &self.interval {
            Some(v) => src.seconds(v, "run.interval", 1.0, 86_400.0)?,
            None => Duration::from_secs(60),
        };
        let timeout = match &self.timeout {
            Some(v) => src.seconds(v, "run.timeout", 0.1, 86_400.0)?,
            None => interval.min(Duration::from_secs(60)),
        };
        let count = match &self.count {
            Some(c) => Some(
                crate::count::Choice::parse(c.get_ref())
                    .map_err(|why| src.at(c.span(), format!("run.count: {why}")))?,
            ),
            None => None,
        };
        Ok(RunCheck {
            name: name.clone(),
            command: self.command.get_ref().clone(),
            interval,
            timeout,
            count,
        })
    }
}

impl BenchFile {
    /// The `[bench]` collector, enabled.
    fn config(&self, src: &Source) -> Result<Bench, (usize, String)> {
        let names = match &self.names {
            Some(n) => {
                for name in n.get_ref() {
                    if crate::bench::registry::find(name).is_none() {
                        return Err(src.at(
                            n.span(),
                            format!(
                                "bench.names: unknown benchmark {name:?}; `tally bench --list` shows the names"
                            ),
                        ));
                    }
                }
                if n.get_ref().is_empty() {
                    return Err(src.at(
                        n.span(),
                        "bench.names is empty; name benchmarks or set enabled = false".to_string(),
                    ));
                }
                n.get_ref().clone()
            }
            None => DEFAULT_BENCHMARKS.iter().map(|s| s.to_string()).collect(),
        };
        let interval = match &self.interval {
            Some(v) => src.seconds(v, "bench.interval", 60.0, 7.0 * 86_400.0)?,
            None => Duration::from_secs(3600),
        };
        Ok(Bench { names, interval })
    }
}

impl LimitsFile {
    /// Sets the `[limits]` given in `limits`.
    fn apply(
        &self,
        src: &Source,
        limits: &mut crate::serve::http::Limits,
    ) -> Result<(), (usize, String)> {
        if let Some(v) = &self.max_connections {
            limits.max_connections = src.count(v, "limits.max_connections", 2, 10_000)?;
        }
        if let Some(v) = &self.max_header_bytes {
            limits.max_head = src.count(v, "limits.max_header_bytes", 1024, 1 << 20)?;
        }
        if let Some(v) = &self.handshake_timeout {
            limits.handshake_timeout = src.seconds(v, "limits.handshake_timeout", 0.1, 600.0)?;
        }
        if let Some(v) = &self.header_timeout {
            limits.head_timeout = src.seconds(v, "limits.header_timeout", 0.1, 600.0)?;
        }
        if let Some(v) = &self.write_timeout {
            limits.write_timeout = src.seconds(v, "limits.write_timeout", 0.1, 3600.0)?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_empty_file_is_the_default() {
        assert_eq!(parse("").unwrap(), Config::default());
    }

    #[test]
    fn a_full_file_parses() {
        let cfg = parse(
            "min_interval = 2\n[mem]\nby = \"user\"\ntop = 5\n[cache]\npaths = [\"/srv/m\"]\n\
             [[run]]\nname = \"dns\"\ncommand = [\"true\"]\ninterval = 30\n\
             [bench]\nnames = [\"syscall\"]\ninterval = 600\n",
        )
        .unwrap();
        assert_eq!(cfg.min_interval, Duration::from_secs(2));
        let mem = cfg.mem.unwrap();
        assert_eq!((mem.by, mem.top), (GroupBy::User, 5));
        assert_eq!(cfg.cache, vec![PathBuf::from("/srv/m")]);
        assert_eq!(cfg.run[0].interval, Duration::from_secs(30));
        assert_eq!(cfg.run[0].timeout, Duration::from_secs(30));
        assert_eq!(cfg.bench.unwrap().names, vec!["syscall".to_string()]);
    }

    #[test]
    fn limits_are_read_and_default_sanely() {
        let l = parse("").unwrap().limits;
        assert_eq!(l, crate::serve::http::Limits::default());
        let l = parse(
            "[limits]\nmax_connections = 8\nhandshake_timeout = 2.5\nheader_timeout = 3\n\
             max_header_bytes = 4096\nwrite_timeout = 7\n",
        )
        .unwrap()
        .limits;
        assert_eq!(l.max_connections, 8);
        assert_eq!(l.handshake_timeout, Duration::from_millis(2500));
        assert_eq!(l.head_timeout, Duration::from_secs(3));
        assert_eq!(l.max_head, 4096);
        assert_eq!(l.write_timeout, Duration::from_secs(7));
    }

    #[test]
    fn config_errors_name_their_line() {
        let cases = [
            (
                "min_interval = 1\n[mem]\nby = \"pid\"\n",
                3,
                "unknown grouping",
            ),
            ("\n\n[mem]\ntop = 0\n", 4, "mem.top"),
            ("[mem]\ncolour = 1\n", 2, "unknown field"),
            ("x = [\n", 1, ""),
            ("[cache]\npaths = [\n \"rel\"]\n", 3, "absolute"),
            (
                "[[run]]\nname = \"a\"\ncommand = [\"true\"]\n[[run]]\nname = \"a\"\ncommand = [\"true\"]\n",
                5,
                "twice",
            ),
            ("[bench]\n\nnames = [\"nope\"]\n", 3, "unknown benchmark"),
            (
                "[[run]]\nname = \"a b\"\ncommand = [\"true\"]\n",
                2,
                "letters",
            ),
            ("[[run]]\nname = \"a\"\ncommand = []\n", 3, "program"),
            (
                "[limits]\nmax_connections = 1\n",
                2,
                "limits.max_connections",
            ),
            (
                "[limits]\n\nhandshake_timeout = 0\n",
                3,
                "limits.handshake_timeout",
            ),
            (
                "[limits]\nmax_header_bytes = 10\n",
                2,
                "limits.max_header_bytes",
            ),
            ("[limits]\nslowloris = 1\n", 2, "unknown field"),
        ];
        for (text, line, words) in cases {
            let (l, msg) = parse(text).unwrap_err();
            assert_eq!(l, line, "{text:?}: {msg}");
            assert!(msg.contains(words), "{text:?}: {msg}");
        }
    }

    #[test]
    fn switched_off_collectors_are_off() {
        let cfg = parse("[mem]\nenabled = false\n[bench]\nenabled = false\n").unwrap();
        assert!(cfg.mem.is_none() && cfg.bench.is_none());
    }

    #[test]
    fn the_shipped_example_config_parses() {
        let cfg = parse(include_str!("../../contrib/serve.toml")).unwrap();
        assert_eq!(cfg.mem.map(|m| m.top), Some(30));
    }
}

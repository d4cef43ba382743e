//! `--record STORE` on `run`, `compare` and `bench`: the store opened and
//! checked before any run (a read-only place, a foreign file or a store
//! that cannot be reached is said then, and nothing runs), the commit and
//! the machine found, and after the runs the report's figures written in
//! one transaction. A store that fails then gets the recording in a side
//! file beside it, and the command that imports it is said: a result is
//! never lost.

use std::path::{Path, PathBuf};
use std::time::{SystemTime, UNIX_EPOCH};

use serde_json::Value;

use super::identity::{self, Found};
use super::store::{Mode, PointMeta, Recording, Store, StoreError, Target};
use crate::failure::Usage;
use crate::record::RecordArgs;

/// What `--record` asks for (read from the flags, no system call).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RecordConfig {
    pub target: Target,
    pub commit: Option<String>,
    pub branch: Option<String>,
}

/// `--record`'s flags as a configuration; `None` without `--record`.
pub fn config(args: &RecordArgs) -> Result<Option<RecordConfig>, Usage> {
    let Some(store) = &args.record else {
        return Ok(None);
    };
    let target = Target::parse(store).map_err(|u| Usage::new(format!("--record: {u}")))?;
    for (flag, v) in [("--commit", &args.commit), ("--branch", &args.branch)] {
        if let Some(v) = v
            && (v.is_empty() || v.len() > 256 || v.chars().any(char::is_control))
        {
            return Err(Usage::new(format!(
                "{flag}: give a name of 1 to 256 characters without control characters"
            )));
        }
    }
    Ok(Some(RecordConfig {
        target,
        commit: args.commit.clone(),
        branch: args.branch.clone(),
    }))
}

/// A store opened for a recording, before the runs.
#[derive(Debug)]
pub struct Recorder {
    config: RecordConfig,
    store: Option<Store>,
    found: Found,
    /// This machine as it was before the runs (`bench` pins itself to one
    /// CPU while it runs, and would count one).
    machine: crate::compare::plan::Fingerprint,
}

/// The format of a side file (`tally history import` reads it).
pub const PENDING_FORMAT: &str = "tally-history-pending";

/// Opens the store to write (made if missing) and finds the commit:
/// everything that could stop a recording is said now, before the runs.
pub fn open(config: &RecordConfig) -> Result<Recorder, StoreError> {
    let store = Store::open(&config.target, Mode::Write)?;
    let dir = std::env::current_dir().unwrap_or_else(|_| PathBuf::from("."));
    let found = identity::find(&dir, config.commit.as_deref(), config.branch.as_deref());
    Ok(Recorder {
        config: config.clone(),
        store: Some(store),
        found,
        machine: crate::compare::baseline::fingerprint(),
    })
}

fn now_ns() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| i64::try_from(d.as_nanos()).unwrap_or(i64::MAX))
        .unwrap_or(0)
}

impl Recorder {
    /// Records `report` (its JSON, as `--format json` writes it); the
    /// lines to say on stderr.
    pub fn record(mut self, report: &dyn crate::report::Document) -> Vec<String> {
        let mut json = Vec::new();
        if let Err(e) = report.json(&mut json) {
            return vec![format!(
                "not recorded: the report could not be read back: {e}"
            )];
        }
        let value: Value = match serde_json::from_slice(&json) {
            Ok(v) => v,
            Err(e) => {
                return vec![format!(
                    "not recorded: the report could not be read back: {e}"
                )];
            }
        };
        if let Some(why) = failed_runs(&value) {
            return vec![format!(
                "not recorded in {}: {why}",
                self.config.target.name()
            )];
        }
        let extracted = match super::extract::extract(&value) {
            Ok(e) => e,
            Err(e) => return vec![format!("not recorded: {e}")],
        };
        let recording = Recording {
            machine: identity::machine(
                self.machine.cpu_model.clone(),
                self.machine.cpus.map(i64::from),
                self.machine.kernel.clone(),
                extracted.counting.clone(),
            ),
            point: PointMeta {
                recorded_at_ns: now_ns(),
                commit: self.found.commit.clone(),
                dirty: self.found.dirty,
                branch: self.found.branch.clone(),
                tool: extracted.tool.to_string(),
                tally_version: env!("CARGO_PKG_VERSION").to_string(),
                origin: "recorded".into(),
            },
            figures: extracted.figures,
        };
        let mut lines = Vec::new();
        if let Some(why) = &self.found.why_none {
            lines.push(format!("recorded without a commit: {why}; give --commit"));
        }
        let result = match self.store.take() {
            Some(mut s) => s.write(std::slice::from_ref(&recording)).or_else(|e| {
                // A connection that went away while the runs ran: once more.
                if e.unreachable() {
                    Store::open(&self.config.target, Mode::Write)
                        .and_then(|mut again| again.write(std::slice::from_ref(&recording)))
                } else {
                    Err(e)
                }
            }),
            None => Err(StoreError::Failed {
                store: self.config.target.name(),
                what: "was not opened".into(),
            }),
        };
        match result {
            Ok(note) => {
                lines.push(said(&self.config.target, &recording));
                lines.extend(note);
            }
            Err(e) => lines.extend(side_file(&self.config.target, &recording, &e)),
        }
        lines
    }
}

/// Why a report should not become history: a run that failed.
fn failed_runs(v: &Value) -> Option<String> {
    let runs: Vec<&Value> = match v.get("runs").and_then(Value::as_array) {
        Some(r) => r.iter().collect(),
        None => return None,
    };
    let failed = runs
        .iter()
        .filter(|r| {
            r.pointer("/exit/code")
                .and_then(Value::as_i64)
                .is_some_and(|c| c != 0)
                || r.pointer("/exit/signal").is_some_and(|s| !s.is_null())
        })
        .count();
    (failed > 0).then(|| {
        format!(
            "{failed} of {} runs failed, so the figures are not the command's",
            runs.len()
        )
    })
}

/// `recorded in history.db: 16 figures of 1 command at 3f2a9c0 (dirty) on main`.
fn said(target: &Target, r: &Recording) -> String {
    let mut commands: Vec<&str> = r.figures.iter().map(|f| f.command.as_str()).collect();
    commands.dedup();
    let at = match &r.point.commit {
        Some(c) => format!(
            " at {}{}",
            crate::text::escape::escape_text(&c.chars().take(12).collect::<String>()),
            if r.point.dirty { " (dirty)" } else { "" }
        ),
        None => String::new(),
    };
    let on = r
        .point
        .branch
        .as_ref()
        .map(|b| format!(" on {}", crate::text::escape::escape_text(b)))
        .unwrap_or_default();
    format!(
        "recorded in {}: {} figure{} of {} command{}{at}{on}, machine {}",
        target.name(),
        r.figures.len(),
        if r.figures.len() == 1 { "" } else { "s" },
        commands.len(),
        if commands.len() == 1 { "" } else { "s" },
        r.machine.fingerprint
    )
}

/// Writes the recording to a side file (beside a SQLite store, else in the
/// working directory, else in the temporary directory) and says how to
/// import it.
fn side_file(target: &Target, r: &Recording, e: &StoreError) -> Vec<String> {
    let doc = serde_json::json!({
        "format": PENDING_FORMAT,
        "schema_version": 1,
        "store": target.name(),
        "why": e.to_string(),
        "recording": r,
    });
    let text = match serde_json::to_vec_pretty(&doc) {
        Ok(t) => t,
        Err(j) => {
            return vec![
                e.to_string(),
                format!("and the side file could not be made: {j}"),
            ];
        }
    };
    let name = format!(
        "tally-history-pending-{}-{}.json",
        r.point.recorded_at_ns,
        std::process::id()
    );
    let mut dirs: Vec<PathBuf> = Vec::new();
    if let Target::Sqlite(p) = target {
        dirs.push(
            p.parent()
                .filter(|d| !d.as_os_str().is_empty())
                .unwrap_or(Path::new("."))
                .to_path_buf(),
        );
    }
    dirs.push(PathBuf::from("."));
    dirs.push(std::env::temp_dir());
    let mut failures = Vec::new();
    for dir in dirs {
        let path = dir.join(&name);
        match write_whole(&path, &text) {
            Ok(()) => {
                let shown = crate::text::path::display(&path);
                return vec![
                    e.to_string(),
                    format!(
                        "the result is kept in {shown}; record it later with: tally history import {} {shown}",
                        shell_word(&target_arg(target))
                    ),
                ];
            }
            Err(why) => failures.push(why),
        }
    }
    vec![
        e.to_string(),
        format!("and no side file could be written: {}", failures.join("; ")),
    ]
}

/// The store as it would be typed again (the URL with its password hidden).
fn target_arg(t: &Target) -> String {
    t.name()
}

/// `s` quoted for a POSIX shell where it needs it.
fn shell_word(s: &str) -> String {
    if !s.is_empty()
        && s.bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"/._-:@=+,%".contains(&b))
    {
        s.to_string()
    } else {
        format!("'{}'", s.replace('\'', r"'\''"))
    }
}

/// `bytes` put in place at `path` whole, through the one opener.
pub fn write_whole(path: &Path, bytes: &[u8]) -> Result<(), String> {
    use std::io::Write;
    let dest = crate::place::resolve(path).map_err(|e| e.to_string())?;
    let mut temp = crate::place::Temp::create(&dest, true).map_err(|e| e.to_string())?;
    temp.file
        .write_all(bytes)
        .and_then(|()| temp.file.sync_all())
        .map_err(|e| format!("{}: {e}", crate::text::path::display(path)))?;
    temp.commit(&dest).map_err(|e| e.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_flags_make_a_configuration_without_a_system_call() {
        let none = RecordArgs::default();
        assert_eq!(config(&none), Ok(None));
        let args = RecordArgs {
            record: Some("postgres://ci@db/perf?sslmode=require".into()),
            commit: Some("abc".into()),
            branch: None,
        };
        let c = config(&args).unwrap().unwrap();
        assert!(matches!(c.target, Target::Postgres(_)));
        let bad = RecordArgs {
            record: Some("h.db".into()),
            commit: Some("a\nb".into()),
            branch: None,
        };
        assert!(config(&bad).unwrap_err().0.starts_with("--commit:"));
    }

    #[test]
    fn words_are_quoted_for_the_shell_only_where_needed() {
        assert_eq!(shell_word("history.db"), "history.db");
        assert_eq!(shell_word("my store.db"), "'my store.db'");
        assert_eq!(shell_word("it's"), r"'it'\''s'");
    }
}

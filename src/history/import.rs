//! `tally history import STORE FILE…`: a team's old files become history.
//! Each file is read whole and checked first, then every point of every
//! file is written in one transaction: all or nothing.
//!
//! - a `compare`, `run` or `bench` JSON report, or a `compare
//!   --save-baseline` file: one point, at the time its header says, on
//!   the machine it names (`--commit` and `--branch` name what it does
//!   not);
//! - a side file a failed `--record` left: the point as it was to be
//!   recorded;
//! - a CSV file, as Apache Otava reads them: a header, then a row per
//!   point; the columns `time` (RFC 3339 or a date), `commit` and
//!   `branch` where there are, and every other column a figure of the
//!   command named by `--as-command` (default: the file's name).

use std::io::{self, Write};
use std::path::Path;

use serde::Serialize;
use serde_json::Value;

use super::identity;
use super::store::{FigureResult, Mode, PointMeta, Recording, Store};
use super::{HistoryError, ImportConfig};
use crate::report::{Render, Style, Table};

/// The largest file imported.
pub const BOUND: crate::input::Bound = crate::input::Bound {
    what: "report to import",
    cap_bytes: 512 << 20,
    fix: "import a tally JSON report, baseline or a CSV file",
};

/// The most rows of one CSV file.
pub const MAX_ROWS: usize = 5_000_000;

#[derive(Debug, Clone, Serialize)]
pub struct ImportReport {
    pub schema_version: u32,
    pub store: String,
    pub files: Vec<Imported>,
    pub points: usize,
    pub figures: usize,
    /// What went wrong after the points were written (packing), if anything.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub note: Option<String>,
}

#[derive(Debug, Clone, Serialize)]
pub struct Imported {
    pub file: String,
    /// `compare`, `run`, `bench`, `side file`, `csv`.
    pub kind: String,
    pub points: usize,
    pub figures: usize,
}

fn now_ns() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| i64::try_from(d.as_nanos()).unwrap_or(i64::MAX))
        .unwrap_or(0)
}

/// Reads every file, then writes all their points in one transaction.
pub fn import(
    target: &super::store::Target,
    cfg: &ImportConfig,
) -> Result<ImportReport, HistoryError> {
    let mut all: Vec<Recording> = Vec::new();
    let mut files = Vec::new();
    for path in &cfg.files {
        let shown = crate::text::path::display(path);
        let bytes = crate::input::read_file(path, &BOUND)
            .map_err(|e| HistoryError::Input(e.to_string()))?;
        let (kind, recordings) = read_one(path, &bytes, cfg)
            .map_err(|why| HistoryError::Input(format!("{shown}: {why}")))?;
        files.push(Imported {
            file: shown,
            kind: kind.into(),
            points: recordings.len(),
            figures: recordings.iter().map(|r| r.figures.len()).sum(),
        });
        all.extend(recordings);
    }
    let mut store = Store::open(target, Mode::Write)?;
    let note = store.write(&all)?;
    Ok(ImportReport {
        note,
        schema_version: super::report::SCHEMA_VERSION,
        store: target.name(),
        points: all.len(),
        figures: all.iter().map(|r| r.figures.len()).sum(),
        files,
    })
}

fn read_one(
    path: &Path,
    bytes: &[u8],
    cfg: &ImportConfig,
) -> Result<(&'static str, Vec<Recording>), String> {
    let first = bytes.iter().find(|b| !b.is_ascii_whitespace());
    if first == Some(&b'{') {
        let v: Value =
            serde_json::from_slice(bytes).map_err(|e| crate::input::json_error(bytes, &e))?;
        if v.get("format").and_then(Value::as_str) == Some(super::record::PENDING_FORMAT) {
            let r: Recording =
                serde_json::from_value(v.get("recording").cloned().unwrap_or(Value::Null))
                    .map_err(|e| format!("the side file's recording cannot be read: {e}"))?;
            return Ok(("side file", vec![r]));
        }
        let e = super::extract::extract(&v)?;
        let machine = if cfg.this_machine {
            let f = crate::compare::baseline::fingerprint();
            identity::machine(
                f.cpu_model,
                f.cpus.map(i64::from),
                f.kernel,
                e.counting.clone(),
            )
        } else {
            identity::machine(
                e.cpu_model.clone(),
                e.cpus,
                e.kernel.clone(),
                e.counting.clone(),
            )
        };
        let point = PointMeta {
            recorded_at_ns: e.made_ns.unwrap_or_else(now_ns),
            commit: cfg.commit.clone(),
            dirty: false,
            branch: cfg.branch.clone(),
            tool: e.tool.to_string(),
            tally_version: e.tally_version.clone().unwrap_or_else(|| "?".into()),
            origin: origin(path),
        };
        return Ok((
            e.tool,
            vec![Recording {
                machine,
                point,
                figures: e.figures,
            }],
        ));
    }
    let text =
        std::str::from_utf8(bytes).map_err(|_| "it is neither JSON nor UTF-8 CSV".to_string())?;
    Ok(("csv", csv(path, text, cfg)?))
}

fn origin(path: &Path) -> String {
    let shown = crate::text::path::display(path);
    format!(
        "imported from {}",
        shown.chars().take(4000).collect::<String>()
    )
}

/// The rows of an Otava-style CSV file as points.
fn csv(path: &Path, text: &str, cfg: &ImportConfig) -> Result<Vec<Recording>, String> {
    let mut reader = csv::ReaderBuilder::new()
        .trim(csv::Trim::All)
        .flexible(false)
        .from_reader(text.as_bytes());
    let headers: Vec<String> = reader
        .headers()
        .map_err(|e| format!("its header cannot be read: {e}"))?
        .iter()
        .map(str::to_string)
        .collect();
    let col = |name: &str| headers.iter().position(|h| h.eq_ignore_ascii_case(name));
    let (t, c, b) = (col("time"), col("commit"), col("branch"));
    let figures: Vec<(usize, &String)> = headers
        .iter()
        .enumerate()
        .filter(|(i, _)| Some(*i) != t && Some(*i) != c && Some(*i) != b)
        .collect();
    if figures.is_empty() {
        return Err("its header names no figure column".into());
    }
    let command = cfg.command.clone().unwrap_or_else(|| {
        path.file_stem()
            .map(|s| s.to_string_lossy().into_owned())
            .unwrap_or_else(|| "csv".into())
    });
    let machine = if cfg.this_machine {
        let f = crate::compare::baseline::fingerprint();
        identity::machine(f.cpu_model, f.cpus.map(i64::from), f.kernel, None)
    } else {
        identity::machine(None, None, None, Some(("unknown".into(), None)))
    };
    let now = now_ns();
    let mut out = Vec::new();
    for (row, rec) in reader.records().enumerate() {
        let line = row + 2;
        let rec = rec.map_err(|e| format!("line {line}: {e}"))?;
        if out.len() >= MAX_ROWS {
            return Err(format!("it has over {MAX_ROWS} rows"));
        }
        let field = |i: Option<usize>| {
            i.and_then(|i| rec.get(i))
                .filter(|v| !v.is_empty())
                .map(str::to_string)
        };
        let recorded_at_ns = match field(t) {
            None => now,
            Some(v) => super::extract::parse_time(&v)
                .or_else(|| {
                    v.parse::<i64>()
                        .ok()
                        .and_then(|s| s.checked_mul(1_000_000_000))
                })
                .ok_or_else(|| {
                    format!(
                        "line {line}: time {} is not RFC 3339, a date or seconds since 1970",
                        crate::text::escape::escape_text(&v)
                    )
                })?,
        };
        let mut figs = Vec::new();
        for (i, name) in &figures {
            let Some(v) = rec.get(*i).filter(|v| !v.is_empty()) else {
                continue;
            };
            let x: f64 = v
                .parse()
                .ok()
                .filter(|x: &f64| x.is_finite())
                .ok_or_else(|| {
                    format!(
                        "line {line}: {name} is {}, not a number",
                        crate::text::escape::escape_text(v)
                    )
                })?;
            figs.push(FigureResult {
                command: command.clone(),
                figure: name.to_string(),
                unit: super::extract::unit_of(name).to_string(),
                n: 1,
                median: x,
                mad: 0.0,
                min: x,
                max: x,
                samples: Vec::new(),
            });
        }
        if figs.is_empty() {
            continue;
        }
        out.push(Recording {
            machine: machine.clone(),
            point: PointMeta {
                recorded_at_ns,
                commit: field(c).or_else(|| cfg.commit.clone()),
                dirty: false,
                branch: field(b).or_else(|| cfg.branch.clone()),
                tool: "import".into(),
                tally_version: env!("CARGO_PKG_VERSION").into(),
                origin: origin(path),
            },
            figures: figs,
        });
    }
    Ok(out)
}

impl Render for ImportReport {
    fn human(&self, out: &mut dyn Write, _style: Style) -> io::Result<()> {
        for f in &self.files {
            writeln!(
                out,
                "{}: {} ({} point{}, {} figures)",
                f.file,
                f.kind,
                f.points,
                if f.points == 1 { "" } else { "s" },
                f.figures
            )?;
        }
        if self.files.is_empty() {
            writeln!(
                out,
                "{}: a store of this tally's schema (version {}); no files, nothing imported",
                self.store,
                super::store::schema::SCHEMA_VERSION
            )?;
        } else {
            writeln!(
                out,
                "imported into {}: {} points, {} figures, in one transaction",
                self.store, self.points, self.figures
            )?;
        }
        if let Some(note) = &self.note {
            writeln!(out, "{note}")?;
        }
        Ok(())
    }

    fn table(&self) -> Table {
        Table {
            headers: ["file", "kind", "points", "figures"]
                .map(String::from)
                .to_vec(),
            rows: self
                .files
                .iter()
                .map(|f| {
                    vec![
                        f.file.clone(),
                        f.kind.clone(),
                        f.points.to_string(),
                        f.figures.to_string(),
                    ]
                })
                .collect(),
        }
    }
}

crate::forms_of!(ImportReport: Text, Data, Table);

impl crate::failure::Outcome for ImportReport {
    fn exit_code(&self) -> u8 {
        0
    }
}

//! The report of `tally cp` (printed with `-v`, or `--format`).
//!
//! JSON schema (`schema_version` 2), keys carry their unit:
//! Paths are strings, or `{"lossy", "bytes_hex"}` objects for names that
//! are not UTF-8 (see `crate::text::path`).
//! - `files[]`: `source`, `destination`, `size_bytes`, `data_bytes`
//!   (bytes of data copied; holes excluded), `method` (`reflink`,
//!   `copy_file_range`, `read_write_dontcache`, `read_write`), `wall_ns`,
//!   `source_cached_before_pages`, `source_cached_after_pages`,
//!   `destination_cached_pages` (null where cachestat is unavailable),
//!   `notes[]` (what `-p` could not keep).
//! - `directories`, `symlinks`: how many were created.
//! - `problems[]`: `path` and `error` for what was not copied.
//! - `interrupted`: when a signal stopped the copy, `signal` (`SIGINT`)
//!   and `stopped_at[]`, the files being copied then (none of them kept);
//!   `null` otherwise.
//!
//! `tally cp -r` writes its report as the files are copied
//! ([`CopyStream`]): memory does not grow with the files.

use std::io::{self, Write};
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use crate::report::json::erased;
use crate::report::output::{HumanRows, Streamed};
use crate::report::{Render, Style, Table};
use crate::text::path::display;
use crate::units::{human_bytes, thousands};

/// How a file's data was copied.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Method {
    Reflink,
    CopyFileRange,
    ReadWriteDontcache,
    ReadWrite,
}

impl Method {
    pub fn name(self) -> &'static str {
        match self {
            Method::Reflink => "reflink",
            Method::CopyFileRange => "copy_file_range",
            Method::ReadWriteDontcache => "read_write_dontcache",
            Method::ReadWrite => "read_write",
        }
    }
}

/// One copied file.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct FileCopy {
    #[serde(serialize_with = "crate::text::path::serialize")]
    pub source: PathBuf,
    #[serde(serialize_with = "crate::text::path::serialize")]
    pub destination: PathBuf,
    pub size_bytes: u64,
    pub data_bytes: u64,
    pub method: Method,
    pub wall_ns: u64,
    pub source_cached_before_pages: Option<u64>,
    pub source_cached_after_pages: Option<u64>,
    pub destination_cached_pages: Option<u64>,
    pub notes: Vec<String>,
}

/// Something not copied, and why.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Problem {
    #[serde(serialize_with = "crate::text::path::serialize")]
    pub path: PathBuf,
    pub error: String,
}

impl Problem {
    pub fn new(path: &Path, error: String) -> Self {
        Problem {
            path: path.to_path_buf(),
            error,
        }
    }
}

/// The whole report.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct CopyReport {
    pub schema_version: u32,
    pub files: Vec<FileCopy>,
    pub directories: u64,
    pub symlinks: u64,
    pub problems: Vec<Problem>,
    #[serde(default)]
    pub interrupted: Option<super::Interrupted>,
}

fn pages(p: Option<u64>) -> String {
    p.map(thousands).unwrap_or_else(|| "unknown".into())
}

// The formats CopyReport renders (checked before the command works).
crate::forms_of!(CopyReport: Text, Data, Table);

/// One file's two lines (and its notes) of the human report.
fn human_file(f: &FileCopy, out: &mut dyn Write) -> io::Result<()> {
    let holes = f.size_bytes.saturating_sub(f.data_bytes);
    let holes = if holes > 0 {
        format!(", {} of holes kept", human_bytes(holes))
    } else {
        String::new()
    };
    writeln!(
        out,
        "tally: {} -> {}: {} by {}{holes} in {}",
        display(&f.source),
        display(&f.destination),
        human_bytes(f.size_bytes),
        f.method.name(),
        crate::units::time_ns(f.wall_ns as f64),
    )?;
    writeln!(
        out,
        "tally:   page cache: source {} pages before, {} after; destination {} pages",
        pages(f.source_cached_before_pages),
        pages(f.source_cached_after_pages),
        pages(f.destination_cached_pages),
    )?;
    for n in &f.notes {
        writeln!(out, "tally:   {n}")?;
    }
    Ok(())
}

/// The lines after the files: what was created.
fn human_end(directories: u64, symlinks: u64, out: &mut dyn Write) -> io::Result<()> {
    if directories > 0 || symlinks > 0 {
        writeln!(
            out,
            "tally: created {} directories and {} symbolic links",
            thousands(directories),
            thousands(symlinks)
        )?;
    }
    Ok(())
}

impl Render for CopyReport {
    fn human(&self, out: &mut dyn Write, _style: Style) -> io::Result<()> {
        for f in &self.files {
            human_file(f, out)?;
        }
        human_end(self.directories, self.symlinks, out)
    }

    fn table(&self) -> Table {
        Table {
            headers: COLUMNS.map(String::from).to_vec(),
            rows: self.files.iter().map(cells).collect(),
        }
    }
}

const COLUMNS: [&str; 9] = [
    "source",
    "destination",
    "size_bytes",
    "data_bytes",
    "method",
    "wall_ns",
    "source_cached_before_pages",
    "source_cached_after_pages",
    "destination_cached_pages",
];

fn cells(f: &FileCopy) -> Vec<String> {
    let opt = |v: Option<u64>| v.map(|v| v.to_string()).unwrap_or_default();
    vec![
        display(&f.source),
        display(&f.destination),
        f.size_bytes.to_string(),
        f.data_bytes.to_string(),
        f.method.name().into(),
        f.wall_ns.to_string(),
        opt(f.source_cached_before_pages),
        opt(f.source_cached_after_pages),
        opt(f.destination_cached_pages),
    ]
}

/// The fields of the JSON document before its files.
#[derive(Debug, Clone, Serialize)]
pub struct Head {
    pub schema_version: u32,
}

/// The fields of the JSON document after its files.
#[derive(Debug, Clone, Default, Serialize)]
pub struct Tail {
    pub directories: u64,
    pub symlinks: u64,
    pub problems: Vec<Problem>,
    pub interrupted: Option<super::Interrupted>,
}

/// The report of `tally cp` written as the files are copied (see
/// [`crate::report::Output::stream`]): the same text as [`CopyReport`] in
/// every format, without holding the files.
#[derive(Debug, Clone)]
pub struct CopyStream {
    pub head: Head,
    pub tail: Tail,
}

impl Default for CopyStream {
    fn default() -> CopyStream {
        CopyStream {
            head: Head {
                schema_version: crate::report::SCHEMA_VERSION,
            },
            tail: Tail::default(),
        }
    }
}

struct HumanCopy;

impl HumanRows<CopyStream> for HumanCopy {
    fn row(&mut self, _: &CopyStream, f: &FileCopy, out: &mut dyn Write) -> io::Result<()> {
        human_file(f, out)
    }

    fn finish(&mut self, r: &CopyStream, out: &mut dyn Write) -> io::Result<()> {
        human_end(r.tail.directories, r.tail.symlinks, out)
    }
}

impl Streamed for CopyStream {
    type Row = FileCopy;
    const ROWS: &'static str = "files";

    fn json_head(&self) -> &dyn erased::Serialize {
        &self.head
    }

    fn json_tail(&self) -> &dyn erased::Serialize {
        &self.tail
    }

    fn columns(&self) -> Vec<(&'static str, bool)> {
        COLUMNS
            .iter()
            .map(|c| (*c, !matches!(*c, "source" | "destination" | "method")))
            .collect()
    }

    fn cells(&self, row: &FileCopy) -> Vec<String> {
        cells(row)
    }

    fn last_rows(&self) -> Vec<Vec<String>> {
        Vec::new()
    }

    fn families(&self) -> Option<Vec<crate::report::Metric>> {
        None
    }

    fn samples(&self, _: &FileCopy) -> Vec<Option<crate::report::Sample>> {
        Vec::new()
    }

    fn human(&self, _: Style) -> Box<dyn HumanRows<CopyStream>> {
        Box::new(HumanCopy)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn human_names_method_holes_and_cache() {
        let r = CopyReport {
            schema_version: 1,
            files: vec![FileCopy {
                source: "a".into(),
                destination: "b".into(),
                size_bytes: 3 << 20,
                data_bytes: 1 << 20,
                method: Method::CopyFileRange,
                wall_ns: 1_234_000,
                source_cached_before_pages: Some(0),
                source_cached_after_pages: Some(0),
                destination_cached_pages: None,
                notes: vec![],
            }],
            directories: 0,
            symlinks: 0,
            problems: vec![],
            interrupted: None,
        };
        let mut out = Vec::new();
        r.human(&mut out, Style::default()).expect("render");
        let text = String::from_utf8(out).expect("utf8");
        assert!(text.contains("3.0 MiB by copy_file_range, 2.0 MiB of holes kept in 1.234ms"));
        assert!(text.contains("destination unknown pages"));
        let t = r.table();
        assert_eq!(t.rows.len(), 1);
        assert_eq!(t.rows[0].len(), t.headers.len());
    }
}

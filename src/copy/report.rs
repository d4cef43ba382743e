//! The report of `tally cp` (printed with `-v`, or `--format`).
//!
//! JSON schema (`schema_version` 2), keys carry their unit:
//! Paths are strings, or `{"lossy", "bytes_hex"}` objects for names that
//! are not UTF-8 (see `crate::report::path`).
//! - `files[]`: `source`, `destination`, `size_bytes`, `data_bytes`
//!   (bytes of data copied; holes excluded), `method` (`reflink`,
//!   `copy_file_range`, `read_write_dontcache`, `read_write`), `wall_ns`,
//!   `source_cached_before_pages`, `source_cached_after_pages`,
//!   `destination_cached_pages` (null where cachestat is unavailable),
//!   `notes[]` (what `-p` could not keep).
//! - `directories`, `symlinks`: how many were created.
//! - `problems[]`: `path` and `error` for what was not copied.

use std::io::{self, Write};
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use crate::report::path::display;
use crate::report::{Render, Style, Table};
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
    #[serde(serialize_with = "crate::report::path::serialize")]
    pub source: PathBuf,
    #[serde(serialize_with = "crate::report::path::serialize")]
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
    #[serde(serialize_with = "crate::report::path::serialize")]
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
}

fn pages(p: Option<u64>) -> String {
    p.map(thousands).unwrap_or_else(|| "unknown".into())
}

// The formats CopyReport renders (checked before the command works).
crate::formats_of!(CopyReport: HUMAN, JSON, CSV, MARKDOWN, );

impl Render for CopyReport {
    fn human(&self, out: &mut dyn Write, _style: Style) -> io::Result<()> {
        for f in &self.files {
            let holes = f.size_bytes.saturating_sub(f.data_bytes);
            let holes = if holes > 0 {
                format!(", {} of holes kept", human_bytes(holes))
            } else {
                String::new()
            };
            writeln!(
                out,
                "tally: {} -> {}: {} by {}{holes} in {}µs",
                display(&f.source),
                display(&f.destination),
                human_bytes(f.size_bytes),
                f.method.name(),
                thousands(f.wall_ns / 1000),
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
        }
        if self.directories > 0 || self.symlinks > 0 {
            writeln!(
                out,
                "tally: created {} directories and {} symbolic links",
                thousands(self.directories),
                thousands(self.symlinks)
            )?;
        }
        Ok(())
    }

    fn table(&self) -> Table {
        let headers = [
            "source",
            "destination",
            "size_bytes",
            "data_bytes",
            "method",
            "wall_ns",
            "source_cached_before_pages",
            "source_cached_after_pages",
            "destination_cached_pages",
        ]
        .map(String::from)
        .to_vec();
        let opt = |v: Option<u64>| v.map(|v| v.to_string()).unwrap_or_default();
        let rows = self
            .files
            .iter()
            .map(|f| {
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
            })
            .collect();
        Table { headers, rows }
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
        };
        let mut out = Vec::new();
        r.human(&mut out, Style::default()).expect("render");
        let text = String::from_utf8(out).expect("utf8");
        assert!(text.contains("3.0 MiB by copy_file_range, 2.0 MiB of holes kept in 1,234µs"));
        assert!(text.contains("destination unknown pages"));
        let t = r.table();
        assert_eq!(t.rows.len(), 1);
        assert_eq!(t.rows[0].len(), t.headers.len());
    }
}

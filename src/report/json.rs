//! JSON: the report itself through serde, pretty-printed, one document,
//! under a header that says which tally wrote it, when and where:
//!
//! ```json
//! {
//!   "tally_version": "0.1.0",
//!   "timestamp": "2026-11-23T10:52:07Z",
//!   "hostname": "build-7",
//!   "kernel": "6.8.0-45-generic",
//!   "schema_version": 2,
//!   …the report's own fields…
//! }
//! ```
//!
//! `timestamp` is RFC 3339 in UTC, taken once per process, so every
//! document one invocation writes (`--format json` and `--export json=…`)
//! carries the same one. `hostname` and `kernel` come from uname(2) and
//! are `null` if it fails.

use std::io::{self, Write};
use std::sync::OnceLock;
use std::time::{SystemTime, UNIX_EPOCH};

use serde::Serialize;

/// The header every JSON document of tally starts with.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Header {
    /// The version of tally that wrote the document.
    pub tally_version: &'static str,
    /// When (RFC 3339, UTC, whole seconds).
    pub timestamp: String,
    /// The host name (uname nodename).
    pub hostname: Option<String>,
    /// The kernel release (uname -r).
    pub kernel: Option<String>,
}

impl Header {
    /// This process's header, the same for every document it writes.
    ///
    /// The library's own unit tests get fixed placeholders instead, so
    /// their snapshots do not change with the machine, the moment or the
    /// release; the binary always writes the real header.
    pub fn get() -> &'static Header {
        static HEADER: OnceLock<Header> = OnceLock::new();
        HEADER.get_or_init(|| {
            if cfg!(test) {
                Header {
                    tally_version: "[tally_version]",
                    timestamp: "[timestamp]".into(),
                    hostname: Some("[hostname]".into()),
                    kernel: Some("[kernel]".into()),
                }
            } else {
                Header::now()
            }
        })
    }

    /// The header of this machine at this moment.
    pub fn now() -> Header {
        let uname = crate::sys::uname::uname().ok();
        let secs = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map(|d| d.as_secs())
            .unwrap_or(0);
        Header {
            tally_version: env!("CARGO_PKG_VERSION"),
            timestamp: rfc3339_utc(secs),
            hostname: uname.as_ref().map(|u| u.hostname.clone()),
            kernel: uname.map(|u| u.release),
        }
    }
}

/// A report under the header, flattened into one object.
#[derive(Serialize)]
struct Document<'a, R: ?Sized> {
    #[serde(flatten)]
    header: &'a Header,
    #[serde(flatten)]
    report: &'a R,
}

/// Writes `report` as pretty JSON, under the [`Header`], followed by a
/// newline. The report must serialize as an object (a struct or a map).
pub fn write<R: Serialize + ?Sized>(report: &R, out: &mut dyn Write) -> io::Result<()> {
    let doc = Document {
        header: Header::get(),
        report,
    };
    // serde_json hands back the writer's own io::Error (a closed pipe
    // stays a closed pipe); other failures become InvalidData.
    serde_json::to_writer_pretty(&mut *out, &doc).map_err(io::Error::from)?;
    out.write_all(b"\n")
}

/// The members of a pretty-printed JSON object, without its braces: each
/// on its own line, indented by two spaces, as they sit in a document.
fn members(object: &[u8]) -> &[u8] {
    let inner = object
        .strip_prefix(b"{")
        .and_then(|o| o.strip_suffix(b"}"))
        .unwrap_or(b"");
    let inner = inner.strip_prefix(b"\n").unwrap_or(inner);
    inner.strip_suffix(b"\n").unwrap_or(inner)
}

fn to_io(e: serde_json::Error) -> io::Error {
    io::Error::from(e)
}

/// Starts a document written row by row (see [`super::Rows`]): the
/// header, the fields of `head` (an object), and the opening of the array
/// `key`. With [`write_row`] and
/// [`end_rows`] the text is what [`write()`] gives for the whole report.
pub fn begin_rows(
    head: &dyn erased::Serialize,
    key: &str,
    out: &mut dyn Write,
) -> io::Result<()> {
    out.write_all(b"{\n")?;
    let header = serde_json::to_vec_pretty(Header::get()).map_err(to_io)?;
    out.write_all(members(&header))?;
    let head = head.to_pretty().map_err(to_io)?;
    let head = members(&head);
    if !head.is_empty() {
        out.write_all(b",\n")?;
        out.write_all(head)?;
    }
    out.write_all(b",\n  ")?;
    serde_json::to_writer(&mut *out, key).map_err(to_io)?;
    out.write_all(b": [")
}

/// One element of the array [`begin_rows`] opened; `first` for the first.
pub fn write_row(
    row: &dyn erased::Serialize,
    first: bool,
    out: &mut dyn Write,
) -> io::Result<()> {
    let text = row.to_pretty().map_err(to_io)?;
    out.write_all(if first { b"\n    " } else { b",\n    " })?;
    // Strings hold no raw newline (JSON escapes it), so every newline
    // starts a line of the value: indent it to the array's depth.
    let mut lines = text.split(|b| *b == b'\n');
    if let Some(line) = lines.next() {
        out.write_all(line)?;
    }
    for line in lines {
        out.write_all(b"\n    ")?;
        out.write_all(line)?;
    }
    Ok(())
}

/// Closes the array (`any` rows were written) and the document, with the
/// fields of `tail` (an object) after the array.
pub fn end_rows(
    any: bool,
    tail: &dyn erased::Serialize,
    out: &mut dyn Write,
) -> io::Result<()> {
    out.write_all(if any { b"\n  ]" } else { b"]" })?;
    let tail = tail.to_pretty().map_err(to_io)?;
    let tail = members(&tail);
    if !tail.is_empty() {
        out.write_all(b",\n")?;
        out.write_all(tail)?;
    }
    out.write_all(b"\n}\n")
}

/// `--format json`.
pub const FORMAT: super::FormatSpec = super::FormatSpec {
    name: "json",
    help: "One JSON document, keys carrying their unit",
    needs: super::Form::Data,
    render: |r, _, out| Ok(r.json(out)?),
    rows: Some(|r, _, mut out| {
        begin_rows(r.head(), r.key(), &mut out)?;
        Ok(Box::new(JsonRows { rows: 0, out }))
    }),
};

/// A document written row by row: [`begin_rows`], a [`write_row`] per
/// row, [`end_rows`].
struct JsonRows {
    rows: u64,
    out: Box<dyn Write>,
}

impl super::RowWriter for JsonRows {
    fn row(&mut self, _: &dyn super::Rows, row: &dyn super::Row) -> io::Result<()> {
        self.rows += 1;
        write_row(row.data(), self.rows == 1, &mut self.out)
    }

    fn flush(&mut self) -> io::Result<()> {
        self.out.flush()
    }

    fn finish(&mut self, report: &dyn super::Rows) -> io::Result<()> {
        end_rows(self.rows > 0, report.tail(), &mut self.out)?;
        self.out.flush()
    }
}

/// Seconds since the epoch as `YYYY-MM-DDTHH:MM:SSZ` (proleptic Gregorian;
/// days to civil date after Howard Hinnant's `civil_from_days`).
pub fn rfc3339_utc(secs: u64) -> String {
    let days = secs / 86_400;
    let rem = secs % 86_400;
    let (h, m, s) = (rem / 3600, rem % 3600 / 60, rem % 60);
    // Shift the epoch to 0000-03-01 so leap days end each 400-year era.
    let z = days + 719_468;
    let era = z / 146_097;
    let doe = z % 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let mo = if mp < 10 { mp + 3 } else { mp - 9 };
    let y = yoe + era * 400 + u64::from(mo <= 2);
    format!("{y:04}-{mo:02}-{d:02}T{h:02}:{m:02}:{s:02}Z")
}

/// Object-safe serialization, for the JSON fields of a report written
/// row by row ([`super::output::Streamed`]).
pub mod erased {
    /// A value serde_json can write, behind a `dyn`.
    pub trait Serialize {
        fn to_pretty(&self) -> serde_json::Result<Vec<u8>>;
    }

    impl<T: serde::Serialize> Serialize for T {
        fn to_pretty(&self) -> serde_json::Result<Vec<u8>> {
            serde_json::to_vec_pretty(self)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rfc3339_dates() {
        assert_eq!(rfc3339_utc(0), "1970-01-01T00:00:00Z");
        assert_eq!(rfc3339_utc(951_782_400), "2000-02-29T00:00:00Z");
        assert_eq!(rfc3339_utc(1_709_251_199), "2024-02-29T23:59:59Z");
        assert_eq!(rfc3339_utc(1_795_000_000), "2026-11-18T11:06:40Z");
        assert_eq!(rfc3339_utc(4_102_444_800), "2100-01-01T00:00:00Z");
    }

    #[derive(Serialize)]
    struct R {
        schema_version: u32,
        figure: u64,
    }

    #[test]
    fn the_header_comes_first_and_the_report_keeps_its_fields() {
        let mut out = Vec::new();
        write(
            &R {
                schema_version: 1,
                figure: 7,
            },
            &mut out,
        )
        .expect("write");
        let text = String::from_utf8(out).expect("utf-8");
        let v: serde_json::Value = serde_json::from_str(&text).expect("json");
        assert_eq!(v["tally_version"], "[tally_version]");
        assert_eq!(v["schema_version"], 1);
        assert_eq!(v["figure"], 7);
        assert!(text.find("tally_version") < text.find("schema_version"));
    }

    #[test]
    fn the_real_header_names_this_tally_and_kernel() {
        let h = Header::now();
        assert_eq!(h.tally_version, env!("CARGO_PKG_VERSION"));
        assert_eq!(h.timestamp.len(), 20, "{}", h.timestamp);
        assert!(h.timestamp.ends_with('Z'));
        assert!(h.kernel.is_some_and(|k| !k.is_empty()));
    }
}

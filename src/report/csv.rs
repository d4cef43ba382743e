//! CSV: a header row, then one row per record, quoted where needed.

use std::io::{self, Write};

use super::Table;

/// A record's cells, none holding a control character or a line break
/// ([`crate::text::controls_escaped`]): a cell may come from a name or a
/// file, and CSV is read on terminals too.
fn record<S: AsRef<str>>(cells: &[S]) -> Vec<String> {
    cells
        .iter()
        .map(|c| crate::text::controls_escaped(c.as_ref(), false).into_owned())
        .collect()
}

/// Writes `table` as CSV.
pub fn write(table: &Table, out: &mut dyn Write) -> io::Result<()> {
    let mut w = ::csv::Writer::from_writer(out);
    w.write_record(record(&table.headers)).map_err(to_io)?;
    for row in &table.rows {
        w.write_record(record(row)).map_err(to_io)?;
    }
    w.flush()
}

/// A csv error as an io::Error of the writer's own kind, so a closed pipe
/// stays a closed pipe.
pub fn to_io(e: ::csv::Error) -> io::Error {
    let kind = match e.kind() {
        ::csv::ErrorKind::Io(io) => io.kind(),
        _ => io::ErrorKind::Other,
    };
    io::Error::new(kind, e)
}

/// `--format csv`: the report's table.
pub const FORMAT: super::FormatSpec = super::FormatSpec {
    name: "csv",
    help: "Comma-separated values with a header row",
    needs: super::Form::Table,
    render: |r, _, out| Ok(write(&r.forms().table(), out)?),
    rows: Some(|r, _, out| {
        let mut w = ::csv::Writer::from_writer(out);
        let headers: Vec<&str> = r.columns().iter().map(|c| c.0).collect();
        w.write_record(&headers).map_err(to_io)?;
        Ok(Box::new(CsvRows(w)))
    }),
};

/// A table written row by row: the header, a record per row, then the
/// report's last rows.
struct CsvRows(::csv::Writer<Box<dyn Write>>);

impl super::RowWriter for CsvRows {
    fn row(&mut self, _: &dyn super::Rows, row: &dyn super::Row) -> io::Result<()> {
        self.0.write_record(record(&row.cells())).map_err(to_io)
    }

    fn flush(&mut self) -> io::Result<()> {
        self.0.flush()
    }

    fn finish(&mut self, report: &dyn super::Rows) -> io::Result<()> {
        for r in report.last_rows() {
            self.0.write_record(record(&r)).map_err(to_io)?;
        }
        self.0.flush()
    }
}

//! CSV: a header row, then one row per record, quoted where needed.

use std::io::{self, Write};

use super::Table;

/// Writes `table` as CSV.
pub fn write(table: &Table, out: &mut dyn Write) -> io::Result<()> {
    let mut w = ::csv::Writer::from_writer(out);
    w.write_record(&table.headers).map_err(io::Error::other)?;
    for row in &table.rows {
        w.write_record(row).map_err(io::Error::other)?;
    }
    w.flush()
}

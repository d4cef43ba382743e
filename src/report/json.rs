//! JSON: the report itself through serde, pretty-printed, one document.

use std::io::{self, Write};

use serde::Serialize;

/// Writes `report` as pretty JSON followed by a newline.
pub fn write<R: Serialize + ?Sized>(report: &R, out: &mut dyn Write) -> io::Result<()> {
    // serde_json hands back the writer's own io::Error (a closed pipe
    // stays a closed pipe); other failures become InvalidData.
    serde_json::to_writer_pretty(&mut *out, report).map_err(io::Error::from)?;
    out.write_all(b"\n")
}

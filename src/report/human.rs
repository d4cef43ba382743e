//! Human text: each report lays itself out ([`super::Render::human`]),
//! with tables through [`super::text`]; a report written row by row, with
//! its own [`super::TextRows`].

use std::io::{self, Write};

use super::{Row, RowWriter, Rows, TextRows};

/// `--format human`, the default.
pub const FORMAT: super::FormatSpec = super::FormatSpec {
    name: "human",
    help: "Text for people (the default)",
    needs: super::Form::Text,
    render: |r, style, out| match style.width {
        // On a terminal every line fits it (`super::text::Fit`).
        Some(w) => {
            let mut fit = super::text::Fit::new(out, w);
            r.forms().human(&mut fit, style)?;
            fit.finish()?;
            Ok(())
        }
        None => Ok(r.forms().human(out, style)?),
    },
    rows: Some(|r, style, out| {
        let out: Box<dyn Write> = match style.width {
            Some(w) => Box::new(super::text::Fit::new(out, w)),
            None => out,
        };
        Ok(Box::new(Human {
            text: r.text(style),
            out,
        }))
    }),
};

/// The human text of a report written row by row.
struct Human {
    text: Box<dyn TextRows>,
    out: Box<dyn Write>,
}

impl RowWriter for Human {
    fn row(&mut self, report: &dyn Rows, row: &dyn Row) -> io::Result<()> {
        self.text.row(report, row, &mut self.out)
    }

    fn flush(&mut self) -> io::Result<()> {
        self.out.flush()
    }

    fn finish(&mut self, report: &dyn Rows) -> io::Result<()> {
        self.text.finish(report, &mut self.out)?;
        self.out.flush()
    }
}

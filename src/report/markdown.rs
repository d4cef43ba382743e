//! Markdown: a GitHub-flavoured table, numbers right-aligned.

use std::io::{self, Write};

use super::Table;

fn escape(cell: &str) -> String {
    crate::text::controls_escaped(cell, true)
        .replace('\\', "\\\\")
        .replace('|', "\\|")
        .replace(['\n', '\r'], " ")
}

fn numeric(cell: &str) -> bool {
    !cell.is_empty()
        && cell
            .chars()
            .all(|c| c.is_ascii_digit() || matches!(c, ',' | '.' | '-' | '+' | '%' | ' ' | '±'))
}

/// Writes `table` as a Markdown table.
pub fn write(table: &Table, out: &mut dyn Write) -> io::Result<()> {
    let header: Vec<String> = table.headers.iter().map(|h| escape(h)).collect();
    writeln!(out, "| {} |", header.join(" | "))?;
    let aligns: Vec<&str> = (0..table.headers.len())
        .map(|col| {
            let all_numeric = !table.rows.is_empty()
                && table
                    .rows
                    .iter()
                    .all(|r| r.get(col).is_none_or(|c| c.is_empty() || numeric(c)));
            if all_numeric { "---:" } else { "---" }
        })
        .collect();
    writeln!(out, "|{}|", aligns.join("|"))?;
    for row in &table.rows {
        let cells: Vec<String> = row.iter().map(|c| escape(c)).collect();
        writeln!(out, "| {} |", cells.join(" | "))?;
    }
    Ok(())
}

/// Text for a Markdown paragraph: what would start markup (`*`, `_`,
/// `[`, `<`, `|`, a backslash) escaped, line breaks made spaces; code
/// spans are the caller's (a backtick becomes a quote).
pub fn escape_text(text: &str) -> String {
    let text = crate::text::controls_escaped(text, true);
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '\\' | '*' | '_' | '[' | ']' | '<' | '>' | '|' | '#' => {
                out.push('\\');
                out.push(c);
            }
            '`' => out.push('\''),
            '\n' | '\r' => out.push(' '),
            c => out.push(c),
        }
    }
    out
}

/// The header and alignment lines of a table written row by row: each
/// column's header and whether it holds numbers (right-aligned).
pub fn write_head(columns: &[(&str, bool)], out: &mut dyn Write) -> io::Result<()> {
    let header: Vec<String> = columns.iter().map(|(h, _)| escape(h)).collect();
    writeln!(out, "| {} |", header.join(" | "))?;
    let aligns: Vec<&str> = columns
        .iter()
        .map(|(_, n)| if *n { "---:" } else { "---" })
        .collect();
    writeln!(out, "|{}|", aligns.join("|"))
}

/// One row of a table written row by row.
pub fn write_row(cells: &[String], out: &mut dyn Write) -> io::Result<()> {
    let cells: Vec<String> = cells.iter().map(|c| escape(c)).collect();
    writeln!(out, "| {} |", cells.join(" | "))
}

/// `--format markdown`: the report's own Markdown, else its table.
pub const FORMAT: super::FormatSpec = super::FormatSpec {
    name: "markdown",
    help: "A GitHub-flavoured Markdown table",
    needs: super::Form::Table,
    render: |r, _, out| match r.forms().markdown(out) {
        Some(written) => Ok(written?),
        None => Ok(write(&r.forms().table(), out)?),
    },
    rows: Some(|r, _, mut out| {
        write_head(&r.columns(), &mut out)?;
        Ok(Box::new(MarkdownRows(out)))
    }),
};

/// A table written row by row: [`write_head`], a [`write_row`] per row,
/// then the report's last rows.
struct MarkdownRows(Box<dyn Write>);

impl super::RowWriter for MarkdownRows {
    fn row(&mut self, _: &dyn super::Rows, row: &dyn super::Row) -> io::Result<()> {
        write_row(&row.cells(), &mut self.0)
    }

    fn flush(&mut self) -> io::Result<()> {
        self.0.flush()
    }

    fn finish(&mut self, report: &dyn super::Rows) -> io::Result<()> {
        for r in report.last_rows() {
            write_row(&r, &mut self.0)?;
        }
        self.0.flush()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn escapes_pipes_and_aligns_numbers() {
        let t = Table {
            headers: vec!["name".into(), "bytes".into()],
            rows: vec![vec!["a|b".into(), "1,024".into()]],
        };
        let mut out = Vec::new();
        write(&t, &mut out).unwrap();
        let s = String::from_utf8(out).unwrap();
        assert_eq!(s, "| name | bytes |\n|---|---:|\n| a\\|b | 1,024 |\n");
    }

    #[test]
    fn text_escapes_markup_and_keeps_one_line() {
        assert_eq!(escape_text("a*b_`c`\n<x>"), "a\\*b\\_'c' \\<x\\>");
    }
}

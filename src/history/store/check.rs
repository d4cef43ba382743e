//! Every value of a history store, checked once: as a row is read (a
//! damaged or hostile store is refused naming the table, the field and the
//! row) and before a recording is written (so a store holds nothing this
//! tally would refuse to read).

use super::{MachineRow, PointRow, Recording, ResultRow, SeriesRow};
use crate::text::escape::escape_text;

/// The longest text of each field, in bytes.
pub const MAX_COMMIT: usize = 256;
pub const MAX_BRANCH: usize = 256;
pub const MAX_COMMAND: usize = 8_192;
pub const MAX_FIGURE: usize = 256;
pub const MAX_UNIT: usize = 64;
pub const MAX_SHORT: usize = 256;
pub const MAX_ORIGIN: usize = 4_096;
/// The most samples of one figure of one point.
pub const MAX_SAMPLES: u64 = 10_000_000;
/// Points are recorded between 2000 and 2200 (ns since the epoch).
pub const EARLIEST_NS: i64 = 946_684_800_000_000_000;
pub const LATEST_NS: i64 = 7_258_118_400_000_000_000;

fn text(table: &str, field: &str, row: &str, v: &str, max: usize) -> Result<(), String> {
    if v.len() > max {
        return Err(format!(
            "table {table}: field {field} of {row} is {} bytes long, over {max}",
            v.len()
        ));
    }
    // Plain ASCII is checked byte by byte; anything else char by char.
    let ascii_clean = v.bytes().all(|b| (0x20..0x7f).contains(&b) || b == b'\t');
    if !ascii_clean && v.chars().any(|c| c.is_control() && c != '\t') {
        return Err(format!(
            "table {table}: field {field} of {row} holds control characters (\"{}\")",
            escape_text(&v.chars().take(64).collect::<String>())
        ));
    }
    Ok(())
}

fn opt(table: &str, field: &str, row: &str, v: &Option<String>, max: usize) -> Result<(), String> {
    v.as_deref()
        .map_or(Ok(()), |v| text(table, field, row, v, max))
}

fn id(table: &str, field: &str, row: &str, v: i64) -> Result<(), String> {
    if v <= 0 {
        return Err(format!(
            "table {table}: field {field} of {row} is {v}, not an id"
        ));
    }
    Ok(())
}

pub fn machine_row(m: &MachineRow) -> Result<(), String> {
    // The row's name is made only when there is something to say.
    machine_row_as(m, "").or_else(|_| machine_row_as(m, &format!("machine {}", m.id)))
}

fn machine_row_as(m: &MachineRow, row: &str) -> Result<(), String> {
    let t = "machines";
    id(t, "id", row, m.id)?;
    let mm = &m.machine;
    text(t, "fingerprint", row, &mm.fingerprint, MAX_SHORT)?;
    if mm.fingerprint.is_empty() {
        return Err(format!("table {t}: field fingerprint of {row} is empty"));
    }
    opt(t, "cpu_model", row, &mm.cpu_model, MAX_SHORT)?;
    opt(t, "kernel", row, &mm.kernel, MAX_SHORT)?;
    text(t, "counting", row, &mm.counting, MAX_SHORT)?;
    opt(t, "counting_version", row, &mm.counting_version, MAX_SHORT)?;
    if let Some(c) = mm.cpus
        && !(1..=1_000_000).contains(&c)
    {
        return Err(format!(
            "table {t}: field cpus of {row} is {c}, not a count of CPUs"
        ));
    }
    Ok(())
}

pub fn point_row(p: &PointRow) -> Result<(), String> {
    // The row's name is made only when there is something to say.
    point_row_as(p, "").or_else(|_| point_row_as(p, &format!("point {}", p.id)))
}

fn point_row_as(p: &PointRow, row: &str) -> Result<(), String> {
    let t = "points";
    id(t, "id", row, p.id)?;
    id(t, "machine_id", row, p.machine_id)?;
    point_meta(t, row, &p.meta)
}

fn point_meta(t: &str, row: &str, m: &super::PointMeta) -> Result<(), String> {
    if !(EARLIEST_NS..=LATEST_NS).contains(&m.recorded_at_ns) {
        return Err(format!(
            "table {t}: field recorded_at_ns of {row} is {}, not a time between 2000 and 2200",
            m.recorded_at_ns
        ));
    }
    opt(t, "commit_id", row, &m.commit, MAX_COMMIT)?;
    opt(t, "branch", row, &m.branch, MAX_BRANCH)?;
    text(t, "tool", row, &m.tool, MAX_UNIT)?;
    text(t, "tally_version", row, &m.tally_version, MAX_UNIT)?;
    text(t, "origin", row, &m.origin, MAX_ORIGIN)
}

pub fn series_row(s: &SeriesRow) -> Result<(), String> {
    // The row's name is made only when there is something to say.
    series_row_as(s, "").or_else(|_| series_row_as(s, &format!("series {}", s.id)))
}

fn series_row_as(s: &SeriesRow, row: &str) -> Result<(), String> {
    let t = "series";
    id(t, "id", row, s.id)?;
    text(t, "command", row, &s.command, MAX_COMMAND)?;
    text(t, "figure", row, &s.figure, MAX_FIGURE)?;
    text(t, "unit", row, &s.unit, MAX_UNIT)?;
    if s.figure.is_empty() {
        return Err(format!("table {t}: field figure of {row} is empty"));
    }
    Ok(())
}

/// The summary of one figure: finite, a positive count, MAD not negative
/// and min ≤ median ≤ max.
fn summary(
    t: &str,
    row: &str,
    n: u64,
    median: f64,
    mad: f64,
    min: f64,
    max: f64,
) -> Result<(), String> {
    for (field, v) in [("median", median), ("mad", mad), ("min", min), ("max", max)] {
        if !v.is_finite() {
            return Err(format!(
                "table {t}: field {field} of {row} is {v}, not a finite number"
            ));
        }
    }
    if !(1..=MAX_SAMPLES).contains(&n) {
        return Err(format!(
            "table {t}: field n of {row} is {n}, not 1 to {MAX_SAMPLES}"
        ));
    }
    if mad < 0.0 {
        return Err(format!("table {t}: field mad of {row} is {mad}, below 0"));
    }
    let slack = 1e-9 * median.abs().max(1.0);
    if min > median + slack || median > max + slack {
        return Err(format!(
            "table {t}: field median of {row} is {median}, outside min {min} and max {max}"
        ));
    }
    Ok(())
}

/// A packed result's figures, as `summary` checks a row's (a pack keeps
/// no min or max): the message names the field.
pub fn packed(n: u64, median: f64, mad: f64) -> Result<(), String> {
    for (field, v) in [("median", median), ("mad", mad)] {
        if !v.is_finite() {
            return Err(format!("field {field} is {v}, not a finite number"));
        }
    }
    if !(1..=MAX_SAMPLES).contains(&n) {
        return Err(format!("field n is {n}, not 1 to {MAX_SAMPLES}"));
    }
    if mad < 0.0 {
        return Err(format!("field mad is {mad}, below 0"));
    }
    Ok(())
}

pub fn result_row(r: &ResultRow) -> Result<(), String> {
    // The row's name is made only when there is something to say.
    result_row_as(r, "").or_else(|_| {
        result_row_as(
            r,
            &format!("point {} of series {}", r.point_id, r.series_id),
        )
    })
}

fn result_row_as(r: &ResultRow, row: &str) -> Result<(), String> {
    let t = "results";
    id(t, "series_id", row, r.series_id)?;
    id(t, "point_id", row, r.point_id)?;
    summary(t, row, r.n, r.median, r.mad, r.min, r.max)
}

/// The samples blob as written: little-endian f64s, one per sample, or
/// none.
pub fn samples_blob(samples: &[f64]) -> Option<Vec<u8>> {
    (!samples.is_empty()).then(|| samples.iter().flat_map(|v| v.to_le_bytes()).collect())
}

/// The samples of a blob read back, checked: whole f64s, as many as `n`,
/// each finite.
pub fn samples_of(blob: &[u8], n: u64, row: &str) -> Result<Vec<f64>, String> {
    if !blob.len().is_multiple_of(8) || blob.len() as u64 / 8 != n {
        return Err(format!(
            "table results: field samples of {row} is {} bytes, not {n} samples",
            blob.len()
        ));
    }
    let out: Vec<f64> = blob
        .chunks_exact(8)
        .map(|c| f64::from_le_bytes(c.try_into().unwrap_or([0; 8])))
        .collect();
    if let Some(v) = out.iter().find(|v| !v.is_finite()) {
        return Err(format!("table results: field samples of {row} holds {v}"));
    }
    Ok(out)
}

/// A recording about to be written: everything the read checks would
/// refuse, refused now.
pub fn recording(r: &Recording) -> Result<(), String> {
    let m = MachineRow {
        id: 1,
        machine: r.machine.clone(),
    };
    machine_row(&m)?;
    point_meta("points", "the new point", &r.point)?;
    for f in &r.figures {
        let row = format!(
            "figure {} of {}",
            escape_text(&f.figure),
            escape_text(&f.command.chars().take(80).collect::<String>())
        );
        let s = SeriesRow {
            id: 1,
            command: f.command.clone(),
            figure: f.figure.clone(),
            unit: f.unit.clone(),
        };
        series_row(&s)?;
        summary("results", &row, f.n, f.median, f.mad, f.min, f.max)?;
        if !f.samples.is_empty() && f.samples.len() as u64 != f.n {
            return Err(format!(
                "{row}: {} samples for a count of {}",
                f.samples.len(),
                f.n
            ));
        }
        if let Some(v) = f.samples.iter().find(|v| !v.is_finite()) {
            return Err(format!("{row}: a sample is {v}"));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn row() -> ResultRow {
        ResultRow {
            series_id: 3,
            point_id: 12,
            n: 10,
            median: 5.0,
            mad: 0.5,
            min: 4.0,
            max: 9.0,
        }
    }

    #[test]
    fn absurd_numbers_are_refused_naming_the_table_and_field() {
        assert_eq!(result_row(&row()), Ok(()));
        type Spoil = fn(&mut ResultRow);
        let cases: [(Spoil, &str); 6] = [
            (
                |r| r.median = f64::NAN,
                "table results: field median of point 12 of series 3 is NaN",
            ),
            (
                |r| r.mad = -1.0,
                "field mad of point 12 of series 3 is -1, below 0",
            ),
            (|r| r.n = 0, "field n of point 12 of series 3 is 0"),
            (
                |r| r.median = 99.0,
                "field median of point 12 of series 3 is 99, outside min 4",
            ),
            (
                |r| r.max = f64::INFINITY,
                "field max of point 12 of series 3 is inf",
            ),
            (
                |r| r.point_id = -4,
                "field point_id of point -4 of series 3 is -4, not an id",
            ),
        ];
        for (spoil, want) in cases {
            let mut r = row();
            spoil(&mut r);
            let e = result_row(&r).unwrap_err();
            assert!(e.contains(want), "{e}");
        }
    }

    #[test]
    fn samples_round_trip_and_bad_blobs_are_refused() {
        let s = [1.5, 2.0, -3.25];
        let blob = samples_blob(&s).unwrap();
        assert_eq!(samples_of(&blob, 3, "r"), Ok(s.to_vec()));
        assert!(
            samples_of(&blob[..23], 3, "r")
                .unwrap_err()
                .contains("23 bytes, not 3 samples")
        );
        assert!(samples_of(&blob, 4, "r").is_err());
        let nan = samples_blob(&[f64::NAN]).unwrap();
        assert!(samples_of(&nan, 1, "r").unwrap_err().contains("holds NaN"));
        assert_eq!(samples_blob(&[]), None);
    }

    #[test]
    fn texts_with_controls_or_too_long_are_refused() {
        let s = SeriesRow {
            id: 2,
            command: "gzip\u{1b}[2J".into(),
            figure: "wall_ns".into(),
            unit: "ns".into(),
        };
        let e = series_row(&s).unwrap_err();
        assert!(
            e.contains("table series: field command of series 2 holds control characters"),
            "{e}"
        );
        assert!(e.contains("gzip\\x1b[2J"), "{e}");
        let long = SeriesRow {
            figure: "x".repeat(300),
            command: "c".into(),
            ..s
        };
        assert!(
            series_row(&long)
                .unwrap_err()
                .contains("300 bytes long, over 256")
        );
    }
}

//! Packs: a series' results over a range of point ids in one row, so a
//! long history is read as a few thousand blobs, not millions of rows.
//!
//! `results` stays what the store is: every result, with its samples, one
//! row each. Once [`SPAN`] points have been recorded past meta's
//! `packed_through`, the next recording packs each series' results of
//! the next [`SPAN`] point ids into one `packs` row (`data`, below) and
//! moves `packed_through` on. A read takes a series' packs up to
//! `packed_through` and its rows after it. Packing runs alone
//! ([`Backend::alone`]): every recording begun before it has committed,
//! and none begins until it ends, so no result of a point up to
//! `packed_through` can arrive after its pack was made.
//!
//! `data`, for each result in point order (little-endian):
//!
//! ```text
//! point id − the previous one (the first: − (first_point_id − 1))   LEB128
//! n × 2, + 1 when the MAD is not 0                                  LEB128
//! median                                                            f64
//! mad, when not 0                                                   f64
//! ```
//!
//! About 10 bytes a result where each point is one value (n = 1, MAD 0),
//! 18 where it has a spread. Every pack read is checked whole: its range,
//! its count, each point inside the range and ascending, each figure as
//! `results`' are.

use super::{Backend, Fault, Query, ResultRow};

/// Point ids a pack covers.
pub const SPAN: i64 = 4096;

/// The most results a pack read may hold (a pack tally makes holds at
/// most [`SPAN`]).
const MAX_COUNT: i64 = 1 << 20;

/// The most bytes a pack's data may hold (its most results, each at most
/// 36 bytes): a larger one is refused before it is read.
pub const MAX_DATA: i64 = MAX_COUNT * 36;

/// A pack whose data is `len` bytes, over [`MAX_DATA`]: refused unread.
pub fn oversized(series_id: i64, first_point_id: i64, len: i64) -> Fault {
    Fault::Damaged(format!(
        "table packs: field data of the pack of series {series_id} from point {first_point_id} \
         is {len} bytes, over {MAX_DATA}"
    ))
}

/// The meta key of the last point id packed.
pub const THROUGH: &str = "packed_through";

/// One row of `packs`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PackRow {
    pub series_id: i64,
    pub first_point_id: i64,
    pub last_point_id: i64,
    pub count: i64,
    pub data: Vec<u8>,
}

/// One packed result: what a read of the history needs of it.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Packed {
    pub point_id: i64,
    pub n: u64,
    pub median: f64,
    pub mad: f64,
}

/// `packed_through` as meta holds it: a point id, 0 before any pack.
pub fn through(meta: &[(String, String)]) -> Result<i64, Fault> {
    let Some((_, v)) = meta.iter().find(|(k, _)| k == THROUGH) else {
        return Err(Fault::Damaged(format!(
            "table meta: field value of key {THROUGH} is missing"
        )));
    };
    v.parse::<i64>().ok().filter(|v| *v >= 0).ok_or_else(|| {
        Fault::Damaged(format!(
            "table meta: field value of key {THROUGH} is \"{}\", not a point id",
            crate::text::escape::escape_text(v)
        ))
    })
}

fn put_varint(out: &mut Vec<u8>, mut v: u64) {
    while v >= 0x80 {
        out.push((v as u8) | 0x80);
        v >>= 7;
    }
    out.push(v as u8);
}

fn varint(data: &[u8], at: &mut usize) -> Option<u64> {
    let mut v = 0u64;
    for shift in (0..64).step_by(7) {
        let b = *data.get(*at)?;
        *at += 1;
        v |= u64::from(b & 0x7f).checked_shl(shift)?;
        if b & 0x80 == 0 {
            return Some(v);
        }
    }
    None
}

fn f64_at(data: &[u8], at: &mut usize) -> Option<f64> {
    let bytes: [u8; 8] = data.get(*at..*at + 8)?.try_into().ok()?;
    *at += 8;
    Some(f64::from_le_bytes(bytes))
}

/// The pack of `rows` (one series, ascending point ids, all in
/// `first..=last`).
pub fn encode(series_id: i64, first: i64, last: i64, rows: &[ResultRow]) -> PackRow {
    let mut data = Vec::with_capacity(rows.len() * 12);
    let mut prev = first - 1;
    for r in rows {
        put_varint(&mut data, (r.point_id - prev) as u64);
        prev = r.point_id;
        let has_mad = r.mad.to_bits() != 0;
        put_varint(&mut data, (r.n << 1) | u64::from(has_mad));
        data.extend_from_slice(&r.median.to_le_bytes());
        if has_mad {
            data.extend_from_slice(&r.mad.to_le_bytes());
        }
    }
    PackRow {
        series_id,
        first_point_id: first,
        last_point_id: last,
        count: rows.len() as i64,
        data,
    }
}

/// Each result of `p`, checked: `after` is the last point of the series'
/// pack before it (0 for its first) and `through` meta's
/// `packed_through`. The error names the table, the field and the pack.
pub fn decode(
    p: &PackRow,
    after: i64,
    through: i64,
    each: &mut dyn FnMut(Packed) -> Result<(), Fault>,
) -> Result<(), Fault> {
    let name = format!(
        "the pack of series {} from point {}",
        p.series_id, p.first_point_id
    );
    let bad = |field: &str, what: String| {
        Fault::Damaged(format!("table packs: field {field} of {name} {what}"))
    };
    if p.series_id <= 0 {
        return Err(bad("series_id", format!("is {}", p.series_id)));
    }
    if p.first_point_id <= after {
        return Err(bad(
            "first_point_id",
            format!("is not after the pack before it (point {after})"),
        ));
    }
    if p.last_point_id < p.first_point_id || p.last_point_id > through {
        return Err(bad(
            "last_point_id",
            format!(
                "is {}, outside {} to packed_through {through}",
                p.last_point_id, p.first_point_id
            ),
        ));
    }
    // At most one result a point, and never more than a pack's bound.
    let most = (p.last_point_id - p.first_point_id)
        .saturating_add(1)
        .min(MAX_COUNT);
    if p.count < 1 || p.count > most {
        return Err(bad("count", format!("is {}, not 1 to {most}", p.count)));
    }
    // The smallest result is 10 bytes, the largest 36.
    let count = p.count as usize;
    if p.data.len() < count * 10 || p.data.len() > count * 36 {
        return Err(bad(
            "data",
            format!("is {} bytes, not {} results", p.data.len(), p.count),
        ));
    }
    let d = &p.data;
    let mut at = 0;
    let mut point = p.first_point_id - 1;
    for k in 0..count {
        let cut = || bad("data", format!("ends inside result {k}"));
        let step = varint(d, &mut at).ok_or_else(cut)?;
        let next = i64::try_from(step)
            .ok()
            .and_then(|s| point.checked_add(s))
            .filter(|&q| step >= 1 && q <= p.last_point_id)
            .ok_or_else(|| {
                bad(
                    "data",
                    format!(
                        "holds a point after {point} that is not in order within {} to {}",
                        p.first_point_id, p.last_point_id
                    ),
                )
            })?;
        point = next;
        let nm = varint(d, &mut at).ok_or_else(cut)?;
        let n = nm >> 1;
        let median = f64_at(d, &mut at).ok_or_else(cut)?;
        let mad = if nm & 1 == 1 {
            f64_at(d, &mut at).ok_or_else(cut)?
        } else {
            0.0
        };
        super::check::packed(n, median, mad)
            .map_err(|what| bad("data", format!("at point {point}: {what}")))?;
        each(Packed {
            point_id: point,
            n,
            median,
            mad,
        })?;
    }
    if at != d.len() {
        return Err(bad(
            "data",
            format!("has {} bytes after its {} results", d.len() - at, p.count),
        ));
    }
    Ok(())
}

/// Packs what is due: each full [`SPAN`] of point ids past
/// `packed_through`, for every series. Called after a recording commits;
/// does nothing (two quick reads) when fewer than [`SPAN`] points are
/// unpacked.
pub fn due(b: &mut dyn Backend) -> Result<(), Fault> {
    let done = through(&b.meta()?)?;
    if b.newest_point()? - done < SPAN {
        return Ok(());
    }
    b.alone(&mut |b| {
        // Again, alone: another recording may have packed meanwhile.
        let mut done = through(&b.meta()?)?;
        let newest = b.newest_point()?;
        if newest - done < SPAN {
            return Ok(());
        }
        let mut ids = Vec::new();
        b.series(&mut |s| {
            ids.push(s.id);
            Ok(())
        })?;
        while newest - done >= SPAN {
            let (first, last) = (done + 1, done + SPAN);
            let mut packs = Vec::new();
            for &id in &ids {
                let mut rows = Vec::new();
                let q = Query {
                    series: Some(vec![id]),
                    from_point: Some(first),
                    to_point: Some(last),
                    ..Query::default()
                };
                b.results(&q, &mut |r| {
                    super::check::result_row(&r).map_err(Fault::Damaged)?;
                    rows.push(r);
                    Ok(())
                })?;
                if !rows.is_empty() {
                    packs.push(encode(id, first, last, &rows));
                }
            }
            b.add_packs(&packs, last)?;
            done = last;
        }
        Ok(())
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn row(point_id: i64, n: u64, median: f64, mad: f64) -> ResultRow {
        ResultRow {
            series_id: 3,
            point_id,
            n,
            median,
            mad,
            min: median,
            max: median,
        }
    }

    fn read(p: &PackRow, after: i64, through: i64) -> Result<Vec<Packed>, String> {
        let mut out = Vec::new();
        decode(p, after, through, &mut |v| {
            out.push(v);
            Ok(())
        })
        .map_err(|f| f.named("s").to_string())?;
        Ok(out)
    }

    #[test]
    fn packs_read_back_what_was_packed() {
        let rows = [
            row(5, 1, 10.0, 0.0),
            row(6, 30, 1.5e-3, 2e-5),
            row(300, 1 << 20, -0.0, 0.0),
            row(4100, 7, 1e300, 1e-300),
        ];
        let p = encode(3, 5, 4100, &rows);
        assert_eq!(p.count, 4);
        assert_eq!(p.data.len(), 10 + 18 + 14 + 19);
        let back = read(&p, 4, 5000).unwrap();
        let want: Vec<Packed> = rows
            .iter()
            .map(|r| Packed {
                point_id: r.point_id,
                n: r.n,
                median: r.median,
                mad: r.mad,
            })
            .collect();
        assert_eq!(back, want);
    }

    #[test]
    fn damaged_packs_are_refused_naming_table_field_and_pack() {
        let good = encode(3, 1, 100, &[row(1, 1, 1.0, 0.0), row(2, 1, 2.0, 0.0)]);
        let cases: Vec<(PackRow, i64, &str)> = vec![
            (
                good.clone(),
                1,
                "field first_point_id of the pack of series 3 from point 1 is not after",
            ),
            (
                PackRow {
                    last_point_id: 200,
                    ..good.clone()
                },
                0,
                "field last_point_id of the pack of series 3 from point 1 is 200, outside 1 to packed_through 100",
            ),
            (
                PackRow {
                    count: 3,
                    ..good.clone()
                },
                0,
                "field data of the pack of series 3 from point 1 is 20 bytes, not 3 results",
            ),
            (
                PackRow {
                    count: 0,
                    ..good.clone()
                },
                0,
                "field count of the pack of series 3 from point 1 is 0",
            ),
            (
                PackRow {
                    data: [good.data.clone(), vec![1; 10]].concat(),
                    ..good.clone()
                },
                0,
                "has 10 bytes after its 2 results",
            ),
            (
                encode(3, 1, 100, &[row(2, 1, 1.0, 0.0), row(1, 1, 2.0, 0.0)]),
                0,
                "holds a point after 2 that is not in order",
            ),
            (
                encode(3, 1, 100, &[row(1, 0, 1.0, 0.0)]),
                0,
                "at point 1: field n is 0",
            ),
            (
                encode(3, 1, 100, &[row(1, 1, f64::NAN, 0.0)]),
                0,
                "at point 1: field median is NaN",
            ),
            (
                encode(3, 1, 100, &[row(1, 2, 1.0, -1.0)]),
                0,
                "at point 1: field mad is -1, below 0",
            ),
            (
                PackRow {
                    data: vec![0xff; 20],
                    count: 2,
                    ..good.clone()
                },
                0,
                "ends inside result 0",
            ),
        ];
        for (p, after, want) in cases {
            let e = read(&p, after, 100).unwrap_err();
            assert!(e.contains("table packs: "), "{e}");
            assert!(e.contains(want), "{e} — wanted {want}");
        }
    }

    #[test]
    fn packed_through_is_a_point_id() {
        let m = |v: &str| vec![(THROUGH.to_string(), v.to_string())];
        assert_eq!(through(&m("4096")).ok(), Some(4096));
        let e = through(&m("-1")).unwrap_err().named("s").to_string();
        assert!(
            e.contains("key packed_through is \"-1\", not a point id"),
            "{e}"
        );
        let e = through(&[]).unwrap_err().named("s").to_string();
        assert!(e.contains("key packed_through is missing"), "{e}");
    }
}

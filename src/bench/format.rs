//! Numbers for people: a figure's value with its unit, a sweep's
//! parameter, and the words for an implausible figure. Shared by every
//! renderer, the plausibility check and the memlat analysis.

use super::figure::Value;
use crate::units::{human_bytes, thousands_f};

/// A value with its unit for people: ns below 1 µs, then µs, then ms.
pub fn format_value(v: &Value, x: f64) -> String {
    match v {
        Value::Ns(_) => format_ns(x),
        Value::GbPerS(_) => format_gbps(x),
        Value::Mhz(_) => format!("{} MHz", thousands_f(x)),
        Value::Bytes(_) => human_bytes(x.max(0.0) as u64),
        Value::Unavailable(_) => "unavailable".into(),
    }
}

/// GB/s with two decimals, or MB/s below 0.01 GB/s (small messages of the
/// ipc sweep), so a measured rate never prints as 0.00.
pub fn format_gbps(gb: f64) -> String {
    if gb != 0.0 && gb.abs() < 0.01 {
        format!("{:.2} MB/s", gb * 1e3)
    } else {
        format!("{gb:.2} GB/s")
    }
}

pub fn format_ns(ns: f64) -> String {
    // `-u/--time-unit` fixes the unit; by default it scales.
    if let Some((unit, _)) = crate::units::time_unit().fixed() {
        let text = crate::units::time_in(ns, crate::units::time_unit());
        return format!("{} {unit}", text.trim_end_matches(unit));
    }
    let a = ns.abs();
    if a < 10.0 {
        format!("{ns:.2} ns")
    } else if a < 1_000.0 {
        format!("{ns:.1} ns")
    } else if a < 1_000_000.0 {
        format!("{:.2} µs", ns / 1e3)
    } else {
        format!("{:.2} ms", ns / 1e6)
    }
}

/// The sweep parameter for people.
pub fn format_x(x: u64, unit: Option<&str>) -> String {
    match unit {
        Some("bytes") => human_bytes(x).replace(".0 ", " "),
        Some(u) => format!("{} {u}", crate::units::thousands(x)),
        None => crate::units::thousands(x),
    }
}

/// The words shown for a figure that failed a plausibility check.
pub fn implausible_text(why: &str) -> String {
    format!("implausible: {why}; excluded")
}

/// The widest line of the human report, in characters.
pub const MAX_WIDTH: usize = 100;

/// One unit for a column of figures of one kind: the unit's name and what
/// a value is divided by to be shown in it.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Scale {
    pub unit: &'static str,
    pub divisor: f64,
}

/// The unit a set of values of kind `v` is shown in, chosen from `typical`
/// (a median): ns below 10 µs, then µs, then ms; bytes as B, KiB, MiB or
/// GiB; GB/s and MHz as they are.
pub fn scale_for(v: &Value, typical: f64) -> Scale {
    let a = typical.abs();
    if let (Value::Ns(_), Some((unit, divisor))) = (v, crate::units::time_unit().fixed()) {
        return Scale { unit, divisor };
    }
    match v {
        Value::Ns(_) if a < 10_000.0 => Scale {
            unit: "ns",
            divisor: 1.0,
        },
        Value::Ns(_) if a < 10_000_000.0 => Scale {
            unit: "µs",
            divisor: 1e3,
        },
        Value::Ns(_) => Scale {
            unit: "ms",
            divisor: 1e6,
        },
        Value::GbPerS(_) => Scale {
            unit: "GB/s",
            divisor: 1.0,
        },
        Value::Mhz(_) => Scale {
            unit: "MHz",
            divisor: 1.0,
        },
        Value::Bytes(_) => {
            let (unit, divisor) = if a < 1024.0 {
                ("B", 1.0)
            } else if a < 1024.0 * 1024.0 {
                ("KiB", 1024.0)
            } else if a < 1024.0 * 1024.0 * 1024.0 {
                ("MiB", 1024.0 * 1024.0)
            } else {
                ("GiB", 1024.0 * 1024.0 * 1024.0)
            };
            Scale { unit, divisor }
        }
        Value::Unavailable(_) => Scale {
            unit: "",
            divisor: 1.0,
        },
    }
}

/// A number in a scale, without its unit (the column names it): two
/// decimals below 10, one below 1,000, none with thousands separators
/// above.
pub fn format_in(x: f64, scale: Scale) -> String {
    let v = x / scale.divisor;
    let a = v.abs();
    if !v.is_finite() {
        "-".into()
    } else if a < 10.0 {
        format!("{v:.2}")
    } else if a < 1_000.0 {
        format!("{v:.1}")
    } else if v < 0.0 {
        format!("-{}", thousands_f(a))
    } else {
        thousands_f(v)
    }
}

pub use crate::report::text::wrap;

#[cfg(test)]
mod tests {
    use super::*;
    use crate::stats::summarize;

    fn ns() -> Value {
        Value::Ns(summarize(&[1.0]).unwrap())
    }

    #[test]
    fn a_column_has_one_unit_chosen_from_its_median() {
        assert_eq!(scale_for(&ns(), 122.0).unit, "ns");
        assert_eq!(scale_for(&ns(), 9_999.0).unit, "ns");
        assert_eq!(scale_for(&ns(), 244_000.0).unit, "µs");
        assert_eq!(scale_for(&ns(), 2.5e7).unit, "ms");
        let b = Value::Bytes(summarize(&[1.0]).unwrap());
        assert_eq!(scale_for(&b, 64.0).unit, "B");
        assert_eq!(scale_for(&b, 8.0 * 1024.0 * 1024.0).unit, "MiB");
        let s = scale_for(&ns(), 244_000.0);
        assert_eq!(format_in(244_210.0, s), "244.2");
        assert_eq!(format_in(111_090.0, s), "111.1");
        assert_eq!(format_in(5_190.0, s), "5.19");
        assert_eq!(format_in(2_519_000.0, s), "2,519");
        assert_eq!(format_in(-4.0, scale_for(&ns(), 4.0)), "-4.00");
    }

    #[test]
    fn wrapping_keeps_every_word_and_the_width() {
        let text = "one two three four five six seven eight nine ten";
        let lines = wrap(text, "  note: ", "    ", 20);
        assert!(lines.iter().all(|l| l.chars().count() <= 20), "{lines:?}");
        assert_eq!(lines[0], "  note: one two");
        let words: Vec<&str> = lines
            .iter()
            .flat_map(|l| l.split_whitespace())
            .filter(|w| *w != "note:")
            .collect();
        assert_eq!(words.join(" "), text);
        assert_eq!(wrap("", "  x", " ", 10), vec!["  x".to_string()]);
        assert_eq!(wrap("a   b", "", "", 10), vec!["a   b".to_string()]);
        let long = wrap("a-very-long-word-indeed", "", "", 5);
        assert_eq!(long, vec!["a-very-long-word-indeed".to_string()]);
    }
}

//! Formatting of exact figures for people: thousands separators, µs,
//! percentages and byte sizes; and reading back the sizes and intervals
//! they type (`--max-mem 2G`, `--watch 0.5`). Machine formats never go
//! through here.

use std::time::Duration;

/// `75260133` → `75,260,133`.
pub fn thousands(n: u64) -> String {
    let digits = n.to_string();
    let mut out = String::with_capacity(digits.len() + digits.len() / 3);
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    out
}

/// `n` with thousands separators and the noun in the number it needs:
/// `1 process`, `2 processes`.
pub fn count(n: u64, one: &str, many: &str) -> String {
    format!("{} {}", thousands(n), if n == 1 { one } else { many })
}

/// Like [`thousands`] for a signed number.
pub fn thousands_i(n: i64) -> String {
    if n < 0 {
        format!("-{}", thousands(n.unsigned_abs()))
    } else {
        thousands(n as u64)
    }
}

/// A float rounded to the nearest integer, with separators (`1,234`).
pub fn thousands_f(x: f64) -> String {
    if !x.is_finite() {
        return "-".to_string();
    }
    let r = x.round();
    if r < 0.0 {
        format!("-{}", thousands((-r) as u64))
    } else {
        thousands(r as u64)
    }
}

/// A number as typed or read, short enough for a message whatever its
/// size: as Rust writes it up to 10^9 (`0.25`, `-3`, `1500000`), in
/// exponent form beyond (`1e308`, `-4.2e15`); `NaN`, `inf`.
pub fn short_number(x: f64) -> String {
    if x.is_finite() && x.abs() >= 1e9 {
        format!("{x:e}")
    } else {
        format!("{x}")
    }
}

/// Whole microseconds of a duration.
pub fn micros(d: Duration) -> u64 {
    u64::try_from(d.as_micros()).unwrap_or(u64::MAX)
}

/// `part` as a whole percentage of `whole`, rounded; `None` if `whole` is 0.
pub fn percent(part: u64, whole: u64) -> Option<u64> {
    if whole == 0 {
        return None;
    }
    let p = (part as u128 * 100 + whole as u128 / 2) / whole as u128;
    Some(p.min(100) as u64)
}

/// Binary size with one decimal and IEC unit (`1.5 MiB`); bytes below 1 KiB.
pub fn human_bytes(bytes: u64) -> String {
    const UNITS: [&str; 6] = ["KiB", "MiB", "GiB", "TiB", "PiB", "EiB"];
    if bytes < 1024 {
        return format!("{bytes} B");
    }
    let mut value = bytes as f64 / 1024.0;
    let mut unit = 0;
    while value >= 1024.0 && unit < UNITS.len() - 1 {
        value /= 1024.0;
        unit += 1;
    }
    format!("{value:.1} {}", UNITS[unit])
}

/// Parses `4096`, `64K`, `512M`, `2G`, `1T` (binary multiples).
pub fn parse_size(s: &str) -> Result<u64, String> {
    let t = s.trim();
    let (digits, shift) = match t.char_indices().last() {
        Some((i, c)) if c.is_ascii_alphabetic() => {
            let shift = match c.to_ascii_uppercase() {
                'K' => 10,
                'M' => 20,
                'G' => 30,
                'T' => 40,
                _ => {
                    return Err(format!(
                        "unknown size suffix {c:?} in {s:?}: use K, M, G or T"
                    ));
                }
            };
            (t.get(..i).unwrap_or(""), shift)
        }
        _ => (t, 0),
    };
    let n: u64 = digits.trim().parse().map_err(|_| {
        format!("{s:?} is not a size: write a number with an optional K, M, G or T")
    })?;
    n.checked_mul(1u64 << shift)
        .filter(|v| *v > 0)
        .ok_or_else(|| format!("{s:?} is zero or too large"))
}

/// Parses a number of seconds between 0.05 and 86400 (`--watch`,
/// `--every`).
pub fn parse_seconds(s: &str) -> Result<Duration, String> {
    let secs: f64 = s
        .parse()
        .map_err(|_| format!("`{s}` is not a number of seconds"))?;
    if !(0.05..=86_400.0).contains(&secs) {
        return Err("give between 0.05 and 86400 seconds".into());
    }
    Ok(Duration::from_secs_f64(secs))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn numbers_in_messages_stay_short() {
        assert_eq!(short_number(1e308), "1e308");
        assert_eq!(short_number(-4.2e15), "-4.2e15");
        assert_eq!(short_number(0.25), "0.25");
        assert_eq!(short_number(1_500_000.0), "1500000");
        assert_eq!(short_number(f64::NAN), "NaN");
    }

    #[test]
    fn one_process_is_singular() {
        assert_eq!(count(1, "process", "processes"), "1 process");
        assert_eq!(count(0, "process", "processes"), "0 processes");
        assert_eq!(count(1200, "program", "programs"), "1,200 programs");
    }

    #[test]
    fn sizes_read_back() {
        assert_eq!(parse_size("4096"), Ok(4096));
        assert_eq!(parse_size("64K"), Ok(65536));
        assert_eq!(parse_size("2g"), Ok(2 << 30));
        assert!(parse_size("0").is_err());
        assert!(parse_size("").is_err());
        assert!(parse_size("G").is_err());
        assert!(parse_size("5X").is_err());
        assert!(parse_size("99999999999T").is_err());
        assert!(parse_size("1é").is_err());
    }

    #[test]
    fn seconds() {
        assert_eq!(parse_seconds("0.5"), Ok(Duration::from_millis(500)));
        assert!(parse_seconds("0.01").is_err());
        assert!(parse_seconds("86401").is_err());
        assert!(parse_seconds("soon").is_err());
    }

    #[test]
    fn separators() {
        assert_eq!(thousands(0), "0");
        assert_eq!(thousands(999), "999");
        assert_eq!(thousands(1000), "1,000");
        assert_eq!(thousands(75_260_133), "75,260,133");
        assert_eq!(thousands(u64::MAX), "18,446,744,073,709,551,615");
        assert_eq!(thousands_i(-1234), "-1,234");
        assert_eq!(thousands_f(1234.5), "1,235");
        assert_eq!(thousands_f(f64::NAN), "-");
    }

    #[test]
    fn percentages() {
        assert_eq!(percent(1, 3), Some(33));
        assert_eq!(percent(2, 3), Some(67));
        assert_eq!(percent(5, 0), None);
        assert_eq!(percent(u64::MAX, u64::MAX), Some(100));
    }

    #[test]
    fn sizes() {
        assert_eq!(human_bytes(512), "512 B");
        assert_eq!(human_bytes(1536), "1.5 KiB");
        assert_eq!(human_bytes(3 << 30), "3.0 GiB");
    }
}

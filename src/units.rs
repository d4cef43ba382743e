//! Formatting of exact figures for people: thousands separators, µs,
//! percentages and byte sizes; and reading back the sizes and intervals
//! they type (`--max-mem 2G`, `--watch 0.5`). Machine formats never go
//! through here.

use std::time::Duration;

/// `x` with `decimals` decimals; from a million up (in either sign),
/// where fixed decimals would print up to 309 digits, in scientific
/// notation with three significant digits (`2.67e301`). A ratio or a
/// percentage of figures read from a file goes through it: those come
/// from any value the file holds.
pub fn decimals(x: f64, decimals: usize) -> String {
    if x.is_finite() && x.abs() >= 1e6 {
        format!("{x:.2e}")
    } else {
        format!("{x:.decimals$}")
    }
}

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

/// `99.77%`, `95%`, `1%`: a fraction as a percentage, no more digits than
/// it needs (at most two decimals).
pub fn percent_text(fraction: f64) -> String {
    let mut text = format!("{:.2}", fraction * 100.0);
    while text.contains('.') && (text.ends_with('0') || text.ends_with('.')) {
        text.pop();
    }
    format!("{text}%")
}

/// The decimals a ratio near `x` is written with: none from 100×, one
/// from 10×, two down to 0.1×, and below that as many as keep two
/// significant digits (`0.0016×`, never `0.00×` for 1 to 625).
pub fn ratio_decimals(x: f64) -> usize {
    let x = x.abs();
    if !x.is_finite() || x >= 100.0 {
        0
    } else if x >= 10.0 {
        1
    } else if x >= 0.1 || x == 0.0 {
        2
    } else {
        // 0.0016: -log10 = 2.8, so 4 decimals give two digits.
        ((-x.log10()).ceil() as usize + 1).min(12)
    }
}

/// `1.26×`, `41.9×`, `0.0016×`: a ratio in the decimals it needs
/// ([`ratio_decimals`]); `inf×` beyond any number.
pub fn ratio(x: f64) -> String {
    if !x.is_finite() {
        return "inf×".into();
    }
    format!("{}×", decimals(x, ratio_decimals(x)))
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

/// The unit people read times in (`-u/--time-unit`): `auto` scales each
/// time to the unit that keeps it short (ns, µs, ms, s); the others fix
/// one. Machine formats (JSON, CSV) keep their own integer units.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, clap::ValueEnum)]
pub enum TimeUnit {
    /// ns below 1 µs, µs below 1 ms, ms below 1 s, then s.
    #[default]
    Auto,
    #[value(name = "ns", alias = "nanosecond")]
    Nanosecond,
    #[value(name = "us", alias = "µs", alias = "microsecond")]
    Microsecond,
    #[value(name = "ms", alias = "millisecond")]
    Millisecond,
    #[value(name = "s", alias = "second")]
    Second,
}

impl TimeUnit {
    /// The symbol and nanoseconds per unit of a fixed unit; `None` for
    /// `auto`.
    pub fn fixed(self) -> Option<(&'static str, f64)> {
        match self {
            TimeUnit::Auto => None,
            u => {
                let (per, symbol) = u.scale(1.0);
                Some((symbol, per))
            }
        }
    }

    /// Nanoseconds in one of this unit, and its symbol, for `ns`
    /// nanoseconds (`auto` picks by size).
    fn scale(self, ns: f64) -> (f64, &'static str) {
        let unit = match self {
            TimeUnit::Auto => match ns.abs() {
                x if x >= 1e9 => TimeUnit::Second,
                x if x >= 1e6 => TimeUnit::Millisecond,
                x if x >= 1e3 || x == 0.0 => TimeUnit::Microsecond,
                _ => TimeUnit::Nanosecond,
            },
            u => u,
        };
        match unit {
            TimeUnit::Auto | TimeUnit::Microsecond => (1e3, "µs"),
            TimeUnit::Nanosecond => (1.0, "ns"),
            TimeUnit::Millisecond => (1e6, "ms"),
            TimeUnit::Second => (1e9, "s"),
        }
    }
}

/// The time unit of this tally's human output, set once from the command
/// line ([`set_time_unit`]); `auto` when never set.
static TIME_UNIT: std::sync::OnceLock<TimeUnit> = std::sync::OnceLock::new();

/// Sets the unit every human time is written in, once, before any
/// report; a later call changes nothing.
pub fn set_time_unit(unit: TimeUnit) {
    let _ = TIME_UNIT.set(unit);
}

/// The unit of the command line (`auto` when never set).
pub fn time_unit() -> TimeUnit {
    TIME_UNIT.get().copied().unwrap_or_default()
}

/// `ns` nanoseconds for people, in the unit of the command line
/// (`-u/--time-unit`, `auto` by default): `1.205s`, `314.0ms`, `1,492µs`
/// with `-u us`.
pub fn time_ns(ns: f64) -> String {
    time_in(ns, time_unit())
}

/// `ns` nanoseconds in `unit`, to about four significant digits and at
/// least a whole: `1.205s`, `12.36ms`, `850ns`, `1,204,704µs` (`-u us`).
pub fn time_in(ns: f64, unit: TimeUnit) -> String {
    if !ns.is_finite() {
        return "-".to_string();
    }
    let (per, symbol) = unit.scale(ns);
    let q = ns / per;
    // Nanoseconds are whole: no clock here reads finer.
    let digits = match q.abs() {
        _ if per == 1.0 => 0,
        x if x >= 1000.0 || x == 0.0 => 0,
        x if x >= 100.0 => 1,
        x if x >= 10.0 => 2,
        x if x >= 1.0 => 3,
        _ => 4,
    };
    if digits == 0 {
        format!("{}{symbol}", thousands_f(q))
    } else {
        format!("{q:.digits$}{symbol}")
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

/// A size in KiB (the kernel's kB, exact) for people: `5,444KiB` below
/// 10 MiB, `212.2MiB` below 10 GiB, `12.3GiB` beyond. Regression: peak
/// memory read "217,320KiB".
pub fn memory_kib(kib: f64) -> String {
    if !kib.is_finite() {
        return "-".into();
    }
    if kib.abs() < 10.0 * 1024.0 {
        format!("{}KiB", thousands_f(kib))
    } else if kib.abs() < 10.0 * 1024.0 * 1024.0 {
        format!("{}MiB", tenths_f(kib / 1024.0))
    } else {
        format!("{}GiB", tenths_f(kib / (1024.0 * 1024.0)))
    }
}

/// `8,078.9`: a number with one decimal and thousands separators.
pub fn tenths_f(x: f64) -> String {
    let text = format!("{:.1}", x.abs());
    let (whole, tenth) = text.split_once('.').unwrap_or((&text, "0"));
    let sign = if x < 0.0 && text != "0.0" { "-" } else { "" };
    format!(
        "{sign}{}.{tenth}",
        thousands(whole.parse::<u64>().unwrap_or(0))
    )
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

    /// Regression: a bench baseline of figures of 1e-300 printed ratios
    /// and percentages of 300 digits.
    #[test]
    fn decimals_stay_short_whatever_the_magnitude() {
        assert_eq!(decimals(1.2345, 2), "1.23");
        assert_eq!(decimals(999_999.0, 1), "999999.0");
        assert_eq!(decimals(2.6726672e301, 2), "2.67e301");
        assert_eq!(decimals(-3.0e10, 1), "-3.00e10");
        assert_eq!(decimals(f64::INFINITY, 1), "inf");
        assert!(decimals(f64::MAX, 1).len() < 10);
        assert_eq!(ratio(2.6726672e301), "2.67e301×");
        assert_eq!(ratio(41.94), "41.9×");
    }
    use super::*;

    #[test]
    fn times_scale_from_ns_to_s_and_a_fixed_unit_keeps_its_own() {
        assert_eq!(time_in(850.0, TimeUnit::Auto), "850ns");
        assert_eq!(time_in(1_492_000.0, TimeUnit::Auto), "1.492ms");
        assert_eq!(time_in(314_018_000.0, TimeUnit::Auto), "314.0ms");
        assert_eq!(time_in(1_204_704_000.0, TimeUnit::Auto), "1.205s");
        assert_eq!(time_in(12_500.0, TimeUnit::Auto), "12.50µs");
        assert_eq!(time_in(0.0, TimeUnit::Auto), "0µs");
        assert_eq!(
            time_in(1_204_704_000.0, TimeUnit::Microsecond),
            "1,204,704µs"
        );
        assert_eq!(time_in(1_186_000.0, TimeUnit::Second), "0.0012s");
        assert_eq!(time_in(1_186.0, TimeUnit::Nanosecond), "1,186ns");
        assert_eq!(time_in(21_680_000.0, TimeUnit::Millisecond), "21.68ms");
    }

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

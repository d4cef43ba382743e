//! A number as a configuration file wrote it.
//!
//! The parsers' own typed numbers refuse a value out of their type's
//! range with a message that names no field ("invalid i64", "expected
//! i64"). A field read as [`Number`] takes any scalar, of any size or
//! sign, and the code that checks the field says what is wrong with it,
//! naming the field and its range.

use serde::de::{self, Deserialize, Deserializer, Visitor};
use std::fmt;

/// A whole number, a fraction, or something else (its text, for the
/// message).
#[derive(Debug, Clone, PartialEq)]
pub enum Number {
    Whole(i128),
    Fraction(f64),
    Other(String),
}

impl Number {
    /// As an integer, when it is a whole number within `i64`.
    pub fn whole(&self) -> Option<i64> {
        match self {
            Number::Whole(n) => i64::try_from(*n).ok(),
            _ => None,
        }
    }

    /// As seconds: a whole number or a finite fraction.
    pub fn real(&self) -> Option<f64> {
        match self {
            // i128 to f64 rounds: a value that large is out of any range.
            Number::Whole(n) => Some(*n as f64),
            Number::Fraction(x) if x.is_finite() => Some(*x),
            _ => None,
        }
    }
}

impl fmt::Display for Number {
    /// Short whatever the value: `1e308`, not 300 digits; text escaped and
    /// cut to 40 characters.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Number::Whole(n) => write!(f, "{n}"),
            Number::Fraction(x) => f.write_str(&crate::units::short_number(*x)),
            Number::Other(t) => f.write_str(&crate::text::escape_text(
                &t.chars().take(40).collect::<String>(),
            )),
        }
    }
}

struct NumberVisitor;

impl<'de> Visitor<'de> for NumberVisitor {
    type Value = Number;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a number")
    }
    fn visit_i64<E: de::Error>(self, v: i64) -> Result<Number, E> {
        Ok(Number::Whole(i128::from(v)))
    }
    fn visit_u64<E: de::Error>(self, v: u64) -> Result<Number, E> {
        Ok(Number::Whole(i128::from(v)))
    }
    fn visit_i128<E: de::Error>(self, v: i128) -> Result<Number, E> {
        Ok(Number::Whole(v))
    }
    fn visit_u128<E: de::Error>(self, v: u128) -> Result<Number, E> {
        Ok(i128::try_from(v).map_or_else(|_| Number::Other(v.to_string()), Number::Whole))
    }
    fn visit_f64<E: de::Error>(self, v: f64) -> Result<Number, E> {
        Ok(Number::Fraction(v))
    }
    fn visit_bool<E: de::Error>(self, v: bool) -> Result<Number, E> {
        Ok(Number::Other(v.to_string()))
    }
    fn visit_str<E: de::Error>(self, v: &str) -> Result<Number, E> {
        Ok(Number::Other(format!("{v:?}")))
    }
    fn visit_unit<E: de::Error>(self) -> Result<Number, E> {
        Ok(Number::Other("nothing".into()))
    }
    fn visit_seq<A: de::SeqAccess<'de>>(self, mut seq: A) -> Result<Number, A::Error> {
        while seq.next_element::<de::IgnoredAny>()?.is_some() {}
        Ok(Number::Other("a list".into()))
    }
    fn visit_map<A: de::MapAccess<'de>>(self, mut map: A) -> Result<Number, A::Error> {
        while map
            .next_entry::<de::IgnoredAny, de::IgnoredAny>()?
            .is_some()
        {}
        Ok(Number::Other("a table".into()))
    }
}

impl<'de> Deserialize<'de> for Number {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Number, D::Error> {
        d.deserialize_any(NumberVisitor)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(serde::Deserialize)]
    struct T {
        n: Number,
    }

    #[test]
    fn any_scalar_is_taken_and_shown_short() {
        let n = |text: &str| toml::from_str::<T>(text).unwrap().n;
        assert_eq!(n("n = 5").whole(), Some(5));
        assert_eq!(n("n = -1").whole(), Some(-1));
        assert_eq!(n("n = 18446744073709551616").whole(), None);
        assert_eq!(n("n = 1e308").to_string(), "1e308");
        assert_eq!(n("n = \"x\"").to_string(), "\"x\"");
        let y = |text: &str| serde_saphyr::from_str::<T>(text).unwrap().n;
        assert_eq!(y("n: 7").whole(), Some(7));
        assert_eq!(y("n: -1s").to_string(), "\"-1s\"");
        assert_eq!(y("n: 18446744073709551616").whole(), None);
    }
}

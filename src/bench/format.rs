//! Numbers for people: a figure's value with its unit, a sweep's
//! parameter, and the words for an implausible figure. Shared by every
//! renderer, the plausibility check and the memlat analysis.

use super::figure::Value;
use crate::units::{human_bytes, thousands_f};

/// A value with its unit for people: ns below 1 µs, then µs, then ms.
pub fn format_value(v: &Value, x: f64) -> String {
    match v {
        Value::Ns(_) => format_ns(x),
        Value::GbPerS(_) => format!("{x:.2} GB/s"),
        Value::Mhz(_) => format!("{} MHz", thousands_f(x)),
        Value::Bytes(_) => human_bytes(x.max(0.0) as u64),
        Value::Unavailable(_) => "unavailable".into(),
    }
}

pub fn format_ns(ns: f64) -> String {
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

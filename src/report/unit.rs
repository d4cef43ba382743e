//! The typed figure: a value and the unit it is held in. Every format
//! scales a figure through this one table: JSON and CSV keep the unit the
//! key names (`wall_ns`, `max_rss_bytes`), Prometheus wants the base unit
//! (seconds, bytes, bytes per second, hertz) named by the metric's last
//! word, and people read it in a unit of their own ([`Quantity::to`]).

/// The unit a figure is held in.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Unit {
    Seconds,
    Milliseconds,
    Microseconds,
    Nanoseconds,
    Bytes,
    /// 1024 bytes (the kernel's "kB").
    Kibibytes,
    /// 1024² bytes (nvidia-smi's "MiB").
    Mebibytes,
    BytesPerSecond,
    /// 10^9 bytes per second.
    GigabytesPerSecond,
    Hertz,
    Megahertz,
    /// A plain number of things (processes, faults, operations).
    Count,
    /// A fraction, 1 meaning all.
    Ratio,
    Joules,
    Millijoules,
}

impl Unit {
    /// `value`, given in this unit, in the base unit.
    pub fn to_base(self, value: f64) -> f64 {
        // Divide for the sub-units: 120 / 1e9 is the nearest double to
        // 1.2e-7, while 120 * 1e-9 is not.
        match self.factor() {
            Factor::Div(d) => value / d,
            Factor::Mul(m) => value * m,
        }
    }

    /// `value`, given in the base unit, in this unit.
    pub fn from_base(self, value: f64) -> f64 {
        match self.factor() {
            Factor::Div(d) => value * d,
            Factor::Mul(m) => value / m,
        }
    }

    /// How this unit relates to its base unit.
    fn factor(self) -> Factor {
        match self {
            Unit::Seconds
            | Unit::Bytes
            | Unit::BytesPerSecond
            | Unit::Hertz
            | Unit::Count
            | Unit::Ratio
            | Unit::Joules => Factor::Mul(1.0),
            Unit::Millijoules => Factor::Div(1e3),
            Unit::Mebibytes => Factor::Mul(1024.0 * 1024.0),
            Unit::Milliseconds => Factor::Div(1e3),
            Unit::Microseconds => Factor::Div(1e6),
            Unit::Nanoseconds => Factor::Div(1e9),
            Unit::Kibibytes => Factor::Mul(1024.0),
            Unit::GigabytesPerSecond => Factor::Mul(1e9),
            Unit::Megahertz => Factor::Mul(1e6),
        }
    }

    /// The base unit this unit scales to.
    pub fn base(self) -> Unit {
        match self {
            Unit::Seconds | Unit::Milliseconds | Unit::Microseconds | Unit::Nanoseconds => {
                Unit::Seconds
            }
            Unit::Bytes | Unit::Kibibytes | Unit::Mebibytes => Unit::Bytes,
            Unit::Joules | Unit::Millijoules => Unit::Joules,
            Unit::BytesPerSecond | Unit::GigabytesPerSecond => Unit::BytesPerSecond,
            Unit::Hertz | Unit::Megahertz => Unit::Hertz,
            Unit::Count => Unit::Count,
            Unit::Ratio => Unit::Ratio,
        }
    }

    /// The base unit's suffix of a Prometheus metric name (empty for
    /// counts).
    pub fn suffix(self) -> &'static str {
        match self.base() {
            Unit::Seconds => "_seconds",
            Unit::Bytes => "_bytes",
            Unit::BytesPerSecond => "_bytes_per_second",
            Unit::Hertz => "_hertz",
            Unit::Ratio => "_ratio",
            Unit::Joules => "_joules",
            _ => "",
        }
    }

    /// The suffix a JSON or CSV key holding a figure in this unit ends
    /// with (`wall_ns`, `max_rss_bytes`); empty for counts.
    pub fn key_suffix(self) -> &'static str {
        match self {
            Unit::Seconds => "_seconds",
            Unit::Milliseconds => "_ms",
            Unit::Microseconds => "_us",
            Unit::Nanoseconds => "_ns",
            Unit::Bytes => "_bytes",
            Unit::Kibibytes => "_kb",
            Unit::Mebibytes => "_mib",
            Unit::Joules => "_joules",
            Unit::Millijoules => "_mj",
            Unit::BytesPerSecond => "_bytes_per_second",
            Unit::GigabytesPerSecond => "_gb_per_s",
            Unit::Hertz => "_hz",
            Unit::Megahertz => "_mhz",
            Unit::Count => "",
            Unit::Ratio => "_ratio",
        }
    }

    /// The symbol people read after a number (`µs`, `KiB`); empty for
    /// counts and ratios.
    pub fn symbol(self) -> &'static str {
        match self {
            Unit::Seconds => "s",
            Unit::Milliseconds => "ms",
            Unit::Microseconds => "µs",
            Unit::Nanoseconds => "ns",
            Unit::Bytes => "B",
            Unit::Kibibytes => "KiB",
            Unit::Mebibytes => "MiB",
            Unit::Joules => "J",
            Unit::Millijoules => "mJ",
            Unit::BytesPerSecond => "B/s",
            Unit::GigabytesPerSecond => "GB/s",
            Unit::Hertz => "Hz",
            Unit::Megahertz => "MHz",
            Unit::Count | Unit::Ratio => "",
        }
    }
}

enum Factor {
    Div(f64),
    Mul(f64),
}

/// A figure: a value in a unit.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Quantity {
    pub value: f64,
    pub unit: Unit,
}

impl Quantity {
    pub fn new(value: f64, unit: Unit) -> Quantity {
        Quantity { value, unit }
    }

    /// The value in the base unit (seconds, bytes, …).
    pub fn base(self) -> f64 {
        self.unit.to_base(self.value)
    }

    /// The same figure in `unit`, which must share this unit's base.
    pub fn to(self, unit: Unit) -> Quantity {
        debug_assert_eq!(self.unit.base(), unit.base(), "{:?} to {unit:?}", self.unit);
        if unit == self.unit {
            return self;
        }
        Quantity::new(unit.from_base(self.base()), unit)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn units_scale_to_the_base_unit_and_name_it() {
        let cases = [
            (Unit::Nanoseconds, 120.0, 1.2e-7, "_seconds"),
            (Unit::Microseconds, 3815.0, 0.003815, "_seconds"),
            (Unit::Milliseconds, 250.0, 0.25, "_seconds"),
            (Unit::Seconds, 2.5, 2.5, "_seconds"),
            (Unit::Kibibytes, 3.0, 3072.0, "_bytes"),
            (Unit::Bytes, 7.0, 7.0, "_bytes"),
            (Unit::GigabytesPerSecond, 12.5, 12.5e9, "_bytes_per_second"),
            (Unit::BytesPerSecond, 9.0, 9.0, "_bytes_per_second"),
            (Unit::Megahertz, 3200.0, 3.2e9, "_hertz"),
            (Unit::Hertz, 50.0, 50.0, "_hertz"),
            (Unit::Count, 4.0, 4.0, ""),
            (Unit::Ratio, 0.5, 0.5, "_ratio"),
            (Unit::Mebibytes, 2.0, 2097152.0, "_bytes"),
            (Unit::Millijoules, 212_450.0, 212.45, "_joules"),
            (Unit::Joules, 3.0, 3.0, "_joules"),
        ];
        for (unit, value, base, suffix) in cases {
            assert_eq!(unit.to_base(value), base, "{unit:?}");
            assert_eq!(unit.suffix(), suffix, "{unit:?}");
            let back = unit.from_base(base);
            assert!((back - value).abs() <= value * 1e-12, "{unit:?}: {back}");
        }
    }

    #[test]
    fn a_quantity_converts_between_units_of_one_base() {
        let wall = Quantity::new(1_234_567.0, Unit::Nanoseconds);
        assert_eq!(wall.to(Unit::Microseconds).value, 1234.567);
        assert_eq!(wall.to(Unit::Nanoseconds), wall);
        let rss = Quantity::new(4096.0, Unit::Bytes);
        assert_eq!(rss.to(Unit::Kibibytes), Quantity::new(4.0, Unit::Kibibytes));
    }
}

//! `/proc/loadavg`: `1m 5m 15m running/total last-pid`.

/// The one-minute load average.
pub fn one_minute(text: &str) -> Option<f64> {
    text.split_whitespace().next()?.parse().ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_the_first_figure() {
        assert_eq!(one_minute("0.52 0.58 0.59 2/389 12345\n"), Some(0.52));
        assert_eq!(one_minute(""), None);
        assert_eq!(one_minute("busy 1 2"), None);
    }
}

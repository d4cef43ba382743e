//! `/proc/cpuinfo`: `key : value` lines, one block per logical CPU.

/// The CPU model: the first `model name` line (x86) or `Model` line (ARM).
pub fn model_name(text: &str) -> Option<String> {
    text.lines()
        .find(|l| l.starts_with("model name") || l.starts_with("Model"))
        .and_then(|l| l.split_once(':'))
        .map(|(_, v)| v.trim().to_string())
}

/// Whether the first `flags` line (x86) lists `flag`.
pub fn has_flag(text: &str, flag: &str) -> bool {
    text.lines()
        .find(|l| l.starts_with("flags"))
        .is_some_and(|l| l.split_whitespace().any(|w| w == flag))
}

#[cfg(test)]
mod tests {
    use super::*;

    const X86: &str = "\
processor\t: 0
vendor_id\t: GenuineIntel
model name\t: Intel(R) Xeon(R) Platinum 8375C CPU @ 2.90GHz
flags\t\t: fpu tsc rdtscp hypervisor
";

    #[test]
    fn reads_model_and_flags() {
        assert_eq!(
            model_name(X86).as_deref(),
            Some("Intel(R) Xeon(R) Platinum 8375C CPU @ 2.90GHz")
        );
        assert!(has_flag(X86, "rdtscp") && has_flag(X86, "hypervisor"));
        assert!(!has_flag(X86, "tsc_") && !has_flag(X86, "fpu tsc"));
    }

    #[test]
    fn arm_model_and_empty_text() {
        let arm = "processor\t: 0\nBogoMIPS\t: 50.00\nModel\t\t: Raspberry Pi 4 Model B\n";
        assert_eq!(model_name(arm).as_deref(), Some("Raspberry Pi 4 Model B"));
        assert!(!has_flag(arm, "tsc"));
        assert_eq!(model_name(""), None);
        assert_eq!(model_name("model name without colon"), None);
    }
}

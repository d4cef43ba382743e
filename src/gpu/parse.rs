//! The lines `nvidia-smi --format=csv,noheader,nounits` prints, read and
//! validated: every number is checked here, once, and a field the driver
//! cannot give (`[N/A]`, `[Not Supported]`, `[Insufficient Permissions]`,
//! `[Unknown Error]`) becomes `None`, never a zero.

/// The GPU query tally asks for, in this order.
pub const GPU_FIELDS: &str = "index,name,uuid,utilization.gpu,power.draw,memory.used";

/// The process query tally asks for, in this order (`used_memory` is
/// nvidia-smi's other spelling of `used_gpu_memory`).
pub const APP_FIELDS: &str = "timestamp,pid,used_memory,gpu_uuid";

/// Largest GPU index believed (no machine has more GPUs).
const MAX_INDEX: u32 = 4096;
/// Largest memory figure believed, in MiB (16 TiB on one GPU).
const MAX_MIB: u64 = 1 << 24;
/// Largest power draw believed, in watts.
const MAX_WATTS: f64 = 100_000.0;
/// Longest name, uuid or timestamp kept.
const MAX_TEXT: usize = 128;

/// One line of the GPU query: one GPU at one moment.
#[derive(Debug, Clone, PartialEq)]
pub struct GpuLine {
    pub index: u32,
    /// Escaped for display (see `crate::text`).
    pub name: String,
    pub uuid: String,
    /// Percent of the last sample period a kernel ran (0-100).
    pub utilization: Option<u8>,
    pub power_watts: Option<f64>,
    pub memory_used_mib: Option<u64>,
}

/// One line of the process query: one process on one GPU at one moment.
#[derive(Debug, Clone, PartialEq)]
pub struct AppLine {
    /// The driver's timestamp: the lines of one sample share it.
    pub timestamp: String,
    pub pid: u32,
    pub used_mib: Option<u64>,
    pub gpu_uuid: String,
}

/// A field the driver says it cannot give, in any of its spellings.
fn not_available(field: &str) -> bool {
    field.starts_with('[') && field.ends_with(']') || field == "N/A"
}

/// A number with an optional unit after it (`38`, `38 %`, `4112 MiB`):
/// `Ok(None)` for a field the driver cannot give, `Err` for anything else
/// that is not a number.
fn number<'a>(field: &'a str, unit: &str) -> Result<Option<&'a str>, String> {
    if not_available(field) {
        return Ok(None);
    }
    let bare = field.strip_suffix(unit).unwrap_or(field).trim_end();
    if bare.is_empty() || !bare.bytes().all(|b| b.is_ascii_digit() || b == b'.') {
        return Err(format!("{field:?} is not a number"));
    }
    Ok(Some(bare))
}

fn whole(field: &str, unit: &str, max: u64, what: &str) -> Result<Option<u64>, String> {
    let Some(bare) = number(field, unit)? else {
        return Ok(None);
    };
    // nvidia-smi prints whole numbers here; a fraction is refused, not rounded.
    let n: u64 = bare
        .parse()
        .map_err(|_| format!("{what} {field:?} is not a whole number"))?;
    if n > max {
        return Err(format!("{what} {n} is over {max}"));
    }
    Ok(Some(n))
}

fn text(field: &str, what: &str) -> Result<String, String> {
    if field.is_empty() || not_available(field) {
        return Err(format!("no {what}"));
    }
    if field.len() > MAX_TEXT {
        return Err(format!("{what} longer than {MAX_TEXT} bytes"));
    }
    Ok(crate::text::escape::escape_text(field))
}

/// An identifier (uuid): printable ASCII only, as the driver prints them.
fn ident(field: &str, what: &str) -> Result<String, String> {
    if field.is_empty()
        || not_available(field)
        || field.len() > MAX_TEXT
        || !field.bytes().all(|b| b.is_ascii_graphic())
    {
        return Err(format!("{what} {:?} is not an identifier", field));
    }
    Ok(field.to_string())
}

fn fields(line: &str) -> Vec<&str> {
    line.trim_end_matches(['\r', '\n'])
        .split(',')
        .map(str::trim)
        .collect()
}

/// Reads one line of the GPU query ([`GPU_FIELDS`]). A name holding
/// commas is put back together: the other fields hold none.
pub fn gpu_line(line: &str) -> Result<GpuLine, String> {
    let f = fields(line);
    if f.len() < 6 {
        return Err(format!("{} fields, not 6", f.len()));
    }
    let n = f.len();
    let name = f[1..n - 4].join(", ");
    let index = whole(f[0], "", u64::from(MAX_INDEX), "GPU index")?.ok_or("no GPU index")? as u32;
    let utilization = whole(f[n - 3], "%", 100, "utilization")?.map(|u| u as u8);
    let power_watts = match number(f[n - 2], "W")? {
        None => None,
        Some(p) => {
            let w: f64 = p
                .parse()
                .map_err(|_| format!("power {:?} is not a number", f[n - 2]))?;
            if !w.is_finite() || w > MAX_WATTS {
                return Err(format!("power {w} W is not believable"));
            }
            Some(w)
        }
    };
    Ok(GpuLine {
        index,
        name: text(&name, "GPU name")?,
        uuid: ident(f[n - 4], "GPU uuid")?,
        utilization,
        power_watts,
        memory_used_mib: whole(f[n - 1], "MiB", MAX_MIB, "memory used")?,
    })
}

/// Reads one line of the process query ([`APP_FIELDS`]).
pub fn app_line(line: &str) -> Result<AppLine, String> {
    let f = fields(line);
    if f.len() != 4 {
        return Err(format!("{} fields, not 4", f.len()));
    }
    let timestamp = ident(&f[0].replace(' ', "_"), "timestamp")?;
    let pid = whole(f[1], "", u64::from(u32::MAX), "pid")?.ok_or("no pid")?;
    if pid == 0 {
        return Err("pid 0".into());
    }
    Ok(AppLine {
        timestamp,
        pid: pid as u32,
        used_mib: whole(f[2], "MiB", MAX_MIB, "used memory")?,
        gpu_uuid: ident(f[3], "GPU uuid")?,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    const UUID: &str = "GPU-5c6e1b2a-9d1f-4a57-8a0e-2f6c7a1b3c4d";

    #[test]
    fn a_gpu_line_as_nvidia_smi_prints_it() {
        let l = gpu_line(&format!("0, NVIDIA H200, {UUID}, 38, 212.45, 4112")).unwrap();
        assert_eq!(l.index, 0);
        assert_eq!(l.name, "NVIDIA H200");
        assert_eq!(l.uuid, UUID);
        assert_eq!(l.utilization, Some(38));
        assert_eq!(l.power_watts, Some(212.45));
        assert_eq!(l.memory_used_mib, Some(4112));
    }

    #[test]
    fn units_left_in_are_read_and_not_available_is_none() {
        let l = gpu_line(&format!("1, Tesla T4, {UUID}, 7 %, [N/A], 15 MiB")).unwrap();
        assert_eq!(
            (l.utilization, l.power_watts, l.memory_used_mib),
            (Some(7), None, Some(15))
        );
        let l = gpu_line(&format!(
            "2, NVIDIA A100-SXM4-40GB, {UUID}, [Not Supported], [Insufficient Permissions], [Unknown Error]"
        ))
        .unwrap();
        assert_eq!(
            (l.utilization, l.power_watts, l.memory_used_mib),
            (None, None, None)
        );
    }

    #[test]
    fn a_name_with_commas_is_kept_whole() {
        let l = gpu_line(&format!("0, Odd, Name, {UUID}, 0, 1.0, 0")).unwrap();
        assert_eq!(l.name, "Odd, Name");
    }

    #[test]
    fn malformed_gpu_lines_are_refused_with_why() {
        for bad in [
            "",
            "NVIDIA-SMI has failed because it couldn't communicate with the NVIDIA driver.",
            &format!("0, H200, {UUID}, 101, 1, 1"),
            &format!("0, H200, {UUID}, -1, 1, 1"),
            &format!("0, H200, {UUID}, 5, inf, 1"),
            &format!("0, H200, {UUID}, 5, 1e9, 1"),
            &format!("0, H200, {UUID}, 5, 100001, 1"),
            &format!("x, H200, {UUID}, 5, 1, 1"),
            &format!("0, H200, {UUID}, 5, 1, 99999999999"),
            &format!("0, H200, {UUID}, 5, 1, 1.5"),
            "0, H200, GPU bad uuid, 5, 1, 1",
            &format!("0, , {UUID}, 5, 1, 1"),
        ] {
            assert!(gpu_line(bad).is_err(), "accepted {bad:?}");
        }
    }

    #[test]
    fn an_app_line_as_nvidia_smi_prints_it() {
        let l = app_line(&format!("2026/11/26 18:41:27.123, 4242, 4112, {UUID}")).unwrap();
        assert_eq!(l.timestamp, "2026/11/26_18:41:27.123");
        assert_eq!((l.pid, l.used_mib), (4242, Some(4112)));
        assert_eq!(l.gpu_uuid, UUID);
        let l = app_line(&format!("2026/11/26 18:41:27.123, 4242, [N/A], {UUID}")).unwrap();
        assert_eq!(l.used_mib, None);
        let l = app_line(&format!("2026/11/26 18:41:27.123, 9, 12 MiB, {UUID}")).unwrap();
        assert_eq!(l.used_mib, Some(12));
    }

    #[test]
    fn malformed_app_lines_are_refused_with_why() {
        for bad in [
            "No running processes found",
            &format!("t, 0, 1, {UUID}"),
            &format!("t, -5, 1, {UUID}"),
            &format!("t, 4294967296, 1, {UUID}"),
            &format!("t, 12, lots, {UUID}"),
            "t, 12, 1",
            &format!("t, 12, 1, {UUID}, extra"),
            "[N/A], 12, 1, GPU-x",
        ] {
            assert!(app_line(bad).is_err(), "accepted {bad:?}");
        }
    }
}

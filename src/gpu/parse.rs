//! The lines `nvidia-smi --format=csv,noheader,nounits` prints, read and
//! validated: every number is checked here, once, and a field the driver
//! cannot give (`[N/A]`, `[Not Supported]`, `[Insufficient Permissions]`,
//! `[Unknown Error]`) becomes `None`, never a zero.
//!
//! A figure is bounded by what the device says it has where the line
//! gives it (memory used by the GPU's memory total, the power draw by its
//! power limits), else by what no GPU has ([`MAX_MIB`], 5,000 W);
//! a line beyond a bound is refused, the reason naming the figure and
//! the bound.

/// The GPU query tally asks for, in this order.
pub const GPU_FIELDS: &str = "index,name,uuid,utilization.gpu,power.draw,power.limit,power.max_limit,memory.used,memory.total";

/// The process query tally asks for, in this order (`used_memory` is
/// nvidia-smi's other spelling of `used_gpu_memory`).
pub const APP_FIELDS: &str = "timestamp,pid,used_memory,gpu_uuid";

/// The GPUs' memory totals, which bound the process query's figures
/// where no GPU query runs beside it (`tally mem`, `tally serve`).
pub const TOTAL_FIELDS: &str = "uuid,memory.total";

/// Largest GPU index believed (no machine has more GPUs).
const MAX_INDEX: u32 = 4096;
/// Largest memory figure believed without the GPU's own total, in MiB
/// (1 TiB: four times the largest GPU memory made so far).
pub const MAX_MIB: u64 = 1 << 20;
/// Largest power figure believed without the GPU's own limits, in watts
/// (four times the largest board power made so far).
const MAX_WATTS: f64 = 5_000.0;
/// A power draw may pass the GPU's limit for a moment: up to this many
/// times the highest limit it reports is believed.
const OVER_LIMIT: f64 = 2.0;
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
    /// The GPU's memory, which bounds every memory figure of it.
    pub memory_total_mib: Option<u64>,
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

/// A memory figure of `what` in whole MiB, at most the GPU's `total`
/// where it is known, else at most [`MAX_MIB`].
pub fn check_mib(n: u64, what: &str, total: Option<u64>) -> Result<u64, String> {
    let shown = crate::units::thousands;
    match total {
        Some(t) if n > t => Err(format!(
            "{what} {} MiB is over the GPU's memory total, {} MiB",
            shown(n),
            shown(t)
        )),
        None if n > MAX_MIB => Err(format!(
            "{what} {} MiB is over {} MiB, more than any GPU holds",
            shown(n),
            shown(MAX_MIB)
        )),
        _ => Ok(n),
    }
}

fn mib(field: &str, what: &str, total: Option<u64>) -> Result<Option<u64>, String> {
    let Some(bare) = number(field, "MiB")? else {
        return Ok(None);
    };
    // nvidia-smi prints whole MiB; a fraction is refused, not rounded.
    let n: u64 = bare
        .parse()
        .map_err(|_| format!("{what} {field:?} is not a whole number of MiB under 2^64"))?;
    check_mib(n, what, total).map(Some)
}

/// A power figure in watts: finite and at most [`MAX_WATTS`].
fn watts(field: &str, what: &str) -> Result<Option<f64>, String> {
    let Some(bare) = number(field, "W")? else {
        return Ok(None);
    };
    let w: f64 = bare
        .parse()
        .map_err(|_| format!("{what} {field:?} is not a number"))?;
    if !w.is_finite() || w > MAX_WATTS {
        return Err(format!(
            "{what} {w} W is over {MAX_WATTS} W, more than any GPU draws"
        ));
    }
    Ok(Some(w))
}

/// Reads one line of the GPU query ([`GPU_FIELDS`]). A name holding
/// commas is put back together: the other fields hold none. Memory used
/// is bounded by the line's memory total, the draw by twice the higher
/// of its power limits.
pub fn gpu_line(line: &str) -> Result<GpuLine, String> {
    let f = fields(line);
    if f.len() < 9 {
        return Err(format!("{} fields, not 9", f.len()));
    }
    let n = f.len();
    let name = f[1..n - 7].join(", ");
    let index = whole(f[0], "", u64::from(MAX_INDEX), "GPU index")?.ok_or("no GPU index")? as u32;
    let utilization = whole(f[n - 6], "%", 100, "utilization")?.map(|u| u as u8);
    let power_watts = watts(f[n - 5], "power draw")?;
    let limit = match (
        watts(f[n - 4], "power limit")?,
        watts(f[n - 3], "power max limit")?,
    ) {
        (Some(a), Some(b)) => Some(a.max(b)),
        (a, b) => a.or(b),
    };
    if let (Some(w), Some(l)) = (power_watts, limit)
        && w > OVER_LIMIT * l
    {
        return Err(format!(
            "power draw {w} W is over {OVER_LIMIT} times the GPU's power limit, {l} W"
        ));
    }
    let memory_total_mib = mib(f[n - 1], "memory total", None)?;
    Ok(GpuLine {
        index,
        name: text(&name, "GPU name")?,
        uuid: ident(f[n - 7], "GPU uuid")?,
        utilization,
        power_watts,
        memory_used_mib: mib(f[n - 2], "memory used", memory_total_mib)?,
        memory_total_mib,
    })
}

/// Reads one line of the memory totals query ([`TOTAL_FIELDS`]): the
/// GPU's uuid and its memory total in MiB (`None` where not given).
pub fn total_line(line: &str) -> Result<(String, Option<u64>), String> {
    let f = fields(line);
    if f.len() != 2 {
        return Err(format!("{} fields, not 2", f.len()));
    }
    Ok((ident(f[0], "GPU uuid")?, mib(f[1], "memory total", None)?))
}

/// Reads one line of the process query ([`APP_FIELDS`]); its memory is
/// bounded by the memory total of the GPU it names (`total_of` the
/// uuid), else by [`MAX_MIB`].
pub fn app_line(line: &str, total_of: &dyn Fn(&str) -> Option<u64>) -> Result<AppLine, String> {
    let f = fields(line);
    if f.len() != 4 {
        return Err(format!("{} fields, not 4", f.len()));
    }
    let timestamp = ident(&f[0].replace(' ', "_"), "timestamp")?;
    let pid = whole(f[1], "", u64::from(u32::MAX), "pid")?.ok_or("no pid")?;
    if pid == 0 {
        return Err("pid 0".into());
    }
    let gpu_uuid = ident(f[3], "GPU uuid")?;
    Ok(AppLine {
        timestamp,
        pid: pid as u32,
        used_mib: mib(f[2], "used memory", total_of(&gpu_uuid))?,
        gpu_uuid,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    const UUID: &str = "GPU-5c6e1b2a-9d1f-4a57-8a0e-2f6c7a1b3c4d";

    fn no_total(_: &str) -> Option<u64> {
        None
    }

    /// A GPU line of an H200 (700 W, 143,771 MiB) with `rest` after the
    /// uuid: utilization, draw, limit, max limit, used, total.
    fn h200(rest: &str) -> String {
        format!("0, NVIDIA H200, {UUID}, {rest}")
    }

    #[test]
    fn a_gpu_line_as_nvidia_smi_prints_it() {
        let l = gpu_line(&h200("38, 212.45, 700.00, 700.00, 4112, 143771")).unwrap();
        assert_eq!(l.index, 0);
        assert_eq!(l.name, "NVIDIA H200");
        assert_eq!(l.uuid, UUID);
        assert_eq!(l.utilization, Some(38));
        assert_eq!(l.power_watts, Some(212.45));
        assert_eq!(l.memory_used_mib, Some(4112));
        assert_eq!(l.memory_total_mib, Some(143771));
    }

    #[test]
    fn units_left_in_are_read_and_not_available_is_none() {
        let l = gpu_line(&format!(
            "1, Tesla T4, {UUID}, 7 %, [N/A], [N/A], [N/A], 15 MiB, 15360 MiB"
        ))
        .unwrap();
        assert_eq!(
            (l.utilization, l.power_watts, l.memory_used_mib),
            (Some(7), None, Some(15))
        );
        let l = gpu_line(&format!(
            "2, NVIDIA A100-SXM4-40GB, {UUID}, [Not Supported], [Insufficient Permissions], [N/A], [N/A], [Unknown Error], [N/A]"
        ))
        .unwrap();
        assert_eq!(
            (l.utilization, l.power_watts, l.memory_used_mib),
            (None, None, None)
        );
    }

    #[test]
    fn a_name_with_commas_is_kept_whole() {
        let l = gpu_line(&format!("0, Odd, Name, {UUID}, 0, 1.0, 70, 70, 0, 100")).unwrap();
        assert_eq!(l.name, "Odd, Name");
    }

    #[test]
    fn malformed_gpu_lines_are_refused_with_why() {
        for bad in [
            "",
            "NVIDIA-SMI has failed because it couldn't communicate with the NVIDIA driver.",
            &h200("101, 1, 700, 700, 1, 100"),
            &h200("-1, 1, 700, 700, 1, 100"),
            &h200("5, inf, 700, 700, 1, 100"),
            &h200("5, 1e9, 700, 700, 1, 100"),
            &format!("x, H200, {UUID}, 5, 1, 700, 700, 1, 100"),
            &h200("5, 1, 700, 700, 99999999999, 100"),
            &h200("5, 1, 700, 700, 1.5, 100"),
            "0, H200, GPU bad uuid, 5, 1, 700, 700, 1, 100",
            &format!("0, , {UUID}, 5, 1, 700, 700, 1, 100"),
            &format!("0, H200, {UUID}, 5, 1, 1"),
        ] {
            assert!(gpu_line(bad).is_err(), "accepted {bad:?}");
        }
    }

    /// Regression: a power draw of 99999.9999999999999999999999999 W read
    /// as 100,000 W passed a bound of 100 kW, and 16,777,216 MiB a process
    /// passed a bound of 16 TiB; every figure is now held to what the GPU
    /// says it has, and the reason names the figure and the bound.
    #[test]
    fn absurd_power_and_memory_are_refused_by_the_gpus_own_limits() {
        let why = gpu_line(&h200(
            "38, 99999.9999999999999999999999999, 700, 700, 1, 143771",
        ))
        .unwrap_err();
        assert_eq!(
            why,
            "power draw 100000 W is over 5000 W, more than any GPU draws"
        );
        let why = gpu_line(&h200("38, 1500.5, 700, 650, 1, 143771")).unwrap_err();
        assert_eq!(
            why,
            "power draw 1500.5 W is over 2 times the GPU's power limit, 700 W"
        );
        // A moment over the limit is a GPU's way; twice it is not.
        assert!(gpu_line(&h200("38, 1400, 700, 700, 1, 143771")).is_ok());
        let why = gpu_line(&h200("38, 200, 700, 700, 143772, 143771")).unwrap_err();
        assert_eq!(
            why,
            "memory used 143,772 MiB is over the GPU's memory total, 143,771 MiB"
        );
        let why = app_line(&format!("t, 7, 16777216, {UUID}"), &no_total).unwrap_err();
        assert_eq!(
            why,
            "used memory 16,777,216 MiB is over 1,048,576 MiB, more than any GPU holds"
        );
        let total = |_: &str| Some(81_559);
        let why = app_line(&format!("t, 7, 81560, {UUID}"), &total).unwrap_err();
        assert_eq!(
            why,
            "used memory 81,560 MiB is over the GPU's memory total, 81,559 MiB"
        );
        assert_eq!(check_mib(80_000, "used memory", Some(81_559)), Ok(80_000));
        assert!(check_mib(81_560, "used memory", Some(81_559)).is_err());
    }

    #[test]
    fn a_total_line_gives_the_uuid_and_its_mib() {
        assert_eq!(
            total_line(&format!("{UUID}, 143771")).unwrap(),
            (UUID.to_string(), Some(143771))
        );
        assert_eq!(
            total_line(&format!("{UUID}, [N/A]")).unwrap(),
            (UUID.to_string(), None)
        );
        assert!(total_line("garbage").is_err());
        assert!(total_line(&format!("{UUID}, 16777216")).is_err());
    }

    #[test]
    fn an_app_line_as_nvidia_smi_prints_it() {
        let l = app_line(
            &format!("2026/11/26 18:41:27.123, 4242, 4112, {UUID}"),
            &no_total,
        )
        .unwrap();
        assert_eq!(l.timestamp, "2026/11/26_18:41:27.123");
        assert_eq!((l.pid, l.used_mib), (4242, Some(4112)));
        assert_eq!(l.gpu_uuid, UUID);
        let l = app_line(
            &format!("2026/11/26 18:41:27.123, 4242, [N/A], {UUID}"),
            &no_total,
        )
        .unwrap();
        assert_eq!(l.used_mib, None);
        let l = app_line(
            &format!("2026/11/26 18:41:27.123, 9, 12 MiB, {UUID}"),
            &no_total,
        )
        .unwrap();
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
            assert!(app_line(bad, &no_total).is_err(), "accepted {bad:?}");
        }
    }
}

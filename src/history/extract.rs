//! The figures of a report, as a store keeps them: one reading of the JSON
//! tally writes (`--format json`), used both to record a report just made
//! (`--record`) and to import one written before (`tally history
//! import`), so a recorded point and an imported one are the same.
//!
//! Every figure a report lists is taken, by the name it has there, never
//! from a list of known names: `compare` and `run` give theirs in each
//! command's `summary` (the samples come from the runs: a figure of
//! `run`'s figure table read from each run record, any other figure by
//! its key in the record), `bench` in each benchmark's `figures` (the
//! unit is the key of its summary), a `compare --save-baseline` file in
//! each command's `samples`.

use serde_json::Value;

use super::store::FigureResult;
use crate::run::report::{FIGURES, RunRecord};

/// What a report gives a recording.
#[derive(Debug, Clone, PartialEq)]
pub struct Extracted {
    /// `run`, `compare` or `bench`.
    pub tool: &'static str,
    /// When the report was made (its header), in ns since the epoch.
    pub made_ns: Option<i64>,
    pub tally_version: Option<String>,
    /// What the report says of its machine.
    pub cpu_model: Option<String>,
    pub cpus: Option<i64>,
    pub kernel: Option<String>,
    /// What counted its figures, where it says (else the clock).
    pub counting: Option<(String, Option<String>)>,
    pub figures: Vec<FigureResult>,
}

/// The most figures one report gives (commands × figures).
pub const MAX_FIGURES: usize = 1_000_000;

/// Reads a tally JSON report or baseline; what it is not says why.
pub fn extract(v: &Value) -> Result<Extracted, String> {
    let obj = v.as_object().ok_or("it is not a JSON object")?;
    let mut out = Extracted {
        tool: "",
        made_ns: obj
            .get("timestamp")
            .and_then(Value::as_str)
            .and_then(parse_time),
        tally_version: obj
            .get("tally_version")
            .and_then(Value::as_str)
            .map(str::to_string),
        cpu_model: None,
        cpus: None,
        kernel: obj
            .get("kernel")
            .and_then(Value::as_str)
            .map(str::to_string),
        counting: counting(v),
        figures: Vec::new(),
    };
    if let Some(m) = obj.get("machine") {
        out.cpu_model = m
            .get("cpu_model")
            .and_then(Value::as_str)
            .map(str::to_string);
        out.cpus = m
            .get("cpus")
            .or_else(|| m.get("logical_cpus"))
            .and_then(Value::as_i64);
        if let Some(k) = m.get("kernel").and_then(Value::as_str) {
            out.kernel = Some(k.to_string());
        }
    }
    match obj.get("format").and_then(Value::as_str) {
        Some("tally-compare-baseline") => {
            out.tool = "compare";
            baseline(v, &mut out.figures)?;
        }
        Some(other) => {
            return Err(format!(
                "it is a {} file, not a tally report",
                crate::text::escape::escape_text(other)
            ));
        }
        None if obj.get("benchmarks").is_some_and(Value::is_array) => {
            out.tool = "bench";
            bench(v, &mut out.figures)?;
        }
        None if obj.get("commands").is_some_and(Value::is_array) => {
            out.tool = "compare";
            compare(v, &mut out.figures)?;
        }
        None if obj.get("command").is_some_and(Value::is_array) && obj.get("summary").is_some() => {
            out.tool = "run";
            let argv: Vec<&str> = obj["command"]
                .as_array()
                .into_iter()
                .flatten()
                .filter_map(Value::as_str)
                .collect();
            run_like(&argv.join(" "), v, &mut out.figures)?;
        }
        None => {
            return Err(
                "it is no report of tally run, compare or bench, nor a compare baseline".into(),
            );
        }
    }
    if out.figures.is_empty() {
        return Err("it holds no figure".into());
    }
    Ok(out)
}

/// The counting source a report names (a `count`/`counted`/`counting`
/// object with a `source`: a name and its `version`, or, as `--count`
/// writes it, an object with its `kind` (`sim`, `hw`) and `tool`
/// (`cachegrind (Valgrind 3.19.0)`)); `None`: times alone.
fn counting(v: &Value) -> Option<(String, Option<String>)> {
    let obj = v.as_object()?;
    for (key, val) in obj {
        if !key.starts_with("count") {
            continue;
        }
        match val.get("source") {
            Some(Value::String(source)) => {
                let version = val
                    .get("version")
                    .or_else(|| val.get("source_version"))
                    .and_then(Value::as_str)
                    .map(str::to_string);
                return Some((source.clone(), version));
            }
            Some(Value::Object(source)) => {
                let Some(kind) = source.get("kind").and_then(Value::as_str) else {
                    continue;
                };
                let tool = source.get("tool").and_then(Value::as_str);
                return Some((kind.to_string(), tool.map(str::to_string)));
            }
            _ => {}
        }
    }
    None
}

/// The unit of a figure from its key's suffix (`wall_ns` → `ns`), `count`
/// without one.
pub fn unit_of(figure: &str) -> &'static str {
    const SUFFIXES: &[(&str, &str)] = &[
        ("_bytes_per_second", "bytes_per_second"),
        ("_gb_per_s", "gb_per_s"),
        ("_seconds", "s"),
        ("_ns", "ns"),
        ("_us", "us"),
        ("_ms", "ms"),
        ("_bytes", "bytes"),
        ("_kb", "kb"),
        ("_mib", "mib"),
        ("_mj", "mj"),
        ("_joules", "joules"),
        ("_mhz", "mhz"),
        ("_hz", "hz"),
        ("_ratio", "ratio"),
    ];
    SUFFIXES
        .iter()
        .find(|(s, _)| figure.ends_with(s))
        .map_or("count", |(_, u)| u)
}

fn num(v: Option<&Value>) -> Option<f64> {
    v.and_then(Value::as_f64).filter(|x| x.is_finite())
}

/// A figure from a summary object (`count`, `min`, `median`, `max`,
/// `mad`) and its samples, if they are as many as the count.
fn from_summary(
    command: &str,
    figure: &str,
    unit: &str,
    s: &Value,
    samples: Vec<f64>,
) -> Option<FigureResult> {
    let n = s.get("count").and_then(Value::as_u64).filter(|n| *n > 0)?;
    let samples = if samples.len() as u64 == n {
        samples
    } else {
        Vec::new()
    };
    Some(FigureResult {
        command: command.to_string(),
        figure: figure.to_string(),
        unit: unit.to_string(),
        n,
        median: num(s.get("median"))?,
        mad: num(s.get("mad")).unwrap_or(0.0),
        min: num(s.get("min"))?,
        max: num(s.get("max"))?,
        samples,
    })
}

/// A figure summarised from its samples.
fn from_samples(
    command: &str,
    figure: &str,
    unit: &str,
    samples: Vec<f64>,
) -> Option<FigureResult> {
    let s = crate::stats::summarize(&samples)?;
    Some(FigureResult {
        command: command.to_string(),
        figure: figure.to_string(),
        unit: unit.to_string(),
        n: s.count as u64,
        median: s.median,
        mad: s.mad,
        min: s.min,
        max: s.max,
        samples,
    })
}

fn push(out: &mut Vec<FigureResult>, f: Option<FigureResult>) -> Result<(), String> {
    if let Some(f) = f {
        if out.len() >= MAX_FIGURES {
            return Err(format!("it holds over {MAX_FIGURES} figures"));
        }
        out.push(f);
    }
    Ok(())
}

/// A name per command, unique in the report: its `name`, else its command
/// string; a repeat gets ` (#k)` after it.
fn unique(name: &str, seen: &mut Vec<String>) -> String {
    let mut k = 1;
    let mut candidate = name.to_string();
    while seen.contains(&candidate) {
        k += 1;
        candidate = format!("{name} (#{k})");
    }
    seen.push(candidate.clone());
    candidate
}

fn compare(v: &Value, out: &mut Vec<FigureResult>) -> Result<(), String> {
    let mut seen = Vec::new();
    for c in v["commands"].as_array().into_iter().flatten() {
        // The stored runs of a baseline are not this comparison's.
        if c.get("from_baseline").and_then(Value::as_bool) == Some(true) {
            continue;
        }
        let name = c
            .get("name")
            .and_then(Value::as_str)
            .filter(|n| !n.is_empty())
            .or_else(|| c.get("command").and_then(Value::as_str))
            .ok_or("a command has neither a name nor a command string")?;
        let name = unique(name, &mut seen);
        run_like(&name, c, out)?;
    }
    Ok(())
}

/// A `summary` list and its `runs` (a run report, or a command of a
/// comparison).
fn run_like(command: &str, v: &Value, out: &mut Vec<FigureResult>) -> Result<(), String> {
    let runs: Vec<&Value> = v
        .get("runs")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .collect();
    let typed: Vec<Option<RunRecord>> = runs
        .iter()
        .map(|r| serde_json::from_value::<RunRecord>((*r).clone()).ok())
        .collect();
    let summary: Vec<&Value> = v
        .get("summary")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .collect();
    for s in &summary {
        let Some(figure) = s.get("figure").and_then(Value::as_str) else {
            continue;
        };
        let samples = samples_of(figure, &runs, &typed);
        push(
            out,
            from_summary(command, figure, unit_of(figure), s, samples),
        )?;
    }
    // One run has no summary: its figures are those of run's table that
    // the record has.
    if summary.is_empty() && !typed.is_empty() && typed.iter().all(Option::is_some) {
        for f in FIGURES {
            let runs: Vec<&RunRecord> =
                typed.iter().flatten().filter(|r| f.applies_to(r)).collect();
            let samples: Vec<f64> = runs
                .iter()
                .filter_map(|r| f.value(r).map(|v| v as f64))
                .collect();
            if !samples.is_empty() && samples.len() == runs.len() {
                push(out, from_samples(command, f.key, unit_of(f.key), samples))?;
            }
        }
    }
    Ok(())
}

/// The samples of `figure`, one per run that has it: through `run`'s
/// figure table where it is one of them, else by its key in each record.
fn samples_of(figure: &str, runs: &[&Value], typed: &[Option<RunRecord>]) -> Vec<f64> {
    if let Some(f) = FIGURES.iter().find(|f| f.key == figure)
        && typed.iter().all(Option::is_some)
    {
        return typed
            .iter()
            .flatten()
            .filter(|r| f.applies_to(r))
            .filter_map(|r| f.value(r).map(|v| v as f64))
            .collect();
    }
    runs.iter()
        .filter_map(|r| find_number(r, figure, 0))
        .collect()
}

/// The first number under `key` in `v`, at most four objects deep.
fn find_number(v: &Value, key: &str, depth: usize) -> Option<f64> {
    let obj = v.as_object()?;
    if let Some(x) = num(obj.get(key)) {
        return Some(x);
    }
    if depth >= 4 {
        return None;
    }
    obj.values()
        .find_map(|child| find_number(child, key, depth + 1))
}

fn bench(v: &Value, out: &mut Vec<FigureResult>) -> Result<(), String> {
    for b in v["benchmarks"].as_array().into_iter().flatten() {
        for f in b
            .get("figures")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
        {
            let Some(id) = f.get("id").and_then(Value::as_str) else {
                continue;
            };
            let Some((unit, summary)) = f
                .as_object()
                .into_iter()
                .flatten()
                .find(|(_, s)| s.get("median").is_some() && s.get("count").is_some())
            else {
                continue;
            };
            let samples: Vec<f64> = f
                .get("samples")
                .and_then(Value::as_array)
                .into_iter()
                .flatten()
                .filter_map(|x| num(Some(x)))
                .collect();
            push(out, from_summary("bench", id, unit, summary, samples))?;
        }
    }
    Ok(())
}

fn baseline(v: &Value, out: &mut Vec<FigureResult>) -> Result<(), String> {
    let mut seen = Vec::new();
    for c in v["commands"].as_array().into_iter().flatten() {
        let name = c
            .get("name")
            .and_then(Value::as_str)
            .filter(|n| !n.is_empty())
            .or_else(|| c.get("command").and_then(Value::as_str))
            .ok_or("a command has neither a name nor a command string")?;
        let name = unique(name, &mut seen);
        for (figure, values) in c
            .get("samples")
            .and_then(Value::as_object)
            .into_iter()
            .flatten()
        {
            let samples: Vec<f64> = values
                .as_array()
                .into_iter()
                .flatten()
                .filter_map(|x| num(Some(x)))
                .collect();
            push(out, from_samples(&name, figure, unit_of(figure), samples))?;
        }
    }
    Ok(())
}

/// `2026-11-23T10:52:07Z` (or with a fraction, or an offset) as ns since
/// the epoch; `None` for anything else.
pub fn parse_time(s: &str) -> Option<i64> {
    let b = s.as_bytes();
    if b.len() < 10 {
        return None;
    }
    let int = |r: std::ops::Range<usize>| -> Option<i64> { s.get(r)?.parse().ok() };
    let (y, mo, d) = (int(0..4)?, int(5..7)?, int(8..10)?);
    if b[4] != b'-' || b[7] != b'-' || !(1..=12).contains(&mo) || !(1..=31).contains(&d) {
        return None;
    }
    let (mut h, mut mi, mut sec, mut nanos, mut offset_s) = (0, 0, 0, 0i64, 0i64);
    if b.len() > 10 {
        if !matches!(b[10], b'T' | b' ') || b.len() < 16 {
            return None;
        }
        h = int(11..13)?;
        mi = int(14..16)?;
        let mut i = 16;
        if b.get(16) == Some(&b':') {
            sec = int(17..19)?;
            i = 19;
            if b.get(19) == Some(&b'.') {
                let digits: String = s[20..].chars().take_while(char::is_ascii_digit).collect();
                i = 20 + digits.len();
                let mut padded = digits.chars().take(9).collect::<String>();
                while padded.len() < 9 {
                    padded.push('0');
                }
                nanos = padded.parse().ok()?;
            }
        }
        match s.get(i..) {
            Some("") | Some("Z") | Some("z") => {}
            Some(tz) if tz.len() == 6 && (tz.starts_with('+') || tz.starts_with('-')) => {
                let oh: i64 = tz.get(1..3)?.parse().ok()?;
                let om: i64 = tz.get(4..6)?.parse().ok()?;
                offset_s = (oh * 3600 + om * 60) * if tz.starts_with('-') { -1 } else { 1 };
            }
            _ => return None,
        }
        if h > 23 || mi > 59 || sec > 60 {
            return None;
        }
    }
    let days = days_from_civil(y, mo, d);
    let secs = days * 86_400 + h * 3600 + mi * 60 + sec - offset_s;
    secs.checked_mul(1_000_000_000)?.checked_add(nanos)
}

/// Days since 1970-01-01 of a proleptic Gregorian date (Howard Hinnant's
/// `days_from_civil`).
fn days_from_civil(y: i64, m: i64, d: i64) -> i64 {
    let y = if m <= 2 { y - 1 } else { y };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let mp = (m + 9) % 12;
    let doy = (153 * mp + 2) / 5 + d - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146_097 + doe - 719_468
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn times_read_as_rfc_3339() {
        assert_eq!(parse_time("1970-01-01T00:00:00Z"), Some(0));
        assert_eq!(
            parse_time("2026-11-23T10:52:07Z"),
            Some(1_795_431_127_000_000_000)
        );
        assert_eq!(
            parse_time("2026-11-23T11:52:07+01:00"),
            Some(1_795_431_127_000_000_000)
        );
        assert_eq!(
            parse_time("2026-11-23T10:52:07.5Z"),
            Some(1_795_431_127_500_000_000)
        );
        assert_eq!(parse_time("2026-11-23"), Some(1_795_392_000_000_000_000));
        for bad in [
            "",
            "2026-13-01",
            "yesterday",
            "2026-11-23T25:00Z",
            "2026-11-23Tx",
        ] {
            assert_eq!(parse_time(bad), None, "{bad}");
        }
    }

    #[test]
    fn units_come_from_the_key() {
        assert_eq!(unit_of("wall_ns"), "ns");
        assert_eq!(unit_of("max_rss_bytes"), "bytes");
        assert_eq!(unit_of("instructions"), "count");
        assert_eq!(unit_of("gpu_energy_mj"), "mj");
    }

    #[test]
    fn a_figure_no_list_names_is_taken_by_its_own_name() {
        let report = serde_json::json!({
            "timestamp": "2026-12-01T00:00:00Z",
            "schema_version": 2,
            "commands": [{
                "name": "a",
                "command": "./a",
                "runs": [{"counted": {"instructions": 100}}, {"counted": {"instructions": 102}}],
                "summary": [{"figure": "instructions", "count": 2, "min": 100.0,
                             "median": 101.0, "max": 102.0, "mad": 1.0}],
            }, {
                "name": "a",
                "command": "./a --again",
                "runs": [],
                "summary": [{"figure": "instructions", "count": 1, "min": 5.0,
                             "median": 5.0, "max": 5.0, "mad": 0.0}],
            }],
            "counting": {"source": "cachegrind", "version": "3.19.0"},
        });
        let e = extract(&report).unwrap();
        assert_eq!(e.tool, "compare");
        assert_eq!(
            e.counting,
            Some(("cachegrind".into(), Some("3.19.0".into())))
        );
        assert_eq!(e.figures.len(), 2);
        assert_eq!(e.figures[0].samples, [100.0, 102.0]);
        assert_eq!(e.figures[0].unit, "count");
        assert_eq!(e.figures[1].command, "a (#2)");
        assert!(e.figures[1].samples.is_empty(), "no runs: no samples");
    }

    #[test]
    fn count_source_as_count_writes_it_names_the_kind_and_tool() {
        let report = serde_json::json!({
            "command": ["/bin/true"],
            "summary": [{"figure": "instructions", "count": 1, "min": 5.0,
                         "median": 5.0, "max": 5.0, "mad": 0.0}],
            "runs": [],
            "count": {"source": {"kind": "sim", "tool": "cachegrind (Valgrind 3.19.0)",
                                 "machine": "I1 32768 B 8-way"}},
        });
        let e = extract(&report).unwrap();
        assert_eq!(
            e.counting,
            Some(("sim".into(), Some("cachegrind (Valgrind 3.19.0)".into())))
        );
        // A source without its kind is no source.
        let mut odd = report.clone();
        odd["count"]["source"] = serde_json::json!({"tool": "x"});
        assert_eq!(extract(&odd).unwrap().counting, None);
    }

    #[test]
    fn what_is_no_report_says_what_it_is() {
        let e = extract(&serde_json::json!({"format": "tally-bench-other"})).unwrap_err();
        assert!(e.contains("tally-bench-other file"), "{e}");
        assert!(extract(&serde_json::json!([1, 2])).is_err());
        let e = extract(&serde_json::json!({"commands": []})).unwrap_err();
        assert_eq!(e, "it holds no figure");
    }
}

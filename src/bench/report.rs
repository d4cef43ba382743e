//! The human, table and Prometheus forms of `tally bench`'s report
//! ([`super::model`] holds the report itself and its JSON schema).

use std::io::{self, Write};

use super::figure::{Figure, Value};
use super::format::{format_ns, format_value, format_x, implausible_text};
use super::model::{BenchReport, BenchResult};
use crate::report::{Metric, Render, Style, Table};
use crate::units::{human_bytes, thousands_f};

/// The spread for people: the CV, or with preempted samples (outliers)
/// the CV without them, marked `*`.
fn cv_text(f: &Figure) -> String {
    match (f.outliers, f.cv_without_outliers, f.cv) {
        (0, _, Some(c)) => format!("±{:.1}%", c * 100.0),
        (n, Some(c), _) if n > 0 => format!("±{:.1}%*", c * 100.0),
        (_, _, Some(c)) => format!("±{:.1}%", c * 100.0),
        _ => "-".into(),
    }
}

fn machine_lines(r: &BenchReport, out: &mut dyn Write) -> io::Result<()> {
    let m = &r.machine;
    writeln!(
        out,
        "tally bench ({:?} mode, {:.1} s) on {}, {} CPUs, kernel {}, {}",
        r.mode,
        r.duration_ms as f64 / 1000.0,
        m.cpu_model.as_deref().unwrap_or("unknown CPU"),
        m.logical_cpus,
        m.kernel.as_deref().unwrap_or("unknown"),
        m.hypervisor.as_deref().map_or(
            "bare metal or undetected hypervisor".to_string(),
            |h| format!("hypervisor: {h}")
        ),
    )?;
    let caches: Vec<String> = m
        .caches
        .iter()
        .map(|c| {
            let kind = match c.kind.as_str() {
                "Data" => "d",
                "Instruction" => "i",
                _ => "",
            };
            format!(
                "L{}{kind} {}",
                c.level,
                human_bytes(c.size_bytes).replace(".0 ", " ")
            )
        })
        .collect();
    writeln!(
        out,
        "  TSC {}, core {} (measured), clocksource {}, governor {}, THP {}, caches (sysfs): {}",
        m.tsc_hz.map_or("unavailable".into(), |hz| format!(
            "{} MHz",
            thousands_f(hz / 1e6)
        )),
        m.core_mhz.map_or("unavailable".into(), |mhz| format!(
            "{} MHz",
            thousands_f(mhz)
        )),
        m.clocksource.as_deref().unwrap_or("unknown"),
        m.governor.as_deref().unwrap_or("unavailable (no cpufreq)"),
        m.thp_enabled.as_deref().unwrap_or("unknown"),
        if caches.is_empty() {
            "unavailable".to_string()
        } else {
            caches.join(", ")
        },
    )?;
    let c = &r.harness.calibration;
    writeln!(
        out,
        "  timer {} read {}, resolution {}; empty loop {}/iter; {} per figure, {} warm-up samples dropped; {}; {}",
        c.timer_source.describe(),
        format_ns(c.timer_overhead_ns),
        format_ns(c.timer_resolution_ns),
        format_ns(c.loop_overhead_ns),
        format_ns(r.harness.budget_per_figure_ms as f64 * 1e6),
        r.harness.warmup_samples,
        r.harness
            .pinned_cpu
            .map_or("not pinned".into(), |c| format!("pinned to CPU {c}")),
        r.harness.priority,
    )?;
    writeln!(
        out,
        "  figures: median ±CV (stddev/mean of the samples; * = without outliers, i.e. preempted samples, counted in the JSON), min, p95"
    )?;
    if r.noise.noisy {
        writeln!(out, "  NOISY RUN: {}", r.noise.reasons.join("; "))?;
    } else {
        writeln!(
            out,
            "  quiet run: load {} at start, steal {}, {} involuntary switches",
            r.noise
                .load_average_1m_start
                .map_or("unknown".into(), |l| format!("{l:.2}")),
            r.noise
                .steal_percent
                .map_or("unknown".into(), |s| format!("{s:.1}%")),
            r.noise.involuntary_switches
        )?;
    }
    Ok(())
}

fn baseline_suffix(r: &BenchReport, f: &Figure) -> String {
    r.baseline
        .as_ref()
        .and_then(|b| b.ratio_of(&f.id))
        .map_or(String::new(), |ratio| format!("  {ratio:.2}× base"))
}

fn write_single(r: &BenchReport, f: &Figure, out: &mut dyn Write) -> io::Result<()> {
    if let (Some(why), Some(_)) = (&f.implausible, f.value.summary()) {
        writeln!(out, "  {:<36} {}", f.label, implausible_text(why))?;
        for n in &f.notes {
            writeln!(out, "  {:<36}   note: {n}", "")?;
        }
        return Ok(());
    }
    match (&f.value, f.measured()) {
        (v, Some(s)) => writeln!(
            out,
            "  {:<36} {:>12} {:>7}  min {:<10} p95 {:<10} {}{}",
            f.label,
            format_value(v, s.median),
            cv_text(f),
            format_value(v, s.min),
            format_value(v, s.p95),
            f.definition,
            baseline_suffix(r, f),
        )?,
        (_, None) => writeln!(
            out,
            "  {:<36} {:>12}  {}",
            f.label,
            "unavailable",
            match &f.value {
                Value::Unavailable(why) => why.as_str(),
                _ => "",
            }
        )?,
    }
    for n in &f.notes {
        writeln!(out, "  {:<36}   note: {n}", "")?;
    }
    Ok(())
}

fn write_sweep(
    r: &BenchReport,
    b: &BenchResult,
    out: &mut dyn Write,
    style: Style,
) -> io::Result<()> {
    use crate::report::text::{Column, TextTable};
    let mut series: Vec<&str> = Vec::new();
    let mut xs: Vec<u64> = Vec::new();
    for f in &b.figures {
        if !series.contains(&f.label.as_str()) {
            series.push(&f.label);
        }
        if let Some(x) = f.x {
            if !xs.contains(&x) {
                xs.push(x);
            }
        }
    }
    xs.sort_unstable();
    let x_unit = b.figures.iter().find_map(|f| f.x_unit.as_deref());
    // At most four series side by side, so a table fits a terminal.
    for group in series.chunks(4) {
        let mut columns = vec![Column::number(x_unit.unwrap_or(""))];
        columns.extend(group.iter().map(|s| Column::number(*s)));
        let mut table = TextTable::new(columns).prefix("  ");
        for x in &xs {
            let shown = format_x(*x, x_unit).replace(&format!(" {}", x_unit.unwrap_or("")), "");
            let mut row = vec![shown];
            for s in group {
                let cell = b
                    .figures
                    .iter()
                    .find(|f| f.x == Some(*x) && f.label == *s)
                    .map_or(String::new(), |f| match (f.measured(), &f.implausible) {
                        (Some(sum), _) => {
                            format!("{} {}", format_value(&f.value, sum.median), cv_text(f))
                        }
                        (None, Some(_)) if f.value.summary().is_some() => "implausible".into(),
                        (None, _) => "unavailable".into(),
                    });
                row.push(cell);
            }
            table.row(row);
        }
        table.write(out, style)?;
    }
    for s in &series {
        if let Some(f) = b.figures.iter().find(|f| f.label == *s) {
            writeln!(out, "    {s}: {}", f.definition)?;
        }
    }
    let mut reasons: Vec<String> = Vec::new();
    for f in &b.figures {
        let text = match (&f.value, &f.implausible) {
            (Value::Unavailable(why), _) => Some(format!("{} unavailable: {why}", f.label)),
            (_, Some(why)) => Some(format!(
                "{} at {}: {}",
                f.label,
                f.x.map_or(String::new(), |x| format_x(x, f.x_unit.as_deref())),
                implausible_text(why)
            )),
            _ => None,
        };
        for t in text
            .into_iter()
            .chain(f.notes.iter().map(|n| format!("{}: {n}", f.label)))
        {
            if !reasons.contains(&t) {
                reasons.push(t);
            }
        }
    }
    for t in reasons {
        writeln!(out, "    note: {t}")?;
    }
    if let Some(base) = &r.baseline {
        let ratios: Vec<f64> = b
            .figures
            .iter()
            .filter_map(|f| base.ratio_of(&f.id))
            .collect();
        if let Some(s) = crate::stats::summarize(&ratios) {
            writeln!(
                out,
                "    vs baseline: median ratio {:.2}× over {} points (min {:.2}×, max {:.2}×)",
                s.median, s.count, s.min, s.max
            )?;
        }
    }
    Ok(())
}

impl Render for BenchReport {
    fn human(&self, out: &mut dyn Write, style: Style) -> io::Result<()> {
        machine_lines(self, out)?;
        if let Some(b) = &self.baseline {
            writeln!(out, "  baseline: {}", b.describe())?;
        }
        let mut section = None;
        for b in &self.benchmarks {
            if section != Some(b.section) {
                section = Some(b.section);
                writeln!(out, "\n== {} ==", b.section.title())?;
            }
            writeln!(
                out,
                "\n{} — {} ({:.1} s)",
                b.name,
                b.about,
                b.duration_ms as f64 / 1000.0
            )?;
            if let Some(e) = &b.error {
                writeln!(out, "  failed: {e}")?;
            }
            let sweep = !b.figures.is_empty() && b.figures.iter().all(|f| f.x.is_some());
            if sweep {
                write_sweep(self, b, out, style)?;
            } else {
                for f in &b.figures {
                    write_single(self, f, out)?;
                }
            }
            if let Some(a) = &b.memlat {
                for line in a.lines() {
                    writeln!(out, "  {line}")?;
                }
            }
            for n in &b.notes {
                writeln!(out, "  note: {n}")?;
            }
        }
        Ok(())
    }

    fn table(&self) -> Table {
        let headers = [
            "benchmark",
            "id",
            "label",
            "x",
            "x_unit",
            "unit",
            "median",
            "min",
            "p95",
            "cv_percent",
            "cv_without_outliers_percent",
            "outliers",
            "samples",
            "baseline_ratio",
            "definition",
            "unavailable",
            "implausible",
        ];
        let mut rows = Vec::new();
        for b in &self.benchmarks {
            for f in &b.figures {
                let s = f.measured();
                let num = |v: Option<f64>| v.map_or(String::new(), |v| format!("{v:.4}"));
                rows.push(vec![
                    b.name.clone(),
                    f.id.clone(),
                    f.label.clone(),
                    f.x.map_or(String::new(), |x| x.to_string()),
                    f.x_unit.clone().unwrap_or_default(),
                    f.value.unit_key().to_string(),
                    num(s.map(|s| s.median)),
                    num(s.map(|s| s.min)),
                    num(s.map(|s| s.p95)),
                    f.cv.filter(|_| s.is_some())
                        .map_or(String::new(), |c| format!("{:.2}", c * 100.0)),
                    f.cv_without_outliers
                        .filter(|_| s.is_some())
                        .map_or(String::new(), |c| format!("{:.2}", c * 100.0)),
                    f.outliers.to_string(),
                    s.map_or("0".into(), |s| s.count.to_string()),
                    num(self.baseline.as_ref().and_then(|bl| bl.ratio_of(&f.id))),
                    f.definition.clone(),
                    match &f.value {
                        Value::Unavailable(w) => w.clone(),
                        _ => String::new(),
                    },
                    f.implausible
                        .as_deref()
                        .map_or(String::new(), |w| format!("{w}; excluded")),
                ]);
            }
        }
        Table {
            headers: headers.iter().map(|h| h.to_string()).collect(),
            rows,
        }
    }

    fn metrics(&self) -> Option<Vec<Metric>> {
        use crate::report::prometheus::Unit;
        // One family per base unit: latencies in seconds, bandwidths in
        // bytes per second, frequencies in hertz, sizes in bytes.
        let mut families: Vec<Metric> = Vec::new();
        for b in &self.benchmarks {
            for f in &b.figures {
                let Some(s) = f.measured() else { continue };
                let (unit, what) = match f.value {
                    Value::Ns(_) => (
                        Unit::Nanoseconds,
                        "seconds per operation the figure defines",
                    ),
                    Value::GbPerS(_) => (Unit::GigabytesPerSecond, "bytes per second"),
                    Value::Mhz(_) => (Unit::Megahertz, "hertz"),
                    Value::Bytes(_) => (Unit::Bytes, "bytes"),
                    Value::Unavailable(_) => continue,
                };
                let mut labels = vec![
                    ("benchmark".to_string(), b.name.clone()),
                    ("figure".to_string(), f.id.clone()),
                ];
                if let Some(x) = f.x {
                    labels.push(("x".to_string(), x.to_string()));
                }
                let at = match families
                    .iter()
                    .position(|m| m.unit.suffix() == unit.suffix())
                {
                    Some(i) => i,
                    None => {
                        families.push(Metric::gauge(
                            "tally_bench_median",
                            unit,
                            format!("Median of a tally bench figure, in {what}."),
                        ));
                        families.len() - 1
                    }
                };
                if let Some(m) = families.get_mut(at) {
                    m.push(labels, s.median);
                }
            }
        }
        Some(families)
    }
}

/// A small fixed report, for renderer tests.
#[cfg(test)]
pub(crate) fn sample_report() -> BenchReport {
    use super::harness::{Calibration, Samples, TimerSource};
    use super::machine::{CacheInfo, Machine, Noise};
    use super::model::{HarnessInfo, Mode};
    use super::registry::find;
    let samples = |v: &[f64]| Samples {
        per_op_ns: v.to_vec(),
        iters_per_sample: 1000,
        warmup_discarded: 2,
        clamped: 0,
        too_short: 0,
    };
    let mut sys = BenchResult::new(find("syscall").expect("registered"));
    sys.duration_ms = 310;
    sys.push(Figure::latency(
        "syscall.getpid",
        "getpid (raw syscall)",
        "ns per syscall(SYS_getpid), never cached by libc",
        samples(&[120.0, 121.0, 122.0, 125.0, 900.0]),
    ));
    sys.push(Figure::unavailable(
        "syscall.stat",
        "stat /dev/null",
        "ns per statx(2)",
        "no /dev/null",
    ));
    let mut mem = BenchResult::new(find("memlat").expect("registered"));
    mem.duration_ms = 7400;
    for (x, v) in [(1024u64, 2.0), (2048, 2.1), (65536, 6.8), (4 << 20, 160.0)] {
        mem.push(
            Figure::latency(
                format!("memlat.random_huge.{x}"),
                "random, huge pages",
                "ns per dependent load",
                samples(&[v, v, v * 1.02]),
            )
            .at(x, "bytes"),
        );
    }
    let mut bw = BenchResult::new(find("membw").expect("registered"));
    bw.push(Figure::bandwidth(
        "membw.read.1",
        "read (1 thread)",
        "GB/s read",
        samples(&[100e6, 110e6, 105e6]),
        1e9,
    ));
    let mut all = Figure::bandwidth(
        "membw.read.all",
        "read (all threads)",
        "GB/s read",
        samples(&[1e6, 2e6, 3e6]),
        1e9,
    );
    super::plausible::bandwidth_bound(&mut all, &bw.figures[0], 2);
    bw.push(all);
    BenchReport {
        schema_version: 1,
        mode: Mode::Quick,
        duration_ms: 17_600,
        machine: Machine {
            cpu_model: Some("Test CPU".into()),
            logical_cpus: 2,
            kernel: Some("6.18.0".into()),
            clocksource: Some("tsc".into()),
            governor: None,
            thp_enabled: Some("madvise".into()),
            hypervisor: Some("yes (KVM)".into()),
            mem_total_bytes: Some(24 << 30),
            tsc_hz: Some(2.1e9),
            core_mhz: Some(3000.0),
            caches: vec![CacheInfo {
                level: 1,
                kind: "Data".into(),
                size_bytes: 48 << 10,
                line_bytes: Some(64),
                shared_cpu_list: None,
            }],
            unavailable: vec![],
        },
        harness: HarnessInfo {
            calibration: Calibration {
                timer_source: TimerSource::Rdtscp,
                timer_hz: 2.1e9,
                timer_overhead_ns: 30.0,
                timer_resolution_ns: 29.0,
                loop_overhead_ns: 0.4,
            },
            budget_per_figure_ms: 50,
            warmup_samples: 2,
            min_samples: 5,
            pinned_cpu: Some(1),
            priority: "nice -20".into(),
        },
        noise: Noise {
            load_average_1m_start: Some(0.1),
            load_average_1m_end: Some(0.5),
            steal_percent: Some(0.0),
            involuntary_switches: 3,
            noisy: false,
            reasons: vec![],
        },
        benchmarks: vec![sys, mem, bw],
        baseline: None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rendered(format: crate::report::Format) -> String {
        let mut out = Vec::new();
        crate::report::render(&sample_report(), format, Style::default(), &mut out).unwrap();
        String::from_utf8(out).unwrap()
    }

    #[test]
    fn human_snapshot() {
        insta::assert_snapshot!(rendered(crate::report::Format::HUMAN));
    }

    #[test]
    fn csv_snapshot() {
        insta::assert_snapshot!(rendered(crate::report::Format::CSV));
    }

    #[test]
    fn markdown_snapshot() {
        insta::assert_snapshot!(rendered(crate::report::Format::MARKDOWN));
    }

    #[test]
    fn prometheus_snapshot() {
        insta::assert_snapshot!(rendered(crate::report::Format::PROMETHEUS));
    }

    #[test]
    fn json_round_trips() {
        let r = sample_report();
        let text = rendered(crate::report::Format::JSON);
        let back: BenchReport = serde_json::from_str(&text).unwrap();
        // serde_json may round the last bit of a float: compare closely.
        assert_eq!(back.machine, r.machine);
        assert_eq!(back.benchmarks.len(), r.benchmarks.len());
        let figs = |r: &BenchReport| -> Vec<(String, &'static str, Option<f64>, usize)> {
            r.benchmarks
                .iter()
                .flat_map(|b| &b.figures)
                .map(|f| {
                    (
                        f.id.clone(),
                        f.value.unit_key(),
                        f.median(),
                        f.samples.len(),
                    )
                })
                .collect()
        };
        for (a, b) in figs(&back).iter().zip(figs(&r).iter()) {
            assert_eq!((&a.0, a.1, a.3), (&b.0, b.1, b.3));
            match (a.2, b.2) {
                (Some(x), Some(y)) => assert!((x - y).abs() <= 1e-12 * y.abs().max(1.0)),
                (x, y) => assert_eq!(x, y),
            }
        }
        assert_eq!(figs(&back).len(), 8);
    }

    #[test]
    fn ns_formatting_picks_a_unit() {
        assert_eq!(format_ns(0.5), "0.50 ns");
        assert_eq!(format_ns(84.0), "84.0 ns");
        assert_eq!(format_ns(3_145.0), "3.15 µs");
        assert_eq!(format_ns(2_500_000.0), "2.50 ms");
        assert_eq!(format_ns(-800.0), "-800.0 ns");
    }

    #[test]
    fn sizes_drop_the_trailing_zero() {
        assert_eq!(format_x(4096, Some("bytes")), "4 KiB");
        assert_eq!(format_x(16384, Some("fds")), "16,384 fds");
    }
}

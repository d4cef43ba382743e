//! Every HTML page tally draws, rendered by the binary under test and read
//! back as SVG: `run` at 1, 3 and 20 runs, `compare` with 2 and 3
//! commands, a quick `bench` and `load`. Each chart must have an axis with
//! round ticks and a unit, labels that keep the part of each command that
//! differs, and no text over other text (each text's box estimated from
//! its x, y, font size and anchor at 0.6 em a character).

mod common;

use common::tally;
use std::path::Path;

fn scratch(name: &str) -> tempfile::TempDir {
    tempfile::Builder::new()
        .prefix(&format!("pictures-{name}-"))
        .tempdir_in(env!("CARGO_TARGET_TMPDIR"))
        .expect("create scratch dir")
}

/// Runs tally with `args`, `--html` to a file in `dir`, and returns the
/// page.
fn page(dir: &Path, args: &[&str], html_before: usize) -> String {
    let file = dir.join("page.html");
    let mut all: Vec<String> = args[..html_before].iter().map(|s| s.to_string()).collect();
    all.push("--html".into());
    all.push(file.to_string_lossy().into_owned());
    all.extend(args[html_before..].iter().map(|s| s.to_string()));
    let out = tally().args(&all).output().expect("run tally");
    assert_eq!(
        out.status.code(),
        Some(0),
        "tally {all:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    std::fs::read_to_string(&file).expect("the page")
}

/// One `<text>` of an SVG.
#[derive(Debug, Clone)]
struct Text {
    x: f64,
    y: f64,
    size: f64,
    anchor: String,
    class: String,
    rotated: bool,
    body: String,
}

impl Text {
    /// The box the text covers: (left, top, right, bottom).
    fn bounds(&self) -> (f64, f64, f64, f64) {
        let w = self.body.chars().count() as f64 * self.size * 0.6;
        let start = match self.anchor.as_str() {
            "middle" => -w / 2.0,
            "end" => -w,
            _ => 0.0,
        };
        if self.rotated {
            // rotate(-90) about (x, y): the run goes upwards from y.
            (
                self.x - 0.8 * self.size,
                self.y - start - w,
                self.x + 0.2 * self.size,
                self.y - start,
            )
        } else {
            (
                self.x + start,
                self.y - 0.8 * self.size,
                self.x + start + w,
                self.y + 0.2 * self.size,
            )
        }
    }
}

fn attr(tag: &str, name: &str) -> Option<String> {
    let key = format!(" {name}=\"");
    let at = tag.find(&key)? + key.len();
    tag[at..].split('"').next().map(str::to_string)
}

fn unescape(s: &str) -> String {
    s.replace("&lt;", "<")
        .replace("&gt;", ">")
        .replace("&quot;", "\"")
        .replace("&amp;", "&")
}

/// Each `<svg>…</svg>` of a page.
fn svgs(page: &str) -> Vec<&str> {
    page.split("<svg")
        .skip(1)
        .filter_map(|p| p.split("</svg>").next())
        .collect()
}

/// Each text of an SVG; every one must say its font size and anchor.
fn texts(svg: &str) -> Vec<Text> {
    svg.split("<text")
        .skip(1)
        .map(|p| {
            let (tag, rest) = p.split_once('>').expect("a closed tag");
            let body = unescape(rest.split("</text>").next().unwrap_or(""));
            let num = |n: &str| -> f64 {
                attr(tag, n)
                    .and_then(|v| v.parse().ok())
                    .unwrap_or_else(|| panic!("text {body:?} has no numeric {n}: {tag}"))
            };
            Text {
                x: num("x"),
                y: num("y"),
                size: num("font-size"),
                anchor: attr(tag, "text-anchor").unwrap_or_else(|| panic!("no anchor: {tag}")),
                class: attr(tag, "class").unwrap_or_default(),
                rotated: attr(tag, "transform").is_some_and(|t| t.starts_with("rotate(-90")),
                body,
            }
        })
        .collect()
}

/// Panics naming the first two texts of `svg` whose boxes overlap.
fn assert_no_overlap(svg: &str) {
    let t = texts(svg);
    for (i, a) in t.iter().enumerate() {
        for b in &t[i + 1..] {
            let (al, at, ar, ab) = a.bounds();
            let (bl, bt, br, bb) = b.bounds();
            // A pixel of slack: boxes that touch are not over each other.
            let apart = ar <= bl + 1.0 || br <= al + 1.0 || ab <= bt + 1.0 || bb <= at + 1.0;
            assert!(
                apart,
                "text {:?} overlaps {:?} in\n<svg{svg}",
                a.body, b.body
            );
        }
    }
}

/// A tick label as a number: thousands separators, a trailing `×`.
fn tick_value(s: &str) -> Option<f64> {
    s.trim_end_matches('×').replace(',', "").parse().ok()
}

/// Whether `step` is 1, 2 or 5 times a power of 10.
fn nice(step: f64) -> bool {
    let mag = 10f64.powf(step.log10().floor());
    [1.0, 2.0, 5.0, 10.0]
        .iter()
        .any(|m| (step / mag - m).abs() < 1e-6)
}

/// The chart's tick labels of `class` (`xl` or `yl`) that are numbers.
fn ticks(svg: &str, class: &str) -> Vec<f64> {
    texts(svg)
        .iter()
        .filter(|t| t.class == class)
        .filter_map(|t| tick_value(&t.body))
        .collect()
}

/// Every chart of a page: its text apart; at least two numeric ticks on an
/// axis in even 1-2-5 steps (on a log ratio axis: each 1, 2 or 5 times a
/// power of 10); an axis title, naming a unit in parentheses (or ×) for the
/// charts of times and sizes.
fn check_charts(page: &str, what: &str) -> usize {
    let charts = svgs(page);
    assert!(!charts.is_empty(), "{what}: no chart");
    for svg in &charts {
        assert_no_overlap(svg);
        let title = texts(svg)
            .into_iter()
            .find(|t| t.class == "t")
            .map(|t| t.body)
            .unwrap_or_default();
        let mut axes = 0;
        for class in ["xl", "yl"] {
            let v = ticks(svg, class);
            if v.len() < 2 {
                continue;
            }
            axes += 1;
            if svg.contains("log scale") {
                assert!(
                    v.iter().all(|t| nice(*t)),
                    "{what} {title}: log ticks {v:?}"
                );
                continue;
            }
            let steps: Vec<f64> = v.windows(2).map(|w| (w[1] - w[0]).abs()).collect();
            let step = steps[0];
            assert!(
                nice(step) && steps.iter().all(|s| (s - step).abs() < step * 1e-6),
                "{what} {title}: {class} ticks {v:?} are not in even 1-2-5 steps"
            );
        }
        let single = svg.matches("class=\"pt\"").count() == 1;
        assert!(axes >= 1 || single, "{what} {title}: no axis with ticks");
        let axis_titles: Vec<String> = texts(svg)
            .into_iter()
            .filter(|t| t.class == "ax")
            .map(|t| t.body)
            .collect();
        assert!(!axis_titles.is_empty(), "{what} {title}: no axis title");
        let timed = ["time", "memory", "load", "syscall", "spawn", "membw"];
        if timed.iter().any(|w| title.contains(w)) || svg.contains("class=\"bar\"") {
            assert!(
                axis_titles
                    .iter()
                    .any(|a| a.contains('(') && a.ends_with(')') || a.contains('×')),
                "{what} {title}: no unit in {axis_titles:?}"
            );
        }
        if svg.contains("class=\"bar\"") {
            check_bars(svg, what);
        }
    }
    charts.len()
}

/// A bar chart: each value written at its bar's end; every bar's colour
/// one of the legend's.
fn check_bars(svg: &str, what: &str) {
    let keys: Vec<String> = svg
        .split("class=\"key\"")
        .skip(1)
        .filter_map(|p| attr(p, "fill"))
        .collect();
    assert!(!keys.is_empty(), "{what}: bars without a legend");
    let labels = texts(svg);
    for bar in svg.split("<rect class=\"bar\"").skip(1) {
        let tag = bar.split('>').next().unwrap_or("");
        let get = |n: &str| attr(tag, n).and_then(|v| v.parse::<f64>().ok()).unwrap();
        let end = get("x") + get("width");
        let fill = attr(tag, "fill").unwrap();
        assert!(
            keys.contains(&fill),
            "{what}: bar colour {fill} not in the legend {keys:?}"
        );
        assert!(
            labels
                .iter()
                .any(|t| t.anchor == "start" && (t.x - (end + 4.0)).abs() < 0.2),
            "{what}: no value label at the bar's end {end}"
        );
    }
}

/// The commands' labels under the distributions of a compare page.
fn group_labels(page: &str) -> Vec<String> {
    let dist = svgs(page)
        .into_iter()
        .find(|s| s.contains("<title>wall time</title>"))
        .expect("the wall time distributions");
    texts(dist)
        .into_iter()
        .filter(|t| t.class == "xl" && t.body.starts_with('#'))
        .map(|t| t.body)
        .collect()
}

#[test]
fn run_pages_at_1_3_and_20_runs_have_axes_and_dots_below_ten_runs() {
    let dir = scratch("run");
    for (n, histogram) in [(1, false), (3, false), (20, true)] {
        let page = page(
            dir.path(),
            &["run", "-n", &n.to_string(), "--", "sleep", "0.001"],
            3,
        );
        let what = format!("run -n {n}");
        check_charts(&page, &what);
        assert!(!page.contains("over 1 runs"), "{what}");
        assert_eq!(page.contains("class=\"bin\""), histogram, "{what}: bins");
        assert!(!page.contains("class=\"box\""), "{what}: a box");
        if !histogram {
            assert!(page.contains("each dot a run"), "{what}");
        }
        assert!(page.contains("user cpu ≈ (tick-sampled)"), "{what}");
    }
}

/// Commands that differ only in one word inside a long shared path: the
/// labels must keep that word.
fn commands(words: &[&str]) -> Vec<String> {
    words
        .iter()
        .map(|w| format!("true -{w} -c /tmp/a/rather/long/shared/directory/Cargo.lock"))
        .collect()
}

#[test]
fn compare_pages_start_with_the_ratio_chart_and_keep_what_differs() {
    let dir = scratch("compare");
    for (words, n, boxes) in [
        (&["1", "9"][..], "5", false),
        (&["1", "6", "9"][..], "12", true),
    ] {
        let cmds = commands(words);
        let mut args = vec!["compare", "-n", n];
        args.extend(cmds.iter().map(String::as_str));
        let page = page(dir.path(), &args, 3);
        let what = format!("compare of {}", words.len());
        check_charts(&page, &what);
        let first = svgs(&page)[0];
        assert!(
            first.contains("class=\"one\""),
            "{what}: the ratio chart comes first"
        );
        assert!(
            first.contains("class=\"ratio\""),
            "{what}: a ratio per command"
        );
        assert!(
            page.contains("class=\"box\"") == boxes,
            "{what}: boxes at {n} runs"
        );
        let labels = group_labels(&page);
        assert_eq!(labels.len(), words.len(), "{what}: {labels:?}");
        for (l, w) in labels.iter().zip(words) {
            assert!(l.contains(&format!("-{w}")), "{what}: {l:?} lost -{w}");
        }
        // Tick-sampled cpu is marked and out of the charts.
        assert!(page.contains("user cpu ≈ (tick-sampled)"), "{what}");
        assert!(!page.contains("<title>user cpu</title>"), "{what}");
    }
}

#[test]
fn bench_page_bars_have_an_axis_a_unit_and_values_at_the_bars() {
    let dir = scratch("bench");
    let page = page(
        dir.path(),
        &["bench", "syscall", "spawn", "--budget-ms", "2"],
        5,
    );
    let charts = check_charts(&page, "bench");
    assert!(charts >= 2 && page.contains("class=\"bar\""), "bench: bars");
}

#[test]
fn load_page_bars_have_an_axis_a_unit_and_a_colour_per_mode() {
    let dir = scratch("load");
    let file = dir.path().join("data.bin");
    std::fs::write(&file, vec![7u8; 4 << 20]).unwrap();
    let file = file.to_string_lossy().into_owned();
    let page = page(dir.path(), &["load", "--methods", "read,mmap", &file], 3);
    check_charts(&page, "load");
    assert!(page.contains("cold: the file evicted") || page.contains("warm: the file"));
}

#[test]
fn history_pages_at_5_and_5000_points_have_axes_units_and_their_changes_apart() {
    let dir = scratch("history");
    for n in [5usize, 5000] {
        // Times of about 1 ms and counts in the billions (the longest tick
        // labels), three changes close together and one far off.
        let mut t = String::from("time,commit,wall_ns,instructions\n");
        for i in 0..n {
            let level = [0.0, 0.2, 0.4, 0.45, 0.5]
                .iter()
                .filter(|f| i as f64 >= *f * n as f64 && **f > 0.0)
                .count() as f64;
            let wobble = ((i * 7919) % 13) as f64 / 13.0 - 0.5;
            let wall = 1_000_000.0 * (1.0 + 0.06 * level) * (1.0 + 0.002 * wobble);
            let ins = 2_500_000_000.0 * (1.0 + 0.01 * level);
            t.push_str(&format!("{},c{i},{wall},{ins}\n", 1_793_491_200 + 60 * i));
        }
        let csv = dir.path().join("s.csv");
        std::fs::write(&csv, t).unwrap();
        let store = dir.path().join(format!("h{n}.db"));
        let out = tally()
            .args(["history", "import"])
            .arg(&store)
            .arg(&csv)
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        let store = store.to_string_lossy().into_owned();
        let page = page(dir.path(), &["history", &store], 2);
        assert_eq!(check_charts(&page, &format!("history at {n} points")), 2);
        assert!(page.contains("wall_ns (ms)"), "the unit of the time axis");
    }
}

/// The checks themselves: text over text, ticks out of step and a bar
/// value away from its bar are each caught.
#[test]
fn the_checks_catch_overlap_uneven_ticks_and_a_misplaced_value() {
    let t = |x: f64, y: f64, anchor: &str, class: &str, s: &str| {
        format!(
            r#"<text x="{x}" y="{y}" font-size="11" text-anchor="{anchor}" class="{class}">{s}</text>"#
        )
    };
    let over = format!(
        "<svg>{}{}</svg>",
        t(10.0, 20.0, "start", "lg", "gzip -1 …argo.lock"),
        t(60.0, 22.0, "start", "lg", "gzip -9 …argo.lock")
    );
    assert!(std::panic::catch_unwind(|| assert_no_overlap(svgs(&over)[0])).is_err());
    let apart = format!(
        "<svg>{}{}</svg>",
        t(10.0, 20.0, "start", "lg", "gzip -1"),
        t(10.0, 40.0, "start", "lg", "gzip -9")
    );
    assert_no_overlap(svgs(&apart)[0]);
    let uneven = format!(
        "<svg>{}{}{}{}{}</svg>",
        t(10.0, 10.0, "start", "t", "wall time"),
        t(100.0, 300.0, "middle", "xl", "0"),
        t(200.0, 300.0, "middle", "xl", "3"),
        t(300.0, 300.0, "middle", "xl", "6"),
        t(200.0, 320.0, "middle", "ax", "wall time (ms)")
    );
    assert!(std::panic::catch_unwind(|| check_charts(&uneven, "uneven")).is_err());
    let misplaced = format!(
        r##"<svg><rect class="key" fill="#1"/><rect class="bar" x="100" y="5" width="50" height="12" fill="#1"/>{}{}{}{}</svg>"##,
        t(10.0, 10.0, "start", "t", "bars"),
        t(100.0, 300.0, "middle", "xl", "0"),
        t(200.0, 300.0, "middle", "xl", "5"),
        t(200.0, 320.0, "middle", "ax", "median (ms)")
    );
    assert!(std::panic::catch_unwind(|| check_charts(&misplaced, "misplaced")).is_err());
    let placed = misplaced.replace(
        "</svg>",
        &format!("{}</svg>", t(154.0, 15.0, "start", "lg", "5 ms")),
    );
    check_charts(&placed, "placed");
}

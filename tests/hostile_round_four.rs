//! Hostile input, round four: `nvidia-smi` stand-ins that misbehave
//! (silent, a child holding the output pipe, garbage, absurd figures),
//! signals during the wait for one, reports that cannot be written,
//! advice the figures do not support, and messages (300-digit
//! percentages, a bare EAGAIN, "run as root" said to root, "1
//! processes"). Every test runs the release binary and asserts what is
//! said and that nothing is left running; how long each stand-in costs is
//! measured in `benches/hostile_gpu.py`, never asserted here.

mod common;

use std::path::{Path, PathBuf};
use std::process::{Output, Stdio};
use std::time::{Duration, Instant};

use serde_json::Value;

/// Longest any one command here may take before it counts as hung: far
/// above the bounds tally keeps (5 s for nvidia-smi), so only a hang
/// reaches it.
const HANG: Duration = Duration::from_secs(60);

fn scratch() -> tempfile::TempDir {
    tempfile::Builder::new()
        .prefix("tally-hostile4")
        .tempdir()
        .expect("a scratch directory")
}

/// A directory holding only a copy of the stand-in nvidia-smi
/// (tests/fixtures/fake-nvidia-smi), and the PATH that puts it first.
fn stand_in(scratch: &Path) -> String {
    let dir = scratch.join("bin");
    std::fs::create_dir_all(&dir).unwrap();
    let fake =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/fake-nvidia-smi/nvidia-smi");
    std::fs::copy(&fake, dir.join("nvidia-smi")).unwrap();
    format!("{}:/usr/local/bin:/usr/bin:/bin", dir.display())
}

/// A variable every process a test starts inherits, its own: what is
/// still running with it is what the test left.
fn marker(tag: &str) -> (String, String) {
    (
        "TALLY_HOSTILE4_MARKER".to_string(),
        format!("{tag}-{}", std::process::id()),
    )
}

/// Processes (not zombies) whose environment holds `marker`, however
/// they renamed themselves.
fn running_with(marker: &(String, String)) -> Vec<String> {
    let needle = format!("{}={}", marker.0, marker.1);
    let mut found = Vec::new();
    for e in std::fs::read_dir("/proc").unwrap().flatten() {
        let Ok(environ) = std::fs::read(e.path().join("environ")) else {
            continue;
        };
        if !environ.split(|&b| b == 0).any(|v| v == needle.as_bytes()) {
            continue;
        }
        let stat = std::fs::read_to_string(e.path().join("stat")).unwrap_or_default();
        let state = stat.rsplit(')').next().unwrap_or("").trim_start();
        if !state.starts_with('Z') {
            let cmdline = std::fs::read(e.path().join("cmdline")).unwrap_or_default();
            found.push(format!(
                "{}: {}",
                e.file_name().to_string_lossy(),
                String::from_utf8_lossy(&cmdline).replace('\0', " ")
            ));
        }
    }
    found
}

/// Asserts that nothing started with `marker` runs: killed processes are
/// given a moment to be reaped by whoever adopted them.
fn none_left(marker: &(String, String), what: &str) {
    let until = Instant::now() + Duration::from_secs(3);
    loop {
        let left = running_with(marker);
        if left.is_empty() {
            return;
        }
        if Instant::now() > until {
            for p in &left {
                if let Some(pid) = p.split(':').next() {
                    let _ = common::command("kill").args(["-KILL", pid]).output();
                }
            }
            panic!("{what} left {} running: {left:?}", left.len());
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// `tally ARGS` with the stand-in in `mode` first on `path`, the marker
/// set; ended as hung past [`HANG`].
fn tally_with(path: &str, mode: &str, marker: &(String, String), args: &[&str]) -> Output {
    let child = common::tally_std()
        .env("PATH", path)
        .env("FAKE_GPU_MODE", mode)
        .env(&marker.0, &marker.1)
        .args(args)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("tally starts");
    common::wait_or_kill(child, HANG)
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

fn json(bytes: &[u8]) -> Value {
    serde_json::from_slice(bytes).unwrap_or_else(|e| panic!("not JSON ({e}): {}", text(bytes)))
}

/// What `tally serve` exports at its first scrape (`min_interval = 0`, so
/// every scrape scans), `n` scrapes in all, and what it said on stderr.
fn serve_scrapes(
    path: &str,
    mode: &str,
    marker: &(String, String),
    dir: &Path,
    n: usize,
) -> (Vec<String>, String) {
    use std::io::{Read, Write};
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .unwrap()
        .port();
    let config = dir.join("serve.toml");
    std::fs::write(&config, "min_interval = 0\n[mem]\ntop = 5\n").unwrap();
    let log = dir.join("serve.log");
    let child = common::tally_std()
        .env("PATH", path)
        .env("FAKE_GPU_MODE", mode)
        .env(&marker.0, &marker.1)
        .args([
            "serve",
            "--listen",
            &format!("127.0.0.1:{port}"),
            "--config",
        ])
        .arg(&config)
        .stdout(Stdio::null())
        .stderr(std::fs::File::create(&log).unwrap())
        .spawn()
        .unwrap();
    let _server = common::Reaper(vec![child]);
    let mut bodies = Vec::new();
    let until = Instant::now() + HANG;
    while bodies.len() < n {
        let answer = std::net::TcpStream::connect(("127.0.0.1", port)).and_then(|mut s| {
            s.write_all(b"GET /metrics HTTP/1.0\r\nHost: localhost\r\n\r\n")?;
            let mut raw = String::new();
            s.read_to_string(&mut raw)?;
            Ok(raw)
        });
        if let Ok(raw) = answer
            && let Some((_, body)) = raw.split_once("\r\n\r\n")
        {
            bodies.push(body.to_string());
            continue;
        }
        assert!(
            Instant::now() < until,
            "tally serve never answered: {}",
            std::fs::read_to_string(&log).unwrap_or_default()
        );
        std::thread::sleep(Duration::from_millis(50));
    }
    (bodies, std::fs::read_to_string(&log).unwrap_or_default())
}

// ---- 1. A child of nvidia-smi holding its output pipe ----

/// Regression: an nvidia-smi whose child kept the output pipe open made
/// `tally run -- /bin/true` wait for that child (40 s): stopping the
/// sampler killed nvidia-smi alone, then waited for the pipe to close.
/// Every helper is now ended as a group and its pipes end with it.
#[test]
fn an_nvidia_smi_whose_child_holds_the_pipe_holds_up_nothing() {
    let tmp = scratch();
    let path = stand_in(tmp.path());
    let m = marker("grandchild");
    let o = tally_with(
        &path,
        "grandchild",
        &m,
        &["run", "--gpu", "--format", "json", "--", "true"],
    );
    assert_eq!(o.status.code(), Some(0), "{}", text(&o.stderr));
    let gpu = &json(&o.stderr)["runs"][0]["gpu"];
    assert_eq!(gpu["gpus"][0]["name"], "NVIDIA H200", "{gpu}");
    let o = tally_with(
        &path,
        "grandchild",
        &m,
        &["mem", "--gpu", "--pid", "1", "--format", "json"],
    );
    assert_eq!(o.status.code(), Some(0), "{}", text(&o.stderr));
    assert_eq!(
        json(&o.stdout)["gpu"]["listed_processes"],
        1,
        "{}",
        text(&o.stdout)
    );
    let o = tally_with(
        &path,
        "grandchild",
        &m,
        &["compare", "-n", "3", "--gpu", "true", "true"],
    );
    assert_eq!(o.status.code(), Some(0), "{}", text(&o.stderr));
    none_left(&m, "the grandchild stand-in");
}

// ---- 2. A silent nvidia-smi; a signal during the wait ----

/// Regression: a silent nvidia-smi added 5 s before every run, without a
/// word (`run -n 3` took 15 s). It is asked once per invocation, waited
/// for 1 s when the figures were not asked for (5 s with `--gpu`), and
/// the wait that came to nothing is said.
#[test]
fn a_silent_nvidia_smi_is_waited_for_once_per_invocation_and_said() {
    let tmp = scratch();
    let path = stand_in(tmp.path());
    let m = marker("silent");
    let log = tmp.path().join("started");
    let log_s = log.to_str().unwrap();
    let report = tmp.path().join("run.json");
    let o = common::tally_std()
        .env("PATH", &path)
        .env("FAKE_GPU_MODE", "silent")
        .env("FAKE_GPU_LOG", log_s)
        .env(&m.0, &m.1)
        .args(["run", "-n", "5", "--format", "json", "-o"])
        .arg(&report)
        .args(["--", "true"])
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(0), "{}", text(&o.stderr));
    let started = std::fs::read_to_string(&log).unwrap_or_default();
    assert_eq!(
        started.lines().count(),
        2,
        "one session of two queries: {started}"
    );
    let r = json(&std::fs::read(&report).unwrap());
    let warnings: Vec<&str> = r["warnings"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(Value::as_str)
        .collect();
    assert!(
        warnings.contains(
            &"GPU figures: nvidia-smi printed no GPU sample in 1 s, so none were measured (with --gpu tally waits 5 s, and says why)"
        ),
        "{warnings:?}"
    );
    assert_eq!(r["runs"].as_array().unwrap().len(), 5);
    assert!(r["runs"][4].get("gpu").is_none(), "{}", r["runs"][4]);
    std::fs::remove_file(&log).unwrap();
    let o = common::tally_std()
        .env("PATH", &path)
        .env("FAKE_GPU_MODE", "silent")
        .env("FAKE_GPU_LOG", log_s)
        .env(&m.0, &m.1)
        .args(["run", "-n", "3", "--gpu", "--format", "json", "--", "true"])
        .output()
        .unwrap();
    let started = std::fs::read_to_string(&log).unwrap_or_default();
    assert_eq!(started.lines().count(), 2, "{started}");
    for run in json(&o.stderr)["runs"].as_array().unwrap() {
        assert_eq!(run["gpu_reason"], "nvidia-smi printed no GPU sample in 5 s");
    }
    none_left(&m, "the silent stand-in");
}

/// Regression: a SIGINT, SIGTERM or SIGHUP during the wait for a silent
/// nvidia-smi was held until the wait ended, then the command was
/// started, killed at once and reported as a 472.8 µs run. A signal
/// before the command starts now means it is not started.
#[test]
fn a_signal_during_the_wait_for_nvidia_smi_starts_no_command() {
    for (name, number) in [("INT", 2), ("TERM", 15), ("HUP", 1)] {
        let tmp = scratch();
        let path = stand_in(tmp.path());
        let m = marker(&format!("signal-{name}"));
        let log = tmp.path().join("started");
        let ran = tmp.path().join("ran");
        let child = common::tally_std()
            .env("PATH", &path)
            .env("FAKE_GPU_MODE", "silent")
            .env("FAKE_GPU_LOG", &log)
            .env(&m.0, &m.1)
            .args(["run", "--gpu", "--", "touch"])
            .arg(&ran)
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let pid = child.id().to_string();
        let until = Instant::now() + Duration::from_secs(10);
        while std::fs::read_to_string(&log)
            .unwrap_or_default()
            .lines()
            .count()
            < 2
        {
            assert!(Instant::now() < until, "nvidia-smi never started");
            std::thread::sleep(Duration::from_millis(10));
        }
        std::thread::sleep(Duration::from_millis(300));
        assert!(
            common::command("kill")
                .args([&format!("-{name}"), &pid])
                .status()
                .unwrap()
                .success()
        );
        let o = common::wait_or_kill(child, HANG);
        let said = text(&o.stderr);
        assert_eq!(o.status.code(), Some(128 + number), "SIG{name}: {said}");
        assert!(!ran.exists(), "SIG{name}: the command was started: {said}");
        assert!(
            said.contains(&format!("interrupted by SIG{name} after 0 of 1 runs")),
            "{said}"
        );
        none_left(&m, "a run interrupted while it waited for nvidia-smi");
    }
}

/// The wait for nvidia-smi says what it waits for once it lasts more
/// than a moment (on a terminal, where a person waits).
#[test]
fn the_wait_for_nvidia_smi_says_what_it_waits_for() {
    if !common::have("script") {
        common::skip_without_tool!(
            "script",
            "a terminal for tally's progress line is made with util-linux's script"
        );
    }
    let tmp = scratch();
    let path = stand_in(tmp.path());
    let m = marker("wait-said");
    let line = format!("{} run --gpu -- true", common::tally_bin().display());
    let o = common::command("script")
        .args(["-q", "-e", "-c", &line, "/dev/null"])
        .env("PATH", &path)
        .env("FAKE_GPU_MODE", "silent")
        .env(&m.0, &m.1)
        .stdin(Stdio::null())
        .output()
        .unwrap();
    let said = text(&o.stdout);
    assert!(
        said.contains("waiting up to 5 s for nvidia-smi's first GPU sample"),
        "{said}"
    );
    assert!(
        said.contains("GPU figures unavailable: nvidia-smi printed no GPU sample in 5 s"),
        "{said}"
    );
    let line = format!("{} mem --gpu --pid 1", common::tally_bin().display());
    let o = common::command("script")
        .args(["-q", "-e", "-c", &line, "/dev/null"])
        .env("PATH", &path)
        .env("FAKE_GPU_MODE", "silent")
        .env(&m.0, &m.1)
        .stdin(Stdio::null())
        .output()
        .unwrap();
    let said = text(&o.stdout);
    assert!(
        said.contains("waiting up to 5 s for nvidia-smi's answer (GPU memory per process)"),
        "{said}"
    );
    none_left(&m, "a run and mem on a terminal");
}

// ---- 6. Absurd figures, garbage ----

/// Regression: a power draw of 99999.9999999999999999999999999 W passed
/// as 100,000 W, and 16,777,216 MiB a process was accepted (`mem`'s
/// total: 234,881,024 MiB for one GPU). Each figure is held to what the
/// GPU says it has, and the refused line says why it was refused.
#[test]
fn absurd_gpu_figures_are_refused_saying_why() {
    let tmp = scratch();
    let path = stand_in(tmp.path());
    let m = marker("absurd");
    let o = tally_with(
        &path,
        "absurd",
        &m,
        &["run", "--gpu", "--format", "json", "--", "true"],
    );
    assert_eq!(o.status.code(), Some(0), "{}", text(&o.stderr));
    let r = json(&o.stderr);
    let why = r["runs"][0]["gpu_reason"]
        .as_str()
        .unwrap_or_default()
        .to_string();
    // Whichever query's line came first.
    assert!(
        why.starts_with(
            "nvidia-smi printed a line tally refused (power draw 100000 W is over 5000 W, more than any GPU draws): 0, NVIDIA H200, "
        ) || why.starts_with(
            "nvidia-smi printed a line tally refused (used memory 16,777,216 MiB is over 1,048,576 MiB, more than any GPU holds): "
        ),
        "{why}"
    );
    assert_eq!(r["runs"][0]["gpu"], Value::Null);
    let o = tally_with(
        &path,
        "absurd",
        &m,
        &["mem", "--gpu", "--pid", "1", "--format", "json"],
    );
    assert_eq!(o.status.code(), Some(0), "{}", text(&o.stderr));
    let why = json(&o.stdout)["gpu_reason"]
        .as_str()
        .unwrap_or_default()
        .to_string();
    assert!(
        why.starts_with("nvidia-smi printed a line tally refused (used memory 16,777,216 MiB is over the GPU's memory total, 143,771 MiB): ")
            && why.ends_with(", 1, 16777216, GPU-5c6e1b2a-9d1f-4a57-8a0e-2f6c7a1b3c4d"),
        "{why}"
    );
    none_left(&m, "the absurd stand-in");
}

/// An nvidia-smi printing lines that are no query's: refused at once
/// with the line (run), or stopped at the query's bound (mem).
#[test]
fn a_garbage_printing_nvidia_smi_is_refused_with_its_line() {
    let tmp = scratch();
    let path = stand_in(tmp.path());
    let m = marker("garbage");
    let o = tally_with(
        &path,
        "garbage",
        &m,
        &["run", "--gpu", "--format", "json", "--", "true"],
    );
    let why = json(&o.stderr)["runs"][0]["gpu_reason"]
        .as_str()
        .unwrap_or_default()
        .to_string();
    assert!(
        why.starts_with("nvidia-smi printed a line tally refused (")
            && why.contains("=== garbage; not a sample: "),
        "{why}"
    );
    let o = tally_with(
        &path,
        "garbage",
        &m,
        &["mem", "--gpu", "--pid", "1", "--format", "json"],
    );
    assert_eq!(
        json(&o.stdout)["gpu_reason"],
        "nvidia-smi gave no answer in 5 s (stopped)"
    );
    none_left(&m, "the garbage stand-in");
}

/// With each misbehaving stand-in: `run -n 20`, `mem` and two scrapes of
/// `serve` answer (their bound is the 5 s of the query, once), a failed
/// query is not asked again by the next scrape, and no process is left.
#[test]
fn every_misbehaving_nvidia_smi_leaves_run_mem_and_serve_answering_and_nothing_running() {
    for mode in ["silent", "grandchild", "garbage", "absurd"] {
        let tmp = scratch();
        let path = stand_in(tmp.path());
        let m = marker(&format!("all-{mode}"));
        let o = tally_with(&path, mode, &m, &["run", "-n", "20", "--", "/bin/true"]);
        assert_eq!(o.status.code(), Some(0), "{mode}: {}", text(&o.stderr));
        let o = tally_with(&path, mode, &m, &["mem", "--pid", "1", "--format", "json"]);
        assert_eq!(o.status.code(), Some(0), "{mode}: {}", text(&o.stderr));
        let log = tmp.path().join("started");
        let (bodies, said) = serve_logged(&path, mode, &m, tmp.path(), &log);
        assert_eq!(bodies.len(), 2, "{mode}");
        for body in &bodies {
            assert!(
                body.contains("tally_mem_pss_bytes"),
                "{mode}: mem still exported: {body}"
            );
        }
        let starts = std::fs::read_to_string(&log).unwrap_or_default();
        if mode != "grandchild" {
            assert!(
                body_has(
                    &bodies[1],
                    "tally_serve_collector_success{collector=\"gpu\"} 0"
                ),
                "{mode}: {}",
                bodies[1]
            );
            assert_eq!(
                starts
                    .lines()
                    .filter(|l| l.starts_with("--query-compute-apps"))
                    .count(),
                1,
                "{mode}: the failed query was asked again: {starts}\n{said}"
            );
        }
        none_left(&m, mode);
    }
}

fn body_has(body: &str, line: &str) -> bool {
    body.lines().any(|l| l == line)
}

/// Two scrapes of [`serve_scrapes`], the stand-in logging each start to
/// `log` (through a wrapper first on PATH that sets `FAKE_GPU_LOG`).
fn serve_logged(
    path: &str,
    mode: &str,
    m: &(String, String),
    dir: &Path,
    log: &Path,
) -> (Vec<String>, String) {
    let wrapper = dir.join("logged");
    std::fs::create_dir_all(&wrapper).unwrap();
    let real = path.split(':').next().unwrap();
    std::fs::write(
        wrapper.join("nvidia-smi"),
        format!(
            "#!/bin/sh\nFAKE_GPU_LOG={} exec {}/nvidia-smi \"$@\"\n",
            log.display(),
            real
        ),
    )
    .unwrap();
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(
        wrapper.join("nvidia-smi"),
        std::fs::Permissions::from_mode(0o755),
    )
    .unwrap();
    let path = format!("{}:{path}", wrapper.display());
    serve_scrapes(&path, mode, m, dir, 2)
}

// ---- 8. Reports that cannot be written ----

/// Regression: `tally run -- /bin/true 2>/dev/full` and `2>&-` exited 0
/// with the report lost, and `bench --help >&-` exited 0. A report that
/// cannot be written exits 125 for `run` and 1 otherwise; with stderr
/// closed at the start, the command is not run at all.
#[test]
fn reports_that_cannot_be_written_exit_125_for_run_and_1_otherwise() {
    let tmp = scratch();
    let full = || {
        std::fs::OpenOptions::new()
            .write(true)
            .open("/dev/full")
            .unwrap()
    };
    let o = common::tally_std()
        .args(["run", "--", "true"])
        .stderr(full())
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(125));
    let ran = tmp.path().join("ran");
    let o = common::command("sh")
        .arg("-c")
        .arg(format!(
            "exec {} run -- touch {} 2>&-",
            common::tally_bin().display(),
            ran.display()
        ))
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(125), "{}", text(&o.stdout));
    assert!(
        !ran.exists(),
        "the command ran though its report had nowhere to go"
    );
    // Another command whose human report steps aside to stderr.
    let o = common::tally_std()
        .args(["mem", "--pid", "1", "--export", "json=-"])
        .stderr(full())
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(1), "{}", text(&o.stdout));
    for help in [&["bench", "--help"][..], &["--version"], &["run", "--help"]] {
        let o = common::command("sh")
            .arg("-c")
            .arg(format!(
                "exec {} {} >&-",
                common::tally_bin().display(),
                help.join(" ")
            ))
            .output()
            .unwrap();
        assert_eq!(o.status.code(), Some(1), "{help:?}");
        assert!(
            text(&o.stderr).contains("stdout is closed, so the help would go nowhere"),
            "{help:?}: {}",
            text(&o.stderr)
        );
    }
}

/// Where stderr cannot take the reason but stdout is a terminal, the
/// reason is said there.
#[test]
fn a_report_lost_on_stderr_is_said_on_the_terminal() {
    if !common::have("script") {
        common::skip_without_tool!("script", "a terminal is made with util-linux's script");
    }
    let line = format!("{} run -- true 2>/dev/full", common::tally_bin().display());
    let o = common::command("script")
        .args(["-q", "-e", "-c", &line, "/dev/null"])
        .stdin(Stdio::null())
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(125));
    let said = text(&o.stdout);
    assert!(
        said.contains("tally: cannot write the human report to stderr: No space left on device"),
        "{said}"
    );
}

// ---- 9. Messages ----

/// Regression: `bench --baseline` against figures of 1e-300 printed
/// ratios and percentages of 300 digits.
#[test]
fn a_baseline_of_tiny_figures_gives_short_ratios_and_percentages() {
    let tmp = scratch();
    let base = tmp.path().join("base.json");
    let o = common::tally_std()
        .args(["bench", "--quick", "timer", "--format", "json", "-o"])
        .arg(&base)
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", text(&o.stderr));
    let mut v = json(&std::fs::read(&base).unwrap());
    for b in v["benchmarks"].as_array_mut().unwrap() {
        for f in b["figures"].as_array_mut().unwrap() {
            let f = f.as_object_mut().unwrap();
            for (_, s) in f.iter_mut() {
                if let Some(stats) = s.as_object_mut().filter(|s| s.contains_key("median")) {
                    for k in ["min", "median", "mean", "max", "p95"] {
                        stats.insert(k.into(), Value::from(1e-300));
                    }
                    for k in ["stddev", "mad"] {
                        stats.insert(k.into(), Value::from(0.0));
                    }
                }
            }
            if let Some(samples) = f.get_mut("samples").and_then(Value::as_array_mut) {
                for x in samples.iter_mut() {
                    *x = Value::from(1e-300);
                }
            }
        }
    }
    let tiny = tmp.path().join("tiny.json");
    std::fs::write(&tiny, serde_json::to_vec(&v).unwrap()).unwrap();
    for extra in [
        &[][..],
        &["--fail-on", "timer.*=5%"],
        &["--format", "markdown"],
        &["--format", "html"],
    ] {
        let o = common::tally_std()
            .args(["bench", "--quick", "timer", "--baseline"])
            .arg(&tiny)
            .args(extra)
            .output()
            .unwrap();
        let all = format!("{}{}", text(&o.stdout), text(&o.stderr));
        // Ratios of about 1e301 and 1e303, said in scientific notation.
        assert!(all.contains("e30"), "{extra:?}: {all}");
        let longest = all
            .split(|c: char| !c.is_ascii_digit())
            .map(str::len)
            .max()
            .unwrap_or(0);
        assert!(
            longest < 20,
            "{extra:?}: a number of {longest} digits in\n{all}"
        );
    }
}

/// A cgroup v2 group of the test's own under the unified hierarchy,
/// removed when dropped.
struct TestGroup(PathBuf);

impl Drop for TestGroup {
    fn drop(&mut self) {
        for _ in 0..100 {
            if std::fs::remove_dir(&self.0).is_ok() || !self.0.exists() {
                return;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    }
}

/// The cgroup v2 mount point, when this machine has one and the tests
/// run as root.
fn cgroup2() -> Result<PathBuf, String> {
    if !common::is_root() {
        return Err("needs root to make cgroups".into());
    }
    ["/sys/fs/cgroup/unified", "/sys/fs/cgroup"]
        .iter()
        .map(PathBuf::from)
        .find(|p| p.join("cgroup.controllers").exists())
        .ok_or_else(|| "no cgroup v2 hierarchy is mounted".into())
}

/// `tally run --format json -- ARGS` started from a shell that first
/// joins `group` (its `cgroup.procs`); the report.
fn run_in_group(group: &Path, args: &str) -> Value {
    let o = common::command("sh")
        .arg("-c")
        .arg(format!(
            "echo $$ > {}/cgroup.procs && exec {} run --format json -- {args}",
            group.display(),
            common::tally_bin().display()
        ))
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", text(&o.stderr));
    json(&o.stderr)
}

/// Regression: a group under which `cgroup.max.descendants` is reached
/// gave the breakdown a bare "Resource temporarily unavailable (os
/// error 11)".
#[test]
fn a_cgroup_limit_reached_is_named() {
    let mount = match cgroup2() {
        Ok(m) => m,
        Err(why) => common::skip!("{why}"),
    };
    let group = TestGroup(mount.join(format!("tally-test-desc-{}", std::process::id())));
    std::fs::create_dir(&group.0).unwrap();
    std::fs::write(group.0.join("cgroup.max.descendants"), "0").unwrap();
    let r = run_in_group(&group.0, "true");
    let why = r["runs"][0]["why"]["unavailable"]["io_wait_ns"]
        .as_str()
        .unwrap_or_default()
        .to_string();
    assert!(
        why.contains(&format!(
            "a limit on the number of groups is reached (cgroup.max.descendants or cgroup.max.depth of {} or a group above it)",
            group.0.display()
        )),
        "{why}"
    );
}

/// Regression: a read-only cgroupfs told root to "run as root".
#[test]
fn a_read_only_cgroupfs_does_not_tell_root_to_run_as_root() {
    let mount = match cgroup2() {
        Ok(m) => m,
        Err(why) => common::skip!("{why}"),
    };
    if !common::have("unshare") {
        common::skip_without_tool!(
            "unshare",
            "a private mount namespace is made with util-linux's unshare"
        );
    }
    let o = common::command("unshare")
        .args(["--mount", "--propagation", "private", "sh", "-c"])
        .arg(format!(
            "mount -o remount,bind,ro {} && exec {} run --format json -- true",
            mount.display(),
            common::tally_bin().display()
        ))
        .output()
        .unwrap();
    if !o.status.success() && text(&o.stderr).contains("mount") {
        common::skip!(
            "cannot remount the cgroupfs read-only here: {}",
            text(&o.stderr)
        );
    }
    let r = json(&o.stderr);
    let why = r["runs"][0]["why"]["unavailable"]["io_wait_ns"]
        .as_str()
        .unwrap_or_default()
        .to_string();
    assert!(
        why.contains("the cgroup filesystem is mounted read-only here"),
        "{why}"
    );
    assert!(!why.contains("run as root"), "{why}");
}

/// Regression: "1 processes of the tree still run … they were moved back".
#[test]
fn one_process_left_running_is_one_process() {
    if let Err(why) = cgroup2() {
        common::skip!("{why}");
    }
    let m = marker("left");
    let o = common::tally_std()
        .env(&m.0, &m.1)
        .args([
            "run",
            "--why",
            "--format",
            "json",
            "--",
            "sh",
            "-c",
            "sleep 30 </dev/null >/dev/null 2>&1 &",
        ])
        .output()
        .unwrap();
    for p in running_with(&m) {
        if let Some(pid) = p.split(':').next() {
            let _ = common::command("kill").args(["-KILL", pid]).output();
        }
    }
    let r = json(&o.stderr);
    let notes: Vec<String> = r["runs"][0]["why"]["notes"]
        .as_array()
        .map(|n| {
            n.iter()
                .filter_map(|s| s.as_str().map(str::to_string))
                .collect()
        })
        .unwrap_or_default();
    if notes.iter().all(|n| !n.contains("moved back")) {
        common::skip!(
            "no run group was made here (the breakdown has no group to leave): {notes:?}"
        );
    }
    assert!(
        notes.iter().any(|n| n.starts_with(
            "1 process of the tree still runs after the command exited; it was moved back to "
        )),
        "{notes:?}"
    );
    none_left(&m, "the test (its sleep)");
}

// ---- 5. Advice ----

/// The cgroup v1 cpu hierarchy's mount point, when root may make groups
/// in it.
fn cpu_v1() -> Result<PathBuf, String> {
    if !common::is_root() {
        return Err("needs root to make cgroups".into());
    }
    let mounts = std::fs::read_to_string("/proc/self/mountinfo").unwrap_or_default();
    mounts
        .lines()
        .find_map(|l| {
            let (left, right) = l.split_once(" - ")?;
            let mut r = right.split_whitespace();
            let cpu = r.next()? == "cgroup" && r.nth(1)?.split(',').any(|o| o == "cpu");
            let point = left.split_whitespace().nth(4)?;
            cpu.then(|| PathBuf::from(point))
        })
        .ok_or_else(|| "no cgroup v1 cpu hierarchy here (the v2 quota is read the same way, from cpu.max; its unit test covers it)".into())
}

/// A shell loop that keeps a CPU busy for about `n` × 2 µs.
fn busy(n: u32) -> String {
    format!("i=0; while [ $i -lt {n} ]; do i=$((i+1)); done")
}

/// Regression: under a CPU quota of 10 ms per 100 ms a CPU-bound loop
/// read "89% waiting for a CPU … the machine is oversubscribed: 1.0
/// runnable tasks on 2 CPUs" on an idle machine. The quota is named, and
/// its throttling is not called oversubscription.
#[test]
fn a_cpu_quota_that_throttles_the_command_is_named() {
    let cpu = match cpu_v1() {
        Ok(c) => c,
        Err(why) => common::skip!("{why}"),
    };
    let group = TestGroup(cpu.join(format!("tally-test-quota-{}", std::process::id())));
    std::fs::create_dir(&group.0).unwrap();
    std::fs::write(group.0.join("cpu.cfs_period_us"), "100000").unwrap();
    std::fs::write(group.0.join("cpu.cfs_quota_us"), "10000").unwrap();
    let r = run_in_group(&group.0, &format!("sh -c '{}'", busy(30_000)));
    let why = &r["runs"][0]["why"];
    let quota = &why["cpu_quota"];
    assert_eq!(
        quota["file"],
        format!("{}/cpu.cfs_quota_us", group.0.display()),
        "{why}"
    );
    assert!(quota["throttled_periods"].as_u64() > Some(0), "{why}");
    let advice = why["advice"].as_str().unwrap_or_default();
    assert!(
        advice.contains(&format!(
            "a CPU quota throttled the command: cpu.cfs_quota_us 10,000 per cpu.cfs_period_us 100,000 of {} (0.1 CPU)",
            group.0.display()
        )),
        "{why}"
    );
    assert!(!advice.contains("oversubscribed"), "{advice}");
}

/// Regression: `xargs -P 4` on 2 CPUs read "the machine is oversubscribed
/// … (other load 0% of a CPU)". The command's own runnable tasks beyond
/// the CPUs it may use are said as its own parallelism, never as an
/// oversubscribed machine, and no quota is blamed where none throttled.
/// Four busy tasks run confined to one CPU (`taskset -c 0`), so they
/// exceed what they may use however busy the other CPUs are.
#[test]
fn the_commands_own_parallelism_is_not_called_an_oversubscribed_machine() {
    if let Err(why) = cgroup2() {
        common::skip!("{why}");
    }
    if std::thread::available_parallelism().map_or(1, |n| n.get()) < 2 {
        common::skip!("needs two CPUs: one to confine the command to, of more");
    }
    if !common::have("taskset") {
        common::skip_without_tool!(
            "taskset",
            "the command is confined to one CPU with util-linux's taskset"
        );
    }
    let script = format!("for t in 1 2 3 4; do sh -c '{}' & done; wait", busy(20_000));
    let o = common::command("taskset")
        .args(["-c", "0"])
        .arg(common::tally_bin())
        .args(["run", "--format", "json", "--", "sh", "-c", &script])
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", text(&o.stderr));
    let r = json(&o.stderr);
    let why = &r["runs"][0]["why"];
    if !why["sources"]["cpu_wait_ns"]
        .as_str()
        .is_some_and(|s| s.contains("PSI"))
    {
        common::skip!("the tree's CPU wait comes from the run's cgroup PSI, not read here: {why}");
    }
    assert_eq!(why["machine"]["allowed_cpus"], 1, "{why}");
    let advice = why["advice"].as_str().unwrap_or_default();
    assert!(
        advice.starts_with("the command ran at least ")
            && advice.contains(" runnable tasks on 1 CPU it may use (affinity mask; ")
            && advice.contains("its own parallelism"),
        "{why}"
    );
    assert!(!advice.contains("oversubscribed"), "{advice}");
    assert!(!advice.contains("quota"), "{advice}");
}

// ---- 3 and 4. The run's group degrades the breakdown, never the run ----

/// `tally run --format json -- ARGS` (as `user`, through setpriv, when
/// given) started from a shell that first joins `group`; its output.
fn run_in_group_as(group: &Path, user: Option<&str>, args: &str) -> Output {
    let reachable = common::tally_for_others();
    let bin = match user {
        Some(_) => reachable.path().to_path_buf(),
        None => common::tally_bin(),
    };
    let setpriv = user
        .map(|u| format!("setpriv --reuid={u} --regid={u} --clear-groups "))
        .unwrap_or_default();
    common::command("sh")
        .arg("-c")
        .arg(format!(
            "echo $$ > {}/cgroup.procs && exec {setpriv}{} run --format json -- {args}",
            group.display(),
            bin.display()
        ))
        .output()
        .unwrap()
}

/// The reasons a run's storage wait and memory stall are unavailable.
fn unavailable_parts(r: &Value) -> [String; 2] {
    ["io_wait_ns", "memory_stall_ns"].map(|part| {
        assert!(r["runs"][0]["why"][part].is_null(), "{part}: {r}");
        r["runs"][0]["why"]["unavailable"][part]
            .as_str()
            .unwrap_or_default()
            .to_string()
    })
}

/// Regression: in a threaded cgroup `tally run -- /bin/true` failed with
/// "cannot start /bin/true: Operation not supported", exit 125.
#[test]
fn tally_run_in_a_threaded_group_runs_the_command_outside_its_group_and_says_why() {
    let mount = match cgroup2() {
        Ok(m) => m,
        Err(why) => common::skip!("{why}"),
    };
    let domain = TestGroup(mount.join(format!("tally-test-threaded-{}", std::process::id())));
    std::fs::create_dir(&domain.0).unwrap();
    let threaded = TestGroup(domain.0.join("t"));
    std::fs::create_dir(&threaded.0).unwrap();
    if std::fs::write(threaded.0.join("cgroup.type"), "threaded").is_err() {
        common::skip!("this kernel makes no threaded cgroup");
    }
    let o = run_in_group_as(&threaded.0, None, "/bin/true");
    assert!(o.status.success(), "{}", text(&o.stderr));
    let r = json(&o.stderr);
    for why in unavailable_parts(&r) {
        assert!(
            why.contains("could not be put in the run's cgroup v2 group and ran outside it")
                && why.contains("threaded"),
            "{why}"
        );
    }
    assert!(r["runs"][0]["why"]["cpu_wait_ns"].is_u64(), "{r}");
}

/// Regression: as a user who owns a group whose `cgroup.procs` is root's
/// (half-delegated), `tally run -- /bin/true` failed with "/bin/true:
/// cannot execute: Permission denied", exit 126.
#[test]
fn tally_run_in_a_half_delegated_group_runs_the_command_outside_its_group_and_says_why() {
    let mount = match cgroup2() {
        Ok(m) => m,
        Err(why) => common::skip!("{why}"),
    };
    common::require!(common::can_switch_users());
    let top = TestGroup(mount.join(format!("tally-test-half-{}", std::process::id())));
    std::fs::create_dir(&top.0).unwrap();
    let user = TestGroup(top.0.join("u"));
    std::fs::create_dir(&user.0).unwrap();
    // The directory is nobody's; its cgroup.procs stays root's.
    std::os::unix::fs::chown(&user.0, Some(65534), Some(65534)).unwrap();
    let o = run_in_group_as(&user.0, Some("65534"), "/bin/true");
    assert!(o.status.success(), "{}", text(&o.stderr));
    let r = json(&o.stderr);
    for why in unavailable_parts(&r) {
        assert!(
            why.contains("could not be put in the run's cgroup v2 group and ran outside it")
                && why.contains("half-delegated"),
            "{why}"
        );
    }
    let left: Vec<_> = std::fs::read_dir(&user.0)
        .unwrap()
        .flatten()
        .filter(|e| e.file_name().to_string_lossy().starts_with("tally-"))
        .map(|e| e.path())
        .collect();
    assert!(left.is_empty(), "groups left behind: {left:?}");
}

/// A script that moves itself into a group it makes below its own, then
/// works a moment there (reads 20 MB, sleeps 0.2 s).
const MAKES_A_SUB_GROUP: &str = r#"g=/sys/fs/cgroup/unified$(grep ^0:: /proc/self/cgroup | cut -d: -f3)
[ -e "$g/cgroup.procs" ] || g=/sys/fs/cgroup$(grep ^0:: /proc/self/cgroup | cut -d: -f3)
mkdir "$g/sub" && echo $$ > "$g/sub/cgroup.procs" || exit 3
head -c 20000000 /dev/zero | tail -c 1 >/dev/null
sleep 0.2
"#;

/// Regression: a command that made its own sub-group leaked the run's
/// group for good ("cannot remove …/tally-25468-0: still busy"), and the
/// next tally's sweep removed only top-level groups.
#[test]
fn a_command_that_makes_a_sub_group_leaves_no_group_and_the_note_says_it_made_one() {
    if let Err(why) = cgroup2() {
        common::skip!("{why}");
    }
    let tally = common::tally_std()
        .args([
            "run",
            "--format",
            "json",
            "--",
            "sh",
            "-c",
            MAKES_A_SUB_GROUP,
        ])
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let pid = tally.id();
    let o = tally.wait_with_output().unwrap();
    assert!(o.status.success(), "{}", text(&o.stderr));
    let r = json(&o.stderr);
    if r["runs"][0]["why"]["io_wait_ns"].is_null() {
        common::skip!("no run group was made here: {}", r["runs"][0]["why"]);
    }
    let notes = r["runs"][0]["why"]["notes"].to_string();
    assert!(
        notes.contains("the command made 1 cgroup below the run's group")
            && notes.contains("removed with it"),
        "{notes}"
    );
    assert!(
        !text(&o.stderr).contains("cannot remove"),
        "{}",
        text(&o.stderr)
    );
    let prefix = format!("tally-{pid}-");
    let left: Vec<String> = ["/sys/fs/cgroup/unified", "/sys/fs/cgroup"]
        .iter()
        .flat_map(|d| std::fs::read_dir(d).into_iter().flatten().flatten())
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|n| n.starts_with(&prefix))
        .collect();
    assert!(left.is_empty(), "left behind: {left:?}");
}

/// Regression: with `--tree`, a command that moved itself into a group
/// of its own was "1 process seen in 1 sample", its peak memory raised to
/// ru_maxrss from 0: the tree was read from the run's group alone.
#[test]
fn tree_reads_the_groups_a_command_made_below_its_own() {
    if let Err(why) = cgroup2() {
        common::skip!("{why}");
    }
    let o = common::tally_std()
        .args([
            "run",
            "--tree",
            "--format",
            "json",
            "--",
            "sh",
            "-c",
            MAKES_A_SUB_GROUP,
        ])
        .stdout(Stdio::null())
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", text(&o.stderr));
    let r = json(&o.stderr);
    let tree = &r["runs"][0]["tree"];
    if tree["cgroup"].is_null() {
        common::skip!("no group for --tree here: {tree}");
    }
    // sh, head, tail and sleep, sampled every 10 ms over 0.2 s and more.
    assert!(tree["processes_seen"].as_u64().unwrap_or(0) >= 3, "{tree}");
    assert!(tree["samples"].as_u64().unwrap_or(0) >= 5, "{tree}");
    assert!(
        tree["peak_memory_bytes"].as_u64().unwrap_or(0) > 0,
        "{tree}"
    );
    assert!(
        tree["notes"]
            .to_string()
            .contains("the command made 1 cgroup below the run's group"),
        "{tree}"
    );
}

/// The breakdown has an option that turns it off (an undocumented
/// environment variable did): no parts, no group.
#[test]
fn no_why_turns_the_breakdown_off_in_run_and_compare() {
    let o = common::tally_std()
        .args(["run", "--no-why", "--format", "json", "--", "true"])
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", text(&o.stderr));
    let r = json(&o.stderr);
    assert!(r["runs"][0]["why"].is_null(), "{r}");
    let o = common::tally_std()
        .args([
            "compare", "--no-why", "-N", "-n", "3", "--format", "json", "-o", "-", "true", "true",
        ])
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", text(&o.stderr));
    let r = json(&o.stdout);
    for c in r["commands"].as_array().unwrap() {
        for run in c["runs"].as_array().unwrap() {
            assert!(run["why"].is_null(), "{run}");
        }
    }
    let help = common::tally_std()
        .args(["run", "--help"])
        .output()
        .unwrap();
    assert!(
        text(&help.stdout).contains("--no-why"),
        "{}",
        text(&help.stdout)
    );
}

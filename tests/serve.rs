//! `tally serve` on a loopback port: the endpoints, bad and slow clients,
//! shutdown, `promtool check metrics`, and a real Prometheus scraping it
//! (Debian's `prometheus` package; tests/install-prometheus.sh installs
//! it, and a test without it skips, saying so).

mod common;

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// A running `tally serve`, killed and reaped when dropped; its stderr is
/// collected as it comes.
struct Served {
    child: Option<Child>,
    addr: SocketAddr,
    log: Arc<Mutex<String>>,
    reader: Option<std::thread::JoinHandle<()>>,
}

impl Drop for Served {
    fn drop(&mut self) {
        if let Some(mut c) = self.child.take() {
            let _ = c.kill();
            let _ = c.wait();
        }
    }
}

impl Served {
    fn pid(&self) -> u32 {
        self.child.as_ref().map_or(0, Child::id)
    }

    /// What it has written to stderr so far.
    fn log(&self) -> String {
        self.log.lock().unwrap().clone()
    }

    /// Sends `sig` (a name: TERM, INT, HUP) to it.
    fn signal(&self, sig: &str) {
        let sent = common::command("kill")
            .args(["-s", sig, &self.pid().to_string()])
            .status()
            .expect("kill");
        assert!(sent.success(), "kill -s {sig} failed");
    }

    /// Waits until its stderr holds `words` (and returns it), failing the
    /// test after `secs`.
    fn wait_for_log(&self, words: &str, secs: u64) -> String {
        let start = Instant::now();
        loop {
            let log = self.log();
            if log.contains(words) {
                return log;
            }
            assert!(
                start.elapsed() < Duration::from_secs(secs),
                "no {words:?} in the log of tally serve:\n{log}"
            );
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    /// Sends `sig` and returns the exit status and stderr.
    fn stop(mut self, sig: i32) -> (Option<i32>, String) {
        let name = if sig == libc_sigint() { "INT" } else { "TERM" };
        self.signal(name);
        let child = self.child.take().expect("running");
        let out = common::wait_or_kill(child, Duration::from_secs(20));
        if let Some(r) = self.reader.take() {
            let _ = r.join();
        }
        (out.status.code(), self.log())
    }
}

fn libc_sigint() -> i32 {
    2
}

/// A loopback port free a moment ago.
fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .map(|a| a.port())
        .expect("a free port")
}

/// Starts `tally serve` with `config` (TOML) and waits for /healthz.
fn serve(config: Option<&str>, dir: &Path) -> Served {
    serve_with(config, &[], dir)
}

/// Starts `tally serve --listen 127.0.0.1:PORT` with `config` (TOML) and
/// `args`, and waits until it says it is serving (it listens then).
fn serve_with(config: Option<&str>, args: &[&str], dir: &Path) -> Served {
    let addr: SocketAddr = format!("127.0.0.1:{}", free_port()).parse().unwrap();
    serve_on(addr, config, args, dir)
}

fn serve_on(addr: SocketAddr, config: Option<&str>, args: &[&str], dir: &Path) -> Served {
    let mut cmd = common::tally_std();
    cmd.arg("serve").arg("--listen").arg(addr.to_string());
    if let Some(text) = config {
        let path = dir.join("serve.toml");
        std::fs::write(&path, text).expect("write config");
        cmd.arg("--config").arg(&path);
    }
    cmd.args(args);
    let mut child = cmd
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("tally serve starts");
    let log = Arc::new(Mutex::new(String::new()));
    let mut stderr = child.stderr.take().expect("stderr");
    let log2 = Arc::clone(&log);
    let reader = std::thread::spawn(move || {
        let mut buf = [0u8; 4096];
        while let Ok(n) = stderr.read(&mut buf) {
            if n == 0 {
                break;
            }
            log2.lock()
                .unwrap()
                .push_str(&String::from_utf8_lossy(&buf[..n]));
        }
    });
    let mut served = Served {
        child: Some(child),
        addr,
        log,
        reader: Some(reader),
    };
    let start = Instant::now();
    while !served.log().contains("tally: serving ") {
        if let Some(Ok(Some(status))) = served.child.as_mut().map(Child::try_wait) {
            panic!("tally serve exited ({status}):\n{}", served.log());
        }
        assert!(
            start.elapsed() < Duration::from_secs(20),
            "tally serve never said it serves:\n{}",
            served.log()
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    served
}

/// One GET: status, headers, body; `None` when the server did not answer.
fn get(addr: SocketAddr, path: &str, headers: &[&str]) -> Option<(u16, String, String)> {
    let mut s = TcpStream::connect_timeout(&addr, Duration::from_secs(5)).ok()?;
    s.set_read_timeout(Some(Duration::from_secs(60))).ok()?;
    let mut req = format!("GET {path} HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\n");
    for h in headers {
        req.push_str(h);
        req.push_str("\r\n");
    }
    req.push_str("\r\n");
    s.write_all(req.as_bytes()).ok()?;
    let mut raw = Vec::new();
    s.read_to_end(&mut raw).ok()?;
    parse_response(&raw)
}

fn parse_response(raw: &[u8]) -> Option<(u16, String, String)> {
    let text = String::from_utf8_lossy(raw);
    let (head, body) = text.split_once("\r\n\r\n")?;
    let status = head.split(' ').nth(1)?.parse().ok()?;
    Some((status, head.to_string(), body.to_string()))
}

/// Sends `bytes` on a new connection and reads until the server closes it
/// (or `secs` pass): the status of its answer. The server may close before
/// taking all of `bytes`: a write error is fine.
fn raw_status(addr: SocketAddr, bytes: &[u8], secs: u64) -> Option<u16> {
    let mut c = TcpStream::connect(addr).unwrap();
    c.set_read_timeout(Some(Duration::from_secs(secs))).unwrap();
    let _ = c.write_all(bytes);
    let mut raw = Vec::new();
    let _ = c.read_to_end(&mut raw);
    parse_response(&raw).map(|r| r.0)
}

/// A line of `/proc/PID/status` (`VmRSS`, `Threads`) as a number.
fn status_field(pid: u32, field: &str) -> u64 {
    let text = std::fs::read_to_string(format!("/proc/{pid}/status")).expect("status");
    text.lines()
        .find_map(|l| l.strip_prefix(&format!("{field}:")))
        .and_then(|v| v.split_whitespace().next())
        .and_then(|v| v.parse().ok())
        .expect("field")
}

#[test]
fn serve_answers_its_three_endpoints_and_404_for_any_other_path() {
    let dir = tempfile::tempdir().unwrap();
    let s = serve(None, dir.path());
    let (status, _, body) = get(s.addr, "/", &[]).expect("/ answers");
    assert_eq!(status, 200);
    assert!(body.contains("/metrics") && body.contains("/healthz"));
    let (status, _, body) = get(s.addr, "/healthz", &[]).expect("healthz answers");
    assert_eq!((status, body.as_str()), (200, "ok\n"));
    let (status, head, body) = get(s.addr, "/metrics", &[]).expect("metrics answer");
    assert_eq!(status, 200);
    assert!(head.contains("text/plain; version=0.0.4"), "{head}");
    for family in [
        "tally_mem_pss_bytes",
        "tally_mem_total_pss_bytes",
        "tally_mem_processes",
        "tally_serve_collector_duration_seconds{collector=\"mem\"}",
        "tally_mem_skipped_processes{reason=\"denied\"}",
        "tally_build_info{version=\"0.1.0\",revision=\"",
        "process_start_time_seconds ",
    ] {
        assert!(body.contains(family), "no {family} in\n{body}");
    }
    // A process skipped for permissions is counted once: mem's own family.
    assert_eq!(
        body.matches("reason=\"denied\"}").count(),
        1,
        "denied processes exported more than once:\n{body}"
    );
    let started = sample_of(&body, "process_start_time_seconds").expect("start time");
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs_f64();
    assert!(
        started <= now + 1.0 && started > now - 600.0,
        "process_start_time_seconds {started}, now {now}"
    );
    assert!(
        body.contains("program=\"other\""),
        "no other row in\n{body}"
    );
    for path in ["/etc/passwd", "/metrics/x", "/../metrics", "/favicon.ico"] {
        let (status, _, _) = get(s.addr, path, &[]).expect("answers");
        assert_eq!(status, 404, "{path}");
    }
    // OpenMetrics when the scraper asks for it, as Prometheus does.
    let (status, head, body) = get(
        s.addr,
        "/metrics",
        &["Accept: application/openmetrics-text;version=1.0.0,text/plain;version=0.0.4;q=0.5"],
    )
    .expect("metrics answer");
    assert_eq!(status, 200);
    assert!(head.contains("application/openmetrics-text"), "{head}");
    assert!(body.ends_with("# EOF\n"));
    assert!(body.contains("# TYPE tally_serve_collector_errors counter\n"));
}

#[test]
fn serve_answers_a_huge_header_431_a_post_405_a_stalled_head_408_and_keeps_serving() {
    let dir = tempfile::tempdir().unwrap();
    let s = serve(None, dir.path());
    let huge = format!(
        "GET /metrics HTTP/1.1\r\nHost: x\r\nX-Big: {}\r\n\r\n",
        "a".repeat(1 << 20)
    );
    let status = raw_status(s.addr, huge.as_bytes(), 30).expect("an HTTP answer to a huge header");
    assert!(status == 431 || status == 400, "status {status}");
    // Garbage is a 400, not a crash.
    assert_eq!(
        raw_status(s.addr, b"\x00\x01\x02 nonsense\r\n\r\n", 30),
        Some(400)
    );
    // A method other than GET or HEAD is a 405.
    let post = b"POST /metrics HTTP/1.1\r\nHost: x\r\nContent-Length: 0\r\n\r\n";
    assert_eq!(raw_status(s.addr, post, 30), Some(405));
    // A head that never completes gets a 408 once the head timeout (10 s)
    // has passed, and the connection is closed.
    assert_eq!(
        raw_status(s.addr, b"GET /metrics HTTP/1.1\r\nHost: x\r\n", 40),
        Some(408)
    );
    assert_eq!(get(s.addr, "/healthz", &[]).map(|r| r.0), Some(200));
}

#[test]
fn serve_slow_clients_do_not_block_a_scrape_and_memory_stays_bounded() {
    let dir = tempfile::tempdir().unwrap();
    let s = serve(None, dir.path());
    assert_eq!(get(s.addr, "/metrics", &[]).map(|r| r.0), Some(200));
    let rss_before = status_field(s.pid(), "VmRSS");
    // 200 clients that start a request and never finish it.
    let mut slow = Vec::new();
    for _ in 0..200 {
        let mut c = TcpStream::connect(s.addr).expect("connect");
        c.write_all(b"GET /metrics HTTP/1.1\r\nHost: slow\r\nX-Wait: ")
            .expect("partial request");
        slow.push(c);
    }
    std::thread::sleep(Duration::from_millis(300));
    let threads = status_field(s.pid(), "Threads");
    let (status, _, body) = get(s.addr, "/metrics", &[]).expect("a scrape still answers");
    assert_eq!(status, 200);
    assert!(body.contains("tally_mem_pss_bytes"));
    let rss_after = status_field(s.pid(), "VmRSS");
    // At most 64 connection threads, a few of its own, and the scan's.
    assert!(threads <= 64 + 16, "{threads} threads for 200 slow clients");
    assert!(
        rss_after < rss_before + 64 * 1024,
        "RSS grew from {rss_before} kB to {rss_after} kB"
    );
    drop(slow);
    assert_eq!(get(s.addr, "/healthz", &[]).map(|r| r.0), Some(200));
}

#[test]
fn serve_exits_0_on_sigterm_and_on_sigint() {
    let dir = tempfile::tempdir().unwrap();
    for sig in [15, libc_sigint()] {
        let s = serve(None, dir.path());
        // A connection still sending its request does not hold shutdown.
        let mut c = TcpStream::connect(s.addr).unwrap();
        c.write_all(b"GET / HTTP/1.1\r\n").unwrap();
        let (code, stderr) = s.stop(sig);
        assert_eq!(code, Some(0), "signal {sig}: {stderr}");
    }
}

#[test]
fn serve_kills_and_reaps_a_run_check_under_way_at_sigterm() {
    let dir = tempfile::tempdir().unwrap();
    let marker = format!("tsrv{}", std::process::id());
    let sleeper = dir.path().join(&marker);
    copy_exe(&sleep_binary(), &sleeper);
    let config = format!(
        "[[run]]\nname = \"slow\"\ncommand = [\"{}\", \"300\"]\ninterval = 600\ntimeout = 600\n",
        sleeper.display()
    );
    let s = serve(Some(&config), dir.path());
    let start = Instant::now();
    while !pids_of(&marker).iter().any(|_| true) {
        assert!(
            start.elapsed() < Duration::from_secs(20),
            "the check never ran"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
    let (code, stderr) = s.stop(15);
    assert_eq!(code, Some(0), "{stderr}");
    assert!(
        pids_of(&marker).is_empty(),
        "the check's command outlived serve"
    );
}

#[test]
fn serve_kills_a_run_check_past_its_timeout_and_exports_its_exit() {
    let dir = tempfile::tempdir().unwrap();
    let s = serve(
        Some(
            "[mem]\nenabled = false\n[[run]]\nname = \"late\"\ncommand = [\"sleep\", \"300\"]\ninterval = 600\ntimeout = 0.5\n\
             [[run]]\nname = \"fine\"\ncommand = [\"true\"]\ninterval = 600\n",
        ),
        dir.path(),
    );
    // The checks run one after the other: wait for both results.
    let body = checks_done(s.addr, &["late", "fine"], 30);
    assert!(
        body.contains("tally_serve_run_exit_code{check=\"late\"} 137"),
        "{body}"
    );
    assert!(
        body.contains("tally_serve_run_exit_code{check=\"fine\"} 0"),
        "{body}"
    );
    // tally run's own figures, labelled with the check.
    assert!(
        body.lines()
            .any(|l| l.starts_with("tally_run_") && l.contains("{check=\"fine\"}")),
        "{body}"
    );
    assert!(body.contains("tally_serve_run_interval_seconds{check=\"late\"} 600"));
}

/// Waits for the run checks named to have a result in `/metrics`.
fn checks_done(addr: SocketAddr, names: &[&str], secs: u64) -> String {
    let start = Instant::now();
    loop {
        let (_, _, body) = get(addr, "/metrics", &[]).expect("metrics");
        if names
            .iter()
            .all(|n| body.contains(&format!("tally_serve_run_exit_code{{check=\"{n}\"}}")))
        {
            return body;
        }
        assert!(
            start.elapsed() < Duration::from_secs(secs),
            "no result:\n{body}"
        );
        std::thread::sleep(Duration::from_millis(100));
    }
}

/// The value of `metric{check="NAME"}`, if exported.
fn check_value(body: &str, metric: &str, name: &str) -> Option<f64> {
    let head = format!("{metric}{{check=\"{name}\"}} ");
    body.lines()
        .find_map(|l| l.strip_prefix(head.as_str()))
        .and_then(|v| v.trim().parse().ok())
}

#[test]
fn serve_run_check_with_count_exports_the_commands_instructions_not_valgrinds_time() {
    common::require!(common::tool("valgrind", "valgrind"));
    let dir = tempfile::tempdir().unwrap();
    let s = serve(
        Some(
            "[mem]\nenabled = false\n[[run]]\nname = \"counted\"\ncommand = [\"true\"]\ninterval = 600\n\
             timeout = 120\ncount = \"sim\"\n[[run]]\nname = \"timed\"\ncommand = [\"true\"]\ninterval = 600\n",
        ),
        dir.path(),
    );
    let body = checks_done(s.addr, &["counted", "timed"], 120);
    assert_eq!(
        check_value(&body, "tally_serve_run_exit_code", "counted"),
        Some(0.0),
        "{body}"
    );
    // `true` runs tens of thousands of instructions (the loader's, libc's).
    let instructions = check_value(&body, "tally_run_instructions", "counted");
    assert!(
        instructions.is_some_and(|n| n > 10_000.0 && n < 100_000_000.0),
        "{instructions:?}\n{body}"
    );
    // Under the simulator the time is Valgrind's: not exported as the
    // command's. The timed check beside it has its time and no count.
    assert_eq!(
        check_value(&body, "tally_run_wall_seconds", "counted"),
        None,
        "{body}"
    );
    assert!(check_value(&body, "tally_run_wall_seconds", "timed").is_some());
    assert_eq!(check_value(&body, "tally_run_instructions", "timed"), None);
}

#[test]
fn serve_run_check_that_cannot_count_exports_exit_125() {
    // No machine here has a PMU the VM shows, but one might: a source
    // that cannot count is what the test needs, so where `hw` counts, it
    // is skipped.
    let probe = common::tally()
        .args(["run", "--count=hw", "--", "true"])
        .timeout(Duration::from_secs(20))
        .output()
        .unwrap();
    if probe.status.code() != Some(125) {
        common::skip!("--count=hw counts on this machine (a PMU): nothing to refuse");
    }
    let dir = tempfile::tempdir().unwrap();
    let s = serve(
        Some(
            "[mem]\nenabled = false\n[[run]]\nname = \"pmu\"\ncommand = [\"true\"]\ninterval = 600\ncount = \"hw\"\n",
        ),
        dir.path(),
    );
    let body = checks_done(s.addr, &["pmu"], 30);
    assert_eq!(
        check_value(&body, "tally_serve_run_exit_code", "pmu"),
        Some(125.0),
        "{body}"
    );
    // No zeros posing as counts.
    assert_eq!(check_value(&body, "tally_run_instructions", "pmu"), None);
}

/// `tally serve --config FILE` with `config` in FILE (named `name`): its
/// exit status and stderr, for a config it must refuse at start-up.
fn serve_refusing(name: &str, config: &str) -> (Option<i32>, String) {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join(name);
    std::fs::write(&path, config).unwrap();
    let out = common::tally()
        .arg("serve")
        .arg("--listen")
        .arg(format!("127.0.0.1:{}", free_port()))
        .arg("--config")
        .arg(&path)
        .timeout(Duration::from_secs(20))
        .output()
        .unwrap();
    (
        out.status.code(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

#[test]
fn serve_refuses_a_run_count_it_does_not_know_naming_the_line() {
    let (code, stderr) = serve_refusing(
        "count.toml",
        "[[run]]\nname = \"a\"\ncommand = [\"true\"]\ncount = \"cycles\"\n",
    );
    assert_eq!(code, Some(1), "{stderr}");
    assert!(stderr.contains("count.toml:4:"), "{stderr}");
    assert!(
        stderr.contains("run.count: cycles is not a counting source"),
        "{stderr}"
    );
}

#[test]
fn serve_reports_a_config_error_with_its_line_at_start_up() {
    let (code, stderr) = serve_refusing("bad.toml", "min_interval = 2\n\n[mem]\nby = \"planet\"\n");
    assert_eq!(code, Some(1), "{stderr}");
    assert!(stderr.contains("bad.toml:4:"), "{stderr}");
    assert!(stderr.contains("planet"), "{stderr}");
}

fn which(name: &str) -> Option<PathBuf> {
    std::env::var_os("PATH").and_then(|paths| {
        std::env::split_paths(&paths)
            .map(|d| d.join(name))
            .find(|p| p.is_file())
    })
}

/// Copies an executable with cp: a write descriptor held by this process
/// would leak into children other tests fork meanwhile, and exec would
/// fail with ETXTBSY.
fn copy_exe(from: &Path, to: &Path) {
    let copied = common::command("cp")
        .arg(from)
        .arg(to)
        .status()
        .expect("cp runs");
    assert!(copied.success(), "cp failed");
}

fn sleep_binary() -> PathBuf {
    which("sleep").expect("sleep is installed")
}

/// PIDs whose `comm` is `name`.
fn pids_of(name: &str) -> Vec<u32> {
    std::fs::read_dir("/proc")
        .unwrap()
        .filter_map(|e| e.ok()?.file_name().to_str()?.parse::<u32>().ok())
        .filter(|pid| {
            std::fs::read_to_string(format!("/proc/{pid}/comm")).is_ok_and(|c| c.trim_end() == name)
        })
        .collect()
}

#[test]
fn serve_metrics_pass_promtool_check_metrics() {
    let Some(promtool) = which("promtool") else {
        common::skip_without_tool!("promtool", "tests/install-prometheus.sh installs it");
    };
    let dir = tempfile::tempdir().unwrap();
    let s = serve(
        Some(&format!(
            "[cache]\npaths = [\"{}\"]\n[[run]]\nname = \"true\"\ncommand = [\"true\"]\n",
            sleep_binary().display()
        )),
        dir.path(),
    );
    let start = Instant::now();
    let body = loop {
        let (_, _, body) = get(s.addr, "/metrics", &[]).expect("metrics");
        if body.contains("tally_serve_run_exit_code") {
            break body;
        }
        assert!(start.elapsed() < Duration::from_secs(30), "no run result");
        std::thread::sleep(Duration::from_millis(100));
    };
    assert!(body.contains("tally_cache_path_cached_bytes"), "{body}");
    let (status, said) = common::promtool_check_metrics(&promtool, &body);
    assert!(status.success() && said.trim().is_empty(), "{said}\n{body}");
}

/// A Prometheus server, killed and reaped when dropped.
struct Prometheus(Child);

impl Drop for Prometheus {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// The result of an instant query: `(labels, value)` per series.
fn query(prom: SocketAddr, promql: &str) -> Vec<(serde_json::Value, f64)> {
    let encoded: String = promql
        .bytes()
        .map(|b| match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'_' | b'.' | b'~' => {
                (b as char).to_string()
            }
            _ => format!("%{b:02X}"),
        })
        .collect();
    let Some((200, _, body)) = get(prom, &format!("/api/v1/query?query={encoded}"), &[]) else {
        return Vec::new();
    };
    // The body may be chunked: take the JSON object inside.
    let json = body
        .find('{')
        .and_then(|a| body.rfind('}').map(|b| &body[a..=b]))
        .unwrap_or("{}");
    println!("query {promql}: {json}");
    let v: serde_json::Value = serde_json::from_str(json).unwrap_or_default();
    v["data"]["result"]
        .as_array()
        .map(|r| {
            r.iter()
                .filter_map(|s| {
                    let value = s["value"][1].as_str()?.parse().ok()?;
                    Some((s["metric"].clone(), value))
                })
                .collect()
        })
        .unwrap_or_default()
}

#[test]
fn serve_is_scraped_by_a_real_prometheus() {
    let prometheus = Path::new("/usr/bin/prometheus");
    if !prometheus.is_file() {
        common::skip_without_tool!(
            "/usr/bin/prometheus",
            "tests/install-prometheus.sh installs Debian's prometheus"
        );
    }
    let dir = tempfile::tempdir().unwrap();
    // A process of our own with a name no other process has, and 64 MiB
    // of private memory, so PSS is its own memory: a small process's PSS
    // moves by pages as others map and unmap the libraries it shares.
    // The interpreter itself, not a wrapper script (pyenv) in front of it.
    let python = common::command("python3")
        .args(["-c", "import sys; print(sys.executable)"])
        .output()
        .ok()
        .filter(|o| o.status.success())
        .map(|o| PathBuf::from(String::from_utf8_lossy(&o.stdout).trim()))
        .and_then(|p| p.canonicalize().ok());
    let Some(python) = python else {
        common::skip_without_tool!("python3", "it holds the memory the test measures");
    };
    let name = format!("tsl{}", std::process::id());
    let holder = dir.path().join(&name);
    copy_exe(&python, &holder);
    let held = common::command(&holder)
        .args(["-c", "import time; b = b'a' * (64 << 20); time.sleep(600)"])
        .spawn()
        .expect("the holder starts");
    let pid = held.id();
    let _holding = common::Reaper(vec![held]);
    let start = Instant::now();
    while status_field(pid, "VmRSS") < 64 * 1024 {
        assert!(
            start.elapsed() < Duration::from_secs(20),
            "the holder never filled its memory"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
    let s = serve(Some("min_interval = 0.5\n[mem]\ntop = 10000\n"), dir.path());
    let prom_addr: SocketAddr = format!("127.0.0.1:{}", free_port()).parse().unwrap();
    let config = dir.path().join("prometheus.yml");
    std::fs::write(
        &config,
        format!(
            "global:\n  scrape_interval: 1s\n  scrape_timeout: 1s\nscrape_configs:\n  - job_name: tally\n    static_configs:\n      - targets: ['{}']\n",
            s.addr
        ),
    )
    .unwrap();
    let _prom = Prometheus(
        common::command(prometheus)
            .arg(format!("--config.file={}", config.display()))
            .arg(format!(
                "--storage.tsdb.path={}",
                dir.path().join("data").display()
            ))
            .arg(format!("--web.listen-address={prom_addr}"))
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("prometheus starts"),
    );
    // Two scrapes, both up.
    let start = Instant::now();
    loop {
        let scrapes = query(prom_addr, "count_over_time(up{job=\"tally\"}[5m])");
        if scrapes.first().is_some_and(|(_, n)| *n >= 2.0) {
            break;
        }
        assert!(
            start.elapsed() < Duration::from_secs(90),
            "Prometheus did not scrape tally twice"
        );
        std::thread::sleep(Duration::from_millis(500));
    }
    let up = query(prom_addr, "up{job=\"tally\"} == 1");
    assert_eq!(up.len(), 1, "up{{job=\"tally\"}} is not 1: {up:?}");
    let series = query(
        prom_addr,
        &format!("tally_mem_pss_bytes{{job=\"tally\",program=\"{name}\"}}"),
    );
    assert_eq!(series.len(), 1, "no PSS series for {name}: {series:?}");
    let scraped = series[0].1;
    // The same process through `tally mem --format json`.
    let out = common::tally()
        .args(["mem", "--format", "json", "--filter"])
        .arg(format!("^{name}$"))
        .output()
        .unwrap();
    let report: serde_json::Value = serde_json::from_slice(&out.stdout).expect("mem json");
    let direct = report["groups"][0]["pss_bytes"]
        .as_f64()
        .expect("a group for the sleep");
    println!("tally mem --format json: pss_bytes of {name} = {direct}");
    assert!(direct > 0.0);
    assert!(
        (scraped - direct).abs() <= direct * 0.01,
        "Prometheus has {scraped}, tally mem says {direct}"
    );
}

/// `tally_mem_total_processes` and the denied count of a scrape.
fn counted_and_denied(body: &str) -> (f64, f64) {
    let value = |prefix: &str| {
        body.lines()
            .find_map(|l| l.strip_prefix(prefix))
            .and_then(|v| v.trim().parse::<f64>().ok())
            .unwrap_or(-1.0)
    };
    (
        value("tally_mem_total_processes "),
        value("tally_mem_skipped_processes{reason=\"denied\"} "),
    )
}

/// Unprivileged, serve exports what its user may see; with the
/// capabilities of contrib/tally-serve.service (ambient, as systemd gives
/// them) it sees every process's memory.
#[test]
fn serve_exports_what_its_user_may_see_and_more_with_ambient_capabilities() {
    common::require!(common::can_switch_users());
    let dir = tempfile::tempdir().unwrap();
    let bin = common::copy_for_others(dir.path(), "tally");
    // A process of root's that user 65534 may not read.
    let _root_sleep = common::Reaper(vec![
        common::command("sleep").arg("60").spawn().expect("sleep"),
    ]);
    // A process of root's with a name of its own.
    let name = format!("tsh{}", std::process::id());
    let rooted = dir.path().join(&name);
    copy_exe(&sleep_binary(), &rooted);
    let _root_own = common::Reaper(vec![
        common::command(&rooted).arg("60").spawn().expect("sleep"),
    ]);
    // With `hidepid`, in a private mount namespace whose /proc hides other
    // users' processes (the network is shared: the scrape reaches it).
    let scrape_as = |caps: &[&str], hidepid: bool| -> Option<((f64, f64), bool)> {
        let addr: SocketAddr = format!("127.0.0.1:{}", free_port()).parse().unwrap();
        let mut cmd = if hidepid {
            let mut c = common::command("unshare");
            c.args(["-m", "--propagation", "private", "sh", "-c"]);
            c.arg(r#"mount -t proc -o hidepid=2 proc /proc || exit 97; exec setpriv "$@""#);
            c.arg("sh");
            c
        } else {
            common::command("setpriv")
        };
        cmd.args(["--reuid=65534", "--regid=65534", "--clear-groups"]);
        cmd.args(caps);
        cmd.arg(&bin).args(["serve", "--listen", &addr.to_string()]);
        let served = Served {
            child: Some(
                cmd.stdout(Stdio::null())
                    .stderr(Stdio::null())
                    .spawn()
                    .expect("setpriv tally serve"),
            ),
            addr,
            log: Arc::default(),
            reader: None,
        };
        let start = Instant::now();
        let mut served = served;
        loop {
            if let Some((200, _, body)) = get(addr, "/metrics", &[]) {
                let seen = body.contains(&format!("program=\"{name}\""));
                return Some((counted_and_denied(&body), seen));
            }
            if let Some(Ok(Some(_))) = served.child.as_mut().map(Child::try_wait) {
                // The mount failed (exit 97): no hidepid here.
                return None;
            }
            assert!(start.elapsed() < Duration::from_secs(20), "no answer");
            std::thread::sleep(Duration::from_millis(50));
        }
    };
    let caps = [
        "--inh-caps=+sys_ptrace,+dac_read_search",
        "--ambient-caps=+sys_ptrace,+dac_read_search",
    ];
    let ((counted, denied), seen) = scrape_as(&[], false).expect("serve runs");
    assert!(
        denied >= 1.0,
        "user 65534 read root's processes: {denied} denied"
    );
    assert!(!seen, "user 65534 read root's {name}");
    let ((wide, wide_denied), seen) = scrape_as(&caps, false).expect("serve runs");
    assert!(
        wide > counted,
        "capabilities showed no more: {wide} vs {counted}"
    );
    assert!(
        wide_denied < denied,
        "{wide_denied} denied with capabilities, {denied} without"
    );
    assert!(seen, "with capabilities, root's {name} is not exported");
    // hidepid is respected: the capabilities widen memory figures, not
    // what /proc shows the service's user.
    match scrape_as(&caps, true) {
        Some((_, seen)) => assert!(!seen, "hidepid=2 hid {name}, yet serve exported it"),
        None => common::skip_part!("the hidepid part: cannot mount /proc with hidepid here"),
    }
}

/// The files in `dir`, by name.
fn names_in(dir: &Path) -> Vec<String> {
    let mut v: Vec<String> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    v.sort();
    v
}

#[test]
fn mem_and_cache_textfile_write_the_prom_file_and_no_temporary_file_stays() {
    let dir = tempfile::tempdir().unwrap();
    common::tally()
        .arg("mem")
        .arg("--textfile")
        .arg(dir.path())
        .assert()
        .success();
    common::tally()
        .args(["cache", "--textfile"])
        .arg(dir.path())
        .arg(sleep_binary())
        .assert()
        .success();
    assert_eq!(names_in(dir.path()), ["tally_cache.prom", "tally_mem.prom"]);
    let mem = std::fs::read_to_string(dir.path().join("tally_mem.prom")).unwrap();
    assert!(mem.contains("tally_mem_total_pss_bytes "), "{mem}");
    let cache = std::fs::read_to_string(dir.path().join("tally_cache.prom")).unwrap();
    assert!(cache.contains("tally_cache_size_bytes{path="), "{cache}");
    let mode = std::fs::metadata(dir.path().join("tally_mem.prom"))
        .unwrap()
        .permissions()
        .mode();
    assert_eq!(mode & 0o777, 0o644, "node_exporter must be able to read it");
    // A directory that is not there: an error naming it, exit 1.
    common::tally()
        .arg("mem")
        .arg("--textfile")
        .arg(dir.path().join("missing"))
        .assert()
        .code(1)
        .stderr(predicates::str::contains("missing"));
    // --every without --textfile is bad usage.
    common::tally()
        .args(["mem", "--every", "5"])
        .assert()
        .code(2);
}

#[test]
fn mem_textfile_every_rewrites_until_sigterm_and_exits_0() {
    let dir = tempfile::tempdir().unwrap();
    let child = common::tally_std()
        .arg("mem")
        .arg("--textfile")
        .arg(dir.path())
        .args(["--every", "0.2"])
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let path = dir.path().join("tally_mem.prom");
    let start = Instant::now();
    let mut writes = 0;
    let mut last = None;
    while writes < 3 {
        let now = std::fs::metadata(&path).and_then(|m| m.modified()).ok();
        if now.is_some() && now != last {
            writes += 1;
            last = now;
        }
        assert!(start.elapsed() < Duration::from_secs(30), "no rewrite");
        std::thread::sleep(Duration::from_millis(20));
    }
    common::command("kill")
        .args(["-s", "TERM", &child.id().to_string()])
        .status()
        .unwrap();
    let out = common::wait_or_kill(child, Duration::from_secs(20));
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(names_in(dir.path()), ["tally_mem.prom"]);
}

#[test]
fn serve_exports_the_last_result_of_the_configured_benchmarks() {
    let dir = tempfile::tempdir().unwrap();
    let s = serve(
        Some("[mem]\nenabled = false\n[bench]\nnames = [\"syscall\"]\ninterval = 3600\n"),
        dir.path(),
    );
    let start = Instant::now();
    let body = loop {
        let (_, _, body) = get(s.addr, "/metrics", &[]).expect("metrics");
        if body.contains("tally_serve_collector_runs_total{collector=\"bench\"} 1") {
            break body;
        }
        assert!(start.elapsed() < Duration::from_secs(60), "no bench result");
        std::thread::sleep(Duration::from_millis(100));
    };
    assert!(
        body.contains(
            "tally_bench_median_seconds{benchmark=\"syscall\",figure=\"syscall.getpid\"}"
        ),
        "{body}"
    );
    // The mem collector is off: none of its families.
    assert!(!body.contains("tally_mem_"), "{body}");
}

/// Scrapes at once and within `min_interval` share one scan: the scan
/// never runs twice at once, and a scrape soon after gets its result.
#[test]
fn serve_scans_once_for_concurrent_scrapes_within_min_interval() {
    let dir = tempfile::tempdir().unwrap();
    let s = serve(Some("min_interval = 600\n"), dir.path());
    let addr = s.addr;
    let scrapes: Vec<_> = (0..8)
        .map(|_| std::thread::spawn(move || get(addr, "/metrics", &[])))
        .collect();
    for t in scrapes {
        assert_eq!(t.join().unwrap().map(|r| r.0), Some(200));
    }
    let (_, _, body) = get(addr, "/metrics", &[]).expect("metrics");
    assert!(
        body.contains("tally_serve_collector_runs_total{collector=\"mem\"} 1\n"),
        "{body}"
    );
    assert!(
        body.contains("tally_serve_cached_scrapes_total 8\n"),
        "{body}"
    );
}

/// A file-capability install runs `tally mem` only, and once: `serve` and
/// `--every` are refused; one `--textfile` write works (after the
/// privilege is dropped).
#[test]
fn capability_install_refuses_serve_and_every_but_writes_one_textfile() {
    use std::os::unix::fs::MetadataExt;
    common::require!(common::can_switch_users());
    common::require!(common::tool("setcap", "libcap2-bin"));
    let dir = tempfile::tempdir().unwrap();
    let bin = common::copy_for_others(dir.path(), "tally");
    let set = common::command("setcap")
        .arg("cap_sys_ptrace,cap_dac_read_search+ep")
        .arg(&bin)
        .status()
        .unwrap();
    assert!(set.success(), "setcap failed");
    let out_dir = dir.path().join("textfile");
    std::fs::create_dir(&out_dir).unwrap();
    let chown = common::command("chown")
        .arg("65534:65534")
        .arg(&out_dir)
        .status()
        .unwrap();
    assert!(chown.success());
    let as_nobody = |args: &[&str]| {
        common::command("setpriv")
            .args(["--reuid=65534", "--regid=65534", "--clear-groups"])
            .arg(&bin)
            .args(args)
            .output()
            .unwrap()
    };
    // Where the kernel ignores file capabilities (a nosuid mount,
    // no_new_privs), the copy is an ordinary tally: nothing to test.
    let probe = as_nobody(&["mem", "--format", "json"]);
    let report: serde_json::Value = serde_json::from_slice(&probe.stdout).unwrap_or_default();
    // User 65534 owns no process here but this tally, which leaves itself
    // out: it counts processes only with the capabilities in effect.
    if report["total"]["processes"].as_u64().unwrap_or(0) == 0 {
        common::skip!("file capabilities do not take effect here (a nosuid mount or no_new_privs)");
    }
    let dir_arg = out_dir.to_str().unwrap();
    let out = as_nobody(&["mem", "--textfile", dir_arg]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    let written = out_dir.join("tally_mem.prom");
    assert_eq!(std::fs::metadata(&written).unwrap().uid(), 65534);
    let text = std::fs::read_to_string(&written).unwrap();
    assert!(text.contains("tally_mem_total_pss_bytes"), "{text}");
    let out = as_nobody(&["mem", "--textfile", dir_arg, "--every", "5"]);
    assert_eq!(
        out.status.code(),
        Some(2),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let out = as_nobody(&["serve", "--listen", &format!("127.0.0.1:{}", free_port())]);
    assert_eq!(
        out.status.code(),
        Some(1),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(String::from_utf8_lossy(&out.stderr).contains("runs nothing else"));
}

/// The value of the sample `series` (name and labels as written) in a
/// Prometheus text body.
fn sample_of(body: &str, series: &str) -> Option<f64> {
    body.lines()
        .find_map(|l| l.strip_prefix(series)?.strip_prefix(' ')?.parse().ok())
}

#[test]
fn a_run_checks_peak_memory_is_its_own_not_the_servers() {
    // A forked command starts with a copy of its parent's memory, which the
    // kernel counts into its peak: checks forked from the server read the
    // server's memory (782-918 kB for a static main(){} of 548 kB).
    let dir = tempfile::tempdir().unwrap();
    let tiny = common::tiny_static_command(dir.path());
    let alone = common::tally_std()
        .args(["run", "--format", "json", "-o", "-", "--"])
        .arg(&tiny)
        .output()
        .expect("tally run");
    let alone: serde_json::Value = serde_json::from_slice(&alone.stdout).expect("json");
    let alone = alone["runs"][0]["max_rss_bytes"].as_f64().expect("bytes");
    let config = format!(
        "[[run]]\nname = \"tiny\"\ncommand = [\"{}\"]\ninterval = 1\n",
        tiny.display()
    );
    let s = serve(Some(&config), dir.path());
    // Scrapes make the server scan (and hold) every process's memory; the
    // check runs every second meanwhile.
    let start = Instant::now();
    let mut seen = Vec::new();
    let mut last_run = None;
    while seen.len() < 3 {
        assert!(start.elapsed() < Duration::from_secs(30), "{seen:?}");
        let (_, _, body) = get(s.addr, "/metrics", &[]).expect("metrics");
        let when = sample_of(
            &body,
            "tally_serve_run_last_run_timestamp_seconds{check=\"tiny\"}",
        );
        let rss = sample_of(&body, "tally_run_max_rss_bytes{check=\"tiny\"}");
        if let (Some(when), Some(rss)) = (when, rss)
            && last_run != Some(when)
        {
            last_run = Some(when);
            seen.push(rss);
        }
        std::thread::sleep(Duration::from_millis(500));
    }
    for v in &seen {
        assert!(
            *v <= alone + 64.0 * 1024.0,
            "the check read {v} bytes, tally run {alone}: {seen:?}"
        );
    }
}

// ---- TLS, basic authentication, limits (--web-config) ----

/// A test PKI in `dir`: a CA, a server certificate for 127.0.0.1 and
/// localhost signed by it, a client certificate signed by it (SAN
/// `scraper.example`), and a key of no certificate.
struct Pki {
    ca: PathBuf,
    cert: PathBuf,
    key: PathBuf,
    client_cert: PathBuf,
    client_key: PathBuf,
    stray_key: PathBuf,
}

fn pki(dir: &Path) -> Pki {
    use rcgen::{BasicConstraints, CertificateParams, DnType, IsCa, Issuer, KeyPair};
    let mut ca_params = CertificateParams::new(Vec::<String>::new()).unwrap();
    ca_params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
    ca_params
        .distinguished_name
        .push(DnType::CommonName, "tally test CA");
    let ca_key = KeyPair::generate().unwrap();
    let ca_cert = ca_params.self_signed(&ca_key).unwrap();
    let issuer = Issuer::new(ca_params, ca_key);
    let leaf = |sans: Vec<String>, cn: &str| {
        let mut p = CertificateParams::new(sans).unwrap();
        p.distinguished_name.push(DnType::CommonName, cn);
        let key = KeyPair::generate().unwrap();
        let cert = p.signed_by(&key, &issuer).unwrap();
        (cert.pem(), key.serialize_pem())
    };
    let (cert, key) = leaf(
        vec!["127.0.0.1".to_string(), "localhost".to_string()],
        "tally",
    );
    let (client_cert, client_key) = leaf(vec!["scraper.example".to_string()], "scraper");
    let stray = KeyPair::generate().unwrap().serialize_pem();
    let write = |name: &str, text: &str| {
        let path = dir.join(name);
        std::fs::write(&path, text).unwrap();
        path
    };
    Pki {
        ca: write("ca.crt", &ca_cert.pem()),
        cert: write("tally.crt", &cert),
        key: write("tally.key", &key),
        client_cert: write("client.crt", &client_cert),
        client_key: write("client.key", &client_key),
        stray_key: write("stray.key", &stray),
    }
}

/// A bcrypt hash of `password` (cost 4: the tests check many times).
fn bcrypt_hash(password: &str) -> String {
    bcrypt::hash(password, 4).unwrap()
}

/// Writes the web config `text` as `dir/web.yml`; returns its path.
fn web_config(dir: &Path, text: &str) -> PathBuf {
    let path = dir.join("web.yml");
    std::fs::write(&path, text).unwrap();
    path
}

/// The usual web config: TLS with `pki`'s certificate, one user.
fn tls_and_user(pki: &Pki, user: &str, password: &str) -> String {
    format!(
        "tls_server_config:\n  cert_file: {}\n  key_file: {}\nbasic_auth_users:\n  {user}: '{}'\n",
        pki.cert.display(),
        pki.key.display(),
        bcrypt_hash(password)
    )
}

/// A TLS client trusting `ca`, with a client certificate if given.
fn tls_client(ca: &Path, client: Option<(&Path, &Path)>) -> Arc<rustls::ClientConfig> {
    use rustls::pki_types::pem::PemObject;
    use rustls::pki_types::{CertificateDer, PrivateKeyDer};
    let mut roots = rustls::RootCertStore::empty();
    for c in CertificateDer::pem_file_iter(ca).unwrap() {
        roots.add(c.unwrap()).unwrap();
    }
    let b = rustls::ClientConfig::builder_with_provider(Arc::new(
        rustls::crypto::ring::default_provider(),
    ))
    .with_safe_default_protocol_versions()
    .unwrap()
    .with_root_certificates(roots);
    Arc::new(match client {
        Some((cert, key)) => b
            .with_client_auth_cert(
                CertificateDer::pem_file_iter(cert)
                    .unwrap()
                    .map(Result::unwrap)
                    .collect(),
                PrivateKeyDer::from_pem_file(key).unwrap(),
            )
            .unwrap(),
        None => b.with_no_client_auth(),
    })
}

/// `Authorization: Basic …` for `user` and `password`.
fn basic(user: &str, password: &str) -> String {
    use base64::Engine;
    format!(
        "Authorization: Basic {}",
        base64::engine::general_purpose::STANDARD.encode(format!("{user}:{password}"))
    )
}

/// Sends `request` over TLS and reads the answer: status, head, body; an
/// error when the handshake or the exchange fails.
fn tls_exchange(
    addr: SocketAddr,
    client: &Arc<rustls::ClientConfig>,
    request: &[u8],
) -> Result<(u16, String, String), String> {
    let tcp =
        TcpStream::connect_timeout(&addr, Duration::from_secs(5)).map_err(|e| e.to_string())?;
    tcp.set_read_timeout(Some(Duration::from_secs(60)))
        .map_err(|e| e.to_string())?;
    let name = rustls::pki_types::ServerName::try_from("127.0.0.1").unwrap();
    let conn =
        rustls::ClientConnection::new(Arc::clone(client), name).map_err(|e| e.to_string())?;
    let mut tls = rustls::StreamOwned::new(conn, tcp);
    tls.write_all(request).map_err(|e| e.to_string())?;
    let mut raw = Vec::new();
    match tls.read_to_end(&mut raw) {
        Ok(_) => {}
        // An answer already read counts, whatever came after it.
        Err(e) if !raw.is_empty() => println!("after the answer: {e}"),
        Err(e) => return Err(e.to_string()),
    }
    parse_response(&raw)
        .ok_or_else(|| format!("no HTTP answer: {:?}", String::from_utf8_lossy(&raw)))
}

/// One GET over TLS with `headers`.
fn https_get(
    addr: SocketAddr,
    client: &Arc<rustls::ClientConfig>,
    path: &str,
    headers: &[&str],
) -> Result<(u16, String, String), String> {
    let mut req = format!("GET {path} HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\n");
    for h in headers {
        req.push_str(h);
        req.push_str("\r\n");
    }
    req.push_str("\r\n");
    tls_exchange(addr, client, req.as_bytes())
}

#[test]
fn serve_over_tls_answers_401_without_the_right_password_and_200_with_it() {
    let dir = tempfile::tempdir().unwrap();
    let pki = pki(dir.path());
    let web = web_config(
        dir.path(),
        &format!(
            "{}http_server_config:\n  headers:\n    X-Content-Type-Options: nosniff\n",
            tls_and_user(&pki, "prometheus", "s3cret")
        ),
    );
    let s = serve_with(None, &["--web-config", web.to_str().unwrap()], dir.path());
    assert!(s.log().contains("tally: serving https://"), "{}", s.log());
    let client = tls_client(&pki.ca, None);
    for (what, headers) in [
        ("no credentials", vec![]),
        ("a wrong password", vec![basic("prometheus", "wrong")]),
        ("an unknown user", vec![basic("nobody", "s3cret")]),
        ("a user without a password", vec![basic("prometheus", "")]),
        (
            "another scheme",
            vec!["Authorization: Bearer s3cret".to_string()],
        ),
    ] {
        let h: Vec<&str> = headers.iter().map(String::as_str).collect();
        let (status, head, body) = https_get(s.addr, &client, "/metrics", &h).expect(what);
        assert_eq!(status, 401, "{what}: {head}");
        assert!(
            head.contains("\r\nWWW-Authenticate: Basic"),
            "{what}: {head}"
        );
        assert!(!body.contains("tally_"), "{what}: metrics leaked: {body}");
    }
    // Every path needs the password.
    let (status, _, _) = https_get(s.addr, &client, "/healthz", &[]).unwrap();
    assert_eq!(status, 401);
    let right = basic("prometheus", "s3cret");
    let (status, head, body) = https_get(s.addr, &client, "/metrics", &[&right]).unwrap();
    assert_eq!(status, 200, "{head}");
    assert!(
        head.contains("\r\nX-Content-Type-Options: nosniff"),
        "{head}"
    );
    assert!(body.contains("tally_mem_pss_bytes{program="), "{body}");
    assert!(
        body.contains("tally_build_info{version=\"0.1.0\",revision=\""),
        "{body}"
    );
    // Plain HTTP on the TLS port: a 400 saying so, never the metrics.
    let mut plain = TcpStream::connect(s.addr).unwrap();
    plain
        .set_read_timeout(Some(Duration::from_secs(30)))
        .unwrap();
    plain
        .write_all(format!("GET /metrics HTTP/1.1\r\nHost: x\r\n{right}\r\n\r\n").as_bytes())
        .unwrap();
    let mut raw = Vec::new();
    let _ = plain.read_to_end(&mut raw);
    let text = String::from_utf8_lossy(&raw);
    assert!(
        text.starts_with("HTTP/1.0 400 Bad Request\r\n"),
        "plain HTTP got: {text:?}"
    );
    assert!(text.contains("Client sent an HTTP request to an HTTPS server."));
    assert!(!text.contains("tally_"), "{text}");
    // Garbage instead of a handshake: the connection is closed, and the
    // server goes on.
    assert_eq!(raw_status(s.addr, b"\x16\x03\x01\x00\x05hello", 30), None);
    let (status, _, _) = https_get(s.addr, &client, "/metrics", &[&right]).unwrap();
    assert_eq!(status, 200);
}

/// Hostile or odd requests, each with the status it must get; sent in
/// plain HTTP and in TLS, the answers must be the same.
fn hostile_requests() -> Vec<(&'static str, Vec<u8>, u16)> {
    let r = |s: &str| s.as_bytes().to_vec();
    let many: String = (0..100).map(|i| format!("X-{i}: y\r\n")).collect();
    vec![
        (
            "a plain scrape",
            r("GET /metrics HTTP/1.1\r\nHost: x\r\n\r\n"),
            200,
        ),
        ("HTTP/1.0", r("GET /metrics HTTP/1.0\r\n\r\n"), 200),
        (
            "a query",
            r("GET /metrics?debug=1&x=%00 HTTP/1.1\r\n\r\n"),
            200,
        ),
        ("HEAD", r("HEAD /metrics HTTP/1.1\r\n\r\n"), 200),
        (
            "bare LF line ends",
            r("GET /healthz HTTP/1.1\nHost: x\n\n"),
            200,
        ),
        (
            "a header over max_header_bytes",
            r(&format!(
                "GET / HTTP/1.1\r\nX-Big: {}\r\n\r\n",
                "a".repeat(4096)
            )),
            431,
        ),
        (
            "a URI over max_header_bytes",
            r(&format!("GET /{} HTTP/1.1\r\n\r\n", "m".repeat(4096))),
            431,
        ),
        (
            "100 headers",
            r(&format!("GET / HTTP/1.1\r\n{many}\r\n")),
            431,
        ),
        (
            "binary garbage",
            b"\x00\x01\x02 nonsense\r\n\r\n".to_vec(),
            400,
        ),
        (
            "a header without a colon",
            r("GET / HTTP/1.1\r\nNoColon\r\n\r\n"),
            400,
        ),
        (
            "a space in a header name",
            r("GET / HTTP/1.1\r\nBad Name: x\r\n\r\n"),
            400,
        ),
        (
            "a NUL in the path",
            b"GET /met\x00rics HTTP/1.1\r\n\r\n".to_vec(),
            400,
        ),
        ("HTTP/9.9", r("GET / HTTP/9.9\r\n\r\n"), 400),
        ("HTTP/0.9", r("GET /metrics\r\n\r\n"), 400),
        (
            "two Authorization headers",
            r("GET / HTTP/1.1\r\nAuthorization: Basic a\r\nAuthorization: Basic b\r\n\r\n"),
            400,
        ),
        (
            "POST",
            r("POST /metrics HTTP/1.1\r\nContent-Length: 5\r\n\r\nhello"),
            405,
        ),
        (
            "PUT",
            r("PUT /metrics HTTP/1.1\r\nContent-Length: 0\r\n\r\n"),
            405,
        ),
        ("DELETE", r("DELETE /metrics HTTP/1.1\r\n\r\n"), 405),
        ("OPTIONS *", r("OPTIONS * HTTP/1.1\r\n\r\n"), 405),
        ("TRACE", r("TRACE / HTTP/1.1\r\n\r\n"), 405),
        (
            "CONNECT",
            r("CONNECT example.com:443 HTTP/1.1\r\n\r\n"),
            405,
        ),
        (
            "a lowercase method",
            r("get /metrics HTTP/1.1\r\n\r\n"),
            405,
        ),
        (
            "chunked GET (smuggling)",
            r(
                "GET /metrics HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\nGET /x HTTP/1.1\r\n\r\n",
            ),
            200,
        ),
        (
            "a path outside",
            r("GET /../../etc/passwd HTTP/1.1\r\n\r\n"),
            404,
        ),
        ("an encoded path", r("GET /%6Detrics HTTP/1.1\r\n\r\n"), 404),
        ("a trailing slash", r("GET /metrics/ HTTP/1.1\r\n\r\n"), 404),
        ("a double slash", r("GET //metrics HTTP/1.1\r\n\r\n"), 404),
        (
            "an absolute URI",
            r("GET http://evil.example/metrics HTTP/1.1\r\n\r\n"),
            404,
        ),
        (
            "a head never finished",
            r("GET /metrics HTTP/1.1\r\nHost: x\r\n"),
            408,
        ),
    ]
}

#[test]
fn serve_over_tls_answers_hostile_requests_as_in_plain_http() {
    let dir = tempfile::tempdir().unwrap();
    let pki = pki(dir.path());
    let web = web_config(
        dir.path(),
        &format!(
            "tls_server_config:\n  cert_file: {}\n  key_file: {}\n",
            pki.cert.display(),
            pki.key.display()
        ),
    );
    let limits = "min_interval = 600\n[limits]\nheader_timeout = 1\nmax_header_bytes = 2048\n";
    let plain = serve(Some(limits), dir.path());
    let tls = serve_with(
        Some(limits),
        &["--web-config", web.to_str().unwrap()],
        dir.path(),
    );
    let client = tls_client(&pki.ca, None);
    let cases = hostile_requests();
    assert!(cases.len() >= 27);
    for (what, request, status) in &cases {
        let over_tls = tls_exchange(tls.addr, &client, request).map(|r| r.0);
        let in_plain = raw_status(plain.addr, request, 30);
        assert_eq!(in_plain, Some(*status), "plain HTTP, {what}");
        assert_eq!(over_tls, Ok(*status), "TLS, {what}");
    }
    let (status, _, body) = https_get(tls.addr, &client, "/metrics", &[]).unwrap();
    assert_eq!(status, 200);
    assert!(body.contains("tally_mem_pss_bytes"));
}

#[test]
fn serve_requires_and_verifies_client_certificates_when_told() {
    let dir = tempfile::tempdir().unwrap();
    let pki = pki(dir.path());
    let tls = format!(
        "tls_server_config:\n  cert_file: {}\n  key_file: {}\n  client_auth_type: RequireAndVerifyClientCert\n  client_ca_file: {}\n",
        pki.cert.display(),
        pki.key.display(),
        pki.ca.display()
    );
    let web = web_config(dir.path(), &tls);
    let s = serve_with(None, &["--web-config", web.to_str().unwrap()], dir.path());
    let anonymous = tls_client(&pki.ca, None);
    let with_cert = tls_client(&pki.ca, Some((&pki.client_cert, &pki.client_key)));
    let refused = https_get(s.addr, &anonymous, "/metrics", &[]);
    assert!(refused.is_err(), "no client certificate, yet: {refused:?}");
    let (status, _, body) = https_get(s.addr, &with_cert, "/metrics", &[]).unwrap();
    assert_eq!(status, 200);
    assert!(body.contains("tally_mem_pss_bytes"));
    drop(s);
    // client_allowed_sans: the certificate must name one of them.
    for (sans, allowed) in [("other.example", false), ("scraper.example", true)] {
        let web = web_config(
            dir.path(),
            &format!("{tls}  client_allowed_sans: [\"{sans}\"]\n"),
        );
        let s = serve_with(None, &["--web-config", web.to_str().unwrap()], dir.path());
        let got = https_get(s.addr, &with_cert, "/metrics", &[]);
        assert_eq!(got.is_ok(), allowed, "client_allowed_sans {sans}: {got:?}");
    }
}

/// The mistakes a web config can hold: each stops tally serve at start
/// (exit 1, nothing listening) with the file, the line and the fix.
#[test]
fn serve_refuses_a_bad_web_config_at_start_naming_file_line_and_fix() {
    let dir = tempfile::tempdir().unwrap();
    let pki = pki(dir.path());
    let hash = bcrypt_hash("x");
    let fifo = dir.path().join("fifo.yml");
    let made = common::command("mkfifo").arg(&fifo).status().unwrap();
    assert!(made.success());
    let cert = pki.cert.display().to_string();
    let key = pki.key.display().to_string();
    let cases: Vec<(String, Option<&str>, &str)> = vec![
        // (file text, None: a path that is not there; the words expected)
        (String::new(), None, "missing.yml: No such file"),
        (
            format!("tls_server_config:\n  cert_file: {cert}\n  key_file: {key}\n  colour: blue\n"),
            Some(":4:"),
            "unknown field `colour`",
        ),
        (
            "basic_auth_users:\n  prometheus: plaintext\n".to_string(),
            Some(":2:"),
            "not a bcrypt hash",
        ),
        (
            format!(
                "tls_server_config:\n  cert_file: {cert}\n  key_file: {}\n",
                pki.stray_key.display()
            ),
            Some(":3:"),
            "is not the key of the certificate",
        ),
        (
            format!("tls_server_config:\n  cert_file: nope.crt\n  key_file: {key}\n"),
            Some(":2:"),
            "cert_file: cannot read the PEM file",
        ),
        (
            format!("tls_server_config:\n  cert_file: {key}\n  key_file: {key}\n"),
            Some(":2:"),
            "no certificate in it",
        ),
        (
            format!("tls_server_config:\n  cert_file: {cert}\n  key_file: {cert}\n"),
            Some(":3:"),
            "no PEM private key",
        ),
        (
            format!(
                "tls_server_config:\n  cert_file: {cert}\n  key_file: {key}\n  min_version: TLS14\n"
            ),
            Some(":4:"),
            "unknown TLS version",
        ),
        (
            format!("basic_auth_users:\n  a: '{hash}'\nrate_limit:\n  interval: soon\n"),
            Some(":4:"),
            "not a duration",
        ),
    ];
    for (i, (text, line, words)) in cases.iter().enumerate() {
        let path = match line {
            None => dir.path().join("missing.yml"),
            Some(_) => {
                let p = dir.path().join(format!("web{i}.yml"));
                std::fs::write(&p, text).unwrap();
                p
            }
        };
        let port = free_port();
        let out = common::tally()
            .args([
                "serve",
                "--listen",
                &format!("127.0.0.1:{port}"),
                "--web-config",
            ])
            .arg(&path)
            .timeout(Duration::from_secs(20))
            .output()
            .unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(1), "case {i}: {stderr}");
        let file = path.file_name().unwrap().to_string_lossy();
        assert!(
            stderr.contains(&format!("{file}{}", line.unwrap_or(""))),
            "case {i}: {stderr}"
        );
        assert!(stderr.contains(words), "case {i}: {stderr}");
        assert!(!stderr.contains("serving"), "case {i}: {stderr}");
    }
    // A FIFO is refused, not waited on.
    let out = common::tally()
        .args([
            "serve",
            "--listen",
            &format!("127.0.0.1:{}", free_port()),
            "--web-config",
        ])
        .arg(&fifo)
        .timeout(Duration::from_secs(20))
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert!(stderr.contains("not a regular file"), "{stderr}");
}

#[test]
fn sighup_rereads_the_web_config_and_a_bad_new_file_keeps_the_old_one() {
    let dir = tempfile::tempdir().unwrap();
    let pki = pki(dir.path());
    let web = web_config(dir.path(), &tls_and_user(&pki, "prometheus", "first"));
    let s = serve_with(None, &["--web-config", web.to_str().unwrap()], dir.path());
    let client = tls_client(&pki.ca, None);
    let status = |password: &str| {
        https_get(
            s.addr,
            &client,
            "/healthz",
            &[&basic("prometheus", password)],
        )
        .expect("an answer")
        .0
    };
    assert_eq!((status("first"), status("second")), (200, 401));
    // A new password: in force after SIGHUP.
    web_config(dir.path(), &tls_and_user(&pki, "prometheus", "second"));
    s.signal("HUP");
    s.wait_for_log("SIGHUP: re-read the web config", 20);
    assert_eq!((status("first"), status("second")), (401, 200));
    // A bad file (an unknown key): logged with its line, the old one stays.
    std::fs::write(
        &web,
        format!(
            "{}colour: blue\n",
            tls_and_user(&pki, "prometheus", "third")
        ),
    )
    .unwrap();
    s.signal("HUP");
    let log = s.wait_for_log("stays in force", 20);
    assert!(log.contains("web.yml:6: unknown field `colour`"), "{log}");
    assert_eq!((status("second"), status("third")), (200, 401));
    // A key that does not match its certificate (a rotation half done).
    std::fs::write(
        &web,
        format!(
            "tls_server_config:\n  cert_file: {}\n  key_file: {}\n",
            pki.cert.display(),
            pki.stray_key.display()
        ),
    )
    .unwrap();
    s.signal("HUP");
    s.wait_for_log("is not the key of the certificate", 20);
    assert_eq!(status("second"), 200);
    let (code, log) = s.stop(15);
    assert_eq!(code, Some(0), "{log}");
}

/// 100 clients that open a TCP connection and send nothing, and 100 that
/// start a TLS handshake and stall, do not keep an authorised scrape out:
/// the oldest stalled connection makes room. The timeouts are set far
/// above the bound asserted, so only that makes the scrape pass. (The
/// latency itself is measured by benches/serve_scrape.py --half-open.)
#[test]
fn half_open_connections_tcp_and_tls_do_not_keep_an_authorised_scrape_out() {
    let dir = tempfile::tempdir().unwrap();
    let pki = pki(dir.path());
    let web = web_config(dir.path(), &tls_and_user(&pki, "prometheus", "s3cret"));
    let s = serve_with(
        Some("[limits]\nhandshake_timeout = 300\nheader_timeout = 300\n"),
        &["--web-config", web.to_str().unwrap()],
        dir.path(),
    );
    let client = tls_client(&pki.ca, None);
    let right = basic("prometheus", "s3cret");
    // The first scrape pays for the scan and the bcrypt check.
    assert_eq!(
        https_get(s.addr, &client, "/metrics", &[&right]).map(|r| r.0),
        Ok(200)
    );
    let mut held = Vec::new();
    for i in 0..200 {
        let mut c = TcpStream::connect(s.addr).expect("connect");
        if i % 2 == 1 {
            // A TLS record header promising a ClientHello that never comes.
            c.write_all(&[0x16, 0x03, 0x01, 0x02, 0x00, 0x01]).unwrap();
        }
        held.push(c);
    }
    std::thread::sleep(Duration::from_millis(300));
    let threads = status_field(s.pid(), "Threads");
    let start = Instant::now();
    let got = https_get(s.addr, &client, "/metrics", &[&right]);
    let took = start.elapsed();
    let (status, _, body) = got.expect("the scrape is answered");
    assert_eq!(status, 200);
    assert!(body.contains("tally_mem_pss_bytes"));
    println!("an authorised scrape with 200 half-open connections took {took:?}");
    assert!(
        took < Duration::from_secs(60),
        "the scrape waited {took:?}: as long as a timeout, not a bounded wait"
    );
    assert!(
        threads <= 64 + 16,
        "{threads} threads for 200 stalled clients"
    );
    drop(held);
}

/// Every limit of the [limits] section is in force.
#[test]
fn limits_from_the_config_file_are_in_force() {
    let dir = tempfile::tempdir().unwrap();
    let pki = pki(dir.path());
    let web = web_config(
        dir.path(),
        &format!(
            "tls_server_config:\n  cert_file: {}\n  key_file: {}\n",
            pki.cert.display(),
            pki.key.display()
        ),
    );
    let s = serve_with(
        Some("[mem]\nenabled = false\n[limits]\nmax_connections = 4\nhandshake_timeout = 0.5\n"),
        &["--web-config", web.to_str().unwrap()],
        dir.path(),
    );
    // A stalled handshake is dropped after handshake_timeout, well before
    // the default (10 s) would drop it.
    let mut stalled = TcpStream::connect(s.addr).unwrap();
    stalled.write_all(&[0x16, 0x03, 0x01]).unwrap();
    stalled
        .set_read_timeout(Some(Duration::from_secs(30)))
        .unwrap();
    let start = Instant::now();
    let mut buf = [0u8; 64];
    let n = stalled.read(&mut buf).unwrap_or(0);
    let took = start.elapsed();
    assert_eq!(n, 0, "the server answered a stalled handshake");
    assert!(
        took < Duration::from_secs(8),
        "a stalled handshake was held {took:?} (handshake_timeout = 0.5)"
    );
    // max_connections = 4: 50 idle clients leave at most 4 connection
    // threads, and a scrape still gets in.
    let before = status_field(s.pid(), "Threads");
    let idle: Vec<TcpStream> = (0..50)
        .map(|_| TcpStream::connect(s.addr).unwrap())
        .collect();
    std::thread::sleep(Duration::from_millis(300));
    let during = status_field(s.pid(), "Threads");
    let client = tls_client(&pki.ca, None);
    let (status, _, _) = https_get(s.addr, &client, "/metrics", &[]).unwrap();
    assert_eq!(status, 200);
    assert!(
        during <= before + 4,
        "{during} threads with 50 idle clients, {before} before (max_connections = 4)"
    );
    drop(idle);
}

/// A non-loopback address without TLS or authentication says so at start,
/// in one line; loopback does not.
#[test]
fn serve_warns_in_one_line_when_others_can_read_it_without_tls_or_a_password() {
    let dir = tempfile::tempdir().unwrap();
    let pki = pki(dir.path());
    let addr: SocketAddr = format!("0.0.0.0:{}", free_port()).parse().unwrap();
    let s = serve_on(addr, None, &[], dir.path());
    let (code, log) = s.stop(15);
    assert_eq!(code, Some(0), "{log}");
    let warnings: Vec<&str> = log.lines().filter(|l| l.contains("warning:")).collect();
    assert_eq!(warnings.len(), 1, "{log}");
    assert!(
        warnings[0].contains("plain HTTP without authentication"),
        "{log}"
    );
    // TLS and a password: no warning.
    let web = web_config(dir.path(), &tls_and_user(&pki, "p", "s"));
    let s = serve_on(
        addr,
        None,
        &["--web-config", web.to_str().unwrap()],
        dir.path(),
    );
    let (_, log) = s.stop(15);
    assert!(!log.contains("warning:"), "{log}");
    // Loopback: no warning.
    let s = serve(None, dir.path());
    let (_, log) = s.stop(15);
    assert!(!log.contains("warning:"), "{log}");
}

/// The bench collector runs when a scrape asks, not at start, and its
/// result is kept for its interval.
#[test]
fn the_bench_collector_runs_lazily_and_keeps_its_result_for_its_interval() {
    let dir = tempfile::tempdir().unwrap();
    let s = serve(
        Some("[mem]\nenabled = false\n[bench]\nnames = [\"syscall\"]\ninterval = 3600\n"),
        dir.path(),
    );
    // Nothing scraped for a while: nothing benchmarked.
    std::thread::sleep(Duration::from_secs(2));
    let (_, _, first) = get(s.addr, "/metrics", &[]).expect("metrics");
    assert!(
        !first.contains("collector=\"bench\""),
        "the bench ran before any scrape:\n{first}"
    );
    let start = Instant::now();
    loop {
        let (_, _, body) = get(s.addr, "/metrics", &[]).expect("metrics");
        if body.contains("tally_serve_collector_runs_total{collector=\"bench\"} 1\n") {
            assert!(body.contains("tally_bench_median_seconds{benchmark=\"syscall\""));
            break;
        }
        assert!(start.elapsed() < Duration::from_secs(60), "no bench result");
        std::thread::sleep(Duration::from_millis(100));
    }
    // Scraped again within the interval: the same result, no new run.
    for _ in 0..5 {
        let (_, _, body) = get(s.addr, "/metrics", &[]).expect("metrics");
        assert!(
            body.contains("tally_serve_collector_runs_total{collector=\"bench\"} 1\n"),
            "{body}"
        );
        std::thread::sleep(Duration::from_millis(200));
    }
}

#[test]
fn serve_is_scraped_over_https_with_basic_auth_by_a_real_prometheus() {
    let prometheus = Path::new("/usr/bin/prometheus");
    if !prometheus.is_file() {
        common::skip_without_tool!(
            "/usr/bin/prometheus",
            "tests/install-prometheus.sh installs Debian's prometheus"
        );
    }
    let dir = tempfile::tempdir().unwrap();
    let pki = pki(dir.path());
    let web = web_config(dir.path(), &tls_and_user(&pki, "prometheus", "s3cret"));
    let s = serve_with(
        Some("min_interval = 0.5\n"),
        &["--web-config", web.to_str().unwrap()],
        dir.path(),
    );
    let prom_addr: SocketAddr = format!("127.0.0.1:{}", free_port()).parse().unwrap();
    let config = dir.path().join("prometheus.yml");
    std::fs::write(
        &config,
        format!(
            "global:\n  scrape_interval: 1s\n  scrape_timeout: 1s\nscrape_configs:\n  - job_name: tally\n    scheme: https\n    tls_config:\n      ca_file: {}\n    basic_auth:\n      username: prometheus\n      password: s3cret\n    static_configs:\n      - targets: ['{}']\n",
            pki.ca.display(),
            s.addr
        ),
    )
    .unwrap();
    let _prom = Prometheus(
        common::command(prometheus)
            .arg(format!("--config.file={}", config.display()))
            .arg(format!(
                "--storage.tsdb.path={}",
                dir.path().join("data").display()
            ))
            .arg(format!("--web.listen-address={prom_addr}"))
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("prometheus starts"),
    );
    let start = Instant::now();
    loop {
        let scrapes = query(prom_addr, "count_over_time(up{job=\"tally\"}[5m])");
        if scrapes.first().is_some_and(|(_, n)| *n >= 2.0) {
            break;
        }
        assert!(
            start.elapsed() < Duration::from_secs(90),
            "Prometheus did not scrape tally twice"
        );
        std::thread::sleep(Duration::from_millis(500));
    }
    let up = query(prom_addr, "up{job=\"tally\"} == 1");
    assert_eq!(up.len(), 1, "up{{job=\"tally\"}} is not 1: {up:?}");
    let build = query(prom_addr, "tally_build_info{job=\"tally\"}");
    assert_eq!(build.len(), 1, "{build:?}");
    assert_eq!(build[0].0["version"], "0.1.0", "{build:?}");
    // The same Prometheus with a wrong password: up == 0, the target
    // answered 401.
    let wrong = dir.path().join("wrong.yml");
    std::fs::write(
        &wrong,
        std::fs::read_to_string(&config)
            .unwrap()
            .replace("password: s3cret", "password: wrong")
            .replace("job_name: tally", "job_name: wrong"),
    )
    .unwrap();
    let prom2_addr: SocketAddr = format!("127.0.0.1:{}", free_port()).parse().unwrap();
    let _prom2 = Prometheus(
        common::command(prometheus)
            .arg(format!("--config.file={}", wrong.display()))
            .arg(format!(
                "--storage.tsdb.path={}",
                dir.path().join("data2").display()
            ))
            .arg(format!("--web.listen-address={prom2_addr}"))
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("prometheus starts"),
    );
    let start = Instant::now();
    loop {
        let scrapes = query(prom2_addr, "count_over_time(up{job=\"wrong\"}[5m])");
        if scrapes.first().is_some_and(|(_, n)| *n >= 2.0) {
            break;
        }
        assert!(start.elapsed() < Duration::from_secs(90), "no scrape");
        std::thread::sleep(Duration::from_millis(500));
    }
    let down = query(prom2_addr, "up{job=\"wrong\"} == 0");
    assert_eq!(down.len(), 1, "a wrong password was let in: {down:?}");
}

/// contrib/: the dashboard's top-k panels rank the programs of each host
/// (`topk by (instance)`), it has the periodic checks, and the Prometheus
/// scrape example passes `promtool check config`.
#[test]
fn contrib_dashboard_ranks_per_host_and_the_scrape_example_is_valid() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("contrib");
    let dash: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(root.join("grafana-tally.json")).unwrap())
            .unwrap();
    let exprs: Vec<String> = dash["panels"]
        .as_array()
        .unwrap()
        .iter()
        .flat_map(|p| p["targets"].as_array().cloned().unwrap_or_default())
        .filter_map(|t| t["expr"].as_str().map(str::to_string))
        .collect();
    let topk: Vec<&String> = exprs.iter().filter(|e| e.contains("topk")).collect();
    assert!(topk.len() >= 3, "{exprs:?}");
    for e in topk {
        assert!(e.starts_with("topk by (instance) ("), "{e}");
    }
    assert!(
        exprs
            .iter()
            .any(|e| e.contains("tally_serve_run_exit_code")),
        "{exprs:?}"
    );
    let Some(promtool) = which("promtool") else {
        common::skip_without_tool!("promtool", "tests/install-prometheus.sh installs it");
    };
    let dir = tempfile::tempdir().unwrap();
    let pki = pki(dir.path());
    let password = dir.path().join("tally.password");
    std::fs::write(&password, "change-me\n").unwrap();
    let text = std::fs::read_to_string(root.join("prometheus-scrape.yml"))
        .unwrap()
        .replace("/etc/prometheus/tally-ca.crt", pki.ca.to_str().unwrap())
        .replace("/etc/prometheus/tally.password", password.to_str().unwrap());
    assert!(text.contains("scheme: https") && text.contains("basic_auth:"));
    let config = dir.path().join("prometheus.yml");
    std::fs::write(&config, text).unwrap();
    let out = common::command(&promtool)
        .args(["check", "config"])
        .arg(&config)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
}

//! `tally serve`, and the textfile writers of `tally mem --textfile` and
//! `tally cache --textfile`.

use std::net::{SocketAddr, TcpListener, TcpStream};
use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::thread;
use std::time::{Duration, Instant};

use tally::cli;
use tally::mem::privilege::Privilege;
use tally::report::{Render, prometheus};
use tally::serve::{self, collect, config, http, textfile, web};

fn note(msg: &str) {
    tally::diag!("tally: {msg}");
}

/// Capabilities that widen what a scan sees, held without setuid or file
/// capabilities (systemd's `AmbientCapabilities=`): the scan then follows
/// the rules of the privileged `tally mem` (processes listed, named and
/// grouped with the user's own rights; only memory figures read with the
/// capabilities). Root is root: it sees everything anyway.
fn serve_privilege() -> Privilege {
    const CAP_DAC_READ_SEARCH: u32 = 2;
    const CAP_SYS_PTRACE: u32 = 19;
    let widening = (1u64 << CAP_DAC_READ_SEARCH) | (1u64 << CAP_SYS_PTRACE);
    match tally::sys::privilege::capabilities() {
        Ok((effective, _)) if tally::sys::geteuid() != 0 && effective & widening != 0 => {
            Privilege::Elevated {
                how: "capabilities",
            }
        }
        _ => Privilege::Ordinary,
    }
}

pub(super) fn serve_command(args: cli::serve::ServeArgs) -> u8 {
    // The file named on the command line, read once: nothing a client of
    // the endpoint sends is ever read as a path or a setting.
    let cfg = match &args.config {
        Some(path) => match config::load(path) {
            Ok(c) => c,
            Err(e) => {
                note(&e.to_string());
                return 1;
            }
        },
        None => config::Config::default(),
    };
    let web = match &args.web_config {
        Some(path) => match web::load(path) {
            Ok(w) => w,
            Err(e) => {
                note(&e.to_string());
                return 1;
            }
        },
        None => web::WebConfig::plain(),
    };
    for n in &web.notes {
        note(n);
    }
    if let Some(warning) = exposure_warning(args.listen, &web) {
        note(&warning);
    }
    let privilege = serve_privilege();
    if privilege.is_elevated() && !cfg.run.is_empty() {
        note(
            "the run collector's commands would inherit this tally's capabilities: run the \
             [[run]] checks from a second `tally serve` without capabilities",
        );
        return 1;
    }
    // SIGINT/TERM/HUP are blocked here, before any thread starts (threads
    // inherit the mask), and taken by this thread alone with sigwait; the
    // commands of the run collector start with an empty mask.
    let _old_mask = tally::sys::signals::block_forwarded();
    let listener = match TcpListener::bind(args.listen) {
        Ok(l) => l,
        Err(e) => {
            note(&format!(
                "cannot listen on {}: {e}; give a free address with --listen",
                args.listen
            ));
            return 1;
        }
    };
    let local = listener.local_addr().unwrap_or(args.listen);
    let limits = cfg.limits;
    let collectors = Arc::new(collect::Collectors::new(cfg, privilege));
    let stop = Arc::new(AtomicBool::new(false));
    let watch = Arc::new(collect::RunWatch::default());
    let mut threads = Vec::new();
    if !collectors.config().run.is_empty() {
        let (c, s, w) = (
            Arc::clone(&collectors),
            Arc::clone(&stop),
            Arc::clone(&watch),
        );
        threads.push(thread::spawn(move || c.run_loop(&s, &w)));
        let (s, w) = (Arc::clone(&stop), Arc::clone(&watch));
        threads.push(thread::spawn(move || {
            while !s.load(Ordering::SeqCst) {
                w.check(false);
                thread::sleep(Duration::from_millis(100));
            }
        }));
    }
    if collectors.config().bench.is_some() {
        // Not joined: a benchmark under way ends with the process.
        let (c, s) = (Arc::clone(&collectors), Arc::clone(&stop));
        let _ = thread::Builder::new()
            .name("tally-bench".into())
            .spawn(move || c.bench_loop(&s));
    }
    let scheme = if web.tls.is_some() { "https" } else { "http" };
    let exporter = Arc::new(serve::Exporter::new(Arc::clone(&collectors), web));
    let site: Arc<dyn http::Site> = Arc::clone(&exporter) as Arc<dyn http::Site>;
    let s = Arc::clone(&stop);
    let server =
        thread::spawn(move || http::serve(&listener, site, limits, &s, Duration::from_secs(5)));
    note(&format!("serving {scheme}://{local}/metrics"));
    // SIGHUP re-reads the web config; SIGINT and SIGTERM stop.
    let signal = loop {
        match tally::sys::mem::wait_for_stop_signal() {
            Ok(sig) if sig == libc::SIGHUP => reload(&exporter, args.web_config.as_deref()),
            other => break other,
        }
    };
    stop.store(true, Ordering::SeqCst);
    // Wake the accept with a connection of our own.
    let _ = TcpStream::connect_timeout(&wake_address(local), Duration::from_secs(1));
    // A command of the run collector under way is killed and reaped.
    watch.check(true);
    let mut code = 0;
    if let Ok(Err(e)) = server.join() {
        note(&format!("the HTTP server failed: {e}"));
        code = 1;
    }
    for t in threads {
        let _ = t.join();
    }
    match signal {
        Ok(sig) => note(&format!("stopped by {}", tally::sys::signal_name(sig))),
        Err(e) => {
            note(&format!("cannot wait for signals: {e}"));
            code = 1;
        }
    }
    code
}

/// The one-line warning for a server others can reach without TLS or
/// without authentication; `None` on loopback or with both.
fn exposure_warning(listen: SocketAddr, web: &web::WebConfig) -> Option<String> {
    if listen.ip().is_loopback() {
        return None;
    }
    let what = match (web.tls.is_some(), web.authenticates()) {
        (true, true) => return None,
        (false, false) => {
            "in plain HTTP without authentication: anyone who reaches the port reads every \
             program's name and memory; give --web-config with tls_server_config and \
             basic_auth_users"
        }
        (false, true) => {
            "in plain HTTP: passwords cross the network in clear; add tls_server_config to the \
             web config"
        }
        (true, false) => {
            "without authentication: anyone who reaches the port reads every program's name and \
             memory; add basic_auth_users (or client_auth_type: RequireAndVerifyClientCert) \
             to the web config"
        }
    };
    Some(format!("warning: {listen} is served {what}"))
}

/// SIGHUP: puts the web config re-read from `path` in force, or keeps
/// the one in force and says why.
fn reload(exporter: &serve::Exporter, path: Option<&Path>) {
    let Some(path) = path else {
        note("SIGHUP: no --web-config to re-read; nothing changed");
        return;
    };
    let shown = tally::report::path::display(path);
    match web::load(path) {
        Ok(w) => {
            for n in &w.notes {
                note(n);
            }
            exporter.replace_web(w);
            note(&format!("SIGHUP: re-read the web config {shown}"));
        }
        Err(e) => note(&format!(
            "SIGHUP: {e}; the web config read before stays in force"
        )),
    }
}

/// Where to connect to reach `local`: loopback for an unspecified address.
fn wake_address(local: SocketAddr) -> SocketAddr {
    let mut to = local;
    if to.ip().is_unspecified() {
        to.set_ip(match local {
            SocketAddr::V4(_) => std::net::Ipv4Addr::LOCALHOST.into(),
            SocketAddr::V6(_) => std::net::Ipv6Addr::LOCALHOST.into(),
        });
    }
    to
}

/// Writes `render()`'s metrics to `dir/name` atomically, once or every
/// `every` until SIGINT/TERM/HUP. `render` returns the report's metrics.
pub(super) fn textfile_loop(
    dir: &Path,
    name: &str,
    every: Option<Duration>,
    render: &mut dyn FnMut() -> Result<Vec<prometheus::Metric>, String>,
) -> u8 {
    let write_once = |render: &mut dyn FnMut() -> Result<Vec<prometheus::Metric>, String>| {
        let metrics = render()?;
        let mut text = Vec::with_capacity(16 * 1024);
        prometheus::write(&metrics, &mut text).map_err(|e| e.to_string())?;
        textfile::write_atomic(dir, name, &text).map_err(|e| e.to_string())?;
        Ok::<(), String>(())
    };
    let Some(interval) = every else {
        return match write_once(render) {
            Ok(()) => 0,
            Err(e) => {
                note(&e);
                1
            }
        };
    };
    // A signal ends the loop between two writes; one that comes during a
    // write lets it finish (the rename is atomic either way).
    let signals = match tally::sys::signals::Forwarder::install() {
        Ok(s) => s,
        Err(e) => {
            note(&format!("cannot install signal handlers for --every: {e}"));
            return 1;
        }
    };
    while signals.pending().is_none() {
        let started = Instant::now();
        if let Err(e) = write_once(render) {
            note(&e);
            return 1;
        }
        while started.elapsed() < interval && signals.pending().is_none() {
            let left = interval.saturating_sub(started.elapsed());
            thread::sleep(left.min(Duration::from_millis(50)));
        }
    }
    0
}

/// `tally mem --textfile DIR`: the metrics of `tally mem --format
/// prometheus` in `DIR/tally_mem.prom`. With privilege, one scan (the
/// caller refuses `--every`), then the privilege is dropped before the
/// user is looked up and the file written.
pub(super) fn mem_textfile(
    cfg: &mut tally::mem::Config,
    mut privilege: Privilege,
    user: Option<&str>,
    dir: &Path,
    every: Option<Duration>,
) -> u8 {
    use tally::mem;
    let mut first = true;
    textfile_loop(dir, "tally_mem.prom", every, &mut || {
        let snap = mem::scan(cfg, privilege);
        privilege
            .drop_to_caller()
            .map_err(|e| mem::MemError::DropPrivileges(e).to_string())?;
        let snap = snap.map_err(|e| e.to_string())?;
        if let (Some(user), None) = (user, cfg.grouping.uid) {
            cfg.grouping.uid = Some(
                tally::sys::user::uid_of(user)
                    .or_else(|| user.parse().ok())
                    .ok_or_else(|| {
                        format!("no user named `{user}`: give a login name or a numeric uid")
                    })?,
            );
        }
        cfg.grouping.check_replaced = true;
        let report = mem::summarize(&snap, cfg);
        if first {
            for msg in mem::closing_notes(&report, false, tally::sys::geteuid() == 0) {
                note(&msg);
            }
            first = false;
        }
        Ok(report.metrics().unwrap_or_default())
    })
}

/// `tally cache --textfile DIR PATH…`: the metrics of `tally cache
/// --format prometheus` in `DIR/tally_cache.prom`.
pub(super) fn cache_textfile(
    cfg: &tally::cache::command::Config,
    dir: &Path,
    every: Option<Duration>,
) -> u8 {
    let mut stdin_read = false;
    let mut paths = cfg.paths.clone();
    textfile_loop(dir, "tally_cache.prom", every, &mut || {
        // `-` (paths on stdin) is read once, then the same paths are
        // measured every time.
        if !stdin_read {
            let mut stdin = tally::input::Stdin::new(tally::input::STDIN_IDLE)
                .map_err(|e| format!("cannot read stdin: {e}"))?;
            paths = tally::cache::command::expand_stdin(&cfg.paths, cfg.null_separated, &mut stdin)
                .map_err(|e| e.to_string())?;
            stdin_read = true;
        }
        let run = tally::cache::command::Config {
            paths: paths.clone(),
            null_separated: false,
            ..cfg.clone()
        };
        let (report, _) = tally::cache::command::execute(&run, &mut std::io::empty())
            .map_err(|e| e.to_string())?;
        for line in report.diagnostics() {
            note(&line);
        }
        Ok(report.metrics().unwrap_or_default())
    })
}

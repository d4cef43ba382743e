//! `tally serve` from its configuration to its exit code: the
//! configuration files read and checked ([`settings`]), the listener bound
//! and the collectors and the HTTP server started ([`start`]), then the
//! signals waited for, a SIGHUP's reload, and the stop ([`Server::wait`]).

use std::net::{SocketAddr, TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::thread::{self, JoinHandle};
use std::time::Duration;

use super::{Exporter, collect, config, http, web};
use crate::mem::privilege::Privilege;

fn note(msg: &str) {
    crate::diag!("tally: {msg}");
}

/// What `tally serve` is asked to start with: the files to read and the
/// address to listen on.
#[derive(Debug, Clone)]
pub struct Config {
    /// `--config FILE`; none: memory per program, the 30 biggest.
    pub config_file: Option<PathBuf>,
    /// `--web-config FILE`: TLS, basic auth, headers, rate limits.
    pub web_config: Option<PathBuf>,
    pub listen: SocketAddr,
}

/// Why the server could not start.
#[derive(Debug, thiserror::Error)]
pub enum ServeError {
    /// It names the file, the line and the fix.
    #[error(transparent)]
    Config(#[from] config::ConfigError),
    /// It names the file, the line and the fix.
    #[error(transparent)]
    Web(#[from] web::WebConfigError),
    #[error(
        "the run collector's commands would inherit this tally's capabilities: run the \
         [[run]] checks from a second `tally serve` without capabilities"
    )]
    RunWithCapabilities,
    #[error("cannot listen on {listen}: {source}; give a free address with --listen")]
    Listen {
        listen: SocketAddr,
        source: std::io::Error,
    },
}

impl crate::failure::Failure for ServeError {
    fn exit_code(&self) -> u8 {
        1
    }
}

/// What the server is started with, read once from the files named on
/// the command line: nothing a client of the endpoint sends is ever read
/// as a path or a setting.
pub struct Settings {
    cfg: config::Config,
    web: web::WebConfig,
    privilege: Privilege,
    listen: SocketAddr,
    web_config: Option<PathBuf>,
}

/// Reads the configuration and the web configuration, says their notes
/// and a warning for a server others reach without TLS or authentication,
/// and refuses run checks under widening capabilities.
pub fn settings(start: &Config) -> Result<Settings, ServeError> {
    let cfg = match &start.config_file {
        Some(path) => config::load(path)?,
        None => config::Config::default(),
    };
    let web = match &start.web_config {
        Some(path) => web::load(path)?,
        None => web::WebConfig::plain(),
    };
    for n in &web.notes {
        note(n);
    }
    if let Some(warning) = exposure_warning(start.listen, &web) {
        note(&warning);
    }
    let privilege = serve_privilege();
    if privilege.is_elevated() && !cfg.run.is_empty() {
        return Err(ServeError::RunWithCapabilities);
    }
    Ok(Settings {
        cfg,
        web,
        privilege,
        listen: start.listen,
        web_config: start.web_config.clone(),
    })
}

/// A server started: its threads, and what stops them.
pub struct Server {
    exporter: Arc<Exporter>,
    web_config: Option<PathBuf>,
    local: SocketAddr,
    stop: Arc<AtomicBool>,
    watch: Arc<collect::RunWatch>,
    threads: Vec<JoinHandle<()>>,
    server: JoinHandle<std::io::Result<()>>,
}

/// Binds the listen address and starts the collectors' loops and the
/// HTTP server, with SIGINT, SIGTERM and SIGHUP blocked for all of them;
/// says where it serves.
pub fn start(settings: Settings) -> Result<Server, ServeError> {
    let Settings {
        cfg,
        web,
        privilege,
        listen,
        web_config,
    } = settings;
    // SIGINT/TERM/HUP are blocked here, before any thread starts (threads
    // inherit the mask), and taken by this thread alone with sigwait; the
    // commands of the run collector start with an empty mask.
    let _old_mask = crate::sys::signals::block_forwarded();
    let listener =
        TcpListener::bind(listen).map_err(|source| ServeError::Listen { listen, source })?;
    let local = listener.local_addr().unwrap_or(listen);
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
    let exporter = Arc::new(Exporter::new(Arc::clone(&collectors), web));
    let site: Arc<dyn http::Site> = Arc::clone(&exporter) as Arc<dyn http::Site>;
    let s = Arc::clone(&stop);
    let server =
        thread::spawn(move || http::serve(&listener, site, limits, &s, Duration::from_secs(5)));
    note(&format!("serving {scheme}://{local}/metrics"));
    Ok(Server {
        exporter,
        web_config,
        local,
        stop,
        watch,
        threads,
        server,
    })
}

impl Server {
    /// Serves until SIGINT or SIGTERM (SIGHUP re-reads the web config),
    /// then stops every thread and says why; returns the exit code: 1 when
    /// the HTTP server failed or the signals could not be waited for.
    pub fn wait(self) -> u8 {
        let signal = loop {
            match crate::sys::mem::wait_for_stop_signal() {
                Ok(sig) if sig == libc::SIGHUP => {
                    reload(&self.exporter, self.web_config.as_deref())
                }
                other => break other,
            }
        };
        self.stop.store(true, Ordering::SeqCst);
        // Wake the accept with a connection of our own.
        let _ = TcpStream::connect_timeout(&wake_address(self.local), Duration::from_secs(1));
        // A command of the run collector under way is killed and reaped.
        self.watch.check(true);
        let mut code = 0;
        if let Ok(Err(e)) = self.server.join() {
            note(&format!("the HTTP server failed: {e}"));
            code = 1;
        }
        for t in self.threads {
            let _ = t.join();
        }
        match signal {
            Ok(sig) => note(&format!("stopped by {}", crate::sys::signal_name(sig))),
            Err(e) => {
                note(&format!("cannot wait for signals: {e}"));
                code = 1;
            }
        }
        code
    }
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
    match crate::sys::privilege::capabilities() {
        Ok((effective, _)) if crate::sys::geteuid() != 0 && effective & widening != 0 => {
            Privilege::Kept {
                how: "capabilities",
            }
        }
        _ => Privilege::Ordinary,
    }
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
fn reload(exporter: &Exporter, path: Option<&Path>) {
    let Some(path) = path else {
        note("SIGHUP: no --web-config to re-read; nothing changed");
        return;
    };
    let shown = crate::text::path::display(path);
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

//! `tally serve` arguments.

use std::net::SocketAddr;
use std::path::PathBuf;

use clap::Args;

use super::command::Config;
use crate::failure::Usage;

#[derive(Debug, Args)]
#[command(
    after_help = "Endpoints: /metrics (Prometheus text, or OpenMetrics when the \
        scraper asks for it with Accept), / (a page naming them), /healthz. Anything \
        else is 404.\n\n\
        Examples:\n  \
        tally serve                # 127.0.0.1:9643, memory per program\n  \
        tally serve --listen 0.0.0.0:9643 --config /etc/tally/serve.toml \\\n      \
        --web-config /etc/tally/web-config.yml  # HTTPS and a password\n\n\
        The scan runs when scraped, at most once per min_interval (5 s; a scrape \
        sooner gets the last result) and never twice at once. Run as an ordinary \
        user it exports what that user may see; contrib/tally-serve.service runs it \
        with the least privilege that shows every process's memory.\n\
        SIGHUP re-reads the web config (certificates rotate); a bad new file keeps \
        the one in force and says why.\n\
        Exit status: 0 after SIGTERM or SIGINT, 1 if it cannot start (the config \
        files' errors name their line), 2 bad usage."
)]
pub struct ServeArgs {
    /// Address and port to listen on (default 127.0.0.1:9643; any other
    /// address must be given here): `ADDR:PORT`, `[IPv6]:PORT`,
    /// `HOST:PORT` (a name, resolved once at start: its first address), or
    /// `:PORT` for every IPv4 address (node_exporter's forms).
    #[arg(long, value_name = "ADDR:PORT", default_value = crate::serve::DEFAULT_LISTEN,
          value_parser = parse_listen)]
    pub listen: SocketAddr,

    /// Configuration file (TOML): collectors, mem grouping and top, cache
    /// paths, periodic commands, benchmarks, limits on clients. Without
    /// one: memory per program, the 30 biggest.
    #[arg(long, value_name = "FILE")]
    pub config: Option<PathBuf>,

    /// The exporters' web configuration file (YAML, node_exporter's
    /// --web.config.file): tls_server_config (cert_file, key_file,
    /// client_auth_type, client_ca_file, min_version…), basic_auth_users
    /// (bcrypt), http_server_config.headers, rate_limit. Relative paths
    /// in it are relative to its directory.
    #[arg(long, value_name = "FILE")]
    pub web_config: Option<PathBuf>,
}

/// Reads `--listen`: an address with its port, `:PORT`, or `HOST:PORT`.
fn parse_listen(s: &str) -> Result<SocketAddr, String> {
    use std::net::{Ipv4Addr, ToSocketAddrs};
    if let Ok(addr) = s.parse::<SocketAddr>() {
        return Ok(addr);
    }
    let bad_port = |p: &str| {
        format!(
            "{p:?} is not a port; give one from 1 to 65535, e.g. --listen :9643 or 127.0.0.1:9643"
        )
    };
    let Some((host, port)) = s.rsplit_once(':') else {
        return Err(format!(
            "{s:?} has no port; give ADDR:PORT, HOST:PORT or :PORT, e.g. 127.0.0.1:9643 or :9643"
        ));
    };
    let port: u16 = port
        .parse()
        .ok()
        .filter(|&p| p > 0)
        .ok_or_else(|| bad_port(port))?;
    if host.is_empty() {
        return Ok(SocketAddr::from((Ipv4Addr::UNSPECIFIED, port)));
    }
    if host.eq_ignore_ascii_case("localhost") {
        return Ok(SocketAddr::from((Ipv4Addr::LOCALHOST, port)));
    }
    let valid_name = host.len() <= 253
        && host
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'.');
    if !valid_name {
        return Err(format!(
            "{:?} is neither an address nor a host name; give ADDR:PORT (an IPv6 address in brackets: [::1]:9643), HOST:PORT or :PORT",
            crate::text::escape::escape_name(host.as_bytes())
        ));
    }
    match (host, port).to_socket_addrs().map(|mut a| a.next()) {
        Ok(Some(addr)) => Ok(addr),
        Ok(None) | Err(_) => Err(format!(
            "cannot find the address of {host:?}; give an address (e.g. 0.0.0.0:{port}) or a name /etc/hosts or DNS knows"
        )),
    }
}

impl ServeArgs {
    /// The files to read and the address to listen on.
    pub fn config(&self) -> Result<Config, Usage> {
        Ok(Config {
            config_file: self.config.clone(),
            web_config: self.web_config.clone(),
            listen: self.listen,
        })
    }
}

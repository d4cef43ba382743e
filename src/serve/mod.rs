//! `tally serve`: a Prometheus exporter of tally's figures (memory per
//! program, page-cache residency of configured paths, periodic commands,
//! light benchmarks) and the textfile writers of `tally mem --textfile`
//! and `tally cache --textfile` ([`textfile`]).
//!
//! [`config`] reads the configuration file (once, at start-up), [`web`]
//! the exporters' web configuration (TLS, basic authentication, headers,
//! rate limit; at start-up and on SIGHUP), [`collect`] makes the figures,
//! [`http`] answers the scrapes; [`command`] takes the command from its
//! arguments to its exit code. The HTTP side looks at a request's
//! method, path, `Accept` and `Authorization` headers only: nothing a
//! client sends names a file, a process or a setting.

pub mod args;
pub mod collect;
pub mod command;
pub mod config;
pub mod http;
pub mod number;
pub mod textfile;
pub mod web;

use std::sync::{Arc, RwLock};

use crate::report::prometheus;
use collect::Collectors;
use http::{Request, Response};
use web::WebConfig;

/// The default listen address: loopback, and a port of the exporters'
/// range (9100–9999). The Prometheus wiki's "Default port allocations"
/// list gives nearly every port of that range to an exporter; 9643 is one
/// of the gaps it marks "FREE" (node_exporter has 9100). Any other
/// address is given with `--listen`.
pub const DEFAULT_LISTEN: &str = "127.0.0.1:9643";

/// Whether a scraper that sent `accept` prefers OpenMetrics to the
/// Prometheus text format (by the media types' `q` weights).
pub fn wants_openmetrics(accept: Option<&str>) -> bool {
    let Some(accept) = accept else { return false };
    let (mut open, mut text) = (0.0f64, 0.0f64);
    for part in accept.split(',') {
        let mut params = part.split(';').map(str::trim);
        let media = params.next().unwrap_or_default().to_ascii_lowercase();
        let q = params
            .filter_map(|p| p.strip_prefix("q="))
            .find_map(|q| q.parse::<f64>().ok())
            .unwrap_or(1.0);
        match media.as_str() {
            "application/openmetrics-text" => open = open.max(q),
            "text/plain" | "*/*" => text = text.max(q),
            _ => {}
        }
    }
    open > 0.0 && open >= text
}

const INDEX: &str = "<!DOCTYPE html>\n<html><head><title>tally serve</title></head><body>\n\
<h1>tally serve</h1>\n<p>What does this cost, and why? A Prometheus exporter of memory per \
program, page-cache residency, periodic commands and light benchmarks.</p>\n<ul>\n\
<li><a href=\"/metrics\">/metrics</a>: the figures (Prometheus text, or OpenMetrics when asked by <code>Accept</code>)</li>\n\
<li><a href=\"/healthz\">/healthz</a>: <code>ok</code> while the server runs</li>\n\
</ul>\n</body></html>\n";

/// Answers one request.
pub fn handle(collectors: &Collectors, req: &Request) -> Response {
    if req.method != "GET" && req.method != "HEAD" {
        return Response::text(405, "only GET and HEAD\n");
    }
    match req.path.as_str() {
        "/" => Response {
            status: 200,
            content_type: "text/html; charset=utf-8",
            headers: Vec::new(),
            body: INDEX.as_bytes().to_vec(),
        },
        "/healthz" => Response::text(200, "ok\n"),
        "/metrics" => {
            let metrics = collectors.scrape();
            let mut body = Vec::with_capacity(64 * 1024);
            let (written, content_type) = if wants_openmetrics(req.accept.as_deref()) {
                (
                    prometheus::write_openmetrics(&metrics, &mut body),
                    prometheus::OPENMETRICS_CONTENT_TYPE,
                )
            } else {
                (
                    prometheus::write(&metrics, &mut body),
                    prometheus::TEXT_CONTENT_TYPE,
                )
            };
            match written {
                Ok(()) => Response {
                    status: 200,
                    content_type,
                    headers: Vec::new(),
                    body,
                },
                Err(e) => Response::text(500, &format!("cannot render the metrics: {e}\n")),
            }
        }
        _ => Response::text(404, "not found; try /metrics\n"),
    }
}

/// What [`http::serve`] serves: the collectors' figures behind the web
/// configuration in force (replaced whole on a reload).
pub struct Exporter {
    collectors: Arc<Collectors>,
    web: RwLock<Arc<WebConfig>>,
}

impl Exporter {
    pub fn new(collectors: Arc<Collectors>, web: WebConfig) -> Exporter {
        Exporter {
            collectors,
            web: RwLock::new(Arc::new(web)),
        }
    }

    /// The web configuration in force.
    pub fn web(&self) -> Arc<WebConfig> {
        Arc::clone(&self.web.read().unwrap_or_else(|e| e.into_inner()))
    }

    /// Puts `web` in force for the requests and connections after.
    pub fn replace_web(&self, web: WebConfig) {
        *self.web.write().unwrap_or_else(|e| e.into_inner()) = Arc::new(web);
    }
}

impl http::Site for Exporter {
    fn tls(&self) -> Option<Arc<rustls::ServerConfig>> {
        self.web().tls.as_ref().map(|t| Arc::clone(&t.config))
    }

    fn answer(&self, req: &Request) -> Response {
        let web = self.web();
        let mut resp = if web.rate_limit.as_ref().is_some_and(|r| !r.allow()) {
            Response::text(429, "too many requests; try again later\n")
        } else if web
            .users
            .as_ref()
            .is_some_and(|u| !u.check(req.authorization.as_deref()))
        {
            let mut r = Response::text(401, "Unauthorized\n");
            r.headers
                .push(("WWW-Authenticate".to_string(), "Basic".to_string()));
            r
        } else {
            handle(&self.collectors, req)
        };
        resp.headers.extend(web.headers.iter().cloned());
        resp
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn openmetrics_only_when_the_scraper_prefers_it() {
        let prom = "application/openmetrics-text;version=1.0.0,application/openmetrics-text;version=0.0.1;q=0.75,text/plain;version=0.0.4;q=0.5,*/*;q=0.1";
        assert!(wants_openmetrics(Some(prom)));
        assert!(!wants_openmetrics(None));
        assert!(!wants_openmetrics(Some("text/plain")));
        assert!(!wants_openmetrics(Some("*/*")));
        assert!(!wants_openmetrics(Some(
            "application/openmetrics-text;q=0.2,text/plain"
        )));
        assert!(!wants_openmetrics(Some("application/openmetrics-text;q=0")));
    }

    #[test]
    fn unknown_paths_and_methods_are_refused() {
        let c = Collectors::new(
            config::Config {
                mem: None,
                ..Default::default()
            },
            crate::mem::privilege::Privilege::Ordinary,
        );
        let req = |method: &str, path: &str| Request {
            method: method.into(),
            path: path.into(),
            ..Default::default()
        };
        assert_eq!(handle(&c, &req("GET", "/etc/passwd")).status, 404);
        assert_eq!(handle(&c, &req("GET", "/metrics/../x")).status, 404);
        assert_eq!(handle(&c, &req("POST", "/metrics")).status, 405);
        assert_eq!(handle(&c, &req("GET", "/healthz")).status, 200);
        let m = handle(&c, &req("GET", "/metrics"));
        assert_eq!(m.status, 200);
        assert!(String::from_utf8_lossy(&m.body).contains("tally_serve_cached_scrapes_total"));
    }
}

//! `tally serve`: a Prometheus exporter of tally's figures (memory per
//! program, page-cache residency of configured paths, periodic commands,
//! light benchmarks) and the textfile writer of `tally mem --textfile`.
//!
//! [`config`] reads the configuration file (once, at start-up),
//! [`collect`] makes the figures, [`http`] answers the scrapes. The HTTP
//! side looks at a request's method, path and `Accept` header only, to
//! choose among the endpoints: nothing a client sends names a file, a
//! process or a setting.

pub mod collect;
pub mod config;
pub mod http;
pub mod textfile;

use std::sync::Arc;

use crate::report::prometheus;
use collect::Collectors;
use http::{Request, Response};

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
                    body,
                },
                Err(e) => Response::text(500, &format!("cannot render the metrics: {e}\n")),
            }
        }
        _ => Response::text(404, "not found; try /metrics\n"),
    }
}

/// The handler for [`http::serve`].
pub fn handler(collectors: Arc<Collectors>) -> Arc<http::Handler> {
    Arc::new(move |req: &Request| handle(&collectors, req))
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
            accept: None,
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

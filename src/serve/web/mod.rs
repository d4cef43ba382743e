//! The exporters' web configuration file (`tally serve --web-config
//! FILE`): the YAML file node_exporter and the other official exporters
//! take with `--web.config.file`, with the same keys and the same meaning,
//! so one file per host serves every exporter on it.
//!
//! ```yaml
//! tls_server_config:
//!   cert_file: tally.crt          # relative paths: from the file's directory
//!   key_file: tally.key
//!   client_auth_type: RequireAndVerifyClientCert   # NoClientCert by default
//!   client_ca_file: clients-ca.crt
//!   min_version: TLS12            # the default
//! http_server_config:
//!   headers:
//!     Strict-Transport-Security: max-age=31536000
//! rate_limit:
//!   interval: 100ms
//!   burst: 10
//! basic_auth_users:
//!   prometheus: $2y$10$...        # bcrypt
//! ```
//!
//! [`load`] reads and checks the whole file and everything it names
//! (certificates, keys, CA files, hashes) before anything listens, and
//! again on SIGHUP; a mistake names the file, the line and the fix. What
//! tally cannot do as a Go exporter does (TLS 1.0 and 1.1, CBC suites,
//! P-521) is left out with a note at start, never silently.

pub mod auth;
pub mod tls;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::Duration;

use serde::Deserialize;
use serde_saphyr::Spanned;

use crate::text::path::display;

/// A checked web configuration.
#[derive(Debug)]
pub struct WebConfig {
    /// `None`: plain HTTP.
    pub tls: Option<tls::Tls>,
    /// `None`: no basic authentication.
    pub users: Option<auth::Users>,
    /// Headers added to every response (`http_server_config.headers`).
    pub headers: Vec<(String, String)>,
    pub rate_limit: Option<auth::RateLimit>,
    /// What was left out or should be known, said once at (re)load.
    pub notes: Vec<String>,
}

impl WebConfig {
    /// The configuration without a file: plain HTTP, no authentication.
    pub fn plain() -> WebConfig {
        WebConfig {
            tls: None,
            users: None,
            headers: Vec::new(),
            rate_limit: None,
            notes: Vec::new(),
        }
    }

    /// Whether a client must prove who it is: a password, or a client
    /// certificate verified against a CA.
    pub fn authenticates(&self) -> bool {
        self.users.is_some() || self.tls.as_ref().is_some_and(|t| t.verifies_clients)
    }
}

/// A web configuration that cannot be used.
#[derive(Debug, thiserror::Error)]
pub enum WebConfigError {
    #[error(transparent)]
    Read(#[from] crate::input::InputError),
    #[error("{}:{line}: {message}", display(path))]
    Invalid {
        path: PathBuf,
        line: u64,
        message: String,
    },
}

/// A mistake: the line it is on (1 when the file as a whole is wrong) and
/// what to do.
pub type Mistake = (u64, String);

#[derive(Deserialize, Default)]
#[serde(deny_unknown_fields)]
struct File {
    tls_server_config: Option<Spanned<tls::TlsFile>>,
    http_server_config: Option<HttpFile>,
    rate_limit: Option<RateFile>,
    basic_auth_users: Option<BTreeMap<String, Spanned<String>>>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct HttpFile {
    /// Go's servers may answer in HTTP/2; tally answers HTTP/1.1 (and
    /// offers nothing else in TLS), which every scraper speaks.
    #[allow(dead_code)]
    http2: Option<bool>,
    headers: Option<BTreeMap<String, Spanned<String>>>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RateFile {
    burst: Option<Spanned<crate::serve::number::Number>>,
    interval: Option<Spanned<String>>,
}

/// The headers a web config may set, and the values allowed where the
/// header has a fixed set (as the exporters' toolkit allows them).
const HEADERS: [(&str, &[&str]); 5] = [
    ("Strict-Transport-Security", &[]),
    ("X-Content-Type-Options", &["nosniff"]),
    ("X-Frame-Options", &["deny", "sameorigin"]),
    ("X-XSS-Protection", &[]),
    ("Content-Security-Policy", &[]),
];

/// The web config file as the bounded reader takes it.
const WEB_CONFIG: crate::input::Bound = crate::input::Bound {
    what: "web config file",
    cap_bytes: crate::input::CONFIG.cap_bytes,
    fix: "give the path of the exporters' web configuration file (YAML, at most 1 MiB)",
};

/// A certificate, key or CA file the web config names: a chain or a CA
/// bundle is a few kB, so the configuration cap serves.
pub(super) const PEM_FILE: crate::input::Bound = crate::input::Bound {
    what: "PEM file",
    cap_bytes: crate::input::CONFIG.cap_bytes,
    fix: "give the path of a PEM file (at most 1 MiB)",
};

/// Reads and checks the web config at `path` and every file it names.
pub fn load(path: &Path) -> Result<WebConfig, WebConfigError> {
    let bytes = crate::input::read_file(path, &WEB_CONFIG)?;
    let invalid = |(line, message): Mistake| WebConfigError::Invalid {
        path: path.to_path_buf(),
        line,
        message,
    };
    let text = String::from_utf8(bytes)
        .map_err(|_| invalid((1, "the file is not UTF-8 text; YAML is".to_string())))?;
    let dir = path.parent().unwrap_or(Path::new("."));
    parse(&text, dir).map_err(invalid)
}

/// Parses a web config whose relative paths are relative to `dir`.
pub fn parse(text: &str, dir: &Path) -> Result<WebConfig, Mistake> {
    let file: File = if text.trim().is_empty() {
        File::default()
    } else {
        serde_saphyr::from_str(text).map_err(|e| {
            let line = e.location().map_or(1, |l| l.line().max(1));
            let plain = e.without_snippet().to_string();
            // "… at line 3, column 3": the line is said before the message.
            let message = plain
                .rsplit_once(" at line ")
                .map_or(plain.as_str(), |(m, _)| m);
            (
                line,
                reworded(
                    message,
                    field_at(text, usize::try_from(line).unwrap_or(usize::MAX)).as_deref(),
                ),
            )
        })?
    };
    let mut notes = Vec::new();
    let tls = match &file.tls_server_config {
        Some(t) => tls::build(t, dir, &mut notes)?,
        None => None,
    };
    let users = match &file.basic_auth_users {
        Some(users) if !users.is_empty() => Some(auth::Users::new(users, &mut notes)?),
        _ => None,
    };
    let mut headers = Vec::new();
    if let Some(h) = file
        .http_server_config
        .as_ref()
        .and_then(|h| h.headers.as_ref())
    {
        for (name, value) in h {
            let line = value.referenced.line();
            let Some((_, allowed)) = HEADERS.iter().find(|(n, _)| n == name) else {
                let names: Vec<&str> = HEADERS.iter().map(|(n, _)| *n).collect();
                return Err((
                    line,
                    format!(
                        "http_server_config.headers: {name:?} cannot be set; the headers that can: {}",
                        names.join(", ")
                    ),
                ));
            };
            if !allowed.is_empty() && !allowed.contains(&value.value.as_str()) {
                return Err((
                    line,
                    format!(
                        "http_server_config.headers: {name} must be one of {allowed:?}, not {:?}",
                        value.value
                    ),
                ));
            }
            if value.value.bytes().any(|b| b.is_ascii_control()) {
                return Err((
                    line,
                    format!(
                        "http_server_config.headers: the value of {name} holds a control character"
                    ),
                ));
            }
            headers.push((name.clone(), value.value.clone()));
        }
    }
    let rate_limit = match &file.rate_limit {
        Some(r) => rate_limit(r)?,
        None => None,
    };
    Ok(WebConfig {
        tls,
        users,
        headers,
        rate_limit,
        notes,
    })
}

/// The YAML parser's message, said as what is wrong in the file and the
/// fix where the parser's own words name an option of the parser.
/// The parser's `message` in words that name the field (`field`, the
/// dotted path of the key at the mistake's line) and the fix.
fn reworded(message: &str, field: Option<&str>) -> String {
    if let Some((key, _)) = message
        .strip_prefix("duplicate mapping key: ")
        .and_then(|rest| rest.split_once(", set DuplicateKeyPolicy"))
    {
        return format!(
            "the key {} is given twice in one mapping; keep one",
            crate::text::escape_text(&key.chars().take(60).collect::<String>())
        );
    }
    let Some(field) = field else {
        return match message {
            "expected mapping start" => "the file must be a mapping of tls_server_config, \
                 http_server_config, rate_limit and basic_auth_users (`key: value` lines), \
                 not a list or a single value"
                .into(),
            _ => crate::text::escape_text(message),
        };
    };
    let field = crate::text::escape_text(field);
    match message {
        "expected mapping start" => format!(
            "{field} must be a mapping (`key: value` lines indented beneath it), not a single \
             value or a list"
        ),
        "expected string scalar" => {
            format!("{field} must be a string (a single value; quote it), not a list or a mapping")
        }
        "expected sequence start" => {
            format!("{field} must be a list (`- value` lines indented beneath it)")
        }
        // The parser named the key itself (`unknown field `colour``).
        m if m.starts_with("unknown field") => crate::text::escape_text(m),
        _ => format!("{field}: {}", crate::text::escape_text(message)),
    }
}

/// The dotted path of the key at `line` (1-based) of a YAML `text`: the
/// key on that line, or where the line holds only a value (a list's item),
/// the key it is indented beneath, and the keys above it at smaller
/// indentation (`http_server_config.headers`). `None` outside any key.
fn field_at(text: &str, line: usize) -> Option<String> {
    /// A line's indentation and the key it starts with, if any.
    fn key_of(l: &str) -> Option<(usize, Option<&str>)> {
        let body = l.trim_start_matches(' ');
        if body.is_empty() || body.starts_with('#') {
            return None;
        }
        let indent = l.len() - body.len();
        let key = body.split_once(':').map(|(k, _)| k.trim()).filter(|k| {
            !k.is_empty()
                && k.bytes()
                    .all(|b| b.is_ascii_alphanumeric() || b"_-.".contains(&b))
        });
        Some((indent, key))
    }
    let lines: Vec<&str> = text.lines().take(line).collect();
    let mut path: Vec<&str> = Vec::new();
    let mut below = usize::MAX;
    for l in lines.iter().rev() {
        let Some((indent, key)) = key_of(l) else {
            continue;
        };
        if indent >= below {
            continue;
        }
        match key {
            Some(k) if path.is_empty() || indent < below => {
                path.push(k);
                below = indent;
            }
            // A value-only line (`- a`): the key is above it.
            None if path.is_empty() => below = indent + 1,
            _ => {}
        }
        if below == 0 {
            break;
        }
    }
    (!path.is_empty()).then(|| {
        path.reverse();
        path.join(".")
    })
}

fn rate_limit(r: &RateFile) -> Result<Option<auth::RateLimit>, Mistake> {
    let Some(interval) = &r.interval else {
        return Ok(None);
    };
    let every = go_duration(&interval.value).ok_or_else(|| {
        (
            interval.referenced.line(),
            format!(
                "rate_limit.interval {:?} is not a duration; write it as Go does, e.g. \"100ms\", \"1s\", \"1m30s\"",
                interval.value
            ),
        )
    })?;
    if every.is_zero() {
        return Ok(None);
    }
    let burst = match &r.burst {
        Some(b) => b
            .value
            .whole()
            .and_then(|n| u32::try_from(n).ok())
            .ok_or_else(|| {
                (
                    b.referenced.line(),
                    format!(
                        "rate_limit.burst must be between 0 and {}, not {}",
                        u32::MAX,
                        b.value
                    ),
                )
            })?,
        None => 0,
    };
    Ok(Some(auth::RateLimit::new(every, burst)))
}

/// A duration as Go's `time.ParseDuration` reads it ("1h2m3.5s",
/// "250ms"), or a bare integer of nanoseconds as YAML gives Go's
/// `time.Duration`.
pub fn go_duration(text: &str) -> Option<Duration> {
    let text = text.trim();
    if let Ok(ns) = text.parse::<u64>() {
        return Some(Duration::from_nanos(ns));
    }
    let mut rest = text.strip_prefix('+').unwrap_or(text);
    if rest.is_empty() {
        return None;
    }
    let mut total_ns = 0f64;
    while !rest.is_empty() {
        let number_len = rest
            .find(|c: char| !(c.is_ascii_digit() || c == '.'))
            .unwrap_or(rest.len());
        let (number, after) = rest.split_at(number_len);
        let value: f64 = number.parse().ok()?;
        let unit_len = after
            .find(|c: char| c.is_ascii_digit() || c == '.')
            .unwrap_or(after.len());
        let (unit, after) = after.split_at(unit_len);
        let scale = match unit {
            "ns" => 1.0,
            "us" | "µs" | "μs" => 1e3,
            "ms" => 1e6,
            "s" => 1e9,
            "m" => 60e9,
            "h" => 3600e9,
            _ => return None,
        };
        total_ns += value * scale;
        rest = after;
    }
    (total_ns.is_finite() && total_ns < u64::MAX as f64)
        .then(|| Duration::from_nanos(total_ns as u64))
}

#[cfg(test)]
mod tests {
    #[test]
    fn a_mistake_names_the_dotted_path_of_its_key() {
        use super::field_at;
        let text = "tls_server_config: 5\nhttp_server_config:\n  headers: 3\nbasic_auth_users:\n  bob: [1]\nrate_limit:\n  - 1\n";
        assert_eq!(field_at(text, 1).as_deref(), Some("tls_server_config"));
        assert_eq!(
            field_at(text, 3).as_deref(),
            Some("http_server_config.headers")
        );
        assert_eq!(field_at(text, 5).as_deref(), Some("basic_auth_users.bob"));
        assert_eq!(field_at(text, 7).as_deref(), Some("rate_limit"));
        assert_eq!(field_at("- a\n- b\n", 1), None);
    }

    use super::*;

    #[test]
    fn go_durations_read_as_go_reads_them() {
        assert_eq!(go_duration("1s"), Some(Duration::from_secs(1)));
        assert_eq!(go_duration("100ms"), Some(Duration::from_millis(100)));
        assert_eq!(go_duration("1m30s"), Some(Duration::from_secs(90)));
        assert_eq!(go_duration("1.5h"), Some(Duration::from_secs(5400)));
        assert_eq!(go_duration("2500"), Some(Duration::from_nanos(2500)));
        for bad in ["", "s", "1x", "1 s", "-1s", "1s2"] {
            assert_eq!(go_duration(bad), None, "{bad:?}");
        }
    }

    #[test]
    fn an_empty_file_is_plain_http_without_authentication() {
        let w = parse("# nothing\n", Path::new("/")).unwrap();
        assert!(w.tls.is_none() && w.users.is_none() && !w.authenticates());
        let w = parse("", Path::new("/")).unwrap();
        assert!(w.tls.is_none());
    }

    #[test]
    fn mistakes_name_their_line() {
        let cases = [
            (
                "tls_server_config:\n  cert_file: a\n  colour: 1\n",
                3,
                "unknown field `colour`",
            ),
            ("basic_auth_users:\n  a: $2y$10$x\n", 2, "bcrypt"),
            (
                "http_server_config:\n  headers:\n    Server: me\n",
                3,
                "cannot be set",
            ),
            (
                "http_server_config:\n  headers:\n    X-Frame-Options: allow\n",
                3,
                "must be one of",
            ),
            ("rate_limit:\n  interval: soon\n", 2, "not a duration"),
            (
                "rate_limit:\n  interval: 1s\n  burst: -1\n",
                3,
                "rate_limit.burst",
            ),
            ("nonsense: 1\n", 1, "unknown field `nonsense`"),
            ("tls_server_config:\n  key_file: k\n", 2, "cert_file"),
        ];
        for (text, line, words) in cases {
            let (l, msg) = parse(text, Path::new("/nonexistent")).unwrap_err();
            assert!(msg.contains(words), "{text:?}: {msg}");
            assert_eq!(l, line, "{text:?}: {msg}");
        }
    }

    /// contrib/web-config.yml, with a certificate and key where it names
    /// them, is a valid web config: TLS and one user.
    #[test]
    fn the_shipped_example_web_config_parses() {
        let dir = tempfile::tempdir().unwrap();
        let key = rcgen::KeyPair::generate().unwrap();
        let cert = rcgen::CertificateParams::new(vec!["localhost".to_string()])
            .unwrap()
            .self_signed(&key)
            .unwrap();
        std::fs::write(dir.path().join("tally.crt"), cert.pem()).unwrap();
        std::fs::write(dir.path().join("tally.key"), key.serialize_pem()).unwrap();
        let w = parse(include_str!("../../../contrib/web-config.yml"), dir.path()).unwrap();
        assert!(w.tls.is_some() && w.users.is_some() && w.authenticates());
        assert_eq!(w.headers.len(), 2);
        assert!(w.notes.is_empty(), "{:?}", w.notes);
    }

    #[test]
    fn headers_and_rate_limits_are_kept() {
        let w = parse(
            "http_server_config:\n  http2: false\n  headers:\n    X-Frame-Options: deny\n\
             rate_limit:\n  interval: 1s\n  burst: 2\n",
            Path::new("/"),
        )
        .unwrap();
        assert_eq!(
            w.headers,
            vec![("X-Frame-Options".to_string(), "deny".to_string())]
        );
        let r = w.rate_limit.unwrap();
        assert!(r.allow() && r.allow() && !r.allow());
    }
}

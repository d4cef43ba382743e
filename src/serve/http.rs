//! The HTTP side of `tally serve`: one request per connection, parsed by
//! `httparse`, answered and closed; in TLS (rustls) when the web config
//! asks for it.
//!
//! Bounded under load: a TLS handshake not done within
//! [`Limits::handshake_timeout`] is dropped; a request head larger than
//! [`Limits::max_head`] gets 431, one that has not arrived within
//! [`Limits::head_timeout`] gets 408; at most [`Limits::max_connections`]
//! connections are open at once, each on its own small thread. When they
//! are all taken, a new connection closes the oldest one still shaking
//! hands or sending its request (the slowest client), so clients that
//! open connections and send nothing, in TCP or in TLS, cannot keep a
//! scrape out; if every connection is being answered, the new one gets
//! 503. Memory is at most `max_connections × (max_head + a thread's
//! stack + a TLS session)` beyond the scrape.
//!
//! With TLS on, a client that speaks plain HTTP to the port gets a 400 in
//! plain text saying so, and nothing else.

use std::io::{self, Read, Write};
use std::net::{Shutdown, TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, Instant};

use rustls::{ServerConfig, ServerConnection};

/// The bounds of the server.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Limits {
    /// Bytes of the request line and headers.
    pub max_head: usize,
    /// Headers in a request.
    pub max_headers: usize,
    /// Time a client has to finish the TLS handshake.
    pub handshake_timeout: Duration,
    /// Time a client has to send its request head (after the handshake).
    pub head_timeout: Duration,
    /// Time a client has to take the response.
    pub write_timeout: Duration,
    /// Connections open at once.
    pub max_connections: usize,
}

impl Default for Limits {
    fn default() -> Limits {
        Limits {
            max_head: 8 * 1024,
            max_headers: 64,
            handshake_timeout: Duration::from_secs(10),
            head_timeout: Duration::from_secs(10),
            write_timeout: Duration::from_secs(30),
            max_connections: 64,
        }
    }
}

/// A request, as far as the server looks at it.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Request {
    pub method: String,
    /// The path without its query.
    pub path: String,
    /// The `Accept` header, if any.
    pub accept: Option<String>,
    /// The `Authorization` header, if any.
    pub authorization: Option<String>,
}

/// A response; the server adds `Content-Length` and `Connection: close`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Response {
    pub status: u16,
    pub content_type: &'static str,
    /// More headers (`WWW-Authenticate`, the web config's).
    pub headers: Vec<(String, String)>,
    pub body: Vec<u8>,
}

impl Response {
    pub fn text(status: u16, body: &str) -> Response {
        Response {
            status,
            content_type: "text/plain; charset=utf-8",
            headers: Vec::new(),
            body: body.as_bytes().to_vec(),
        }
    }
}

/// The reason phrase of a status.
pub fn reason(status: u16) -> &'static str {
    match status {
        200 => "OK",
        400 => "Bad Request",
        401 => "Unauthorized",
        404 => "Not Found",
        405 => "Method Not Allowed",
        408 => "Request Timeout",
        429 => "Too Many Requests",
        431 => "Request Header Fields Too Large",
        500 => "Internal Server Error",
        503 => "Service Unavailable",
        _ => "",
    }
}

/// What the server serves.
pub trait Site: Send + Sync {
    /// The TLS configuration a new connection gets; `None`: plain HTTP.
    fn tls(&self) -> Option<Arc<ServerConfig>>;
    /// The answer to a request.
    fn answer(&self, req: &Request) -> Response;
}

struct Conn {
    id: u64,
    started: Instant,
    stream: TcpStream,
    /// Its request is read: it is being answered.
    answering: bool,
}

#[derive(Default)]
struct Open(Mutex<Vec<Conn>>);

impl Open {
    fn lock(&self) -> MutexGuard<'_, Vec<Conn>> {
        self.0.lock().unwrap_or_else(|e| e.into_inner())
    }

    fn remove(&self, id: u64) {
        self.lock().retain(|c| c.id != id);
    }

    fn answering(&self, id: u64) {
        if let Some(c) = self.lock().iter_mut().find(|c| c.id == id) {
            c.answering = true;
        }
    }
}

/// Accepts connections on `listener` until `stop` is set (the caller
/// then connects once to wake the accept), answering each from `site`;
/// then closes the connections still reading and waits up to `drain` for
/// those being answered.
pub fn serve(
    listener: &TcpListener,
    site: Arc<dyn Site>,
    limits: Limits,
    stop: &AtomicBool,
    drain: Duration,
) -> io::Result<()> {
    let open = Arc::new(Open::default());
    let ids = AtomicU64::new(0);
    for stream in listener.incoming() {
        if stop.load(Ordering::SeqCst) {
            break;
        }
        let stream = match stream {
            Ok(s) => s,
            // A connection reset before it was accepted, or out of
            // descriptors for a moment: carry on.
            Err(_) => {
                std::thread::sleep(Duration::from_millis(10));
                continue;
            }
        };
        let id = ids.fetch_add(1, Ordering::Relaxed);
        // The configuration in force when the connection came (a reload
        // changes it for the connections after).
        let tls = site.tls();
        if !make_room(&open, limits.max_connections) {
            // In plain HTTP only: a TLS client would not read it.
            if tls.is_none() {
                let _ = stream.set_write_timeout(Some(Duration::from_secs(1)));
                let _ = respond(
                    &mut &stream,
                    &Response::text(503, "too many connections; try again\n"),
                    false,
                );
            }
            continue;
        }
        let Ok(copy) = stream.try_clone() else {
            continue;
        };
        open.lock().push(Conn {
            id,
            started: Instant::now(),
            stream: copy,
            answering: false,
        });
        let (open2, site) = (Arc::clone(&open), Arc::clone(&site));
        let spawned = std::thread::Builder::new()
            .name("tally-http".into())
            .stack_size(256 * 1024)
            .spawn(move || {
                connection(&stream, id, &open2, &*site, tls, limits);
                let _ = stream.shutdown(Shutdown::Both);
                open2.remove(id);
            });
        if spawned.is_err() {
            open.remove(id);
        }
    }
    // Shutting down: clients still sending their request are cut off;
    // answers under way may finish.
    for c in open.lock().iter().filter(|c| !c.answering) {
        let _ = c.stream.shutdown(Shutdown::Both);
    }
    let until = Instant::now() + drain;
    while !open.lock().is_empty() && Instant::now() < until {
        std::thread::sleep(Duration::from_millis(20));
    }
    Ok(())
}

/// Makes room for one more connection: closes the oldest one still
/// shaking hands or reading its request when all are taken. False when
/// every connection is being answered.
fn make_room(open: &Open, max: usize) -> bool {
    let mut conns = open.lock();
    if conns.len() < max {
        return true;
    }
    let oldest = conns
        .iter()
        .filter(|c| !c.answering)
        .min_by_key(|c| c.started)
        .map(|c| c.id);
    match oldest {
        Some(id) => {
            if let Some(c) = conns.iter().find(|c| c.id == id) {
                let _ = c.stream.shutdown(Shutdown::Both);
            }
            conns.retain(|c| c.id != id);
            true
        }
        None => false,
    }
}

/// What reading a request head came to.
#[derive(Debug, PartialEq, Eq)]
enum Head {
    Request(Request),
    /// Answer with this status and close.
    Error(u16),
    /// The client went away, or was cut off: nothing to answer.
    Gone,
}

/// What Go's servers answer to plain HTTP on a TLS port.
const PLAIN_ON_TLS: &[u8] =
    b"HTTP/1.0 400 Bad Request\r\nContent-Type: text/plain; charset=utf-8\r\n\
Connection: close\r\n\r\nClient sent an HTTP request to an HTTPS server.\n";

fn connection(
    tcp: &TcpStream,
    id: u64,
    open: &Open,
    site: &dyn Site,
    tls: Option<Arc<ServerConfig>>,
    limits: Limits,
) {
    let mut sock = tcp;
    let Some(config) = tls else {
        exchange(&mut sock, tcp, id, open, site, limits);
        return;
    };
    let mut conn = match handshake(tcp, config, limits.handshake_timeout) {
        Handshake::Done(conn) => conn,
        Handshake::PlainHttp => {
            let _ = tcp.set_write_timeout(Some(Duration::from_secs(1)));
            let _ = sock.write_all(PLAIN_ON_TLS);
            return;
        }
        Handshake::Failed => return,
    };
    {
        let mut stream = rustls::Stream::new(&mut *conn, &mut sock);
        exchange(&mut stream, tcp, id, open, site, limits);
    }
    conn.send_close_notify();
    while conn.wants_write() {
        if conn.write_tls(&mut sock).is_err() {
            break;
        }
    }
}

/// Reads one request from `stream` (over `tcp`, whose timeouts bound it)
/// and writes its answer.
fn exchange(
    stream: &mut dyn ReadWrite,
    tcp: &TcpStream,
    id: u64,
    open: &Open,
    site: &dyn Site,
    limits: Limits,
) {
    let head = read_head(stream, tcp, limits);
    open.answering(id);
    let _ = tcp.set_write_timeout(Some(limits.write_timeout));
    match head {
        Head::Request(req) => {
            let head_only = req.method == "HEAD";
            let resp = site.answer(&req);
            let _ = respond(stream, &resp, head_only);
        }
        Head::Error(status) => {
            let _ = respond(stream, &Response::text(status, reason(status)), false);
        }
        Head::Gone => {}
    }
}

/// A byte stream both ways: a TCP stream, or TLS over one.
trait ReadWrite: Read + Write {}
impl<T: Read + Write + ?Sized> ReadWrite for T {}

enum Handshake {
    Done(Box<ServerConnection>),
    /// The client spoke plain HTTP.
    PlainHttp,
    /// Timed out, refused or gone.
    Failed,
}

fn handshake(tcp: &TcpStream, config: Arc<ServerConfig>, timeout: Duration) -> Handshake {
    let deadline = Instant::now() + timeout;
    let left = || deadline.saturating_duration_since(Instant::now());
    // A TLS client starts with a handshake record (byte 22); a plain HTTP
    // client with a method's letters.
    if tcp.set_read_timeout(Some(timeout)).is_err() {
        return Handshake::Failed;
    }
    let mut first = [0u8; 1];
    match tcp.peek(&mut first) {
        Ok(1) if first[0].is_ascii_alphabetic() => return Handshake::PlainHttp,
        Ok(1) => {}
        _ => return Handshake::Failed,
    }
    let Ok(mut conn) = ServerConnection::new(config) else {
        return Handshake::Failed;
    };
    let mut sock = tcp;
    while conn.is_handshaking() {
        let left = left();
        if left.is_zero()
            || tcp.set_read_timeout(Some(left)).is_err()
            || tcp.set_write_timeout(Some(left)).is_err()
        {
            return Handshake::Failed;
        }
        match conn.complete_io(&mut sock) {
            Ok((0, 0)) => return Handshake::Failed,
            Ok(_) => {}
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(_) => {
                // Tell the client why (an alert), if it listens.
                let _ = conn.write_tls(&mut sock);
                return Handshake::Failed;
            }
        }
    }
    Handshake::Done(Box::new(conn))
}

fn read_head(stream: &mut dyn ReadWrite, tcp: &TcpStream, limits: Limits) -> Head {
    let deadline = Instant::now() + limits.head_timeout;
    let mut buf: Vec<u8> = Vec::with_capacity(1024);
    let mut chunk = [0u8; 1024];
    loop {
        let left = deadline.saturating_duration_since(Instant::now());
        if left.is_zero() {
            return Head::Error(408);
        }
        if tcp.set_read_timeout(Some(left)).is_err() {
            return Head::Gone;
        }
        let n = match stream.read(&mut chunk) {
            Ok(0) => return Head::Gone,
            Ok(n) => n,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            Err(e)
                if matches!(
                    e.kind(),
                    io::ErrorKind::WouldBlock | io::ErrorKind::TimedOut
                ) =>
            {
                return Head::Error(408);
            }
            Err(_) => return Head::Gone,
        };
        buf.extend_from_slice(chunk.get(..n).unwrap_or_default());
        match parse_head(&buf, limits) {
            Some(head) => return head,
            None if buf.len() >= limits.max_head => return Head::Error(431),
            None => {}
        }
    }
}

/// Parses a request head; `None` while it is incomplete.
fn parse_head(buf: &[u8], limits: Limits) -> Option<Head> {
    let mut headers = vec![httparse::EMPTY_HEADER; limits.max_headers];
    let mut req = httparse::Request::new(&mut headers);
    // Only the head counts toward the limit, never a body after it.
    let within = buf.get(..limits.max_head).unwrap_or(buf);
    match req.parse(within) {
        Ok(httparse::Status::Complete(_)) => {
            let method = req.method.unwrap_or_default().to_string();
            let target = req.path.unwrap_or_default();
            let path = target.split('?').next().unwrap_or_default().to_string();
            let accept = req
                .headers
                .iter()
                .filter(|h| h.name.eq_ignore_ascii_case("accept"))
                .filter_map(|h| std::str::from_utf8(h.value).ok())
                .collect::<Vec<_>>();
            let accept = (!accept.is_empty()).then(|| accept.join(","));
            let mut authorization = req
                .headers
                .iter()
                .filter(|h| h.name.eq_ignore_ascii_case("authorization"));
            let first = authorization.next();
            if authorization.next().is_some() {
                // Two sets of credentials: which one counts is ambiguous.
                return Some(Head::Error(400));
            }
            let authorization = first
                .and_then(|h| std::str::from_utf8(h.value).ok())
                .map(str::to_string);
            Some(Head::Request(Request {
                method,
                path,
                accept,
                authorization,
            }))
        }
        Ok(httparse::Status::Partial) => None,
        Err(httparse::Error::TooManyHeaders) => Some(Head::Error(431)),
        Err(_) => Some(Head::Error(400)),
    }
}

fn respond(stream: &mut dyn ReadWrite, resp: &Response, head_only: bool) -> io::Result<()> {
    let mut out = Vec::with_capacity(resp.body.len() + 256);
    write!(
        out,
        "HTTP/1.1 {} {}\r\nContent-Type: {}\r\nContent-Length: {}\r\nConnection: close\r\n",
        resp.status,
        reason(resp.status),
        resp.content_type,
        resp.body.len()
    )?;
    for (name, value) in &resp.headers {
        write!(out, "{name}: {value}\r\n")?;
    }
    out.extend_from_slice(b"\r\n");
    if !head_only {
        out.extend_from_slice(&resp.body);
    }
    stream.write_all(&out)?;
    stream.flush()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn heads_parse_or_say_what_is_wrong() {
        let l = Limits::default();
        assert_eq!(parse_head(b"GET /metrics HTTP/1.1\r\nHost: x\r\n", l), None);
        assert_eq!(
            parse_head(
                b"GET /metrics?x=1 HTTP/1.1\r\nAccept: a/b\r\naccept: c/d\r\n\r\n",
                l
            ),
            Some(Head::Request(Request {
                method: "GET".into(),
                path: "/metrics".into(),
                accept: Some("a/b,c/d".into()),
                authorization: None,
            }))
        );
        assert_eq!(
            parse_head(b"\x01\x02 / HTTP/1.1\r\n\r\n", l),
            Some(Head::Error(400))
        );
        let many: String = (0..100).map(|i| format!("X-{i}: y\r\n")).collect();
        let req = format!("GET / HTTP/1.1\r\n{many}\r\n");
        assert_eq!(parse_head(req.as_bytes(), l), Some(Head::Error(431)));
    }
}

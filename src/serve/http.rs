//! The HTTP side of `tally serve`: one request per connection, parsed by
//! `httparse`, answered and closed.
//!
//! Bounded under load: a request head larger than [`Limits::max_head`]
//! gets 431, one that has not arrived within [`Limits::head_timeout`]
//! gets 408, and at most [`Limits::max_connections`] connections are
//! open at once, each on its own small thread. When they are all taken,
//! a new connection closes the oldest one still sending its request
//! (the slowest client), so clients that open connections and send
//! nothing cannot keep a scrape out; if every connection is being
//! answered, the new one gets 503. Memory is at most
//! `max_connections × (max_head + a thread's stack)` beyond the scrape.

use std::io::{self, Read, Write};
use std::net::{Shutdown, TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, Instant};

/// The bounds of the server.
#[derive(Debug, Clone, Copy)]
pub struct Limits {
    /// Bytes of the request line and headers.
    pub max_head: usize,
    /// Headers in a request.
    pub max_headers: usize,
    /// Time a client has to send its request head.
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
            head_timeout: Duration::from_secs(10),
            write_timeout: Duration::from_secs(30),
            max_connections: 64,
        }
    }
}

/// A request, as far as the server looks at it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Request {
    pub method: String,
    /// The path without its query.
    pub path: String,
    /// The `Accept` header, if any.
    pub accept: Option<String>,
}

/// A response; the server adds `Content-Length` and `Connection: close`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Response {
    pub status: u16,
    pub content_type: &'static str,
    pub body: Vec<u8>,
}

impl Response {
    pub fn text(status: u16, body: &str) -> Response {
        Response {
            status,
            content_type: "text/plain; charset=utf-8",
            body: body.as_bytes().to_vec(),
        }
    }
}

fn reason(status: u16) -> &'static str {
    match status {
        200 => "OK",
        400 => "Bad Request",
        404 => "Not Found",
        405 => "Method Not Allowed",
        408 => "Request Timeout",
        431 => "Request Header Fields Too Large",
        500 => "Internal Server Error",
        503 => "Service Unavailable",
        _ => "",
    }
}

/// The handler of requests.
pub type Handler = dyn Fn(&Request) -> Response + Send + Sync;

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
/// then connects once to wake the accept), answering each with
/// `handler`; then closes the connections still reading and waits up to
/// `drain` for those being answered.
pub fn serve(
    listener: &TcpListener,
    handler: Arc<Handler>,
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
        if !make_room(&open, limits.max_connections) {
            let _ = stream.set_write_timeout(Some(Duration::from_secs(1)));
            let _ = respond(
                &stream,
                &Response::text(503, "too many connections; try again\n"),
                false,
            );
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
        let (open2, handler) = (Arc::clone(&open), Arc::clone(&handler));
        let spawned = std::thread::Builder::new()
            .name("tally-http".into())
            .stack_size(256 * 1024)
            .spawn(move || {
                connection(&stream, id, &open2, &*handler, limits);
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
/// reading its request when all are taken. False when every connection
/// is being answered.
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

fn connection(stream: &TcpStream, id: u64, open: &Open, handler: &Handler, limits: Limits) {
    let head = read_head(stream, limits);
    open.answering(id);
    let _ = stream.set_write_timeout(Some(limits.write_timeout));
    match head {
        Head::Request(req) => {
            let head_only = req.method == "HEAD";
            let resp = handler(&req);
            let _ = respond(stream, &resp, head_only);
        }
        Head::Error(status) => {
            let _ = respond(stream, &Response::text(status, reason(status)), false);
        }
        Head::Gone => {}
    }
}

fn read_head(mut stream: &TcpStream, limits: Limits) -> Head {
    let deadline = Instant::now() + limits.head_timeout;
    let mut buf: Vec<u8> = Vec::with_capacity(1024);
    let mut chunk = [0u8; 1024];
    loop {
        let left = deadline.saturating_duration_since(Instant::now());
        if left.is_zero() {
            return Head::Error(408);
        }
        if stream.set_read_timeout(Some(left)).is_err() {
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
            Some(Head::Request(Request {
                method,
                path,
                accept,
            }))
        }
        Ok(httparse::Status::Partial) => None,
        Err(httparse::Error::TooManyHeaders) => Some(Head::Error(431)),
        Err(_) => Some(Head::Error(400)),
    }
}

fn respond(mut stream: &TcpStream, resp: &Response, head_only: bool) -> io::Result<()> {
    let mut out = Vec::with_capacity(resp.body.len() + 160);
    write!(
        out,
        "HTTP/1.1 {} {}\r\nContent-Type: {}\r\nContent-Length: {}\r\nConnection: close\r\n\r\n",
        resp.status,
        reason(resp.status),
        resp.content_type,
        resp.body.len()
    )?;
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

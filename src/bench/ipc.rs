//! ipc: how fast two processes talk, lmbench `lat_pipe`/`lat_unix`/
//! `lat_tcp`/`lat_udp`/`lat_connect` and `bw_pipe`/`bw_unix`/`bw_tcp`
//! style, over a pipe, a FIFO (a named pipe in `--dir`), AF_UNIX stream and
//! datagram socket pairs, and TCP and UDP over loopback.
//!
//! - Latency: a 1-byte message sent to a forked peer and echoed back, ns
//!   per round trip, with the peer pinned to this CPU (every hand-over a
//!   real switch) and to another CPU (a cross-CPU wake-up), as `ctxswitch`
//!   reports them. Pinned, for pipe, FIFO and AF_UNIX, the cost per switch
//!   is also given: (round trip − 2 × the fastest sample of the same
//!   send+receive in one task) / 2, negative values kept. (Over loopback
//!   TCP and UDP the receiving half may run in ksoftirqd, a switch of its
//!   own even in one task, so their one-task cost is no baseline.)
//! - Bandwidth: the peer sends N messages on request; GB/s (10^9 B) of
//!   message bytes received, 64 KiB messages (UDP: 65,507 B, its largest
//!   datagram) pinned and across, and a sweep by message size for the plot.
//!   A datagram that was lost (UDP over loopback drops what the receiver's
//!   buffer cannot hold) does not count: the figure is what arrived, the
//!   note says how much was lost.
//! - TCP connect: connect to a listening peer, which accepts and closes;
//!   the client reads the end of stream and closes.
//!
//! The peers are processes, killed and reaped on every path; sockets have
//! a receive timeout, so a peer that dies or a datagram that never comes
//! gives an unavailable figure with the reason, not a hang. The FIFOs'
//! names are removed as soon as both ends are open (armed for removal on
//! a fatal signal in between).

use std::fs::File;
use std::io::{self, Read, Write};
use std::net::{Ipv4Addr, SocketAddr, TcpListener, TcpStream, UdpSocket};
use std::os::fd::{AsFd, AsRawFd, OwnedFd, RawFd};
use std::os::unix::fs::OpenOptionsExt;
use std::os::unix::net::{UnixDatagram, UnixStream};
use std::path::Path;
use std::time::Duration;

use super::figure::Figure;
use super::harness::{Harness, Samples};
use super::model::{BenchResult, Mode, Section};
use super::spec::{Benchmark, Ctx, Marks, Plot, PlotKind, StepError};
use crate::stats;
use crate::sys;
use crate::units::human_bytes;

pub const BENCH: Benchmark = Benchmark {
    name: "ipc",
    section: Section::Cpu,
    about: "pipe, FIFO, AF_UNIX, TCP, UDP: 1-byte round trips, bandwidth by message size, TCP connect",
    heavy: false,
    uses_dir: true,
    switches_by_design: true,
    estimate: |c| {
        let sweep: u32 = Transport::ALL
            .iter()
            .map(|t| sizes(*t, c.mode).len() as u32)
            .sum();
        // Sweep points (and the copy bound) get a third of the budget.
        c.budget_per_figure() * (6 + 12 + 6 + 2) + c.budget_per_figure() * (sweep + 1) / 3
            + Duration::from_millis(300)
    },
    run,
    plots: &[
        Plot {
            heading: "IPC",
            title: "ipc: round trip of a 1-byte message",
            figures: "ipc.rtt.",
            kind: PlotKind::Bars,
        },
        Plot {
            heading: "IPC",
            title: "ipc: bandwidth by message size (GB/s, 10^9 B/s)",
            figures: "ipc.bw.",
            kind: PlotKind::Sweep {
                x_label: "message size",
                y_label: "GB/s",
                x_base: 2.0,
                marks: Marks::None,
            },
        },
    ],
};

/// The largest UDP payload over IPv4.
const UDP_MAX: usize = 65_507;
/// The message size of the headline bandwidth figures.
const BW_SIZE: usize = 64 << 10;
/// How long a read waits for a peer before the figure gives up.
const PEER_TIMEOUT: Duration = Duration::from_secs(2);
/// How long the datagram reader waits for the rest of a burst once the
/// datagrams stop coming (the rest were dropped).
const DGRAM_GAP: Duration = Duration::from_millis(20);

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Transport {
    Pipe,
    Fifo,
    UnixStream,
    UnixDgram,
    Tcp,
    Udp,
}

impl Transport {
    const ALL: [Transport; 6] = [
        Transport::Pipe,
        Transport::Fifo,
        Transport::UnixStream,
        Transport::UnixDgram,
        Transport::Tcp,
        Transport::Udp,
    ];

    fn key(self) -> &'static str {
        match self {
            Transport::Pipe => "pipe",
            Transport::Fifo => "fifo",
            Transport::UnixStream => "unix_stream",
            Transport::UnixDgram => "unix_dgram",
            Transport::Tcp => "tcp",
            Transport::Udp => "udp",
        }
    }

    fn words(self) -> &'static str {
        match self {
            Transport::Pipe => "pipe",
            Transport::Fifo => "FIFO",
            Transport::UnixStream => "AF_UNIX stream",
            Transport::UnixDgram => "AF_UNIX datagram",
            Transport::Tcp => "TCP loopback",
            Transport::Udp => "UDP loopback",
        }
    }

    /// Whether a send delivers in the sender's own context, so that the
    /// one-task cost is what the round trip adds to its switches. Over
    /// loopback TCP and UDP the receive side runs in a softirq that the
    /// kernel may defer to ksoftirqd (a switch of its own, even in one
    /// task): no per-switch figure for them.
    fn switch_applies(self) -> bool {
        !matches!(self, Transport::Tcp | Transport::Udp)
    }

    fn datagram(self) -> bool {
        matches!(self, Transport::UnixDgram | Transport::Udp)
    }


    /// The headline message size: 64 KiB, or UDP's largest datagram.
    fn bw_size(self) -> usize {
        if self == Transport::Udp {
            UDP_MAX
        } else {
            BW_SIZE
        }
    }
}

/// Message sizes of the bandwidth sweep: 64 B ×16 up to 64 KiB (the
/// datagram transports stop there), then 256 KiB and 1 MiB for streams
/// (full: every power of 4).
fn sizes(t: Transport, mode: Mode) -> Vec<usize> {
    let step = if mode == Mode::Full { 4 } else { 16 };
    let mut out = Vec::new();
    let mut s = 64usize;
    while s < BW_SIZE {
        out.push(s);
        s *= step;
    }
    out.push(t.bw_size());
    if !t.datagram() {
        out.extend([256 << 10, 1 << 20]);
    }
    out
}

#[derive(Clone, Copy)]
enum Placement {
    /// The peer on this CPU.
    Pinned(usize),
    /// The peer on another CPU.
    Across(usize),
    /// Pinning failed: wherever the scheduler puts them.
    Free,
}

impl Placement {
    fn key(self) -> &'static str {
        match self {
            Placement::Pinned(_) => "pinned",
            Placement::Across(_) => "across",
            Placement::Free => "unpinned",
        }
    }
    fn words(self) -> &'static str {
        match self {
            Placement::Pinned(_) => "peer on the same CPU: every hand-over a real switch",
            Placement::Across(_) => "peer on another CPU: a cross-CPU wake-up",
            Placement::Free => "unpinned (pinning failed)",
        }
    }
    fn cpu(self) -> Option<usize> {
        match self {
            Placement::Pinned(c) | Placement::Across(c) => Some(c),
            Placement::Free => None,
        }
    }
}

/// One side of a connection: where it writes and where it reads (the same
/// socket twice for sockets).
struct End {
    tx: File,
    rx: File,
}

/// Both sides of a fresh connection of `t`: (this process's, the peer's).
fn connect(t: Transport, dir: &Path) -> io::Result<(End, End)> {
    let socket_pair = |a: OwnedFd, b: OwnedFd| -> io::Result<(End, End)> {
        for fd in [&a, &b] {
            sys::ipc::set_recv_timeout(fd.as_fd(), PEER_TIMEOUT)?;
        }
        let (a, b) = (File::from(a), File::from(b));
        Ok((
            End {
                tx: a.try_clone()?,
                rx: a,
            },
            End {
                tx: b.try_clone()?,
                rx: b,
            },
        ))
    };
    match t {
        Transport::Pipe => {
            let (to_peer_r, to_peer_w) = sys::process::pipe()?;
            let (to_me_r, to_me_w) = sys::process::pipe()?;
            Ok((
                End {
                    tx: File::from(to_peer_w),
                    rx: File::from(to_me_r),
                },
                End {
                    tx: File::from(to_me_w),
                    rx: File::from(to_peer_r),
                },
            ))
        }
        Transport::Fifo => {
            let (to_peer_r, to_peer_w) = fifo(dir)?;
            let (to_me_r, to_me_w) = fifo(dir)?;
            Ok((
                End {
                    tx: to_peer_w,
                    rx: to_me_r,
                },
                End {
                    tx: to_me_w,
                    rx: to_peer_r,
                },
            ))
        }
        Transport::UnixStream => {
            let (a, b) = UnixStream::pair()?;
            socket_pair(a.into(), b.into())
        }
        Transport::UnixDgram => {
            let (a, b) = UnixDatagram::pair()?;
            socket_pair(a.into(), b.into())
        }
        Transport::Tcp => {
            let listener = TcpListener::bind((Ipv4Addr::LOCALHOST, 0))?;
            let client = TcpStream::connect(listener.local_addr()?)?;
            let (server, _) = listener.accept()?;
            client.set_nodelay(true)?;
            server.set_nodelay(true)?;
            socket_pair(client.into(), server.into())
        }
        Transport::Udp => {
            let a = UdpSocket::bind((Ipv4Addr::LOCALHOST, 0))?;
            let b = UdpSocket::bind((Ipv4Addr::LOCALHOST, 0))?;
            a.connect(b.local_addr()?)?;
            b.connect(a.local_addr()?)?;
            for s in [&a, &b] {
                // Room for a burst of 64 KiB datagrams (root may exceed
                // rmem_max; others get what the limit allows).
                sys::ipc::set_socket_buffers(s.as_fd(), 4 << 20)?;
            }
            socket_pair(a.into(), b.into())
        }
    }
}

/// A named pipe in `dir`, both ends open, its name already removed:
/// (read end, write end). The read end is opened first without blocking
/// (no writer yet), then made blocking again.
fn fifo(dir: &Path) -> io::Result<(File, File)> {
    let mut rng = super::scratch::Rng::unpredictable();
    let mut tries = 0;
    loop {
        let path = dir.join(format!(".tally-bench-fifo-{:016x}", rng.next_u64()));
        // Armed before it exists, so a signal at any point removes it.
        let guard = sys::cleanup::Guard::arm(&path)?;
        match sys::ipc::mkfifo(&path, 0o600) {
            Ok(()) => {}
            Err(e) if e.kind() == io::ErrorKind::AlreadyExists && tries < 16 => {
                tries += 1;
                continue;
            }
            Err(e) => return Err(e),
        }
        let opened = (|| {
            let r = std::fs::OpenOptions::new()
                .read(true)
                .custom_flags(libc::O_NONBLOCK)
                .open(&path)?;
            let w = std::fs::OpenOptions::new().write(true).open(&path)?;
            sys::ipc::set_blocking(r.as_fd())?;
            Ok::<_, io::Error>((r, w))
        })();
        let removed = std::fs::remove_file(&path);
        drop(guard);
        let ends = opened?;
        removed?;
        return Ok(ends);
    }
}

/// A forked peer; killed and reaped when dropped, whatever happened.
struct Peer {
    pid: u32,
}

impl Peer {
    /// Forks a peer running `body` on `place`'s CPU; `mine` are this
    /// process's ends (closed in the peer).
    fn start(
        place: Placement,
        mine: &[RawFd],
        body: &mut dyn FnMut() -> i32,
    ) -> io::Result<Peer> {
        let cpu = place.cpu();
        let pid = sys::spawn::fork_with(mine, &mut || {
            if let Some(c) = cpu {
                let _ = sys::cpu::pin_to_cpu(c);
            }
            body()
        })?;
        Ok(Peer { pid })
    }
}

impl Drop for Peer {
    fn drop(&mut self) {
        let _ = sys::signals::kill(self.pid, libc::SIGKILL);
        let _ = sys::spawn::wait_child(self.pid);
    }
}

/// The error a read that found the end of the stream stands for.
fn peer_gone() -> io::Error {
    io::Error::new(
        io::ErrorKind::UnexpectedEof,
        "the peer process exited (end of stream)",
    )
}

/// Maps a receive timeout to an error that says what it means.
fn explain(e: io::Error) -> io::Error {
    if matches!(
        e.kind(),
        io::ErrorKind::WouldBlock | io::ErrorKind::TimedOut
    ) {
        io::Error::new(
            io::ErrorKind::TimedOut,
            format!(
                "no answer from the peer within {} s (it died, or the message was lost)",
                PEER_TIMEOUT.as_secs()
            ),
        )
    } else {
        e
    }
}

fn read_byte(rx: &mut File, b: &mut [u8; 1]) -> io::Result<()> {
    match rx.read(b) {
        Ok(1) => Ok(()),
        Ok(_) => Err(peer_gone()),
        Err(e) => Err(explain(e)),
    }
}

/// The peer of the latency figures: echoes each byte (async-signal-safe:
/// read and write only).
fn echo(end: &mut End) -> i32 {
    let mut b = [0u8; 1];
    loop {
        match end.rx.read(&mut b) {
            Ok(1) => {}
            _ => return 0,
        }
        if end.tx.write(&b).ok() != Some(1) {
            return 1;
        }
    }
}

/// ns per 1-byte send + receive on one connection in one task (no switch).
fn one_task(h: &Harness, t: Transport, dir: &Path) -> io::Result<Samples> {
    let (mut me, mut peer) = connect(t, dir)?;
    let mut b = [0u8; 1];
    h.measure::<io::Error>(&mut |iters, tm| {
        let s = tm.now();
        for _ in 0..iters {
            me.tx.write_all(&[1])?;
            read_byte(&mut peer.rx, &mut b)?;
        }
        Ok(tm.ns_since(s))
    })
}

/// ns per round trip of 1 byte to a forked peer on `place`.
fn round_trips(h: &Harness, t: Transport, dir: &Path, place: Placement) -> io::Result<Samples> {
    let (mut me, mut peer) = connect(t, dir)?;
    let mine = [me.tx.as_raw_fd(), me.rx.as_raw_fd()];
    let _peer = Peer::start(place, &mine, &mut || echo(&mut peer))?;
    drop(peer);
    let mut b = [0u8; 1];
    h.measure_raw::<io::Error>(&mut |iters, tm| {
        let s = tm.now();
        for _ in 0..iters {
            me.tx.write_all(&[1])?;
            read_byte(&mut me.rx, &mut b)?;
        }
        Ok(tm.ns_since(s))
    })
}

/// A bandwidth request: how many messages of which size, for which round.
fn request(count: u32, size: u32, round: u32) -> [u8; 16] {
    let mut r = [0u8; 16];
    r[0..4].copy_from_slice(&count.to_le_bytes());
    r[4..8].copy_from_slice(&size.to_le_bytes());
    r[8..12].copy_from_slice(&round.to_le_bytes());
    r
}

fn u32_at(b: &[u8], at: usize) -> u32 {
    let mut w = [0u8; 4];
    if let Some(s) = b.get(at..at + 4) {
        w.copy_from_slice(s);
    }
    u32::from_le_bytes(w)
}

/// The sequence number of the datagram that ends a burst.
const END_OF_BURST: u32 = u32::MAX;

/// The peer of the bandwidth figures: for each request, sends `count`
/// messages of `size` bytes from `buf` (datagrams carry round and sequence
/// number in their first 8 bytes), then, for datagrams, an end-of-burst
/// marker. Async-signal-safe: read and write only, on a buffer allocated
/// before the fork.
fn sender(end: &mut End, buf: &mut [u8], datagram: bool) -> i32 {
    let mut req = [0u8; 16];
    loop {
        let got = if datagram {
            end.rx.read(&mut req).map(|n| n == req.len())
        } else {
            end.rx.read_exact(&mut req).map(|()| true)
        };
        if got.ok() != Some(true) {
            return 0;
        }
        let (count, size, round) = (u32_at(&req, 0), u32_at(&req, 4), u32_at(&req, 8));
        let size = (size as usize).min(buf.len()).max(8);
        for seq in 0..count {
            if datagram
                && let Some(head) = buf.get_mut(0..8) {
                    head[0..4].copy_from_slice(&round.to_le_bytes());
                    head[4..8].copy_from_slice(&seq.to_le_bytes());
                }
            let Some(msg) = buf.get(..size) else { return 1 };
            let sent = if datagram {
                end.tx.write(msg).map(|n| n == size)
            } else {
                end.tx.write_all(msg).map(|()| true)
            };
            if sent.ok() != Some(true) {
                return 1;
            }
        }
        if datagram {
            let mut marker = [0u8; 8];
            marker[0..4].copy_from_slice(&round.to_le_bytes());
            marker[4..8].copy_from_slice(&END_OF_BURST.to_le_bytes());
            if end.tx.write(&marker).is_err() {
                return 1;
            }
        }
    }
}

/// What a bandwidth measurement received: samples, and datagrams lost.
struct Received {
    samples: Samples,
    sent: u64,
    lost: u64,
}

/// GB/s of `size`-byte messages a forked peer on `place` sends.
fn bandwidth(
    h: &Harness,
    t: Transport,
    dir: &Path,
    place: Placement,
    size: usize,
) -> io::Result<Received> {
    let (mut me, mut peer) = connect(t, dir)?;
    let mut out_buf = vec![0x5au8; size.max(8)];
    let datagram = t.datagram();
    let mine = [me.tx.as_raw_fd(), me.rx.as_raw_fd()];
    let _peer = Peer::start(place, &mine, &mut || {
        sender(&mut peer, &mut out_buf, datagram)
    })?;
    drop(peer);
    if datagram {
        sys::ipc::set_recv_timeout(me.rx.as_fd(), DGRAM_GAP)?;
    }
    // Streams read in 64 KiB chunks; a datagram needs room for all of it.
    let mut buf = vec![0u8; if datagram { size.max(64 << 10) } else { 64 << 10 }];
    let mut round = 0u32;
    let (mut sent, mut lost) = (0u64, 0u64);
    let samples = h.measure_raw::<io::Error>(&mut |iters, tm| {
        round = round.wrapping_add(1);
        let count = u32::try_from(iters).unwrap_or(u32::MAX);
        let want = u64::from(count) * size as u64;
        let req = request(count, size as u32, round);
        let s = tm.now();
        me.tx.write_all(&req)?;
        if !datagram {
            let mut got = 0u64;
            while got < want {
                let n = me.rx.read(&mut buf).map_err(explain)?;
                if n == 0 {
                    return Err(peer_gone());
                }
                got += n as u64;
            }
            return Ok(tm.ns_since(s));
        }
        // Datagrams: count what arrives until the end marker, the last
        // sequence number, or a gap; time to the last one that arrived.
        let (mut got, mut last) = (0u64, s);
        // Before the first datagram, a busy machine may keep the peer
        // from running for a while: wait up to PEER_TIMEOUT for it.
        let mut idle = Duration::ZERO;
        loop {
            match me.rx.read(&mut buf) {
                Ok(n) => {
                    if u32_at(&buf, 0) != round {
                        continue; // a straggler from an earlier burst
                    }
                    let seq = u32_at(&buf, 4);
                    if seq == END_OF_BURST {
                        break;
                    }
                    got += n as u64;
                    last = tm.now();
                    if seq + 1 >= count {
                        break;
                    }
                }
                Err(e) if matches!(e.kind(), io::ErrorKind::WouldBlock | io::ErrorKind::TimedOut) => {
                    if got > 0 {
                        break;
                    }
                    idle += DGRAM_GAP;
                    if idle >= PEER_TIMEOUT {
                        return Err(explain(e));
                    }
                }
                Err(e) => return Err(e),
            }
        }
        sent += u64::from(count);
        lost += u64::from(count).saturating_sub(got / size.max(1) as u64);
        if got == 0 {
            return Ok(0.0);
        }
        // Scaled so that bytes per message / ns per message is what arrived.
        Ok(tm.ns(last.saturating_sub(s)) * want as f64 / got as f64)
    })?;
    Ok(Received {
        samples,
        sent,
        lost,
    })
}

/// ns per TCP connect to a forked peer that accepts and closes at once;
/// the client reads the end of stream, then closes.
fn tcp_connects(h: &Harness, place: Placement) -> io::Result<Samples> {
    let listener = TcpListener::bind((Ipv4Addr::LOCALHOST, 0))?;
    // accept() waits no longer than a read: a peer whose parent died
    // (even of SIGKILL) gives up instead of waiting for ever.
    sys::ipc::set_recv_timeout(listener.as_fd(), PEER_TIMEOUT)?;
    let addr: SocketAddr = listener.local_addr()?;
    let _peer = Peer::start(place, &[], &mut || {
        loop {
            match listener.accept() {
                Ok((s, _)) => drop(s),
                Err(_) => return 1,
            }
        }
    })?;
    // Only the peer holds the listener now: if it dies, connect is refused.
    drop(listener);
    let mut b = [0u8; 1];
    h.measure_each::<io::Error>(&mut |tm| {
        let s = tm.now();
        let mut c = TcpStream::connect(addr)?;
        match c.read(&mut b) {
            Ok(0) => {}
            Ok(_) => return Err(io::Error::other("the peer sent data; it only closes")),
            Err(e) => return Err(e),
        }
        drop(c);
        Ok(tm.ns_since(s))
    })
}

/// A harness with `num/den` of the budget per figure (sweep points).
fn scaled(h: &Harness, num: u32, den: u32) -> Harness {
    let mut h = h.clone();
    h.budget.per_figure = h.budget.per_figure * num / den.max(1);
    h
}

/// In-process copy bandwidth of `size` bytes (memcpy between two warm
/// buffers), GB/s: no IPC moves bytes faster than one copy.
fn copy_bound(h: &Harness, size: usize) -> Option<f64> {
    let src = vec![1u8; size];
    let mut dst = vec![0u8; size];
    let s = h
        .sample(&mut |iters, tm| {
            let s = tm.now();
            for _ in 0..iters {
                dst.copy_from_slice(&src);
                std::hint::black_box(&mut dst);
            }
            tm.ns_since(s)
        });
    let fastest = s.per_op_ns.iter().copied().filter(|v| *v > 0.0).fold(f64::INFINITY, f64::min);
    (fastest.is_finite()).then(|| size as f64 / fastest)
}

/// How much faster than one in-process copy an IPC figure may be.
const COPY_SLACK: f64 = 1.5;

fn flag_above_copy(f: &mut Figure, bound: Option<(f64, usize)>) {
    let Some((gbps, size)) = bound else { return };
    let limit = gbps * COPY_SLACK;
    let over = f.samples.iter().filter(|v| **v > limit).count();
    if over > 0 {
        f.flag(format!(
            "{over} of {} samples exceed one in-process copy of {} ({gbps:.2} GB/s) × {COPY_SLACK}: every transport copies each byte at least once",
            f.samples.len(),
            human_bytes(size as u64)
        ));
    }
}

fn unavailable(id: String, label: &str, def: &str, e: &io::Error) -> Figure {
    Figure::unavailable(id, label, def, e.to_string())
}

fn run(ctx: &mut Ctx<'_>, out: &mut BenchResult) -> Result<(), StepError> {
    let places = placements(ctx, out);
    let overhead = one_task_figures(ctx, out);
    round_trip_figures(ctx, out, &places, &overhead);
    ctx.step("in-process copy (the bandwidth bound)");
    let bound = copy_bound(&scaled(ctx.h, 1, 3), BW_SIZE).map(|g| (g, BW_SIZE));
    if let Some((g, _)) = bound {
        out.notes.push(format!(
            "bandwidth bound: one in-process memcpy of 64 KiB ran at {g:.2} GB/s (fastest sample); a transport above {COPY_SLACK}× that is flagged"
        ));
    }
    bandwidth_figures(ctx, out, &places, bound);
    ctx.step("TCP connect");
    for place in &places {
        let id = format!("ipc.tcp_connect.{}", place.key());
        let label = format!("TCP connect+close, {}", place.key());
        let def = format!(
            "ns per connect to a loopback listener whose peer accepts and closes; the client reads the end of stream and closes; {}",
            place.words()
        );
        match tcp_connects(ctx.h, *place) {
            Ok(s) => out.push(Figure::latency(id, &label, &def, s)),
            Err(e) => out.push(unavailable(id, &label, &def, &e)),
        }
    }
    Ok(())
}

/// Where the peers run: on the benchmark's CPU, and on another when
/// there is one (unpinned when the thread could not be pinned).
fn placements(ctx: &Ctx<'_>, out: &mut BenchResult) -> Vec<Placement> {
    let mut places = Vec::new();
    match (ctx.cpu, ctx.other_cpu) {
        (Some(c), other) => {
            places.push(Placement::Pinned(c));
            match other {
                Some(o) => places.push(Placement::Across(o)),
                None => out
                    .notes
                    .push("across-CPU figures unavailable: one CPU only".into()),
            }
        }
        (None, _) => {
            places.push(Placement::Free);
            out.notes
                .push("the benchmark thread could not be pinned: peers run unpinned".into());
        }
    }
    places
}

/// The one-task cost of each transport, subtracted from the pinned round
/// trips: its fastest sample, `None` where it could not be measured.
fn one_task_figures(ctx: &mut Ctx<'_>, out: &mut BenchResult) -> Vec<Option<f64>> {
    let mut overhead = Vec::new();
    ctx.step("one-task send+receive");
    for t in Transport::ALL {
        let id = format!("ipc.one_task.{}", t.key());
        let label = format!("{}, send+receive, one task", t.words());
        let def = "ns per 1-byte send plus 1-byte receive on one connection in one task (no switch); subtracted from the pinned round trip";
        match one_task(ctx.h, t, &ctx.cfg.dir) {
            Ok(s) => {
                // The fastest sample: other work only ever adds time, and
                // an inflated cost would push the switch below zero.
                overhead.push(stats::summarize(&s.per_op_ns).map(|s| s.min));
                out.push(Figure::latency(id, &label, def, s));
            }
            Err(e) => {
                overhead.push(None);
                out.push(unavailable(id, &label, def, &e));
            }
        }
    }
    overhead
}

/// Round trips to a forked peer per placement and transport, and the
/// cost per switch where the peer shares the CPU.
fn round_trip_figures(
    ctx: &mut Ctx<'_>,
    out: &mut BenchResult,
    places: &[Placement],
    overhead: &[Option<f64>],
) {
    for place in places {
        ctx.step(format!("round trips, {}", place.key()));
        for (i, t) in Transport::ALL.iter().enumerate() {
            let id = format!("ipc.rtt.{}.{}", t.key(), place.key());
            let label = format!("{}, round trip, {}", t.words(), place.key());
            let def = format!(
                "ns per round trip of a 1-byte message to a forked peer and back, {}",
                place.words()
            );
            match round_trips(ctx.h, *t, &ctx.cfg.dir, *place) {
                Ok(s) => {
                    let per_switch = match (place, overhead.get(i).copied().flatten()) {
                        (Placement::Pinned(_), Some(o)) if t.switch_applies() => {
                            Some(per_switch(&s, o))
                        }
                        _ => None,
                    };
                    out.push(Figure::latency(id, &label, &def, s));
                    if let Some(values) = per_switch {
                        out.push(flag_negative(Figure::latency_values(
                            format!("ipc.switch.{}", t.key()),
                            &format!("{}, per switch, pinned", t.words()),
                            "ns per switch = (round trip − 2 × the fastest one-task send+receive) / 2, peer on the same CPU",
                            values,
                        )));
                    }
                }
                Err(e) => out.push(unavailable(id, &label, &def, &e)),
            }
        }
    }
}

/// Bandwidth: the headline size on every placement but the sweep's
/// (the last: where the peers overlap, across CPUs, else where it can),
/// which has it as one of its points; `bound` flags a figure above one
/// in-process copy.
fn bandwidth_figures(
    ctx: &mut Ctx<'_>,
    out: &mut BenchResult,
    places: &[Placement],
    bound: Option<(f64, usize)>,
) {
    let sweep_place = places.last().copied().unwrap_or(Placement::Free);
    let sweep_h = scaled(ctx.h, 1, 3);
    let mut lost_notes = Vec::new();
    for place in places {
        let sweeping = place.key() == sweep_place.key();
        ctx.step(format!("bandwidth, {}", place.key()));
        for t in Transport::ALL {
            let list = if sweeping {
                sizes(t, ctx.cfg.mode)
            } else {
                vec![t.bw_size()]
            };
            for size in list {
                let headline = size == t.bw_size();
                let (id, label) = if sweeping {
                    (
                        format!("ipc.bw.{}.{size}", t.key()),
                        format!("{}, {}", t.words(), place.key()),
                    )
                } else {
                    (
                        format!("ipc.bw_{}.{}", place.key(), t.key()),
                        format!("{}, {} B messages, {}", t.words(), size, place.key()),
                    )
                };
                let def = format!(
                    "GB/s (10^9 B) of {}-byte messages a forked peer sends on request, received into a 64 KiB buffer, {}{}",
                    size,
                    place.words(),
                    if t.datagram() {
                        "; lost datagrams do not count"
                    } else {
                        ""
                    }
                );
                let harness = if headline { ctx.h } else { &sweep_h };
                let f = match bandwidth(harness, t, &ctx.cfg.dir, *place, size) {
                    Ok(r) => {
                        let mut f = Figure::bandwidth(id, &label, &def, r.samples, size as f64);
                        if headline {
                            flag_above_copy(&mut f, bound);
                        }
                        if r.lost > 0 {
                            let pct = r.lost as f64 * 100.0 / r.sent.max(1) as f64;
                            f = f.note(format!(
                                "{} of {} datagrams lost ({pct:.1}%): the receiver's buffer overflowed",
                                r.lost, r.sent
                            ));
                            if headline {
                                lost_notes.push(format!("{} {}: {pct:.1}%", t.words(), place.key()));
                            }
                        }
                        f
                    }
                    Err(e) => unavailable(id, &label, &def, &e),
                };
                out.push(if sweeping { f.at(size as u64, "bytes") } else { f });
            }
        }
    }
    if !lost_notes.is_empty() {
        out.notes.push(format!(
            "datagrams lost at the headline size (UDP over loopback drops what the receiver's buffer cannot hold): {}",
            lost_notes.join(", ")
        ));
    }
}

/// Per-switch values: (round trip − 2 × one-task cost) / 2 per sample,
/// negative ones kept.
fn per_switch(rt: &Samples, overhead_ns: f64) -> Vec<f64> {
    rt.per_op_ns
        .iter()
        .map(|v| (v - 2.0 * overhead_ns) / 2.0)
        .collect()
}

fn flag_negative(f: Figure) -> Figure {
    let negative = f.samples.iter().filter(|v| **v < 0.0).count();
    if negative > 0 {
        let total = f.samples.len();
        f.note(format!(
            "{negative} of {total} samples came out negative (the one-task cost exceeded the round trip): noise, not a switch cost"
        ))
    } else {
        f
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tiny() -> Harness {
        Harness::calibrate(
            super::super::harness::Timer::best_source(),
            Duration::from_millis(1),
            super::super::harness::Budget::new(Duration::from_millis(2)),
        )
    }

    #[test]
    fn sweeps_rise_and_stop_at_the_datagram_limit() {
        for mode in [Mode::Quick, Mode::Full] {
            for t in Transport::ALL {
                let s = sizes(t, mode);
                assert!(s.windows(2).all(|w| w[0] < w[1]), "{t:?}");
                assert_eq!(s.first(), Some(&64));
                assert!(s.contains(&t.bw_size()));
                if t.datagram() {
                    assert_eq!(s.last(), Some(&t.bw_size()));
                } else {
                    assert_eq!(s.last(), Some(&(1 << 20)));
                }
            }
        }
        assert_eq!(sizes(Transport::Udp, Mode::Quick), vec![64, 1024, 16384, UDP_MAX]);
    }

    #[test]
    fn every_transport_carries_a_byte_each_way() {
        let dir = tempfile::tempdir().unwrap();
        for t in Transport::ALL {
            let (mut a, mut b) = connect(t, dir.path()).unwrap();
            a.tx.write_all(&[7]).unwrap();
            let mut x = [0u8; 1];
            read_byte(&mut b.rx, &mut x).unwrap();
            b.tx.write_all(&[8]).unwrap();
            read_byte(&mut a.rx, &mut x).unwrap();
            assert_eq!(x, [8], "{t:?}");
        }
        assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 0, "no FIFO left");
    }

    #[test]
    fn a_dead_peer_is_an_error_not_a_hang() {
        let dir = tempfile::tempdir().unwrap();
        for t in Transport::ALL {
            let (mut me, peer) = connect(t, dir.path()).unwrap();
            let mine = [me.tx.as_raw_fd(), me.rx.as_raw_fd()];
            // A peer that exits at once.
            let p = Peer::start(Placement::Free, &mine, &mut || 3).unwrap();
            drop(peer);
            let _ = sys::spawn::wait_child(p.pid);
            std::mem::forget(p);
            let mut b = [0u8; 1];
            let _ = me.tx.write_all(&[1]);
            assert!(read_byte(&mut me.rx, &mut b).is_err(), "{t:?}");
        }
    }

    #[test]
    fn bandwidth_counts_what_arrives() {
        let dir = tempfile::tempdir().unwrap();
        let h = tiny();
        for t in Transport::ALL {
            let r = bandwidth(&h, t, dir.path(), Placement::Free, 4096).unwrap();
            assert!(!r.samples.per_op_ns.is_empty(), "{t:?}");
            assert!(r.lost <= r.sent);
            if t != Transport::Udp {
                assert_eq!(r.lost, 0, "{t:?} is reliable");
            }
        }
        let s = tcp_connects(&h, Placement::Free).unwrap();
        assert!(!s.per_op_ns.is_empty());
    }

    #[test]
    fn requests_round_trip() {
        let r = request(7, 65536, 3);
        assert_eq!((u32_at(&r, 0), u32_at(&r, 4), u32_at(&r, 8)), (7, 65536, 3));
        assert_eq!(u32_at(&r, 14), 0, "past the end reads as zero");
    }
}

//! The child side of `tally load --procs`: one of N processes that load
//! the same file together and hold it while tally measures them.
//!
//! The protocol:
//! 1. the child blocks SIGINT, SIGTERM, SIGHUP and SIGQUIT (so the
//!    release below cannot kill it halfway), writes `ready` on a line of
//!    stdout, then blocks reading one byte of stdin. stdin is one pipe
//!    shared by all N children: tally writes N bytes into it once every
//!    child is ready (the barrier), and each child takes exactly one —
//!    never more, or a fast child would take a slow one's start;
//! 2. the child loads the file as `--child METHOD` does, writes its
//!    [`HoldResult`] as one JSON line ("loaded"), and keeps the data;
//! 3. it waits for SIGTERM (or SIGINT, SIGHUP) with `sigwait`: tally
//!    sends it once it has measured every process, and the child exits 0,
//!    dropping the data.
//!
//! End of file at the barrier means tally went away or gave up: the child
//! exits without loading. Besides, the child asks for SIGKILL when tally
//! dies ([`crate::sys::process::die_with_parent`]), so it never outlives
//! tally even in the middle of a load.

use std::fs::File;
use std::io::{self, Read, Write};
use std::os::fd::AsFd;
use std::path::Path;
use std::time::Instant;

use serde::{Deserialize, Serialize};

use super::child::{self, ChildResult};
use super::{Method, Touch};

/// The first line a child writes: it is alive and waits at the barrier.
pub const READY: &str = "ready";

/// What a child reports once it has loaded the file.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct HoldResult {
    #[serde(flatten)]
    pub result: ChildResult,
    /// From the barrier to the end of this child's load.
    pub load_us: u64,
    /// Whether the load failed for want of memory.
    pub out_of_memory: bool,
}

/// How a held child ended, for its exit status.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Ended {
    /// Loaded, held, released.
    Released,
    /// tally went away before the barrier opened.
    NoStart,
    /// The load failed (the reason went to tally).
    Failed { out_of_memory: bool },
}

/// Runs the protocol above with this process's stdin and stdout.
pub fn serve(method: Method, path: &Path, touch: Touch, parent: u32) -> io::Result<Ended> {
    crate::sys::process::die_with_parent(parent)?;
    // Blocked from here on: a release that comes before the sigwait below
    // waits for it instead of killing the process.
    let _ = crate::sys::signals::block_forwarded();
    // Unbuffered: a buffered stdin would take the other children's bytes.
    let mut gate = File::from(io::stdin().as_fd().try_clone_to_owned()?);
    let mut out = io::stdout().lock();
    writeln!(out, "{READY}")?;
    out.flush()?;
    let mut byte = [0u8; 1];
    if read_some(&mut gate, &mut byte)? == 0 {
        return Ok(Ended::NoStart);
    }
    let start = Instant::now();
    let loaded = child::load_keep(method, path, touch);
    let load_us = crate::units::micros(start.elapsed());
    let (report, held, ended) = match loaded {
        Ok((result, held)) => (
            HoldResult {
                result,
                load_us,
                out_of_memory: false,
            },
            Some(held),
            Ended::Released,
        ),
        Err(e) => {
            let oom = e.kind() == io::ErrorKind::OutOfMemory;
            (
                HoldResult {
                    result: ChildResult {
                        error: Some(e.to_string()),
                        ..Default::default()
                    },
                    load_us,
                    out_of_memory: oom,
                },
                None,
                Ended::Failed { out_of_memory: oom },
            )
        }
    };
    let line = serde_json::to_string(&report).map_err(io::Error::other)?;
    writeln!(out, "{line}")?;
    out.flush()?;
    if held.is_some() {
        // Hold until tally releases this process.
        crate::sys::mem::wait_for_stop_signal()?;
    }
    drop(held);
    Ok(ended)
}

/// One read, retried on EINTR; a read error counts as end of file (tally
/// is gone either way).
fn read_some(f: &mut File, buf: &mut [u8]) -> io::Result<usize> {
    loop {
        match f.read(buf) {
            Ok(n) => return Ok(n),
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(_) => return Ok(0),
        }
    }
}

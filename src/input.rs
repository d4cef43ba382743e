//! Bounded reading of every file tally reads that a user can name or a
//! process can change: configurations, baselines, path lists on stdin,
//! /proc and /sys files (real, or a `--procs` fixture tree).
//!
//! Such a file can be anything: `/dev/zero` (endless), a FIFO (a reader
//! waits forever for a writer), a 1 GB sparse file, a `/proc` file another
//! process makes long. Read whole with `std::fs::read_to_string`, each of
//! them takes gigabytes or hangs, and on a shared machine that is an
//! out-of-memory kill of somebody else's work. Here every read has a cap
//! that fits the file's kind, a regular file is required where one is
//! expected, and a stream that may legitimately be a pipe (a list on
//! stdin) is read with an idle timeout. Every refusal is an
//! [`InputError`] naming the file, the cap or the file type, and the fix.
//!
//! # API
//!
//! - [`Bound`]: what a file is (for messages), the most bytes it may hold,
//!   and what to give instead. [`CONFIG`] (1 MiB) is the bound of a
//!   configuration file; a command defines its own for its files beside
//!   the code that parses them (the bench baseline's `BOUND`: 64 MiB; the
//!   serve configuration's: [`CONFIG`], named for its messages).
//! - [`read_file`] / [`read_text`]: a regular file, whole. Anything else
//!   (FIFO, device, socket, directory) is refused before a byte is read;
//!   a file over the cap is refused by its size before it is read, and a
//!   file that grows past the cap while read stops at the cap.
//! - [`read_proc`] / [`read_proc_text`] / [`proc_cap_bytes`]: a /proc or
//!   /sys file, whose size the kernel reports as 0: read up to the cap of
//!   its kind (a page, or the kernel's maximum for that file), refused
//!   when it is not a regular file (a fixture tree's link to /dev/zero).
//!   [`read_capped`] is the same read into a reused buffer, for hot loops.
//! - [`Stdin`] and [`read_paths`]: a list of paths on standard input,
//!   which may be a file, a pipe, a terminal or a device: a pipe or socket
//!   that sends nothing for [`STDIN_IDLE`] ends the read, every path is at
//!   most [`PATH_MAX_BYTES`] and the list at most [`PATH_LIST`]'s cap.
//! - [`InputError`]: every refusal, naming the file, the cap or the file
//!   type, and the fix; it converts into an `io::Error` (a failed read
//!   keeps its OS error; a refusal is `InvalidData`, `TimedOut` or `Other`
//!   with the `InputError` inside, see [`InputError::of`]).
//!
//! A new kind of input (a saved comparison, a YAML configuration) takes
//! one constant and one call:
//!
//! ```no_run
//! use tally::input::{Bound, InputError, read_text};
//!
//! /// A saved `tally compare` report: its schema's bound.
//! const SAVED: Bound = Bound {
//!     what: "saved comparison",
//!     cap_bytes: 64 << 20,
//!     fix: "give a report written by `tally compare --format json` (at most 64 MiB)",
//! };
//!
//! fn load(path: &std::path::Path) -> Result<String, InputError> {
//!     // "the saved comparison /dev/zero is a character device, not a
//!     // regular file: give a report written by ..."
//!     read_text(path, &SAVED)
//! }
//! ```

use std::fs::{File, OpenOptions};
use std::io::{self, Read};
use std::os::fd::AsRawFd;
use std::os::unix::fs::{FileTypeExt, OpenOptionsExt};
use std::path::{Path, PathBuf};
use std::time::Duration;

use crate::text::path::display;
use crate::units::{human_bytes, thousands};

const KIB: u64 = 1 << 10;
const MIB: u64 = 1 << 20;

/// What a file is, how much of it may be read, and what to give instead.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Bound {
    /// What the file is, for messages: `serve configuration`, `baseline`.
    pub what: &'static str,
    /// The most bytes read; a larger file is refused.
    pub cap_bytes: u64,
    /// What to give instead, for messages: `give a TOML file`.
    pub fix: &'static str,
}

/// A configuration file (TOML or YAML): at most 1 MiB. A configuration a
/// person writes is a few kB; 1 MiB leaves room for thousands of entries.
pub const CONFIG: Bound = Bound {
    what: "configuration",
    cap_bytes: MIB,
    fix: "give a configuration file (plain text, at most 1 MiB)",
};

/// A list of paths on stdin (`tally cache -`): at most 64 MiB and
/// [`PATH_LIST_MAX_PATHS`] paths, each at most `PATH_MAX` bytes.
pub const PATH_LIST: Bound = Bound {
    what: "path list",
    cap_bytes: 64 * MIB,
    fix: "name directories with -r instead of listing their files, or split the list \
          (xargs -0 -n 100000)",
};

/// The most paths a list on stdin may hold: about 100 MB of memory for
/// the list and its rows.
pub const PATH_LIST_MAX_PATHS: usize = 1_000_000;

/// The longest path the kernel takes (`PATH_MAX`, 4096 with its NUL).
pub const PATH_MAX_BYTES: usize = 4095;

/// How long a pipe or socket on stdin may send nothing before the read of
/// a list ends with an error (a terminal is a person typing: no limit).
pub const STDIN_IDLE: Duration = Duration::from_secs(60);

/// Why a file was not read.
#[derive(Debug, thiserror::Error)]
pub enum InputError {
    #[error("cannot read the {what} {name}: {source}")]
    Io {
        what: &'static str,
        name: String,
        source: io::Error,
    },
    /// A file a user named that cannot be opened or read (missing, no
    /// permission): with the fix, since the user chose the name.
    #[error("cannot read the {what} {name}: {source}; {fix}")]
    Unreadable {
        what: &'static str,
        name: String,
        source: io::Error,
        fix: &'static str,
    },
    #[error("the {what} {name} is {kind}, not a regular file: {fix}")]
    NotRegular {
        what: &'static str,
        name: String,
        /// `a FIFO`, `a character device`, …
        kind: &'static str,
        fix: &'static str,
    },
    #[error(
        "the {what} {name} {}, over the {} cap of a {what}: {fix}",
        match .size_bytes {
            Some(s) => format!("is {} ({} bytes)", human_bytes(*s), thousands(*s)),
            None => format!("passed {}", human_bytes(*.cap_bytes)),
        },
        human_bytes(*.cap_bytes)
    )]
    TooLarge {
        what: &'static str,
        name: String,
        /// The size, when known before reading (a regular file).
        size_bytes: Option<u64>,
        cap_bytes: u64,
        fix: &'static str,
    },
    #[error("the {what} {name} is not UTF-8 text (an invalid byte at offset {offset}): {fix}")]
    NotText {
        what: &'static str,
        name: String,
        offset: usize,
        fix: &'static str,
    },
    #[error(
        "the {what} on {name} stopped: {detail}; end the list (close the pipe), or write it \
         to a file first and give the file on stdin"
    )]
    Idle {
        what: &'static str,
        name: String,
        /// What the reader said: `nothing arrived for 60 s`.
        detail: String,
    },
    #[error(
        "the {what} on {name} holds an entry of more than {} bytes at byte {offset}, longer than \
         any path (PATH_MAX): {fix}",
        thousands(*.max_bytes as u64)
    )]
    EntryTooLong {
        what: &'static str,
        name: String,
        offset: u64,
        max_bytes: usize,
        fix: &'static str,
    },
    #[error(
        "the {what} on {name} holds a NUL byte at byte {offset}, which no path can hold: a list \
         separated by NULs (find -print0) needs -0"
    )]
    Nul {
        what: &'static str,
        name: String,
        offset: u64,
    },
    #[error(
        "the {what} on {name} holds more than {} paths, the most it may hold: {fix}",
        thousands(*.max as u64)
    )]
    TooMany {
        what: &'static str,
        name: String,
        max: usize,
        fix: &'static str,
    },
}

impl From<InputError> for io::Error {
    /// The OS error of a failed read as it was; a refusal as an error of
    /// kind `InvalidData` (not text, a NUL), `TimedOut` (idle) or `Other`
    /// whose inner error is the `InputError` (see [`InputError::of`]).
    fn from(e: InputError) -> io::Error {
        match e {
            InputError::Io { source, .. } | InputError::Unreadable { source, .. } => source,
            InputError::Idle { .. } => io::Error::new(io::ErrorKind::TimedOut, e),
            InputError::NotText { .. } | InputError::Nul { .. } => {
                io::Error::new(io::ErrorKind::InvalidData, e)
            }
            _ => io::Error::other(e),
        }
    }
}

impl InputError {
    /// The refusal inside an `io::Error` made from one, to show it alone
    /// (it names the file already) rather than under another "cannot read".
    pub fn of(e: &io::Error) -> Option<&InputError> {
        e.get_ref()?.downcast_ref::<InputError>()
    }
}

/// A file type in words, for messages: `a FIFO`, `a directory`.
pub fn kind_of(ft: std::fs::FileType) -> &'static str {
    if ft.is_file() {
        "a regular file"
    } else if ft.is_dir() {
        "a directory"
    } else if ft.is_fifo() {
        "a FIFO"
    } else if ft.is_char_device() {
        "a character device"
    } else if ft.is_block_device() {
        "a block device"
    } else if ft.is_socket() {
        "a socket"
    } else if ft.is_symlink() {
        "a symbolic link"
    } else {
        "not a file"
    }
}

/// The file type of a `st_mode` in words, as [`kind_of`] says it.
pub fn kind_of_mode(mode: u32) -> &'static str {
    match mode & libc::S_IFMT {
        libc::S_IFREG => "a regular file",
        libc::S_IFDIR => "a directory",
        libc::S_IFIFO => "a FIFO",
        libc::S_IFCHR => "a character device",
        libc::S_IFBLK => "a block device",
        libc::S_IFSOCK => "a socket",
        libc::S_IFLNK => "a symbolic link",
        _ => "not a file",
    }
}

/// Opens `path` for reading without waiting (a FIFO without a writer
/// opens at once) and without taking a terminal as controlling terminal.
fn open_nonblocking(path: &Path) -> io::Result<File> {
    OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NONBLOCK | libc::O_NOCTTY)
        .open(path)
}

/// A regular file, whole, as `bound` allows; see the module's text.
pub fn read_file(path: &Path, bound: &Bound) -> Result<Vec<u8>, InputError> {
    let name = || display(path);
    let io_err = |source| InputError::Unreadable {
        what: bound.what,
        name: name(),
        source,
        fix: bound.fix,
    };
    let not_regular = |ft: std::fs::FileType| InputError::NotRegular {
        what: bound.what,
        name: name(),
        kind: kind_of(ft),
        fix: bound.fix,
    };
    // Looked at before opening: opening a device can have effects of its
    // own (a tape rewinds), and a socket cannot be opened at all.
    let meta = std::fs::metadata(path).map_err(io_err)?;
    if !meta.is_file() {
        return Err(not_regular(meta.file_type()));
    }
    let file = open_nonblocking(path).map_err(io_err)?;
    // Looked at again through the descriptor: the name may have been
    // swapped for a FIFO or a device in between.
    let meta = file.metadata().map_err(io_err)?;
    if !meta.is_file() {
        return Err(not_regular(meta.file_type()));
    }
    if meta.len() > bound.cap_bytes {
        return Err(InputError::TooLarge {
            what: bound.what,
            name: name(),
            size_bytes: Some(meta.len()),
            cap_bytes: bound.cap_bytes,
            fix: bound.fix,
        });
    }
    let mut buf = Vec::with_capacity(usize::try_from(meta.len()).unwrap_or(0));
    // One byte past the cap tells a file that grew past it while read.
    file.take(bound.cap_bytes.saturating_add(1))
        .read_to_end(&mut buf)
        .map_err(io_err)?;
    if buf.len() as u64 > bound.cap_bytes {
        return Err(InputError::TooLarge {
            what: bound.what,
            name: name(),
            size_bytes: None,
            cap_bytes: bound.cap_bytes,
            fix: bound.fix,
        });
    }
    Ok(buf)
}

/// [`read_file`] of a file that must be UTF-8 text.
pub fn read_text(path: &Path, bound: &Bound) -> Result<String, InputError> {
    let bytes = read_file(path, bound)?;
    String::from_utf8(bytes).map_err(|e| InputError::NotText {
        what: bound.what,
        name: display(path),
        offset: e.utf8_error().valid_up_to(),
        fix: bound.fix,
    })
}

/// The cap of a /proc or /sys file, by its file name: a page for the
/// files of one record, the kernel's maximum where it has one, and a
/// generous bound where it has none.
pub fn proc_cap_bytes(file_name: &str) -> u64 {
    match file_name {
        // One record of fixed keys, well under a page (`smaps_rollup` is
        // about 20 lines; `stat`'s 52 numbers; `limits` 17 lines).
        "smaps_rollup"
        | "statm"
        | "io"
        | "comm"
        | "limits"
        | "loadavg"
        | "memory.peak"
        | "memory.max"
        | "memory.current"
        | "memory.events"
        | "cpu.stat"
        | "cgroup.controllers"
        | "cgroup.subtree_control"
        | "cgroup.type" => 4 * KIB,
        // A few dozen keys (`meminfo` ~55 lines, `memory.stat` ~60).
        "meminfo" | "memory.stat" | "io.stat" | "pressure" => 64 * KIB,
        // The `Groups:` line holds up to NGROUPS_MAX (65,536) group ids.
        "status" => MIB,
        // One line per hierarchy, each a path of at most PATH_MAX.
        "cgroup" => 128 * KIB,
        // The argument area: at most 6 MiB (fs/exec.c: 3/4 of _STK_LIM).
        "cmdline" | "environ" => 6 * MIB,
        // One line per CPU (NR_CPUS up to 8,192) and per interrupt.
        "stat" | "cpuinfo" | "interrupts" => 16 * MIB,
        // One pid per line: up to pid_max (2^22) ids of up to 8 bytes.
        "cgroup.procs" | "cgroup.threads" | "children" | "tasks" => 32 * MIB,
        // One line per mount (fs.mount-max: 100,000 per namespace).
        "mountinfo" | "mounts" => 32 * MIB,
        // One block per mapping (vm.max_map_count, 65,530 by default).
        "maps" => 32 * MIB,
        "smaps" => 128 * MIB,
        // A setting of /proc/sys or a value of /sys: the kernel's
        // proc_dostring and sysfs show at most a page.
        _ => 4 * KIB,
    }
}

/// The bound of a /proc or /sys file at `path`: [`proc_cap_bytes`] of its
/// file name.
pub fn proc_bound(path: &Path) -> Bound {
    let name = path.file_name().and_then(|n| n.to_str()).unwrap_or("");
    Bound {
        what: "kernel file",
        cap_bytes: proc_cap_bytes(name),
        fix: "name a proc filesystem, or a fixture tree of regular files shaped like one",
    }
}

/// Reads from `file` into `buf` up to `cap_bytes`, from its start:
/// `Ok(Some(n))` when the whole file fit (its `n` bytes are `buf[..n]`),
/// `Ok(None)` when it holds more. `buf` is a reused scratch buffer: its
/// length is the room already there (kept between calls, so a hot loop
/// neither allocates nor clears), grown by doubling up to `cap_bytes + 1`.
/// No size is asked first: /proc files report 0.
pub fn read_capped(
    file: &mut File,
    buf: &mut Vec<u8>,
    cap_bytes: u64,
) -> io::Result<Option<usize>> {
    let limit = usize::try_from(cap_bytes.saturating_add(1)).unwrap_or(usize::MAX);
    let mut len = 0;
    loop {
        if len >= limit {
            return Ok(None);
        }
        if buf.len() - len < 4096.min(limit - len) {
            let grown = buf.len().max(4096).saturating_mul(2).min(limit);
            buf.resize(grown.max(len + 1), 0);
        }
        let end = buf.len().min(limit);
        match file.read(buf.get_mut(len..end).unwrap_or_default()) {
            Ok(0) => return Ok(Some(len)),
            Ok(n) => len += n,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
}

/// A /proc or /sys file, as its [`proc_bound`] allows: see the module's
/// text. A FIFO or device standing in for one is refused unread.
pub fn read_proc(path: &Path) -> Result<Vec<u8>, InputError> {
    let bound = proc_bound(path);
    let io_err = |source| InputError::Io {
        what: bound.what,
        name: display(path),
        source,
    };
    let mut file = open_nonblocking(path).map_err(io_err)?;
    let meta = file.metadata().map_err(io_err)?;
    if !meta.is_file() {
        return Err(InputError::NotRegular {
            what: bound.what,
            name: display(path),
            kind: kind_of(meta.file_type()),
            fix: bound.fix,
        });
    }
    let mut buf = Vec::new();
    match read_capped(&mut file, &mut buf, bound.cap_bytes).map_err(io_err)? {
        Some(n) => {
            buf.truncate(n);
            Ok(buf)
        }
        None => Err(InputError::TooLarge {
            what: bound.what,
            name: display(path),
            size_bytes: None,
            cap_bytes: bound.cap_bytes,
            fix: bound.fix,
        }),
    }
}

/// [`read_proc`] of a file that must be UTF-8 text.
pub fn read_proc_text(path: &Path) -> Result<String, InputError> {
    let bytes = read_proc(path)?;
    String::from_utf8(bytes).map_err(|e| InputError::NotText {
        what: "kernel file",
        name: display(path),
        offset: e.utf8_error().valid_up_to(),
        fix: proc_bound(path).fix,
    })
}

/// Standard input, read with an idle timeout when it is a pipe or socket
/// (`None`: never). A terminal, a file or a device is read as it is.
pub struct Stdin {
    file: File,
    idle: Option<Duration>,
}

impl Stdin {
    /// Stdin (a duplicate of descriptor 0), read with `idle` as its idle
    /// timeout where it is a pipe or socket.
    pub fn new(idle: Duration) -> io::Result<Stdin> {
        use std::os::fd::AsFd;
        let file = File::from(io::stdin().as_fd().try_clone_to_owned()?);
        let ft = file.metadata()?.file_type();
        let streams = ft.is_fifo() || ft.is_socket();
        Ok(Stdin {
            file,
            idle: streams.then_some(idle),
        })
    }
}

impl Read for Stdin {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        if let Some(idle) = self.idle {
            let ms = u32::try_from(idle.as_millis()).unwrap_or(u32::MAX);
            let mut set = crate::sys::events::PollSet::new(&[self.file.as_raw_fd()]);
            loop {
                match set.poll(Some(ms)) {
                    Ok(0) => {
                        return Err(io::Error::new(
                            io::ErrorKind::TimedOut,
                            format!(
                                "nothing arrived for {} ms",
                                thousands(idle.as_millis() as u64)
                            ),
                        ));
                    }
                    Ok(_) => break,
                    Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                    Err(e) => return Err(e),
                }
            }
        }
        self.file.read(buf)
    }
}

/// The paths listed on `input` (named `name` in messages, e.g. `stdin`),
/// separated by newlines (a trailing `\r` dropped) or by NULs; empty
/// entries are skipped. Bounded by [`PATH_LIST`], [`PATH_LIST_MAX_PATHS`]
/// and [`PATH_MAX_BYTES`] per path; a NUL in a newline-separated list is
/// refused (it asks for `-0`). Read in chunks: an endless input of empty
/// entries holds no memory and ends at the cap.
pub fn read_paths(
    input: &mut dyn Read,
    name: &str,
    null_separated: bool,
) -> Result<Vec<PathBuf>, InputError> {
    use std::os::unix::ffi::OsStrExt;
    let bound = PATH_LIST;
    let sep = if null_separated { b'\0' } else { b'\n' };
    let mut out = Vec::new();
    let mut entry: Vec<u8> = Vec::new();
    let mut chunk = vec![0u8; 64 * 1024];
    let mut total: u64 = 0;
    let push = |entry: &mut Vec<u8>, out: &mut Vec<PathBuf>| {
        let part = if null_separated {
            &entry[..]
        } else {
            entry.strip_suffix(b"\r").unwrap_or(entry)
        };
        if !part.is_empty() {
            if out.len() >= PATH_LIST_MAX_PATHS {
                return Err(InputError::TooMany {
                    what: bound.what,
                    name: name.to_string(),
                    max: PATH_LIST_MAX_PATHS,
                    fix: bound.fix,
                });
            }
            out.push(PathBuf::from(std::ffi::OsStr::from_bytes(part)));
        }
        entry.clear();
        Ok(())
    };
    loop {
        let n = match input.read(&mut chunk) {
            Ok(0) => break,
            Ok(n) => n,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            Err(e) if e.kind() == io::ErrorKind::TimedOut => {
                return Err(InputError::Idle {
                    what: bound.what,
                    name: name.to_string(),
                    detail: e.to_string(),
                });
            }
            Err(source) => {
                return Err(InputError::Io {
                    what: bound.what,
                    name: format!("on {name}"),
                    source,
                });
            }
        };
        let data = chunk.get(..n).unwrap_or_default();
        if !null_separated && let Some(at) = data.iter().position(|&b| b == 0) {
            return Err(InputError::Nul {
                what: bound.what,
                name: name.to_string(),
                offset: total.saturating_add(at as u64),
            });
        }
        let mut rest = data;
        while !rest.is_empty() {
            // A run of separators ends at most one entry: skipped at once.
            if entry.is_empty() {
                let seps = rest.iter().take_while(|&&b| b == sep).count();
                rest = rest.get(seps..).unwrap_or_default();
                total = total.saturating_add(seps as u64);
            }
            let (body, ends) = match rest.iter().position(|&b| b == sep) {
                Some(at) => (rest.get(..at).unwrap_or_default(), true),
                None => (rest, false),
            };
            if entry.len().saturating_add(body.len())
                > PATH_MAX_BYTES + usize::from(!null_separated)
            {
                return Err(InputError::EntryTooLong {
                    what: bound.what,
                    name: name.to_string(),
                    offset: total.saturating_sub(entry.len() as u64),
                    max_bytes: PATH_MAX_BYTES,
                    fix: bound.fix,
                });
            }
            entry.extend_from_slice(body);
            let used = body.len() + usize::from(ends);
            rest = rest.get(used..).unwrap_or_default();
            total = total.saturating_add(used as u64);
            if ends {
                push(&mut entry, &mut out)?;
            }
        }
        if total > bound.cap_bytes {
            return Err(InputError::TooLarge {
                what: bound.what,
                name: format!("on {name}"),
                size_bytes: None,
                cap_bytes: bound.cap_bytes,
                fix: bound.fix,
            });
        }
    }
    push(&mut entry, &mut out)?;
    Ok(out)
}

/// Where in a JSON document a reader's error stands, as a path
/// (`commands[0].samples.cpu_us[2]`), found by scanning `bytes` up to the
/// error's line and column; `None` at the top level.
fn json_path_at(bytes: &[u8], line: usize, column: usize) -> Option<String> {
    enum Frame {
        /// The key being read, or `None` between a comma and the next key.
        Object(Option<String>, bool),
        Array(usize),
    }
    let line_start = if line <= 1 {
        0
    } else {
        bytes
            .iter()
            .enumerate()
            .filter(|(_, b)| **b == b'\n')
            .nth(line - 2)
            .map_or(bytes.len(), |(i, _)| i + 1)
    };
    let end = line_start.saturating_add(column).min(bytes.len());
    let mut stack: Vec<Frame> = Vec::new();
    let mut i = 0;
    while i < end {
        match bytes[i] {
            b'"' => {
                let start = i + 1;
                i += 1;
                while i < bytes.len() && bytes[i] != b'"' {
                    i += if bytes[i] == b'\\' { 2 } else { 1 };
                }
                if let Some(Frame::Object(key, expecting @ true)) = stack.last_mut() {
                    let text = String::from_utf8_lossy(&bytes[start..i.min(bytes.len())]);
                    *key = Some(text.chars().take(60).collect());
                    *expecting = false;
                }
            }
            b'{' => stack.push(Frame::Object(None, true)),
            b'[' => stack.push(Frame::Array(0)),
            b'}' | b']' => {
                stack.pop();
            }
            b',' => match stack.last_mut() {
                Some(Frame::Array(n)) => *n += 1,
                Some(Frame::Object(key, expecting)) => {
                    *key = None;
                    *expecting = true;
                }
                None => {}
            },
            _ => {}
        }
        i += 1;
    }
    let mut path = String::new();
    for frame in &stack {
        match frame {
            Frame::Object(Some(key), _) => {
                if !path.is_empty() {
                    path.push('.');
                }
                path.push_str(key);
            }
            Frame::Object(None, _) => break,
            Frame::Array(n) => path.push_str(&format!("[{n}]")),
        }
    }
    (!path.is_empty()).then(|| crate::text::escape_text(&path))
}

/// A JSON reader's error on `bytes`, said with the field it is about:
/// `commands[0].runs: invalid type: … (line 9, column 14)`. serde names
/// the line only, and quotes what it found: text not from tally, escaped.
pub fn json_error(bytes: &[u8], e: &serde_json::Error) -> String {
    let text = e.to_string();
    let message = text
        .rsplit_once(" at line ")
        .map_or(text.as_str(), |(m, _)| m);
    let message = crate::text::escape_text(message);
    if e.line() == 0 {
        return message;
    }
    let place = format!("line {}, column {}", e.line(), e.column());
    match json_path_at(bytes, e.line(), e.column()) {
        Some(path) => format!("{path}: {message} ({place})"),
        None => format!("{message} ({place})"),
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn a_json_error_names_its_field() {
        let text = b"{\n  \"a\": 1,\n  \"commands\": [\n    {\"runs\": [1, 2, -3]}\n  ]\n}";
        #[derive(serde::Deserialize, Debug)]
        #[allow(dead_code)]
        struct C {
            runs: Vec<u8>,
        }
        #[derive(serde::Deserialize, Debug)]
        #[allow(dead_code)]
        struct F {
            a: u8,
            commands: Vec<C>,
        }
        let e = serde_json::from_slice::<F>(text).unwrap_err();
        let said = super::json_error(text, &e);
        assert!(
            said.starts_with("commands[0].runs[2]: invalid value"),
            "{said}"
        );
        assert!(said.ends_with("(line 4, column 22)"), "{said}");
    }

    use super::*;

    const SMALL: Bound = Bound {
        what: "test file",
        cap_bytes: 16,
        fix: "give a small file",
    };

    #[test]
    fn a_regular_file_within_the_cap_is_read_whole() {
        let dir = tempfile::tempdir().expect("tempdir");
        let p = dir.path().join("f");
        std::fs::write(&p, b"0123456789abcdef").expect("write");
        assert_eq!(read_file(&p, &SMALL).expect("read"), b"0123456789abcdef");
        assert_eq!(read_text(&p, &SMALL).expect("read"), "0123456789abcdef");
    }

    #[test]
    fn a_file_over_the_cap_is_refused_by_its_size_unread() {
        let dir = tempfile::tempdir().expect("tempdir");
        let p = dir.path().join("sparse");
        let f = File::create(&p).expect("create");
        f.set_len(1 << 30).expect("a 1 GiB sparse file");
        let e = read_file(&p, &SMALL).expect_err("refused");
        let msg = e.to_string();
        assert!(
            matches!(e, InputError::TooLarge { size_bytes: Some(s), .. } if s == 1 << 30),
            "{msg}"
        );
        assert!(
            msg.contains("1.0 GiB")
                && msg.contains("16 B cap")
                && msg.contains("give a small file"),
            "{msg}"
        );
    }

    #[test]
    fn dev_zero_a_fifo_and_a_directory_are_refused_unread() {
        let e = read_file(Path::new("/dev/zero"), &CONFIG).expect_err("refused");
        assert!(
            e.to_string()
                .contains("/dev/zero is a character device, not a regular file"),
            "{e}"
        );
        let dir = tempfile::tempdir().expect("tempdir");
        let fifo = dir.path().join("fifo");
        crate::sys::ipc::mkfifo(&fifo, 0o600).expect("mkfifo");
        // No writer: a blocking open would wait forever.
        let e = read_file(&fifo, &CONFIG).expect_err("refused");
        assert!(
            e.to_string().contains("is a FIFO, not a regular file"),
            "{e}"
        );
        let e = read_file(dir.path(), &CONFIG).expect_err("refused");
        assert!(e.to_string().contains("is a directory"), "{e}");
        let e = read_proc(&fifo).expect_err("refused");
        assert!(e.to_string().contains("is a FIFO"), "{e}");
        let e = read_proc(Path::new("/dev/zero")).expect_err("refused");
        assert!(e.to_string().contains("character device"), "{e}");
    }

    #[test]
    fn text_that_is_not_utf8_names_the_offset() {
        let dir = tempfile::tempdir().expect("tempdir");
        let p = dir.path().join("f");
        std::fs::write(&p, b"ab\xffc").expect("write");
        let e = read_text(&p, &SMALL).expect_err("refused");
        assert!(e.to_string().contains("offset 2"), "{e}");
    }

    #[test]
    fn capped_reads_stop_one_byte_past_the_cap() {
        let mut zero = File::open("/dev/zero").expect("open");
        let mut buf = Vec::new();
        assert_eq!(
            read_capped(&mut zero, &mut buf, 10_000).expect("read"),
            None
        );
        assert_eq!(buf.len(), 10_001, "read one byte past the cap, no more");
        let mut me = File::open("/proc/self/stat").expect("open");
        let n = read_capped(&mut me, &mut buf, proc_cap_bytes("stat"))
            .expect("read")
            .expect("fits");
        assert!(buf[..n].starts_with(std::process::id().to_string().as_bytes()));
        assert!(buf[..n].ends_with(b"\n"));
    }

    #[test]
    fn proc_files_are_read_within_their_caps() {
        let text = read_proc_text(Path::new("/proc/self/status")).expect("status");
        assert!(text.contains("Pid:"));
        let dir = tempfile::tempdir().expect("tempdir");
        let p = dir.path().join("smaps_rollup");
        std::fs::write(&p, vec![b'x'; 5000]).expect("write");
        let e = read_proc(&p).expect_err("over a page");
        assert!(e.to_string().contains("over the 4.0 KiB cap"), "{e}");
    }

    fn paths(input: &[u8], nul: bool) -> Result<Vec<PathBuf>, InputError> {
        let mut r = input;
        read_paths(&mut r, "stdin", nul)
    }

    #[test]
    fn path_lists_split_on_newlines_or_nuls() {
        let got = paths(b"a\nb c\r\n\nd", false).expect("paths");
        assert_eq!(got, ["a", "b c", "d"].map(PathBuf::from));
        let got = paths(b"x\ny\0z\0\0", true).expect("paths");
        assert_eq!(got, ["x\ny", "z"].map(PathBuf::from));
    }

    /// A reader that hands out `step` bytes at a time.
    struct Trickle<'a>(&'a [u8], usize);

    impl Read for Trickle<'_> {
        fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
            let n = self.1.min(buf.len()).min(self.0.len());
            buf[..n].copy_from_slice(&self.0[..n]);
            self.0 = &self.0[n..];
            Ok(n)
        }
    }

    #[test]
    fn paths_cut_between_reads_are_whole() {
        for step in [1, 2, 3, 5] {
            let got =
                read_paths(&mut Trickle(b"ab\n\ncd e\r\nf", step), "stdin", false).expect("paths");
            assert_eq!(got, ["ab", "cd e", "f"].map(PathBuf::from), "step {step}");
            let got = read_paths(&mut Trickle(b"\0\0ab\0\0\0c\nd\0", step), "stdin", true)
                .expect("paths");
            assert_eq!(got, ["ab", "c\nd"].map(PathBuf::from), "step {step}");
        }
        let long = [vec![b'x'; 10], vec![b'a'; PATH_MAX_BYTES + 1]].join(&b'\0');
        let e = read_paths(&mut Trickle(&long, 7), "stdin", true).expect_err("too long");
        assert!(
            matches!(e, InputError::EntryTooLong { offset: 11, .. }),
            "the entry starts at byte 11: {e}"
        );
    }

    #[test]
    fn a_path_list_of_zeros_ends_at_its_caps() {
        // Without -0: the first NUL is refused.
        let mut zero = File::open("/dev/zero").expect("open");
        let e = read_paths(&mut zero, "stdin", false).expect_err("refused");
        assert!(
            e.to_string().contains("NUL byte at byte 0") && e.to_string().contains("-0"),
            "{e}"
        );
        // With -0: empty entries, endless; ends at the byte cap holding nothing.
        let mut zero = File::open("/dev/zero").expect("open");
        let e = read_paths(&mut zero, "stdin", true).expect_err("refused");
        assert!(e.to_string().contains("passed 64.0 MiB"), "{e}");
        // A path longer than PATH_MAX.
        let long = vec![b'a'; PATH_MAX_BYTES + 1];
        let e = paths(&long, true).expect_err("refused");
        assert!(e.to_string().contains("longer than any path"), "{e}");
        let ok = vec![b'a'; PATH_MAX_BYTES];
        assert_eq!(paths(&ok, true).expect("fits").len(), 1);
    }

    #[test]
    fn a_silent_pipe_ends_the_list_after_the_idle_timeout() {
        let (r, w) = std::io::pipe().expect("pipe");
        let mut input = Stdin {
            file: File::from(std::os::fd::OwnedFd::from(r)),
            idle: Some(Duration::from_millis(100)),
        };
        let e = read_paths(&mut input, "stdin", false).expect_err("idle");
        assert!(matches!(e, InputError::Idle { .. }), "{e}");
        drop(w);
    }
}

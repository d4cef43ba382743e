//! How a process is named, and so which processes form one program.
//!
//! - `exe` (default): the file name of the running executable, from the
//!   `/proc/PID/exe` link. Every process of one binary is one program,
//!   whatever it calls itself (`Web Content` is `firefox-esr`). An executable
//!   deleted or replaced since it started (a package upgrade) is marked
//!   ` [deleted]` or ` [updated]` (a file exists again at its path).
//! - `comm`: the kernel's name for the process (15 bytes, settable by the
//!   process), as `ps` and `top` show it.
//! - `argv0`: the file name of the first argument, up to its first space
//!   (`sshd: root@pts/0` gives `sshd`).
//!
//! Where the chosen source is missing (a zombie has no exe; a kernel
//! thread no cmdline) the name falls back to comm, then to the exe.
//! `--split-args` appends the arguments, so `python3 app.py` and
//! `python3 other.py` are apart. Names are escaped as every name tally
//! prints ([`crate::text::escape_name`]): a backslash as `\\`, control
//! characters and bytes that are not UTF-8 as `\xNN`, so a name always
//! fits on one line, cannot drive a terminal, and two programs with
//! different names never print (or group) as one.

use serde::{Deserialize, Serialize};

use super::exe::{basename, exe_path, exe_starts_with_comm, is_memfd};
use super::scan::ProcSample;
use crate::text::escape_name;

/// Which name of a process is the program name.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, clap::ValueEnum, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum NameMode {
    /// The executable's file name (/proc/PID/exe).
    #[default]
    Exe,
    /// The kernel's comm (/proc/PID/status Name).
    Comm,
    /// The first argument's file name (/proc/PID/cmdline).
    Argv0,
}

/// The program name of a sample. `check_replaced` allows looking at the
/// path of a deleted executable to tell `[updated]` from `[deleted]`;
/// callers running with more privilege than their user pass `false`.
pub fn program_name(
    s: &ProcSample,
    mode: NameMode,
    split_args: bool,
    check_replaced: bool,
) -> String {
    let comm = s
        .status
        .as_ref()
        .map(|st| st.name.as_slice())
        .filter(|c| !c.is_empty());
    let raw_comm = s.comm.as_deref().or(comm).filter(|c| !c.is_empty());
    let argv0 = s.cmdline.as_deref().and_then(argv0_base);
    let from_exe = || {
        s.exe
            .as_deref()
            .and_then(|e| exe_name(e, started_as(e, raw_comm, argv0), check_replaced))
    };
    let from_argv0 = || argv0.map(escape_name);
    let from_comm = || comm.map(escape_name);
    let base = match mode {
        NameMode::Exe => from_exe(),
        NameMode::Comm => from_comm(),
        NameMode::Argv0 => from_argv0(),
    }
    .or_else(from_comm)
    .or_else(from_exe)
    .unwrap_or_else(|| "?".to_string());
    let mut name = base;
    if split_args && let Some(rest) = s.cmdline.as_deref().and_then(arguments) {
        name.push(' ');
        name.push_str(&rest);
    }
    name
}

/// The name a program was started as, where it differs from its
/// executable's: the comm does not start the executable's file name but
/// starts argv[0]'s (Debian's `redis-server`, a link to `redis-check-rdb`;
/// busybox's `sh`). The comm comes from the name the program was started
/// by, argv[0] is that name in full; a process that renamed itself
/// (`Web Content`) matches neither and keeps its executable's name. A
/// program run from a memfd is always named by `argv[0]`.
fn started_as<'a>(
    exe_target: &[u8],
    comm: Option<&[u8]>,
    argv0: Option<&'a [u8]>,
) -> Option<&'a [u8]> {
    let argv0 = argv0?;
    if is_memfd(exe_target) {
        return Some(argv0);
    }
    let comm = comm?;
    (!exe_starts_with_comm(exe_target, comm) && argv0.starts_with(comm)).then_some(argv0)
}

/// The file name of an exe link target, or the name it was started as,
/// marked when the executable was deleted.
fn exe_name(target: &[u8], started_as: Option<&[u8]>, check_replaced: bool) -> Option<String> {
    let (path, deleted) = exe_path(target);
    // A memfd is always "(deleted)": it never was a file, so no mark.
    let deleted = deleted && !(is_memfd(target) && started_as.is_some());
    let base = started_as.unwrap_or_else(|| basename(path));
    if base.is_empty() {
        return None;
    }
    let mut name = escape_name(base);
    if deleted {
        let replaced = check_replaced && {
            use std::os::unix::ffi::OsStrExt;
            std::path::Path::new(std::ffi::OsStr::from_bytes(path)).exists()
        };
        name.push_str(if replaced { " [updated]" } else { " [deleted]" });
    }
    Some(name)
}

/// The first argument's file name, up to its first space.
fn argv0_base(cmdline: &[u8]) -> Option<&[u8]> {
    let first = cmdline.split(|&b| b == 0).next()?;
    let word = first.split(|&b| b == b' ').next().unwrap_or(first);
    let base = basename(word);
    let base = base.strip_suffix(b":").unwrap_or(base);
    (!base.is_empty()).then_some(base)
}

/// Every argument after the program itself, joined by spaces; a process
/// that rewrote its arguments as one string (`sshd: root@pts/0`) keeps what
/// follows the first word. `None` when there are none.
fn arguments(cmdline: &[u8]) -> Option<String> {
    // A process that rewrote its title (postgres, nginx, redis) pads the
    // rest of its argument area with NULs: every one is trimmed, or the
    // title would end in empty arguments and lose its words.
    let end = cmdline.iter().rposition(|&b| b != 0).map_or(0, |i| i + 1);
    let trimmed = cmdline.get(..end).unwrap_or_default();
    let rest: &[u8] = match trimmed.iter().position(|&b| b == 0) {
        Some(nul) => trimmed.get(nul + 1..)?,
        None => {
            let space = trimmed.iter().position(|&b| b == b' ')?;
            trimmed.get(space + 1..)?
        }
    };
    let joined: Vec<u8> = rest
        .iter()
        .map(|&b| if b == 0 { b' ' } else { b })
        .collect();
    // The spaces that stood for NULs at either end; every other byte is
    // the name's own.
    let start = joined
        .iter()
        .position(|&b| b != b' ')
        .unwrap_or(joined.len());
    let end = joined
        .iter()
        .rposition(|&b| b != b' ')
        .map_or(start, |i| i + 1);
    let joined = joined.get(start..end).unwrap_or_default();
    (!joined.is_empty()).then(|| escape_name(joined))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::procfs::smaps_rollup::MemFigures;
    use crate::procfs::status::Status;

    fn sample(exe: Option<&str>, comm: Option<&str>, cmdline: Option<&[u8]>) -> ProcSample {
        ProcSample {
            pid: 1,
            mem: MemFigures::default(),
            source: super::super::scan::Source::SmapsRollup,
            exe: exe.map(|e| e.as_bytes().to_vec()),
            status: comm.map(|c| Status {
                name: c.as_bytes().to_vec(),
                ..Status::default()
            }),
            comm: None,
            cmdline: cmdline.map(<[u8]>::to_vec),
            cgroup: None,
            gpu: crate::mem::columns::GpuBytes::NotMeasured,
        }
    }

    #[test]
    fn exe_comm_and_argv0() {
        let s = sample(
            Some("/usr/bin/python3.11"),
            Some("python3"),
            Some(b"/usr/bin/python3\0app.py\0--port\08080\0"),
        );
        assert_eq!(program_name(&s, NameMode::Exe, false, false), "python3.11");
        assert_eq!(program_name(&s, NameMode::Comm, false, false), "python3");
        assert_eq!(program_name(&s, NameMode::Argv0, false, false), "python3");
        assert_eq!(
            program_name(&s, NameMode::Comm, true, false),
            "python3 app.py --port 8080"
        );
        assert_eq!(
            program_name(&s, NameMode::Exe, true, false),
            "python3.11 app.py --port 8080"
        );
    }

    #[test]
    fn rewritten_command_lines() {
        let s = sample(
            Some("/usr/sbin/sshd"),
            Some("sshd"),
            Some(b"sshd: root@pts/0\0"),
        );
        assert_eq!(program_name(&s, NameMode::Argv0, false, false), "sshd");
        assert_eq!(
            program_name(&s, NameMode::Exe, true, false),
            "sshd root@pts/0"
        );
    }

    #[test]
    fn titles_padded_with_nuls_keep_their_words() {
        let mut cmd = b"postgres: 15/main: checkpointer ".to_vec();
        cmd.resize(120, 0);
        let s = sample(
            Some("/usr/lib/postgresql/15/bin/postgres"),
            Some("postgres"),
            Some(&cmd),
        );
        assert_eq!(
            program_name(&s, NameMode::Exe, true, false),
            "postgres 15/main: checkpointer"
        );
        let s = sample(Some("/usr/bin/x"), Some("x"), Some(b"\0\0\0"));
        assert_eq!(program_name(&s, NameMode::Exe, true, false), "x");
    }

    #[test]
    fn a_program_started_through_a_link_is_named_as_started() {
        let s = sample(
            Some("/usr/bin/redis-check-rdb"),
            Some("redis-server"),
            Some(b"/usr/bin/redis-server 127.0.0.1:6379\0\0\0"),
        );
        assert_eq!(
            program_name(&s, NameMode::Exe, false, false),
            "redis-server"
        );
        // Deleted since: still marked.
        let s = sample(
            Some("/usr/bin/redis-check-rdb (deleted)"),
            Some("redis-server"),
            Some(b"redis-server\0"),
        );
        assert_eq!(
            program_name(&s, NameMode::Exe, false, false),
            "redis-server [deleted]"
        );
        // comm cut to 15 bytes still starts argv[0]'s full name.
        let s = sample(
            Some("/bin/busybox"),
            Some("a-very-long-app"),
            Some(b"/usr/bin/a-very-long-applet-name\0"),
        );
        assert_eq!(
            program_name(&s, NameMode::Exe, false, false),
            "a-very-long-applet-name"
        );
        // Renamed itself: the executable's name.
        let s = sample(
            Some("/usr/lib/firefox-esr/firefox-esr"),
            Some("Web Content"),
            Some(b"/usr/lib/firefox-esr/firefox-esr\0-contentproc\0"),
        );
        assert_eq!(program_name(&s, NameMode::Exe, false, false), "firefox-esr");
        // Run from a memfd: argv[0]'s name, with no "[deleted]" mark.
        let s = sample(
            Some("/memfd:sealed-91173221a7ea (deleted)"),
            Some("memfd:sealed-91"),
            Some(b"line_io_tools/binary_backend\0--uid\0root\0"),
        );
        assert_eq!(
            program_name(&s, NameMode::Exe, false, false),
            "binary_backend"
        );
        // Started as python3, a link to python3.11: the file name wins.
        let s = sample(
            Some("/usr/bin/python3.11"),
            Some("python3"),
            Some(b"/usr/bin/python3\0"),
        );
        assert_eq!(program_name(&s, NameMode::Exe, false, false), "python3.11");
        // The raw comm, where read, counts over status's.
        let mut s = sample(
            Some("/usr/bin/redis-check-rdb"),
            None,
            Some(b"redis-server\0"),
        );
        s.comm = Some(b"redis-server".to_vec());
        assert_eq!(
            program_name(&s, NameMode::Exe, false, false),
            "redis-server"
        );
    }

    #[test]
    fn deleted_and_updated_executables() {
        let s = sample(Some("/nonexistent/tally-test/app (deleted)"), None, None);
        assert_eq!(
            program_name(&s, NameMode::Exe, false, true),
            "app [deleted]"
        );
        let s = sample(Some("/bin/sh (deleted)"), None, None);
        assert_eq!(program_name(&s, NameMode::Exe, false, true), "sh [updated]");
        // Without permission to look, never claim "updated".
        assert_eq!(
            program_name(&s, NameMode::Exe, false, false),
            "sh [deleted]"
        );
        let s = sample(Some("/memfd:sealed-1 (deleted)"), None, None);
        assert_eq!(
            program_name(&s, NameMode::Exe, false, true),
            "memfd:sealed-1 [deleted]"
        );
    }

    #[test]
    fn falls_back_when_a_source_is_missing() {
        let s = sample(None, Some("kworker"), None);
        assert_eq!(program_name(&s, NameMode::Exe, false, false), "kworker");
        assert_eq!(program_name(&s, NameMode::Argv0, true, false), "kworker");
        let s = sample(Some("/usr/bin/x"), None, None);
        assert_eq!(program_name(&s, NameMode::Comm, false, false), "x");
        let s = sample(None, None, None);
        assert_eq!(program_name(&s, NameMode::Exe, false, false), "?");
    }

    #[test]
    fn odd_names_stay_on_one_line() {
        let s = sample(Some("/tmp/my prog (1)\nx\x1b[2J"), Some("a\nb"), None);
        assert_eq!(
            program_name(&s, NameMode::Exe, false, false),
            "my prog (1)\\x0ax\\x1b[2J"
        );
        // A comm's newline (status's `\n`, undone by its parser) too.
        assert_eq!(program_name(&s, NameMode::Comm, false, false), "a\\x0ab");
    }

    #[test]
    fn a_literal_backslash_name_and_a_raw_byte_name_are_two_programs() {
        // The spoof of issue 26: `a\xffb` typed as four characters, and
        // `a`, the byte 0xff, `b`.
        let literal = sample(Some("/tmp/a\\xffb"), None, Some(b"/tmp/a\\xffb\0x\\n\0"));
        let mut raw = sample(None, None, Some(b"/tmp/a\xffb\0x\n\0"));
        raw.exe = Some(b"/tmp/a\xffb".to_vec());
        for mode in [NameMode::Exe, NameMode::Argv0] {
            for split in [false, true] {
                let (l, r) = (
                    program_name(&literal, mode, split, false),
                    program_name(&raw, mode, split, false),
                );
                assert_ne!(l, r, "{mode:?} split {split}");
            }
        }
        assert_eq!(
            program_name(&literal, NameMode::Exe, true, false),
            "a\\\\xffb x\\\\n"
        );
        assert_eq!(
            program_name(&raw, NameMode::Exe, true, false),
            "a\\xffb x\\x0a"
        );
    }

    proptest::proptest! {
        #[test]
        fn never_panics_and_never_has_controls(
            exe in proptest::option::of(proptest::collection::vec(proptest::num::u8::ANY, 0..64)),
            cmd in proptest::option::of(proptest::collection::vec(proptest::num::u8::ANY, 0..64)),
            split in proptest::bool::ANY,
        ) {
            let mut s = sample(None, Some("c"), cmd.as_deref());
            s.exe = exe;
            for mode in [NameMode::Exe, NameMode::Comm, NameMode::Argv0] {
                let n = program_name(&s, mode, split, false);
                proptest::prop_assert!(!n.chars().any(char::is_control));
            }
        }
    }
}

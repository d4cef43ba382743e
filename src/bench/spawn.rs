//! spawn: creating a task and waiting for it — `fork` + `_exit` + wait,
//! `fork` + `execve(/bin/true)` + wait, `posix_spawn(/bin/true)` + wait,
//! `fork` + `execve` of tally's own statically linked binary in a hidden
//! mode that exits at once + wait, and a thread created and joined.
//!
//! `/bin/true` is dynamically linked: its exec includes the dynamic
//! loader mapping and relocating libc. tally's release binary is linked
//! statically (no interpreter, no shared libraries): exec'ing it costs the
//! kernel's exec and the static C start-up only. The difference between
//! the two figures is dynamic loading (plus the two programs' sizes and
//! start-up, stated beside the figure). tally itself is used, rather than
//! a tiny static program built for the purpose, because it is the one
//! static binary every install has; whether it is static is checked in its
//! ELF program headers (no `PT_INTERP`), and the figure is "unavailable"
//! when it is not. A fork copies the parent's page
//! tables, so its cost grows with the parent's resident memory: the figure
//! notes tally's own resident size at the time.

use std::path::Path;
use std::time::Duration;

use super::figure::Figure;
use super::harness::{Harness, Samples};
use super::model::{BenchResult, Section};
use super::spec::{Benchmark, Ctx, Plot, PlotKind, StepError, step_err};
use crate::sys::spawn::{self, Program};

pub const BENCH: Benchmark = Benchmark {
    name: "spawn",
    section: Section::Cpu,
    about: "fork, fork+exec (dynamic and static), posix_spawn, thread create+join",
    heavy: false,
    uses_dir: false,
    switches_by_design: true,
    estimate: |c| c.budget_per_figure() * 5 + Duration::from_millis(100),
    run,
    plots: &[Plot {
        heading: "spawn",
        title: "spawn: creating a task and waiting for it",
        figures: "",
        kind: PlotKind::Bars,
    }],
};

const TRUE: &str = "/bin/true";

/// The argument that makes the tally binary exit 0 at once (checked in
/// `main` before anything else).
pub const EXIT_AT_ONCE: &str = "__tally-bench-exit-at-once";

/// Whether ELF file contents `head` (its first bytes, program headers
/// included) name an interpreter (`PT_INTERP`): a dynamically linked
/// program. None when it is not a 64-bit little-endian ELF file or its
/// program headers lie past `head`.
pub fn elf_is_dynamic(head: &[u8]) -> Option<bool> {
    if head.get(..4)? != b"\x7fELF" || *head.get(4)? != 2 || *head.get(5)? != 1 {
        return None;
    }
    let u16_at = |o: usize| -> Option<u64> {
        Some(u64::from(u16::from_le_bytes(head.get(o..o + 2)?.try_into().ok()?)))
    };
    let u64_at = |o: usize| -> Option<u64> {
        Some(u64::from_le_bytes(head.get(o..o + 8)?.try_into().ok()?))
    };
    let phoff = usize::try_from(u64_at(0x20)?).ok()?;
    let phentsize = usize::try_from(u16_at(0x36)?).ok()?;
    let phnum = usize::try_from(u16_at(0x38)?).ok()?;
    if phentsize < 4 {
        return None;
    }
    let mut dynamic = false;
    for i in 0..phnum {
        let at = phoff.checked_add(i.checked_mul(phentsize)?)?;
        let p_type = u32::from_le_bytes(head.get(at..at + 4)?.try_into().ok()?);
        if p_type == 3 {
            dynamic = true;
        }
    }
    Some(dynamic)
}

/// The running binary, if it is static and has the exit-at-once mode;
/// else why not.
fn static_self() -> Result<(std::path::PathBuf, u64), String> {
    use std::io::Read;
    let exe = std::env::current_exe()
        .map_err(|e| format!("the running binary's path is unknown ({e})"))?;
    let mut head = vec![0u8; 64 << 10];
    let mut f = std::fs::File::open(&exe).map_err(|e| {
        format!(
            "cannot open {} ({e})",
            crate::text::path::display(&exe)
        )
    })?;
    let n = f.read(&mut head).map_err(|e| format!("cannot read the running binary ({e})"))?;
    head.truncate(n);
    let size = f.metadata().map(|m| m.len()).unwrap_or(0);
    match elf_is_dynamic(&head) {
        Some(false) => Ok((exe, size)),
        Some(true) => Err("this tally binary is dynamically linked (built without +crt-static): there is no static binary to compare with".into()),
        None => Err("the running binary's ELF program headers could not be read".into()),
    }
}

/// VmRSS of this process, for the note.
fn self_rss_kib() -> Option<u64> {
    let text = crate::procfs::ProcRoot::default()
        .read("self/status")
        .ok()?;
    crate::procfs::status::vm_rss_kb(&text)
}

/// ns per `op` (a spawn and its wait, timed whole); `what` names it in
/// an error.
fn each(
    h: &Harness,
    what: &str,
    op: &mut dyn FnMut() -> std::io::Result<()>,
) -> Result<Samples, StepError> {
    h.measure_each(&mut |t| {
        let s = t.now();
        op()?;
        Ok(t.ns_since(s))
    })
    .map_err(step_err(what))
}

fn run(ctx: &mut Ctx<'_>, out: &mut BenchResult) -> Result<(), StepError> {
    let h = ctx.h;
    let rss = self_rss_kib().map_or("unknown".into(), |k| {
        crate::units::human_bytes(k.saturating_mul(1024))
    });
    let s = each(h, "fork", &mut spawn::fork_exit_wait)?;
    out.push(
        Figure::latency(
            "spawn.fork_exit",
            "fork+exit+wait",
            "ns per fork(2), child _exit(0), parent waitpid",
            s,
        )
        .note(format!("parent resident set {rss}")),
    );
    if Path::new(TRUE).exists() {
        let p = Program::new(c"/bin/true");
        let s = each(h, "fork+exec /bin/true", &mut || spawn::fork_exec_wait(&p))?;
        out.push(Figure::latency(
            "spawn.fork_exec",
            "fork+exec /bin/true",
            "ns per fork, execve(/bin/true) (dynamically linked), waitpid",
            s,
        ));
        let s = each(h, "posix_spawn /bin/true", &mut || spawn::posix_spawn_wait(&p))?;
        out.push(Figure::latency(
            "spawn.posix_spawn",
            "posix_spawn /bin/true",
            "ns per posix_spawn (clone with CLONE_VM|CLONE_VFORK), waitpid",
            s,
        ));
    } else {
        for (id, label) in [
            ("spawn.fork_exec", "fork+exec /bin/true"),
            ("spawn.posix_spawn", "posix_spawn /bin/true"),
        ] {
            out.push(Figure::unavailable(
                id,
                label,
                "ns per spawn and wait",
                "/bin/true is missing",
            ));
        }
    }
    out.push(static_exec(h)?);
    let s = each(h, "thread create", &mut || {
        let handle = std::thread::Builder::new()
            .stack_size(64 << 10)
            .spawn(|| std::hint::black_box(1u64))?;
        let _ = handle.join();
        Ok(())
    })?;
    out.push(Figure::latency(
        "spawn.thread",
        "thread create+join",
        "ns per pthread_create (64 KiB stack, via std::thread) + join",
        s,
    ));
    Ok(())
}

/// fork + exec of the static tally binary in its exit-at-once mode, or
/// why it is unavailable.
fn static_exec(h: &Harness) -> Result<Figure, StepError> {
    use std::os::unix::ffi::OsStrExt;
    let def = "ns per fork, execve(tally, statically linked, non-PIE) exiting at once, waitpid";
    let label = "fork+exec static (tally)";
    let unavailable = |why: String| Figure::unavailable("spawn.fork_exec_static", label, def, why);
    let (exe, size) = match static_self() {
        Ok(found) => found,
        Err(why) => return Ok(unavailable(why)),
    };
    let path = std::ffi::CString::new(exe.as_os_str().as_bytes()).ok();
    let arg = std::ffi::CString::new(EXIT_AT_ONCE).ok();
    let (Some(path), Some(arg)) = (path, arg) else {
        return Ok(unavailable(
            "the running binary's path holds a NUL byte".into(),
        ));
    };
    let p = Program::with_arg(&path, &arg);
    // The hidden mode exists only in the tally binary (not in a test
    // harness): one try first.
    if let Err(e) = spawn::fork_exec_wait(&p) {
        return Ok(unavailable(format!(
            "the running binary did not exit 0 in its exit-at-once mode ({e}): not the tally binary"
        )));
    }
    let s = each(h, "fork+exec of the static tally binary", &mut || {
        spawn::fork_exec_wait(&p)
    })?;
    Ok(Figure::latency("spawn.fork_exec_static", label, def, s).note(format!(
        "a {} static binary; /bin/true is small but dynamically linked: the difference is dynamic loading",
        crate::units::human_bytes(size)
    )))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn elf_interpreter_is_found() {
        // A 64-bit LE ELF header with two program headers at 0x40: LOAD,
        // then INTERP (or NOTE).
        let mut head = vec![0u8; 0x40 + 2 * 56];
        head[..4].copy_from_slice(b"\x7fELF");
        head[4] = 2;
        head[5] = 1;
        head[0x20..0x28].copy_from_slice(&0x40u64.to_le_bytes());
        head[0x36..0x38].copy_from_slice(&56u16.to_le_bytes());
        head[0x38..0x3a].copy_from_slice(&2u16.to_le_bytes());
        head[0x40..0x44].copy_from_slice(&1u32.to_le_bytes());
        head[0x40 + 56..0x44 + 56].copy_from_slice(&3u32.to_le_bytes());
        assert_eq!(elf_is_dynamic(&head), Some(true));
        head[0x40 + 56..0x44 + 56].copy_from_slice(&4u32.to_le_bytes());
        assert_eq!(elf_is_dynamic(&head), Some(false));
        assert_eq!(elf_is_dynamic(&head[..0x50]), None, "headers cut off");
        assert_eq!(elf_is_dynamic(b"#!/bin/sh"), None);
        assert_eq!(elf_is_dynamic(&[]), None);
    }

    #[test]
    fn bin_true_is_dynamic_where_it_exists() {
        if let Ok(bytes) = std::fs::read(TRUE) {
            assert_eq!(elf_is_dynamic(&bytes), Some(true));
        }
    }
}

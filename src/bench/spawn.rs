//! spawn: creating a task and waiting for it — `fork` + `_exit` + wait,
//! `fork` + `execve(/bin/true)` + wait, `posix_spawn(/bin/true)` + wait,
//! and a thread created and joined. A fork copies the parent's page
//! tables, so its cost grows with the parent's resident memory: the figure
//! notes tally's own resident size at the time.

use std::path::Path;
use std::time::Duration;

use super::figure::Figure;
use super::model::{BenchResult, Section};
use super::spec::{Benchmark, Ctx, Plot, PlotKind, StepError, step_err};
use crate::sys::spawn::{self, Program};

pub const BENCH: Benchmark = Benchmark {
    name: "spawn",
    section: Section::Cpu,
    about: "fork, fork+exec, posix_spawn, thread create+join",
    heavy: false,
    uses_dir: false,
    estimate: |c| c.budget_per_figure() * 4 + Duration::from_millis(100),
    run,
    plots: &[Plot {
        heading: "spawn",
        title: "spawn: creating a task and waiting for it",
        figures: "",
        kind: PlotKind::Bars,
    }],
};

const TRUE: &str = "/bin/true";

/// VmRSS of this process, for the note.
fn self_rss_kib() -> Option<u64> {
    let text = crate::procfs::ProcRoot::default()
        .read("self/status")
        .ok()?;
    crate::procfs::status::vm_rss_kb(&text)
}

fn run(ctx: &mut Ctx<'_>, out: &mut BenchResult) -> Result<(), StepError> {
    let h = ctx.h;
    let rss = self_rss_kib().map_or("unknown".into(), |k| {
        crate::units::human_bytes(k.saturating_mul(1024))
    });
    let s = h
        .measure_each(&mut |t| {
            let s = t.now();
            spawn::fork_exit_wait()?;
            Ok(t.ns_since(s))
        })
        .map_err(step_err("fork"))?;
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
        let s = h
            .measure_each(&mut |t| {
                let s = t.now();
                spawn::fork_exec_wait(&p)?;
                Ok(t.ns_since(s))
            })
            .map_err(step_err("fork+exec /bin/true"))?;
        out.push(Figure::latency(
            "spawn.fork_exec",
            "fork+exec /bin/true",
            "ns per fork, execve(/bin/true) (dynamically linked), waitpid",
            s,
        ));
        let s = h
            .measure_each(&mut |t| {
                let s = t.now();
                spawn::posix_spawn_wait(&p)?;
                Ok(t.ns_since(s))
            })
            .map_err(step_err("posix_spawn /bin/true"))?;
        out.push(Figure::latency(
            "spawn.posix_spawn",
            "posix_spawn /bin/true",
            "ns per posix_spawn (glibc: clone with CLONE_VM|CLONE_VFORK), waitpid",
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

    let s = h
        .measure_each(&mut |t| {
            let s = t.now();
            let handle = std::thread::Builder::new()
                .stack_size(64 << 10)
                .spawn(|| std::hint::black_box(1u64))?;
            let _ = handle.join();
            Ok::<f64, std::io::Error>(t.ns_since(s))
        })
        .map_err(step_err("thread create"))?;
    out.push(Figure::latency(
        "spawn.thread",
        "thread create+join",
        "ns per pthread_create (64 KiB stack, via std::thread) + join",
        s,
    ));
    Ok(())
}

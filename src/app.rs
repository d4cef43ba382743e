//! Dispatch from parsed arguments to commands, and the choice of exit code
//! and error text: the only place that prints errors.

use std::fs::File;
use std::io::{self, IsTerminal, Write};
use std::path::Path;

use anyhow::Context;
use tally::cli::{self, Command};
use tally::report::{self, Format, Style};
use tally::run;

/// Exit code for a failure of tally itself in `tally run` (timeout/env).
const RUN_OWN_FAILURE: u8 = 125;

pub fn main() -> u8 {
    let args: Vec<std::ffi::OsString> = std::env::args_os().collect();
    let cli = match cli::parse(&args) {
        Ok(cli) => cli,
        Err(e) => {
            let _ = e.print();
            return match e.kind() {
                clap::error::ErrorKind::DisplayHelp | clap::error::ErrorKind::DisplayVersion => 0,
                _ if args.get(1).is_some_and(|a| a == "run") => RUN_OWN_FAILURE,
                _ => 2,
            };
        }
    };
    // A setuid or file-capability install runs `tally mem` and nothing else.
    let privilege = match tally::mem::privilege::gate(matches!(cli.command, Command::Mem(_))) {
        Ok(p) => p,
        Err(e) => {
            eprintln!("tally: {e}");
            return if matches!(cli.command, Command::Run(_)) {
                RUN_OWN_FAILURE
            } else {
                1
            };
        }
    };
    match cli.command {
        Command::Run(args) => run_command(args),
        Command::Bench(args) => bench_command(args),
        Command::Mem(args) => mem_command(args, privilege),
        Command::Cache(args) => cache_command(args),
        Command::Cp(args) => cp_command(args),
        Command::Load(args) => load_command(args),
        Command::Completions { shell } => quiet_pipe(|out| {
            clap_complete::generate(shell, &mut cli::command(), "tally", out);
            Ok(())
        }),
        Command::Man => quiet_pipe(|out| {
            clap_mangen::Man::new(cli::command())
                .render(out)
                .context("cannot write the man page")
        }),
    }
}

/// Runs `f` on stdout; a closed pipe ends quietly, other errors exit 1.
fn quiet_pipe(f: impl FnOnce(&mut dyn Write) -> anyhow::Result<()>) -> u8 {
    let stdout = io::stdout();
    let mut out = stdout.lock();
    match f(&mut out).and_then(|()| out.flush().map_err(Into::into)) {
        Ok(()) => 0,
        Err(e) if is_broken_pipe(&e) => 0,
        Err(e) => {
            eprintln!("tally: {e:#}");
            1
        }
    }
}

fn is_broken_pipe(e: &anyhow::Error) -> bool {
    e.chain().any(|c| {
        c.downcast_ref::<io::Error>()
            .is_some_and(|io| io.kind() == io::ErrorKind::BrokenPipe)
    })
}

fn run_command(args: cli::run::RunArgs) -> u8 {
    let cfg = run::Config {
        argv: args.command,
        runs: args.runs,
        warmup: args.warmup,
        quiet_command: args.quiet_command,
        cold: args.cold,
        drop_caches: args.drop_caches,
        tree: args.tree,
        counters: args.counters,
    };
    // Open the report file first: a bad -o path should fail before the
    // command runs, not after.
    let mut file = match &args.output {
        Some(path) => match create_report_file(path) {
            Ok(f) => Some(f),
            Err(e) => {
                eprintln!("tally: {e:#}");
                return RUN_OWN_FAILURE;
            }
        },
        None => None,
    };
    let total = cfg.warmup.saturating_add(cfg.runs);
    let bar = (total > 1 && io::stderr().is_terminal()).then(|| {
        let bar = indicatif::ProgressBar::new(u64::from(total));
        bar.set_style(
            indicatif::ProgressStyle::with_template("tally: {msg} {bar:30} {pos}/{len} eta {eta}")
                .unwrap_or_else(|_| indicatif::ProgressStyle::default_bar()),
        );
        bar
    });
    let mut on_progress = |p: run::Progress| {
        if let Some(bar) = &bar {
            match p {
                run::Progress::Warmup { done, .. } => {
                    bar.set_message("warm-up");
                    bar.set_position(u64::from(done));
                }
                run::Progress::Run { done, .. } => {
                    bar.set_message("runs");
                    bar.set_position(u64::from(cfg.warmup) + u64::from(done));
                }
            }
        }
    };
    let result = run::execute(&cfg, &mut on_progress);
    if let Some(bar) = &bar {
        bar.finish_and_clear();
    }
    let report = match result {
        Ok(r) => r,
        Err(e) => {
            eprintln!("tally: {e}");
            return e.exit_code();
        }
    };
    let style = Style { color: false };
    // Rendered whole, then written at once: stderr is unbuffered, and one
    // write keeps the report's lines together.
    let mut text = Vec::with_capacity(4096);
    let rendered = report::render(&report, args.format, style, &mut text).and_then(|()| {
        match file.as_mut() {
            Some(f) => f.write_all(&text),
            None => io::stderr().lock().write_all(&text),
        }
        .map_err(report::RenderError::Io)
    });
    match rendered {
        Ok(()) => {}
        // A reader that went away (`tally run … 2>&1 | head`) is no failure
        // of the command's: keep its exit code, say nothing.
        Err(report::RenderError::Io(e)) if e.kind() == io::ErrorKind::BrokenPipe => {}
        Err(e) => {
            eprintln!("tally: cannot write the report: {e}");
            return RUN_OWN_FAILURE;
        }
    }
    run::exit_code(&report)
}

fn create_report_file(path: &Path) -> anyhow::Result<File> {
    File::create(path).with_context(|| {
        format!(
            "cannot create the report file {}: check the directory exists and is writable",
            path.display()
        )
    })
}

fn mem_command(args: cli::mem::MemArgs, mut privilege: tally::mem::privilege::Privilege) -> u8 {
    use tally::mem::{self, report::Unit};
    let elevated = privilege.is_elevated();
    let note = |msg: &str| eprintln!("tally: {msg}");
    if elevated && args.watch.is_some() {
        note(
            "--watch is not available in a setuid or capability install, which keeps its \
              privilege for one scan only; run `watch tally mem` instead",
        );
        return 2;
    }
    if elevated && args.procfs.is_some() {
        note("--procfs ignored: this install reads /proc only");
    }
    // A user name is looked up with the caller's rights only: after the
    // scan when privileged, before it otherwise.
    let user = args.user.clone();
    let resolve = |user: &str| -> Result<u32, u8> {
        tally::sys::user::uid_of(user)
            .or_else(|| user.parse().ok())
            .ok_or_else(|| {
                note(&format!(
                    "no user named `{user}`: give a login name or a numeric uid"
                ));
                2
            })
    };
    let uid = match user.as_deref() {
        Some(user) if !elevated => match resolve(user) {
            Ok(uid) => Some(uid),
            Err(code) => return code,
        },
        _ => None,
    };
    let machine = matches!(args.format, Format::Csv | Format::Json | Format::Prometheus);
    let mut cfg = mem::Config {
        procfs: match &args.procfs {
            Some(path) if !elevated => tally::procfs::ProcRoot::new(path),
            _ => tally::procfs::ProcRoot::default(),
        },
        pids: (!args.pids.is_empty()).then(|| {
            let mut pids = args.pids;
            pids.sort_unstable();
            pids.dedup();
            pids
        }),
        grouping: mem::group::Grouping {
            by: args.group_by,
            name: args.name,
            split_args: args.split_args,
            filter: args.filter,
            uid,
            sort: args.sort,
            reverse: args.reverse,
            top: args.top.map(|n| usize::try_from(n).unwrap_or(usize::MAX)),
            check_replaced: !elevated,
        },
        view: mem::report::View {
            unit: args.unit.unwrap_or(if machine { Unit::B } else { Unit::M }),
            human_sizes: args.human,
            total_only: args.total_only,
        },
        threads: args.threads,
        read_status: user.is_some(),
    };
    let report = match args.watch {
        Some(interval) => {
            let signals = match tally::sys::signals::Forwarder::install() {
                Ok(s) => s,
                Err(e) => {
                    note(&format!("cannot install signal handlers for --watch: {e}"));
                    return 1;
                }
            };
            let stdout = io::stdout();
            let mut out = stdout.lock();
            let terminal = out.is_terminal();
            let stop = || signals.pending().is_some();
            mem::watch(&cfg, interval, args.format, terminal, &mut out, &stop)
                .map(|r| r.unwrap_or_default())
        }
        None => {
            let snap = mem::scan(&cfg);
            // Privilege ends with the scan, whatever its outcome: naming,
            // user lookups and output run with the caller's rights only.
            if let Err(e) = privilege.drop_to_caller() {
                note(&mem::MemError::DropPrivileges(e).to_string());
                return 1;
            }
            if let (Some(user), None) = (user.as_deref(), cfg.grouping.uid) {
                match resolve(user) {
                    Ok(uid) => cfg.grouping.uid = Some(uid),
                    Err(code) => return code,
                }
            }
            cfg.grouping.check_replaced = true;
            snap.and_then(|snap| {
                let report = mem::summarize(&snap, &cfg);
                let stdout = io::stdout();
                let mut out = stdout.lock();
                report::render(&report, args.format, Style::default(), &mut out)?;
                Ok(report)
            })
        }
    };
    match report {
        Ok(report) => {
            for msg in mem::closing_notes(&report, elevated, tally::sys::geteuid() == 0) {
                note(&msg);
            }
            0
        }
        Err(e) if e.is_broken_pipe() => 0,
        Err(e) => {
            note(&e.to_string());
            1
        }
    }
}

fn cache_command(args: cli::cache::CacheArgs) -> u8 {
    use tally::cache::{command, report::Action};
    let action = if args.evict {
        Action::Evict
    } else if args.warm {
        Action::Warm
    } else if args.lock {
        Action::Lock
    } else {
        Action::Status
    };
    let cfg = command::Config {
        action,
        paths: args.paths,
        recursive: args.recursive,
        null_separated: args.null,
        map: args.verbose,
        map_buckets: command::map_buckets(tally::sys::tty::stdout_columns()),
    };
    let (report, held) = match command::execute(&cfg, &mut io::stdin().lock()) {
        Ok(r) => r,
        Err(e) => {
            eprintln!("tally: {e}");
            return 1;
        }
    };
    let code = quiet_pipe(|out| render_to(&report, args.format, out));
    if code != 0 {
        return code;
    }
    if let Some(held) = held {
        if !held.mappings.is_empty() {
            eprintln!(
                "tally: holding {} locked in memory ({} files); interrupt (Ctrl-C) to release",
                tally::units::human_bytes(held.bytes),
                held.mappings.len()
            );
            if let Err(e) = tally::sys::mem::wait_for_stop_signal() {
                eprintln!("tally: cannot wait for a signal: {e}");
                return 1;
            }
        }
    }
    u8::from(report.has_problems())
}

/// Renders a report to stdout, keeping an I/O error visible to
/// [`quiet_pipe`] so a closed pipe stays quiet.
fn render_to<R: report::Render>(r: &R, format: Format, out: &mut dyn Write) -> anyhow::Result<()> {
    match report::render(r, format, Style { color: false }, out) {
        Ok(()) => Ok(()),
        Err(report::RenderError::Io(e)) => {
            Err(anyhow::Error::new(e).context("cannot write the report"))
        }
        Err(e) => Err(e.into()),
    }
}

fn cp_command(args: cli::cp::CpArgs) -> u8 {
    use tally::copy;
    if args.format == Format::Prometheus {
        eprintln!("tally: cp has no Prometheus report; use --format human, json, csv or markdown");
        return 2;
    }
    let mut paths = args.paths;
    let Some(destination) = paths.pop() else {
        eprintln!("tally: cp needs a source and a destination");
        return 2;
    };
    let cfg = copy::Config {
        sources: paths,
        destination,
        recursive: args.recursive,
        preserve: args.preserve,
        sync: args.sync,
        keep_cache: args.keep_cache,
        via: args.via,
    };
    let mut bar: Option<indicatif::ProgressBar> = None;
    let tty = io::stderr().is_terminal();
    let mut on_progress = |p: copy::Progress| {
        if !tty || p.total_bytes < (256 << 20) {
            return;
        }
        let b = bar.get_or_insert_with(|| {
            let b = indicatif::ProgressBar::new(p.total_bytes);
            b.set_style(
                indicatif::ProgressStyle::with_template(
                    "tally: cp {bar:30} {binary_bytes}/{binary_total_bytes} {binary_bytes_per_sec} eta {eta}",
                )
                .unwrap_or_else(|_| indicatif::ProgressStyle::default_bar()),
            );
            b
        });
        b.set_position(p.done_bytes);
    };
    let result = copy::execute(&cfg, &mut on_progress);
    if let Some(b) = &bar {
        b.finish_and_clear();
    }
    let report = match result {
        Ok(r) => r,
        Err(e) => {
            eprintln!("tally: cp: {e}");
            return 1;
        }
    };
    for p in &report.problems {
        eprintln!("tally: cp: {}: {}", p.path.display(), p.error);
    }
    if args.verbose {
        let stderr = io::stderr();
        let _ = report::render(
            &report,
            Format::Human,
            Style { color: false },
            &mut stderr.lock(),
        );
    }
    if args.format != Format::Human {
        let code = quiet_pipe(|out| render_to(&report, args.format, out));
        if code != 0 {
            return code;
        }
    }
    u8::from(!report.problems.is_empty())
}

fn load_command(args: cli::load::LoadArgs) -> u8 {
    use tally::load::{self, Mode};
    if args.format == Format::Prometheus {
        eprintln!(
            "tally: load has no Prometheus report; use --format human, json, csv or markdown"
        );
        return 2;
    }
    if let Some(method) = args.child {
        // One load in this process, the result in a file for the parent.
        let result = load::child::load(method, &args.file, args.touch).unwrap_or_else(|e| {
            load::child::ChildResult {
                error: Some(e.to_string()),
                ..Default::default()
            }
        });
        let failed = result.error.is_some();
        if let Some(path) = &args.result {
            let written = serde_json::to_vec(&result)
                .map_err(io::Error::other)
                .and_then(|b| std::fs::write(path, b));
            if written.is_err() {
                return 1;
            }
        }
        return u8::from(failed);
    }
    let exe = match std::env::current_exe() {
        Ok(p) => p,
        Err(e) => {
            eprintln!("tally: cannot find the tally binary to run loads with: {e}");
            return 1;
        }
    };
    let modes = if args.cold {
        vec![Mode::Cold]
    } else if args.warm {
        vec![Mode::Warm]
    } else {
        vec![Mode::Cold, Mode::Warm]
    };
    let methods = if args.methods.is_empty() {
        load::Method::ALL.to_vec()
    } else {
        let mut m = args.methods.clone();
        m.dedup();
        m
    };
    let cfg = load::Config {
        file: args.file,
        methods,
        modes,
        runs: args.runs,
        touch: args.touch,
        exe,
    };
    // Open the plot file first: a bad path should fail before the loads.
    let mut html = match &args.html {
        Some(p) => match create_report_file(p) {
            Ok(f) => Some(f),
            Err(e) => {
                eprintln!("tally: {e:#}");
                return 1;
            }
        },
        None => None,
    };
    let bar = io::stderr().is_terminal().then(|| {
        let b = indicatif::ProgressBar::new(0);
        b.set_style(
            indicatif::ProgressStyle::with_template("tally: load {msg} {bar:30} {pos}/{len}")
                .unwrap_or_else(|_| indicatif::ProgressStyle::default_bar()),
        );
        b
    });
    let mut on_progress = |p: load::Progress| {
        if let Some(b) = &bar {
            b.set_length(u64::from(p.of));
            b.set_position(u64::from(p.done));
            b.set_message(format!("{:?} {}", p.mode, p.method.name()).to_lowercase());
        }
    };
    let result = load::execute(&cfg, &mut on_progress);
    if let Some(b) = &bar {
        b.finish_and_clear();
    }
    let report = match result {
        Ok(r) => r,
        Err(e) => {
            eprintln!("tally: load: {e}");
            return 1;
        }
    };
    if let Some(f) = html.as_mut() {
        if let Err(e) = load::report::write_html(&report, f) {
            eprintln!("tally: cannot write the HTML plot: {e}");
            return 1;
        }
    }
    let code = quiet_pipe(|out| render_to(&report, args.format, out));
    if code != 0 {
        return code;
    }
    // A method this filesystem cannot do (O_DIRECT on tmpfs) is shown as
    // unavailable, not a failure; no method working at all is one.
    let none_worked = report.results.iter().all(|r| r.error.is_some());
    u8::from(!report.ok() || none_worked)
}

fn bench_command(args: cli::bench::BenchArgs) -> u8 {
    use tally::bench;
    if args.list {
        return quiet_pipe(|out| {
            for b in bench::registry::BENCHMARKS {
                writeln!(
                    out,
                    "{:<10} {:<18} {}{}",
                    b.name,
                    b.section.title().split(' ').next().unwrap_or(""),
                    b.about,
                    if b.heavy {
                        " (heavy: --full or by name)"
                    } else {
                        ""
                    }
                )?;
            }
            Ok(())
        });
    }
    let mode = if args.full {
        bench::Mode::Full
    } else if args.quick {
        bench::Mode::Quick
    } else {
        bench::Mode::Standard
    };
    let mut cfg = bench::Config::new(mode);
    cfg.names = args.names;
    if let Some(dir) = args.dir {
        cfg.dir = dir;
    }
    cfg.max_mem_bytes = args.max_mem;
    cfg.max_file_bytes = args.max_bytes;
    cfg.budget = args.budget_ms.map(std::time::Duration::from_millis);
    // Bad inputs fail before minutes of measuring, not after.
    let old = match &args.baseline {
        Some(path) => match bench::baseline::load(path) {
            Ok(r) => Some((path.clone(), r)),
            Err(e) => {
                eprintln!("tally: {e}");
                return 1;
            }
        },
        None => None,
    };
    let mut html = match &args.html {
        Some(path) => match create_report_file(path) {
            Ok(f) => Some(f),
            Err(e) => {
                eprintln!("tally: {e:#}");
                return 1;
            }
        },
        None => None,
    };
    let tty = io::stderr().is_terminal();
    let bar = tty.then(|| {
        let bar = indicatif::ProgressBar::new_spinner();
        bar.set_style(
            indicatif::ProgressStyle::with_template("tally: {spinner} [{elapsed}] {msg}")
                .unwrap_or_else(|_| indicatif::ProgressStyle::default_spinner()),
        );
        bar.enable_steady_tick(std::time::Duration::from_millis(200));
        bar
    });
    let mut current = String::new();
    let mut on_progress = |p: bench::Progress| match p {
        bench::Progress::Plan {
            benchmarks,
            expected,
        } => {
            if mode == bench::Mode::Full || expected.as_secs() > 120 {
                eprintln!(
                    "tally: bench: {} benchmarks ({}), expected to take about {} min",
                    benchmarks.len(),
                    benchmarks.join(" "),
                    expected.as_secs().div_ceil(60)
                );
            }
        }
        bench::Progress::Start { name, index, total } => {
            current = format!("{name} ({}/{total})", index + 1);
            match &bar {
                Some(b) => b.set_message(current.clone()),
                None if mode == bench::Mode::Full => eprintln!("tally: bench: {current}"),
                None => {}
            }
        }
        bench::Progress::Step { detail, .. } => {
            if let Some(b) = &bar {
                b.set_message(format!("{current}: {detail}"));
            }
        }
    };
    let hooks = bench::Hooks {
        progress: &mut on_progress,
        on_hang: |name, limit| {
            eprintln!(
                "tally: benchmark {name} did not finish within {} s and was stopped; rerun it alone (`tally bench {name}`) to see where it hangs",
                limit.as_secs()
            );
            std::process::exit(1);
        },
    };
    let result = bench::execute(&cfg, hooks);
    if let Some(b) = &bar {
        b.finish_and_clear();
    }
    let mut report = match result {
        Ok(r) => r,
        Err(e) => {
            eprintln!("tally: {e}");
            return 1;
        }
    };
    if let Some((path, old)) = &old {
        report.baseline = Some(bench::baseline::compare(path, old, &report));
    }
    if let (Some(f), Some(path)) = (html.as_mut(), &args.html) {
        if let Err(e) = bench::html::write(&report, f) {
            eprintln!("tally: cannot write the HTML page {}: {e}", path.display());
            return 1;
        }
    }
    quiet_pipe(|out| {
        report::render(&report, args.format, Style { color: false }, out).map_err(|e| match e {
            // Unwrapped so quiet_pipe sees a closed pipe for what it is.
            report::RenderError::Io(io) => anyhow::Error::from(io),
            other => anyhow::Error::from(other),
        })
    })
}

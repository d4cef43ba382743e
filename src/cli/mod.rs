//! Command-line definitions (clap derive). Parsing and validation only: no
//! system calls happen here, so `--help` works on a broken machine. Help,
//! the man page and shell completions are all generated from these types.

pub mod complete;
pub mod man;
pub mod peers;

use clap::{Parser, Subcommand};

use crate::{bench, cache, compare, copy as cp, history, load, mem, run, serve};

/// What does this cost, and why?
#[derive(Debug, Parser)]
#[command(
    name = "tally",
    version,
    about = "What does this cost, and why? Exact resource usage on Linux.",
    long_about = "What does this cost, and why? Exact resource usage on Linux.\n\n\
        `tally run -- CMD` reports what a command cost (wall and cpu µs, peak memory, \
        faults, switches, I/O), over repeated runs and from a cold page cache without \
        root. `tally mem` shows RAM and swap per program, `tally bench` measures the \
        machine, and `tally load`, `tally cache` and `tally cp` measure and respect \
        the page cache.",
    propagate_version = true,
    max_term_width = 100
)]
pub struct Cli {
    #[command(subcommand)]
    pub command: Command,
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Run a command and report what it cost (on stderr).
    Run(run::args::RunArgs),
    /// Compare commands: every figure of `run`, interleaved runs, ratios
    /// with intervals and a significance test.
    Compare(Box<compare::args::CompareArgs>),
    /// Measure the machine: timer, calls, syscalls, spawn, context switches,
    /// memory latency and bandwidth, page faults, file reads, select/poll/epoll.
    Bench(bench::args::BenchArgs),
    /// Memory per program: private, shared, RAM used (PSS) and swap.
    Mem(mem::args::MemArgs),
    /// Page-cache residency of files; evict, warm or lock them.
    Cache(cache::args::CacheArgs),
    /// Copy files without trashing the page cache (reflink, copy_file_range, sparse-aware).
    Cp(cp::args::CpArgs),
    /// Compare ways of loading a big file (read, mmap, madvise, O_DIRECT, io_uring), cold and warm.
    Load(load::args::LoadArgs),
    /// Export memory per program and more to Prometheus: an HTTP /metrics endpoint.
    Serve(serve::args::ServeArgs),
    /// Every recorded result (--record) and the commits where a figure
    /// changed: change points per command and figure, and a CI gate.
    History(Box<history::args::HistoryArgs>),
    /// Print a shell completion script.
    Completions {
        /// The shell to complete for.
        shell: clap_complete::Shell,
    },
    /// Print a man page (roff) on stdout: tally(1), or tally-SUBCOMMAND(1).
    Man {
        /// The subcommand whose page to print (default: the top page).
        #[arg(value_parser = clap::builder::PossibleValuesParser::new(
            man::PAGES.iter().map(|p| p.name).filter(|n| !n.is_empty())))]
        subcommand: Option<String>,
        /// Write every page into DIR instead (tally.1, tally-run.1, …),
        /// for installing: `tally man --dir /usr/local/share/man/man1`.
        #[arg(long, value_name = "DIR", conflicts_with = "subcommand")]
        dir: Option<std::path::PathBuf>,
    },
}

/// Parses the command line. The plain forms of `tally run` are read by
/// [`run::args::scan`] without clap; the rest of `tally run` is parsed with a tree
/// holding only the `run` subcommand. Both keep what tally does before it
/// starts the measured command, and so adds to every run, small.
pub fn parse<I, T>(args: I) -> Result<Cli, clap::Error>
where
    I: IntoIterator<Item = T>,
    T: Into<std::ffi::OsString> + Clone,
{
    use clap::{Args, FromArgMatches};
    let args: Vec<std::ffi::OsString> = args.into_iter().map(Into::into).collect();
    if let Some(run) = run::args::scan(&args) {
        return Ok(Cli {
            command: Command::Run(run),
        });
    }
    if args.get(1).is_some_and(|a| a == "run") {
        let run = run::args::RunArgs::augment_args(clap::Command::new("run"))
            .about("Run a command and report what it cost (on stderr).");
        let cmd = clap::Command::new("tally")
            .version(env!("CARGO_PKG_VERSION"))
            .subcommand(run)
            .propagate_version(true)
            .max_term_width(100);
        let matches = cmd.try_get_matches_from(&args)?;
        if let Some(("run", sub)) = matches.subcommand() {
            return Ok(Cli {
                command: Command::Run(run::args::RunArgs::from_arg_matches(sub)?),
            });
        }
    }
    Cli::try_parse_from(args)
}

/// The clap command, for completions and the man page.
pub fn command() -> clap::Command {
    <Cli as clap::CommandFactory>::command()
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::Parser;

    /// The `run` fast path must parse exactly as the full command tree.
    #[test]
    fn run_fast_path_agrees_with_the_full_parser() {
        let cases: &[&[&str]] = &[
            &["tally", "run", "--", "ls", "-l"],
            &["tally", "run", "ls", "-l"],
            &[
                "tally",
                "run",
                "-n",
                "3",
                "--warmup",
                "1",
                "--quiet-command",
                "--",
                "true",
            ],
            &[
                "tally",
                "run",
                "--cold",
                "a",
                "b",
                "--tree",
                "--counters",
                "--format",
                "json",
                "-o",
                "x",
                "--",
                "cat",
                "a",
            ],
            &[
                "tally",
                "run",
                "--drop-caches",
                "--",
                "--weird-command-name",
            ],
        ];
        for argv in cases {
            let fast = parse(argv.iter().copied()).map(|c| format!("{c:?}"));
            let full = Cli::try_parse_from(argv.iter().copied()).map(|c| format!("{c:?}"));
            assert_eq!(fast.ok(), full.ok(), "{argv:?}");
        }
        for bad in [
            &["tally", "run"][..],
            &["tally", "run", "-x"],
            &["tally", "run", "-n", "0", "--", "true"],
        ] {
            assert!(parse(bad.iter().copied()).is_err(), "{bad:?}");
            assert!(Cli::try_parse_from(bad.iter().copied()).is_err(), "{bad:?}");
        }
    }

    /// Every argument list `run::args::scan` reads must be read the same by clap,
    /// and the everyday spellings must take the scan.
    #[test]
    fn run_scan_agrees_with_clap() {
        use std::ffi::OsString;
        let scan = |argv: &[&str]| {
            let args: Vec<OsString> = argv.iter().map(OsString::from).collect();
            run::args::scan(&args)
        };
        let clap_run = |argv: &[&str]| match Cli::try_parse_from(argv.iter().copied()) {
            Ok(Cli {
                command: Command::Run(r),
            }) => Some(format!("{r:?}")),
            _ => None,
        };
        for common in [
            &["tally", "run", "--", "/bin/true"][..],
            &["tally", "run", "ls", "-l", "--format", "json"],
            &[
                "tally",
                "run",
                "-n",
                "10",
                "--warmup",
                "2",
                "--quiet-command",
                "--",
                "gzip",
                "-k",
            ],
            &["tally", "run", "--cold", "a", "--cold", "b", "./load", "a"],
            &["tally", "run", "--no-why", "--", "/bin/true"],
            &[
                "tally", "run", "--tree", "--format", "json", "-o", "r.json", "--", "make",
            ],
            &[
                "tally",
                "run",
                "--counters",
                "--drop-caches",
                "--runs",
                "1000000",
                "x",
            ],
            &[
                "tally",
                "run",
                "--export",
                "json=r.json",
                "--export",
                "csv=-",
                "--",
                "make",
            ],
        ] {
            let fast = scan(common).map(|r| format!("{r:?}"));
            assert!(fast.is_some(), "{common:?} should take the scan");
            assert_eq!(fast, clap_run(common), "{common:?}");
        }
        // Random argument lists over tokens that exercise every branch and
        // the edges clap treats specially (empty, "-", "=", signs, ranges).
        let tokens = [
            "--",
            "-n",
            "--runs",
            "3",
            "0",
            "1000001",
            "+2",
            "007",
            "--warmup",
            "-w",
            "-r",
            "null",
            "--export-json",
            "--quiet-command",
            "--tree",
            "-v",
            "--verbose",
            "--why",
            "--no-why",
            "--counters",
            "--drop-caches",
            "--format",
            "json",
            "csv",
            "markdown",
            "human",
            "prometheus",
            "JSON",
            "-o",
            "--output",
            "out",
            "--cold",
            "a",
            "b",
            "",
            "-",
            "ls",
            "-l",
            "--runs=2",
            "-n3",
            "-h",
            "--help",
            "-V",
            "--bogus",
            "--export",
            "json=out",
            "csv=-",
            "bogus=x",
            "json=",
        ];
        let mut state = 0x2545_f491_4f6c_dd1du64;
        let mut next = |n: usize| {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            (state % n as u64) as usize
        };
        let (mut taken, mut total) = (0, 0);
        for _ in 0..20_000 {
            let len = next(8);
            let mut argv = vec!["tally", "run"];
            argv.extend((0..len).map(|_| tokens[next(tokens.len())]));
            if let Some(fast) = scan(&argv) {
                taken += 1;
                assert_eq!(Some(format!("{fast:?}")), clap_run(&argv), "{argv:?}");
            }
            total += 1;
        }
        assert!(taken > total / 20, "the scan took only {taken} of {total}");
    }
}

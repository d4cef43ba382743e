//! Command-line definitions (clap derive). Parsing and validation only: no
//! system calls happen here, so `--help` works on a broken machine. Help,
//! the man page and shell completions are all generated from these types.

pub mod bench;
pub mod run;

use clap::{Parser, Subcommand};

/// What does this cost, and why?
#[derive(Debug, Parser)]
#[command(
    name = "tally",
    version,
    about = "What does this cost, and why? Exact resource usage on Linux.",
    long_about = "What does this cost, and why? Exact resource usage on Linux.\n\n\
        `tally run -- CMD` reports what a command cost: wall and cpu time in µs, \
        peak memory, page faults, context switches and I/O, over repeated runs \
        and from a cold page cache without root.",
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
    Run(run::RunArgs),
    /// Measure the machine: timer, calls, syscalls, spawn, context switches,
    /// memory latency and bandwidth, page faults, file reads, select/poll/epoll.
    Bench(bench::BenchArgs),
    /// Print a shell completion script.
    Completions {
        /// The shell to complete for.
        shell: clap_complete::Shell,
    },
    /// Print the man page (roff) on stdout.
    Man,
}

/// The clap command, for completions and the man page.
pub fn command() -> clap::Command {
    <Cli as clap::CommandFactory>::command()
}

//! Command-line definitions (clap derive). Parsing and validation only: no
//! system calls happen here, so `--help` works on a broken machine. Help,
//! the man page and shell completions are all generated from these types.

pub mod cache;
pub mod cp;
pub mod load;
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
    /// Page-cache residency of files; evict, warm or lock them.
    Cache(cache::CacheArgs),
    /// Copy files without trashing the page cache (reflink, copy_file_range, sparse-aware).
    Cp(cp::CpArgs),
    /// Compare ways of loading a big file (read, mmap, madvise, O_DIRECT, io_uring), cold and warm.
    Load(load::LoadArgs),
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

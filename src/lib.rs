//! tally: what does this cost, and why?
//!
//! The library holds every command; the binary only parses arguments and
//! dispatches. Data flows one way: `cli` parses arguments, each command's
//! `command` module turns them into its `Config` (and back into an exit
//! code), the command measures through `sys` and `procfs` into a
//! plain-data report, and `report` renders that in the chosen format.

pub mod bench;
pub mod cache;
pub mod cli;
pub mod compare;
pub mod copy;
pub mod count;
pub mod diag;
pub mod failure;
pub mod gate;
pub mod gpu;
pub mod history;
pub mod input;
pub mod load;
pub mod mem;
pub mod pagecache;
pub mod pem;
pub mod place;
pub mod procfs;
pub mod progress;
pub mod record;
pub mod report;
pub mod run;
pub mod serve;
pub mod speed;
pub mod stats;
pub mod sys;
pub mod text;
pub mod units;

/// The memory allocator of tally and everything linked with it: Doug
/// Lea's, as glibc's grew from it. tally is linked statically against
/// musl (`.cargo/config.toml`), whose own allocator hands every freed
/// block of more than a few pages back to the system; on a VM whose fresh
/// memory is slow to touch, `tally history` of 5,000,000 results took
/// 1.40 s with it, 0.91 s with this one (0.66 s with glibc's, tuned; 0.82 s
/// with mimalloc, which touched 90 more pages at start-up, 0.2 ms more
/// added to every command `tally run` measures).
#[global_allocator]
static ALLOCATOR: dlmalloc::GlobalDlmalloc = dlmalloc::GlobalDlmalloc;

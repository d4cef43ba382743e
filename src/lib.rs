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

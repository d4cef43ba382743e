//! `tally cache`: shows, evicts or warms the page cache of files.
//!
//! The page-cache library (residency, eviction, warming) lives in
//! [`crate::pagecache`]; this folder holds only the command and its report.

pub mod args;
pub mod command;
pub mod report;
pub mod textfile;

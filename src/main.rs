//! The `tally` binary: parse, dispatch, map errors to exit codes.
//!
//! `main` is the C entry point from `tally::entry_point!`, which skips std's
//! start-up: it would add ~0.1 ms to every command `tally run` measures.

#![no_main]

mod app;

tally::entry_point!(app::main);

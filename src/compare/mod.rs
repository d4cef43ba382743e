//! `tally compare`: run several commands interleaved (round-robin,
//! shuffled within each round from a seed), measure every run as `tally
//! run` does ([`crate::run::Measurer`]), and say for every figure how each
//! command differs from the reference, with an interval and a test.
//!
//! - [`plan`]: the [`Config`]; commands, names and parameter scans into the
//!   instances run.
//! - [`runner`]: warm-up, rounds, `--prepare`/`--setup`/`--cleanup`;
//!   [`sizing`] how many rounds without `--runs`; `gpu` the GPU figures
//!   of its runs, from one sampling session.
//! - [`crate::speed`]: the speed probe made before runs, outside their clocks.
//! - [`report`]: the model; [`statistics`] how it is made from the runs (the
//!   family of intervals and the verdicts), [`prose`] how it reads; `render`
//!   the formats, with `human` the terminal layout and [`html`] the page.
//! - [`baseline`]: `--save-baseline` and `--baseline`, the runs kept for a
//!   later comparison; [`gate`]: `--fail-on`, the regression gate read off
//!   the report's statistics.
//! - [`args`]: the command line, and the [`Config`] it asks for;
//!   [`command`]: the outputs opened, the baseline read, the runs made
//!   ([`execute`]), and the report to its outputs, the baseline file and
//!   the exit code.

pub mod args;
pub mod baseline;
pub mod command;
mod counted;
pub mod gate;
mod gpu;
pub mod html;
mod human;
pub mod plan;
pub mod prose;
mod render;
pub mod report;
pub mod runner;
pub mod sizing;
pub mod statistics;
mod summary;

pub use command::{CompareFailure, execute};
pub use plan::{Config, Instance, Parameter};
pub use runner::CompareError;

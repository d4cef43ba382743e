//! The `tally` binary: parse, dispatch, map errors to exit codes.

mod app;

use std::process::ExitCode;

fn main() -> ExitCode {
    ExitCode::from(app::main())
}

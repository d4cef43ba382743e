//! `tally serve`: the configuration read, the server started and run
//! until a signal (see `tally::serve::command`).

use tally::serve::args::ServeArgs;
use tally::serve::command;

pub(super) fn serve_command(args: ServeArgs) -> u8 {
    let settings = match command::settings(&args) {
        Ok(s) => s,
        Err(code) => return code,
    };
    match command::start(settings) {
        Ok(server) => server.wait(),
        Err(code) => code,
    }
}

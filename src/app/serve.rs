//! `tally serve`: the arguments made a configuration, the files read, the
//! server started and run until a signal (see `tally::serve::command`).

use tally::serve::{args::ServeArgs, command};

pub(super) fn serve_command(args: ServeArgs) -> u8 {
    let cfg = match args.config() {
        Ok(cfg) => cfg,
        Err(e) => return super::fail(&e),
    };
    match command::settings(&cfg).and_then(command::start) {
        Ok(server) => server.wait(),
        Err(e) => super::fail(&e),
    }
}

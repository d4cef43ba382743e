//! `tally cp` arguments.

use std::path::PathBuf;

use clap::Args;

use super::Config;
use crate::failure::Usage;
use crate::report::{Format, Stream};

#[derive(Debug, Args)]
#[command(after_help = "Examples:\n  \
        tally cp big.iso /backup/            # the page cache stays as it was\n  \
        tally cp -r -p --sync photos/ /mnt/usb/\n  \
        tally cp -v model.bin model.copy     # say how, and what stayed cached\n\n\
        The copy goes to a temporary file beside the destination and is renamed \
        into place when complete: a failed copy leaves nothing behind.\n\
        Exit status: 0 ok, 1 if anything was not copied, 2 bad usage.")]
pub struct CpArgs {
    /// Copy directories and everything under them (symbolic links are
    /// copied as links).
    #[arg(short = 'r', long)]
    pub recursive: bool,

    /// Keep times and ownership too (the mode is always kept).
    #[arg(short = 'p', long)]
    pub preserve: bool,

    /// fsync each file before renaming it into place, and its directory after.
    #[arg(long)]
    pub sync: bool,

    /// Leave the pages the copy read and wrote in the page cache.
    #[arg(long)]
    pub keep_cache: bool,

    /// How to move the data.
    #[arg(long, value_enum, default_value_t = crate::copy::Via::Auto)]
    pub via: crate::copy::Via,

    /// Write to a named temporary file (`.NAME.XXXXXX.tally-cp`) even
    /// where the filesystem offers unnamed ones (`O_TMPFILE`): the fallback
    /// path, selectable for tests.
    #[arg(long, hide = true)]
    pub named_temp: bool,

    /// Say per file how it was copied and what the page cache holds after.
    #[arg(short = 'v', long)]
    pub verbose: bool,

    /// Where the report goes.
    #[command(flatten)]
    pub out: crate::report::OutputArgs,

    /// Sources, then the destination (a directory when there are several
    /// sources).
    #[arg(required = true, num_args = 2.., value_name = "PATH")]
    pub paths: Vec<PathBuf>,
}

impl CpArgs {
    /// The copy the arguments ask for: every path but the last to the
    /// last.
    pub fn config(&self) -> Result<Config, Usage> {
        let mut sources = self.paths.clone();
        let destination = sources
            .pop()
            .ok_or_else(|| Usage::new("cp needs a source and a destination"))?;
        Ok(Config {
            sources,
            destination,
            recursive: self.recursive,
            preserve: self.preserve,
            sync: self.sync,
            keep_cache: self.keep_cache,
            via: self.via,
            named_temp: self.named_temp,
        })
    }

    /// Where the report goes without `-o`: quiet by default, as cp: the
    /// human report only with `-v`, on stderr; another format on stdout.
    pub fn default_stream(&self) -> Option<Stream> {
        match (self.out.format == Format::HUMAN, self.verbose) {
            (true, true) => Some(Stream::Stderr),
            (true, false) => None,
            (false, _) => Some(Stream::Stdout),
        }
    }
}

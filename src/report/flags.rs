//! The output flags every command that reports shares (`--format`, `-o`,
//! `--export`, `--html`), flattened into each command's arguments, and
//! what they ask of the output stage ([`super::Request`]).

use super::{Export, Format, Request};

/// Where a report goes, the same on every command that reports
/// (flattened into each): `--format`, `-o`, `--export`, `--html`.
#[derive(Debug, Clone, Default, clap::Args)]
pub struct OutputArgs {
    /// Report format.
    #[arg(long, value_enum, default_value_t = Format::HUMAN)]
    pub format: Format,

    /// Write the report to FILE (`-`: stdout).
    ///
    /// Instead of where it goes by default (stdout; stderr for `run`). Put
    /// in place only when complete: an earlier FILE survives a failed
    /// command.
    #[arg(short = 'o', long, value_name = "FILE", value_parser = ReportPlace)]
    pub output: Option<std::path::PathBuf>,

    #[arg(long, value_name = "FORMAT=FILE", value_parser = ExportParser,
          action = clap::ArgAction::Append, help = EXPORT_HELP, long_help = EXPORT_LONG_HELP)]
    pub export: Vec<Export>,

    /// Also write the HTML page to FILE.
    ///
    /// The self-contained page, with its plots (`--export html=FILE`).
    #[arg(long, value_name = "FILE")]
    pub html: Option<std::path::PathBuf>,

    /// hyperfine's spelling: on `run` and `compare` hyperfine's JSON
    /// (`--export hyperfine=FILE`), elsewhere tally's (`--export
    /// json=FILE`).
    #[arg(long, value_name = "FILE", hide_short_help = true)]
    pub export_json: Option<std::path::PathBuf>,

    /// hyperfine's spelling: on `run` and `compare` hyperfine's CSV
    /// (`--export hyperfine-csv=FILE`), elsewhere tally's (`--export
    /// csv=FILE`).
    #[arg(long, value_name = "FILE", hide_short_help = true)]
    pub export_csv: Option<std::path::PathBuf>,

    /// hyperfine's spelling: on `run` and `compare` hyperfine's table
    /// (`--export hyperfine-markdown=FILE`), elsewhere tally's (`--export
    /// markdown=FILE`).
    #[arg(long, value_name = "FILE", hide_short_help = true)]
    pub export_markdown: Option<std::path::PathBuf>,
}

impl OutputArgs {
    /// What was asked for, `--html` as the export it stands for and
    /// hyperfine's spellings as tally's formats.
    pub fn request(&self) -> Request {
        self.request_as(false)
    }

    /// [`OutputArgs::request`] for a report of timed runs (`run`,
    /// `compare`): hyperfine's spellings give hyperfine's shapes, so its
    /// scripts (`json.load(f)["results"]`) read them. Regression: they gave
    /// tally's own JSON and CSV.
    pub fn request_timed(&self) -> Request {
        self.request_as(true)
    }

    fn request_as(&self, timed: bool) -> Request {
        let mut exports = self.export.clone();
        let pick = |hyperfine: Format, own: Format| if timed { hyperfine } else { own };
        for (path, format, flag) in [
            (&self.html, Format::HTML, "--html"),
            (
                &self.export_json,
                pick(Format::HYPERFINE, Format::JSON),
                "--export-json",
            ),
            (
                &self.export_csv,
                pick(Format::HYPERFINE_CSV, Format::CSV),
                "--export-csv",
            ),
            (
                &self.export_markdown,
                pick(Format::HYPERFINE_MARKDOWN, Format::MARKDOWN),
                "--export-markdown",
            ),
        ] {
            exports.extend(path.iter().map(|path| Export {
                format,
                path: path.clone(),
                flag,
            }));
        }
        Request {
            format: self.format,
            output: self.output.clone(),
            exports,
            append: false,
        }
    }
}

/// Reads `-o FILE`. hyperfine's `--output null|pipe|inherit` says where
/// the commands' output goes; here `-o` is the report's place, so those
/// three words are refused with the option that does it (a report file so
/// named is `./null`), never taken as a file silently.
#[derive(Debug, Clone, Copy)]
pub struct ReportPlace;

impl clap::builder::TypedValueParser for ReportPlace {
    type Value = std::path::PathBuf;

    fn parse_ref(
        &self,
        cmd: &clap::Command,
        _arg: Option<&clap::Arg>,
        value: &std::ffi::OsStr,
    ) -> Result<std::path::PathBuf, clap::Error> {
        let fail = |msg: String| {
            Err(
                clap::Error::raw(clap::error::ErrorKind::InvalidValue, format!("{msg}\n"))
                    .with_cmd(cmd),
            )
        };
        if value.is_empty() {
            return fail("-o/--output: no FILE; give a path, or `-` for stdout".into());
        }
        if let Some(word @ ("null" | "pipe" | "inherit")) = value.to_str() {
            let theirs = match cmd.get_name() {
                "run" => "--quiet-command sends the command's output to /dev/null".to_owned(),
                "compare" => {
                    format!("did you mean --command-output {word} (hyperfine's --output)?")
                }
                _ => "the commands' output is not this option's".to_owned(),
            };
            return fail(format!(
                "-o/--output {word}: -o is where tally's report goes; {theirs} \
                 For a report file named {word}, give ./{word}"
            ));
        }
        Ok(value.into())
    }
}

/// The help of `--export`, shared by every command that reports.
pub const EXPORT_HELP: &str = "Also write the report in FORMAT to FILE (repeatable)";

/// The long help of `--export`.
pub const EXPORT_LONG_HELP: &str = "Also write the report in FORMAT to FILE (`-`: stdout), \
    from the same measurement; repeatable. FORMAT: any value of --format";

/// Parses `FORMAT=FILE` for `--export`; FILE may be any bytes.
#[derive(Debug, Clone, Copy)]
pub struct ExportParser;

impl clap::builder::TypedValueParser for ExportParser {
    type Value = Export;

    fn parse_ref(
        &self,
        cmd: &clap::Command,
        _arg: Option<&clap::Arg>,
        value: &std::ffi::OsStr,
    ) -> Result<Export, clap::Error> {
        parse_export(value).map_err(|msg| {
            clap::Error::raw(clap::error::ErrorKind::InvalidValue, format!("{msg}\n")).with_cmd(cmd)
        })
    }
}

/// Reads `FORMAT=FILE`; the error names what is wrong and the fix. The
/// format names are clap's own (`Format` as a `ValueEnum`).
pub fn parse_export(value: &std::ffi::OsStr) -> Result<Export, String> {
    use std::os::unix::ffi::OsStrExt;
    let bytes = value.as_bytes();
    let names = || {
        <Format as clap::ValueEnum>::value_variants()
            .iter()
            .filter_map(clap::ValueEnum::to_possible_value)
            .map(|v| v.get_name().to_owned())
            .collect::<Vec<_>>()
            .join(", ")
    };
    let Some(eq) = bytes.iter().position(|&b| b == b'=') else {
        return Err(format!(
            "--export takes FORMAT=FILE (e.g. json=report.json), not {value:?}; FORMAT is one of {}",
            names()
        ));
    };
    let (name, rest) = bytes.split_at(eq);
    let file = rest.get(1..).unwrap_or_default();
    let format = std::str::from_utf8(name)
        .ok()
        .and_then(|n| <Format as clap::ValueEnum>::from_str(n, false).ok())
        .ok_or_else(|| {
            format!(
                "--export: unknown format {:?}; use one of {}",
                String::from_utf8_lossy(name),
                names()
            )
        })?;
    if file.is_empty() {
        return Err("--export: no FILE after `=`; give a path, or `-` for stdout".into());
    }
    Ok(Export {
        format,
        path: std::ffi::OsStr::from_bytes(file).into(),
        flag: "--export",
    })
}

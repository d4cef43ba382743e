//! Where a command's report goes, settled before the command does any
//! work: the one output stage of every command that reports.
//!
//! A command asks for its report in one format (`--format`) at one place
//! (`-o FILE`, `-` for stdout; by default stdout, or stderr for `tally
//! run`, whose stdout is the measured command's), and for more renderings
//! of the same report (`--export FORMAT=FILE`, `--html FILE`).
//! [`Output::open`], before anything is measured, copied or evicted:
//! - checks every format against the report's own list ([`Report::FORMATS`]):
//!   a format it does not have is a usage error (exit 2);
//! - lets at most one rendering claim stdout: a second is a usage error,
//!   and the default human report steps aside to stderr when an export
//!   takes stdout, so stdout carries one document;
//! - refuses stdout when it was closed at start (`>&-`), where a report
//!   would vanish;
//! - resolves every file and creates its temporary file in the file's
//!   directory ([`crate::place`]), so an unwritable place fails before the
//!   work, not after.
//!
//! [`Output::write`] renders each whole, then writes it; a file is put in
//! place only once complete, so an earlier report under the same name
//! survives a failed command, a failed write and a kill. A reader that went
//! away (a closed pipe) ends the output quietly; any other failure to write
//! is an error.

use std::io::{self, Write};
use std::path::{Path, PathBuf};

use super::path::display;
use super::{Document, Format, RenderError, Style, render};
use crate::place::{self, PlaceError, Temp};

/// A report of a command: its formats, one list in one place, checked
/// before the command works.
pub trait Report: Document {
    /// Every format the report renders, in `--format`'s order.
    const FORMATS: &'static [Format];
}

/// Declares the formats of a report type, one line per report:
/// `formats_of!(RunReport: HUMAN, JSON, CSV, MARKDOWN, PROMETHEUS, HTML);`.
#[macro_export]
macro_rules! formats_of {
    ($report:ty: $($format:ident),+ $(,)?) => {
        impl $crate::report::Report for $report {
            const FORMATS: &'static [$crate::report::Format] =
                &[$($crate::report::Format::$format),+];
        }
    };
}

/// One `--export FORMAT=FILE`: the same report, also rendered in `format`
/// to `path` (`-`: stdout).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Export {
    pub format: Format,
    pub path: PathBuf,
    /// The option that asked for it (`--export`, or `--html`), for errors.
    pub flag: &'static str,
}

/// What a command was asked to write: the report's format and place, and
/// the exports.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Request {
    pub format: Format,
    /// `-o FILE`; `None`: the command's default stream.
    pub output: Option<PathBuf>,
    pub exports: Vec<Export>,
}

/// A standard stream.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Stream {
    Stdout,
    Stderr,
}

/// Where one rendering goes.
enum To {
    Stream(Stream),
    /// A device, FIFO or socket (`/dev/null`, `/dev/fd/3`, a named pipe):
    /// written as it is, never replaced.
    Special {
        file: std::fs::File,
        path: PathBuf,
    },
    File {
        dest: place::Dest,
        temp: Temp,
        path: PathBuf,
    },
}

/// One rendering of the report.
struct Target {
    format: Format,
    to: To,
    /// `--format`, `--export` or `--html`.
    flag: &'static str,
}

/// A report that cannot be written where it was asked to go.
#[derive(Debug, thiserror::Error)]
pub enum OutputError {
    #[error("{command} has no {format} report; {flag} takes {}", list(.formats))]
    Unsupported {
        command: &'static str,
        format: Format,
        flag: &'static str,
        formats: &'static [Format],
    },
    #[error(
        "{first} and {second} both write to stdout, where two documents would run together: \
         give one of them a FILE"
    )]
    TwoOnStdout {
        first: &'static str,
        second: &'static str,
    },
    #[error(
        "stdout is closed, so the {0} report would go nowhere: give -o FILE, or leave stdout open"
    )]
    StdoutClosed(Format),
    #[error("{flag} {}: {source}", display(path))]
    Place {
        flag: &'static str,
        path: PathBuf,
        source: PlaceError,
    },
    #[error(
        "cannot write the {format} report to {to}: {source} — {}",
        crate::place::write_fix(source)
    )]
    Write {
        format: Format,
        to: String,
        source: io::Error,
    },
}

impl OutputError {
    /// 2 for a request that cannot be met (bad usage), 1 for a place or
    /// a write that failed; 0 for stderr that cannot be written (`2>/dev/full`):
    /// the place of diagnostics, where nothing more can be said either, does
    /// not change how a command ended.
    pub fn exit_code(&self) -> u8 {
        match self {
            OutputError::Unsupported { .. } | OutputError::TwoOnStdout { .. } => 2,
            OutputError::Write { to, .. } if to == "stderr" => 0,
            _ => 1,
        }
    }
}

fn list(formats: &[Format]) -> String {
    let names: Vec<&str> = formats.iter().map(|f| f.name()).collect();
    match names.split_last() {
        Some((last, rest)) if !rest.is_empty() => format!("{} or {last}", rest.join(", ")),
        _ => names.join(""),
    }
}

/// The renderings of one report, checked and opened (see the module's text).
pub struct Output {
    /// `None`: the command writes no report by default (`tally cp`) and
    /// none was asked for.
    main: Option<Target>,
    exports: Vec<Target>,
}

impl Output {
    /// Checks `request` for `command`'s report `R`, whose report goes to
    /// `default` without `-o` (`None`: nowhere), and opens every file; see
    /// the module's text.
    pub fn open<R: Report>(
        request: &Request,
        command: &'static str,
        default: Option<Stream>,
    ) -> Result<Output, OutputError> {
        let has = |format: Format, flag: &'static str| {
            if R::FORMATS.contains(&format) {
                Ok(())
            } else {
                Err(OutputError::Unsupported {
                    command,
                    format,
                    flag,
                    formats: R::FORMATS,
                })
            }
        };
        has(request.format, "--format")?;
        for e in &request.exports {
            has(e.format, e.flag)?;
        }
        // Who claims stdout, by name.
        let is_stdout = |p: &Path| p.as_os_str() == "-";
        let mut on_stdout: Vec<&'static str> = Vec::new();
        if request.output.as_deref().is_some_and(is_stdout) {
            on_stdout.push("-o -");
        }
        for e in &request.exports {
            if is_stdout(&e.path) {
                on_stdout.push(if e.flag == "--html" {
                    "--html -"
                } else {
                    "--export FORMAT=-"
                });
            }
        }
        // The default place of the main report: stdout unless an export
        // took it (a human report then goes to stderr).
        let main_default = match (request.output.is_none(), default, on_stdout.is_empty()) {
            (true, Some(Stream::Stdout), false) if request.format == Format::HUMAN => {
                Some(Stream::Stderr)
            }
            (true, Some(Stream::Stdout), _) => {
                on_stdout.insert(0, "the report (--format, stdout by default)");
                Some(Stream::Stdout)
            }
            (_, d, _) => d,
        };
        if let [first, second, ..] = on_stdout[..] {
            return Err(OutputError::TwoOnStdout { first, second });
        }
        let main = match (request.output.as_deref(), main_default) {
            (None, None) => None,
            (path, stream) => Some(target(
                request.format,
                path,
                stream.unwrap_or(Stream::Stdout),
                "-o",
            )?),
        };
        let exports = request
            .exports
            .iter()
            .map(|e| target(e.format, Some(&e.path), Stream::Stdout, e.flag))
            .collect::<Result<Vec<_>, _>>()?;
        let output = Output { main, exports };
        if output.uses_stdout() && crate::sys::entry::stdout_was_closed() {
            let format = output
                .targets()
                .find(|t| matches!(t.to, To::Stream(Stream::Stdout)))
                .map_or(request.format, |t| t.format);
            return Err(OutputError::StdoutClosed(format));
        }
        Ok(output)
    }

    /// Whether any rendering goes to stdout (then a measured command's
    /// output must not).
    pub fn uses_stdout(&self) -> bool {
        self.targets()
            .any(|t| matches!(t.to, To::Stream(Stream::Stdout)))
    }

    fn targets(&self) -> impl Iterator<Item = &Target> {
        self.main.iter().chain(&self.exports)
    }

    /// Renders `report` into every place and puts every file in place.
    /// Each failure is returned (the others are still written); a closed
    /// pipe is none.
    pub fn write(self, report: &dyn Document) -> Vec<OutputError> {
        self.main
            .into_iter()
            .chain(self.exports)
            .filter_map(|t| t.write(report).err())
            .collect()
    }

    /// [`Output::write`] for the exports only: the main report went out
    /// already (`tally mem --watch` streams it frame by frame).
    pub fn write_exports(self, report: &dyn Document) -> Vec<OutputError> {
        Output {
            main: None,
            exports: self.exports,
        }
        .write(report)
    }
}

fn target(
    format: Format,
    path: Option<&Path>,
    default: Stream,
    flag: &'static str,
) -> Result<Target, OutputError> {
    let to = match path {
        None => To::Stream(default),
        Some(p) if p.as_os_str() == "-" => To::Stream(Stream::Stdout),
        Some(p) => {
            let placed = |source| OutputError::Place {
                flag,
                path: p.to_path_buf(),
                source,
            };
            // What the name leads to, the kernel following links: a device
            // or a pipe is written, a regular file replaced whole.
            if let Ok(meta) = std::fs::metadata(p)
                && !meta.is_file()
                && !meta.is_dir()
            {
                let file = std::fs::OpenOptions::new()
                    .write(true)
                    .open(p)
                    .map_err(|e| {
                        placed(PlaceError::Other {
                            path: p.to_path_buf(),
                            message: format!("cannot open for writing: {e}"),
                        })
                    })?;
                return Ok(Target {
                    format,
                    to: To::Special {
                        file,
                        path: p.to_path_buf(),
                    },
                    flag,
                });
            }
            let dest = place::resolve(p).map_err(placed)?;
            if dest.existing == place::Existing::Dir {
                return Err(placed(PlaceError::DestinationIsDir(p.to_path_buf())));
            }
            let temp = Temp::create(&dest, true).map_err(placed)?;
            To::File {
                dest,
                temp,
                path: p.to_path_buf(),
            }
        }
    };
    Ok(Target { format, to, flag })
}

impl Target {
    fn write(self, report: &dyn Document) -> Result<(), OutputError> {
        let style = match &self.to {
            To::Stream(Stream::Stdout) => Style::stdout(),
            To::Stream(Stream::Stderr) => Style::stderr(),
            To::File { .. } | To::Special { .. } => Style::PLAIN,
        };
        // Rendered whole first: a stream gets it in one write, a file only
        // what is complete.
        let mut text = Vec::with_capacity(8192);
        let to_text = |t: &To| match t {
            To::Stream(Stream::Stdout) => "stdout".to_string(),
            To::Stream(Stream::Stderr) => "stderr".to_string(),
            To::File { path, .. } | To::Special { path, .. } => display(path),
        };
        let failed = |source: io::Error| OutputError::Write {
            format: self.format,
            to: to_text(&self.to),
            source,
        };
        match render(report, self.format, style, &mut text) {
            Ok(()) => {}
            Err(RenderError::Io(e)) => return Err(failed(e)),
            Err(RenderError::Unsupported(_)) => {
                return Err(failed(io::Error::other(format!(
                    "this report has no {} form",
                    self.format
                ))));
            }
        }
        let written = match &self.to {
            To::Stream(Stream::Stdout) => {
                let mut out = io::stdout().lock();
                out.write_all(&text).and_then(|()| out.flush())
            }
            To::Stream(Stream::Stderr) => io::stderr().lock().write_all(&text),
            To::Special { file, .. } => (&*file).write_all(&text),
            To::File { temp, .. } => (&temp.file)
                .write_all(&text)
                .and_then(|()| temp.file.sync_data()),
        };
        match written {
            Ok(()) => {}
            // The reader went away: nothing more to say.
            Err(e) if e.kind() == io::ErrorKind::BrokenPipe => return Ok(()),
            Err(e) => return Err(failed(e)),
        }
        if let To::File { dest, temp, .. } = self.to {
            use std::os::unix::fs::PermissionsExt;
            // The mode `File::create` would give (the umask applied to
            // 0666): the temporary file was made private.
            let _ = temp
                .file
                .set_permissions(std::fs::Permissions::from_mode(0o666 & !umask()));
            let path = dest.path.clone();
            temp.commit(&dest).map_err(|source| OutputError::Place {
                flag: self.flag,
                path,
                source,
            })?;
        }
        Ok(())
    }
}

/// The process's umask, from `/proc/self/status` (setting it to read it
/// would race with any thread creating a file); 022 when unreadable.
fn umask() -> u32 {
    crate::input::read_proc_text(Path::new("/proc/self/status"))
        .ok()
        .and_then(|s| {
            s.lines()
                .find_map(|l| l.strip_prefix("Umask:"))
                .and_then(|v| u32::from_str_radix(v.trim(), 8).ok())
        })
        .unwrap_or(0o022)
}

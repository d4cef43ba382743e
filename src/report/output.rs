//! Where a command's report goes, settled before the command does any
//! work: the one output stage of every command that reports.
//!
//! A command asks for its report in one format (`--format`) at one place
//! (`-o FILE`, `-` for stdout; by default stdout, or stderr for `tally
//! run`, whose stdout is the measured command's), and for more renderings
//! of the same report (`--export FORMAT=FILE`, `--html FILE`).
//! [`Output::open`], before anything is measured, copied or evicted:
//! - checks every format against the report's own forms ([`Report::FORMS`]):
//!   a format it does not have is a usage error (exit 2);
//! - lets at most one rendering claim stdout: a second is a usage error,
//!   and the default human report steps aside to stderr when an export
//!   takes stdout, so stdout carries one document;
//! - refuses stdout or stderr when it was closed at start (`>&-`, `2>&-`),
//!   where a report would vanish;
//! - resolves every file and creates its temporary file in the file's
//!   directory ([`crate::place`]), so an unwritable place fails before the
//!   work, not after.
//!
//! [`Output::write`] renders each through one buffered writer ([`Sink`]: a
//! few `write()` calls for a long report, a line at a time on a terminal);
//! [`Output::stream`] writes a long list as it is made ([`Streamed`]), so
//! its memory does not grow with its rows. A file is put in place only
//! once complete, so an earlier report under the same name survives a
//! failed command, a failed write and a kill. A reader that went away (a
//! closed pipe) ends the output quietly; any other failure to write is an
//! error.

use std::fs::File;
use std::io::{self, Write};
use std::os::fd::AsFd;
use std::path::{Path, PathBuf};

use serde::Serialize;

use super::json::erased;
use super::{Document, Form, Format, RenderError, Row, RowWriter, Rows, Style, TextRows, render};
use crate::place::{self, PlaceError, Temp};
use crate::text::path::display;

/// A report of a command: the forms it has, one list in one place; its
/// formats are those made from them, checked before the command works.
pub trait Report: Document {
    /// Every form the report has.
    const FORMS: &'static [Form];

    /// Whether the report renders in `format`.
    fn has(format: Format) -> bool {
        Self::FORMS.contains(&format.spec().needs)
    }

    /// Every format the report renders, in `--format`'s order.
    fn formats() -> Vec<Format> {
        Format::all().filter(|f| Self::has(*f)).collect()
    }
}

/// Declares the forms of a report type, one line per report:
/// `forms_of!(RunReport: Text, Data, Table, Metrics, Page);`.
#[macro_export]
macro_rules! forms_of {
    ($report:ty: $($form:ident),+ $(,)?) => {
        impl $crate::report::Report for $report {
            const FORMS: &'static [$crate::report::Form] =
                &[$($crate::report::Form::$form),+];
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
    /// `-o FILE` is added to, not replaced (`run -a`, GNU time's).
    pub append: bool,
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
        formats: Vec<Format>,
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
        "{first} {} and {second} {} name one file, where the second would replace the first: \
         give each its own file",
        display(first_path),
        display(path)
    )]
    SameFile {
        first: &'static str,
        second: &'static str,
        first_path: PathBuf,
        path: PathBuf,
    },
    #[error(
        "stdout is closed, so the {0} report would go nowhere: give -o FILE, or leave stdout open"
    )]
    StdoutClosed(Format),
    #[error(
        "stderr is closed, so the {0} report would go nowhere: give -o FILE, or leave stderr open"
    )]
    StderrClosed(Format),
    /// The path said once: most of [`PlaceError`]'s messages begin with it.
    #[error("{}", source.for_option(flag, path))]
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
    /// a write that failed, stderr's (`2>/dev/full`) too: a report that
    /// was not written is a failure wherever it was to go (`tally run`
    /// makes every such failure its own 125).
    pub fn exit_code(&self) -> u8 {
        match self {
            OutputError::Unsupported { .. }
            | OutputError::TwoOnStdout { .. }
            | OutputError::SameFile { .. } => 2,
            _ => 1,
        }
    }

    /// Says every failure of `errors` ([`say_somewhere`]); returns the
    /// exit code they call for (0 when there were none).
    pub fn say(errors: Vec<OutputError>) -> u8 {
        let mut code = 0;
        for e in errors {
            say_somewhere(&format!("tally: {e}"));
            code = code.max(e.exit_code());
        }
        code
    }
}

/// Says `line` on stderr; where stderr cannot take it (closed at start,
/// full, gone) and stdout is a terminal, there: a person sees why, and
/// no pipe or file gets a line that is not its data.
pub fn say_somewhere(line: &str) {
    use std::io::IsTerminal;
    let line = crate::text::controls_escaped(line, true);
    let said =
        !crate::sys::entry::stderr_was_closed() && writeln!(io::stderr().lock(), "{line}").is_ok();
    if !said && io::stdout().is_terminal() {
        let _ = writeln!(io::stdout().lock(), "{line}");
    }
}

impl crate::failure::Failure for OutputError {
    fn exit_code(&self) -> u8 {
        OutputError::exit_code(self)
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
            if R::has(format) {
                Ok(())
            } else {
                Err(OutputError::Unsupported {
                    command,
                    format,
                    flag,
                    formats: R::formats(),
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
            (Some(p), _) if request.append && p.as_os_str() != "-" => {
                // Added to where it is, as a device is written: opened by
                // place's one opener for appending.
                let (file, _) = place::open_append(p).map_err(|source| OutputError::Place {
                    flag: "-o",
                    path: p.to_path_buf(),
                    source,
                })?;
                Some(Target {
                    format: request.format,
                    to: To::Special {
                        file,
                        path: p.to_path_buf(),
                    },
                    flag: "-o",
                })
            }
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
        output.refuse_shared_files(None)?;
        if output.uses_stdout() && crate::sys::entry::stdout_was_closed() {
            let format = output
                .targets()
                .find(|t| matches!(t.to, To::Stream(Stream::Stdout)))
                .map_or(request.format, |t| t.format);
            return Err(OutputError::StdoutClosed(format));
        }
        if let Some(t) = output
            .targets()
            .find(|t| matches!(t.to, To::Stream(Stream::Stderr)))
            && crate::sys::entry::stderr_was_closed()
        {
            return Err(OutputError::StderrClosed(t.format));
        }
        Ok(output)
    }

    /// Refuses two renderings (here, or here and in `other`) put in place
    /// as one file: the last would replace the first (`--export json=a
    /// --export csv=a`, `--export json=x --html x`). The same file is the
    /// same name in the same directory, however the paths spell it.
    pub fn refuse_shared_files(&self, other: Option<&Output>) -> Result<(), OutputError> {
        let mut seen: Vec<((u64, u64, &std::ffi::OsStr), &'static str, &Path)> = Vec::new();
        for t in self
            .targets()
            .chain(other.into_iter().flat_map(|o| o.targets()))
        {
            let To::File { dest, path, .. } = &t.to else {
                continue;
            };
            let Ok(dir) = crate::sys::file::stat_fd(&dest.dir) else {
                continue;
            };
            let key = (dir.dev, dir.ino, dest.name.as_os_str());
            if let Some((_, first, first_path)) = seen.iter().find(|(k, ..)| *k == key) {
                return Err(OutputError::SameFile {
                    first,
                    second: t.flag,
                    first_path: first_path.to_path_buf(),
                    path: path.clone(),
                });
            }
            seen.push((key, t.flag, path));
        }
        Ok(())
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
            // Resolved once, planted links refused in every component;
            // a device, a FIFO or /dev/stdout is written where it is (by
            // place's one policy), a regular file replaced whole.
            let dest = place::resolve(p).map_err(placed)?;
            match dest.existing {
                place::Existing::Dir => {
                    return Err(placed(PlaceError::DestinationIsDir(p.to_path_buf())));
                }
                place::Existing::Special => {
                    let file = place::open_special(&dest).map_err(placed)?;
                    return Ok(Target {
                        format,
                        to: To::Special {
                            file,
                            path: p.to_path_buf(),
                        },
                        flag,
                    });
                }
                place::Existing::Nothing | place::Existing::File(_) => {}
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
    /// Where this rendering goes, for messages.
    fn to_text(&self) -> String {
        match &self.to {
            To::Stream(Stream::Stdout) => "stdout".to_string(),
            To::Stream(Stream::Stderr) => "stderr".to_string(),
            To::File { path, .. } | To::Special { path, .. } => display(path),
        }
    }

    fn style(&self) -> Style {
        match &self.to {
            To::Stream(Stream::Stdout) => Style::stdout(),
            To::Stream(Stream::Stderr) => Style::stderr(),
            To::File { .. } | To::Special { .. } => Style::PLAIN,
        }
    }

    fn failed(&self, source: io::Error) -> OutputError {
        OutputError::Write {
            format: self.format,
            to: self.to_text(),
            source,
        }
    }

    /// The buffered writer of this rendering (see [`Sink`]).
    fn sink(&self) -> io::Result<Sink> {
        match &self.to {
            // What std holds for stdout goes first: the sink writes to the
            // descriptor itself, past std's line buffer.
            To::Stream(Stream::Stdout) => Sink::stdout(),
            To::Stream(Stream::Stderr) => {
                Sink::new(File::from(io::stderr().as_fd().try_clone_to_owned()?))
            }
            To::Special { file, .. } => Sink::new(file.try_clone()?),
            To::File { temp, .. } => Sink::new(temp.file.try_clone()?),
        }
    }

    fn write(self, report: &dyn Document) -> Result<(), OutputError> {
        let style = self.style();
        let mut sink = self.sink().map_err(|e| self.failed(e))?;
        match render(report, self.format, style, &mut sink) {
            Ok(()) => {}
            Err(RenderError::Io(e)) => return self.wrote(Err(e)),
            Err(RenderError::Unsupported(_)) => {
                return Err(self.failed(io::Error::other(format!(
                    "this report has no {} form",
                    self.format
                ))));
            }
        }
        self.wrote(sink.finish())
    }

    /// Ends a rendering whose bytes were all handed to its sink
    /// (`written`): a file is synced and put in place.
    fn wrote(self, written: io::Result<()>) -> Result<(), OutputError> {
        let written = written.and_then(|()| match &self.to {
            To::File { temp, .. } => temp.file.sync_data(),
            _ => Ok(()),
        });
        match written {
            Ok(()) => {}
            // The reader went away: nothing more to say.
            Err(e) if e.kind() == io::ErrorKind::BrokenPipe => return Ok(()),
            Err(e) => return Err(self.failed(e)),
        }
        if let To::File { dest, mut temp, .. } = self.to {
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

/// The one buffered writer every rendering goes through: bytes are held
/// and written [`SINK_BYTES`] at a time into a pipe, a file or a device,
/// so a report of 100,000 lines costs about a hundred `write()` calls, not
/// one per line; into a terminal each line goes out as it is finished.
/// [`Sink::finish`] writes what is held; a command flushes it ([`Write::flush`])
/// before it waits on anything long, so a reader sees what is done.
pub struct Sink {
    inner: SinkInner,
}

enum SinkInner {
    Block(Blocks),
    Line(io::LineWriter<File>),
}

/// A file written [`SINK_BYTES`] at a time, the bytes held in between.
///
/// Not `BufWriter`: serde_json writes a document a few bytes at a time
/// (a quote, a colon, an indent; 710,474 writes for the 1.9 MB report of
/// `compare -n 500` of two commands, 2.6 bytes each), and `BufWriter`
/// copies each with a call to the C library's `memcpy`, whose set-up cost
/// musl's pays on every call: that report took 27 ms to write against
/// 3 ms for the human one. A write of a few bytes is copied here byte by
/// byte, inline.
struct Blocks {
    file: File,
    held: Vec<u8>,
}

impl Blocks {
    /// Writes shorter than this are copied byte by byte.
    const SMALL: usize = 16;

    fn new(file: File) -> Blocks {
        Blocks {
            file,
            held: Vec::with_capacity(SINK_BYTES),
        }
    }

    fn write_all(&mut self, buf: &[u8]) -> io::Result<()> {
        if self.held.len() + buf.len() > SINK_BYTES {
            self.flush_held()?;
        }
        if buf.len() >= SINK_BYTES {
            return self.file.write_all(buf);
        }
        if buf.len() < Self::SMALL {
            for &b in buf {
                self.held.push(b);
            }
        } else {
            self.held.extend_from_slice(buf);
        }
        Ok(())
    }

    fn flush_held(&mut self) -> io::Result<()> {
        if !self.held.is_empty() {
            let result = self.file.write_all(&self.held);
            self.held.clear();
            result?;
        }
        Ok(())
    }
}

impl Drop for Blocks {
    /// What is held goes out when the sink goes, as `BufWriter`'s does
    /// (a rendering's writer owns its sink, and is dropped to end it).
    fn drop(&mut self) {
        let _ = self.flush_held();
    }
}

/// Bytes a [`Sink`] holds before it writes (off a terminal).
pub const SINK_BYTES: usize = 64 << 10;

impl Sink {
    /// A sink over `file`: line by line when it is a terminal, else in
    /// blocks of [`SINK_BYTES`].
    pub fn new(file: File) -> io::Result<Sink> {
        use std::io::IsTerminal;
        let inner = if file.is_terminal() {
            SinkInner::Line(io::LineWriter::new(file))
        } else {
            SinkInner::Block(Blocks::new(file))
        };
        Ok(Sink { inner })
    }

    /// A sink over stdout (what std holds for it is written first): line
    /// by line on a terminal, in blocks elsewhere.
    pub fn stdout() -> io::Result<Sink> {
        io::stdout().lock().flush()?;
        Sink::new(File::from(io::stdout().as_fd().try_clone_to_owned()?))
    }

    /// A sink over stdout that writes only when flushed (or full), on a
    /// terminal too: for output drawn a screen at a time (`tally mem
    /// --watch`), flushed after each.
    pub fn stdout_by_screen() -> io::Result<Sink> {
        io::stdout().lock().flush()?;
        let file = File::from(io::stdout().as_fd().try_clone_to_owned()?);
        Ok(Sink {
            inner: SinkInner::Block(Blocks::new(file)),
        })
    }

    /// Writes what is held.
    pub fn finish(mut self) -> io::Result<()> {
        self.flush()
    }
}

impl Write for Sink {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        match &mut self.inner {
            SinkInner::Block(w) => w.write_all(buf).map(|()| buf.len()),
            SinkInner::Line(w) => w.write(buf),
        }
    }

    fn write_all(&mut self, buf: &[u8]) -> io::Result<()> {
        match &mut self.inner {
            SinkInner::Block(w) => w.write_all(buf),
            SinkInner::Line(w) => w.write_all(buf),
        }
    }

    fn flush(&mut self) -> io::Result<()> {
        match &mut self.inner {
            SinkInner::Block(w) => w.flush_held(),
            SinkInner::Line(w) => w.flush(),
        }
    }
}

/// A report written as it is made, row by row, so that its memory does not
/// grow with its rows: the rows of one list (`tally cache`'s files) go out
/// as they come, and the rest of the report (totals, problems) after the
/// last. Every format writes it as it declares ([`super::FormatSpec::rows`]:
/// begin, a row, finish) and keeps the text it has when rendered whole:
/// - JSON: the fields before the rows ([`Streamed::json_head`]), the rows
///   as the array [`Streamed::ROWS`], then the fields after them
///   ([`Streamed::json_tail`]), one document under the header;
/// - CSV and Markdown: the header row, a row per row, then
///   [`Streamed::last_rows`] (Markdown's alignment is declared, not
///   guessed from the rows, which are not all there to look at);
/// - Prometheus: each family's samples together, as the format requires;
/// - human: the report's own [`HumanRows`], which decides what to keep
///   (`tally cache` keeps the top N rows and the totals).
pub trait Streamed: 'static {
    type Row: Serialize + 'static;
    /// The key of the rows' array in JSON.
    const ROWS: &'static str;
    /// The fields before the rows: a struct or a map.
    fn json_head(&self) -> &dyn erased::Serialize;
    /// The fields after the rows: a struct or a map.
    fn json_tail(&self) -> &dyn erased::Serialize;
    /// The CSV and Markdown columns: header, and whether it holds numbers
    /// (right-aligned in Markdown).
    fn columns(&self) -> Vec<(&'static str, bool)>;
    /// One row's cells, in [`Streamed::columns`]' order.
    fn cells(&self, row: &Self::Row) -> Vec<String>;
    /// Rows after the last streamed one (skipped paths).
    fn last_rows(&self) -> Vec<Vec<String>>;
    /// The Prometheus families, without samples; `None` when the report
    /// has none.
    fn families(&self) -> Option<Vec<super::Metric>>;
    /// A row's sample in each family of [`Streamed::families`] (labels
    /// and a value in the family's unit), `None` where it has none.
    fn samples(&self, row: &Self::Row) -> Vec<Option<super::Sample>>;
    /// The human rendering of rows as they come.
    fn human(&self, style: Style) -> Box<dyn HumanRows<Self>>;
}

/// The human text of a [`Streamed`] report, row by row.
pub trait HumanRows<R: Streamed + ?Sized> {
    /// Takes a row: writes it, or keeps what it needs of it.
    fn row(&mut self, report: &R, row: &R::Row, out: &mut dyn Write) -> io::Result<()>;
    /// Writes the rest once every row came.
    fn finish(&mut self, report: &R, out: &mut dyn Write) -> io::Result<()>;
}

/// Every [`Streamed`] report as the formats see it.
impl<R: Streamed> Rows for R {
    fn key(&self) -> &'static str {
        R::ROWS
    }

    fn head(&self) -> &dyn erased::Serialize {
        self.json_head()
    }

    fn tail(&self) -> &dyn erased::Serialize {
        self.json_tail()
    }

    fn columns(&self) -> Vec<(&'static str, bool)> {
        Streamed::columns(self)
    }

    fn last_rows(&self) -> Vec<Vec<String>> {
        Streamed::last_rows(self)
    }

    fn families(&self) -> Option<Vec<super::Metric>> {
        Streamed::families(self)
    }

    fn text(&self, style: Style) -> Box<dyn TextRows> {
        Box::new(Text(self.human(style)))
    }

    fn as_any(&self) -> &dyn std::any::Any {
        self
    }
}

/// A row of a [`Streamed`] report, with the report, as the formats see it.
struct RowOf<'a, R: Streamed> {
    report: &'a R,
    row: &'a R::Row,
}

impl<R: Streamed> Row for RowOf<'_, R> {
    fn data(&self) -> &dyn erased::Serialize {
        self.row
    }

    fn cells(&self) -> Vec<String> {
        self.report.cells(self.row)
    }

    fn samples(&self) -> Vec<Option<super::Sample>> {
        self.report.samples(self.row)
    }

    fn as_any(&self) -> &dyn std::any::Any {
        self.row
    }
}

/// A report's [`HumanRows`] as a format sees it: the report and its rows
/// are those it was made for (the format got both from the same report).
struct Text<R: Streamed>(Box<dyn HumanRows<R>>);

impl<R: Streamed> Text<R> {
    fn report(report: &dyn Rows) -> io::Result<&R> {
        report
            .as_any()
            .downcast_ref::<R>()
            .ok_or_else(|| io::Error::other("a row of another report"))
    }
}

impl<R: Streamed> TextRows for Text<R> {
    fn row(&mut self, report: &dyn Rows, row: &dyn Row, out: &mut dyn Write) -> io::Result<()> {
        let row = row
            .as_any()
            .downcast_ref::<R::Row>()
            .ok_or_else(|| io::Error::other("a row of another report"))?;
        self.0.row(Self::report(report)?, row, out)
    }

    fn finish(&mut self, report: &dyn Rows, out: &mut dyn Write) -> io::Result<()> {
        self.0.finish(Self::report(report)?, out)
    }
}

/// One rendering of a streamed report, begun.
struct Streaming {
    target: Target,
    writer: Box<dyn RowWriter>,
    /// The first failure; the rendering stops there.
    error: Option<io::Error>,
}

/// Every rendering of a streamed report, open (see [`Output::stream`]).
pub struct RowStream<R: Streamed> {
    /// The renderings not begun yet: they begin with the first row, or
    /// at the end when there is none.
    waiting: Vec<Target>,
    renderings: Vec<Streaming>,
    failed: Vec<OutputError>,
    report: std::marker::PhantomData<fn(&R)>,
}

impl Output {
    /// The renderings of a streamed report (see [`Streamed`]): each begins
    /// with the first row, [`RowStream::row`] writes the rows,
    /// [`RowStream::finish`] the rest. A rendering that fails is reported
    /// at the end; the others go on.
    pub fn stream<R: Streamed>(self) -> RowStream<R> {
        RowStream {
            waiting: self.main.into_iter().chain(self.exports).collect(),
            renderings: Vec::new(),
            failed: Vec::new(),
            report: std::marker::PhantomData,
        }
    }
}

impl<R: Streamed> RowStream<R> {
    /// Begins every rendering not begun yet, with `report` as it stands,
    /// as its format declares ([`super::FormatSpec::rows`]).
    fn begin(&mut self, report: &R) {
        for target in std::mem::take(&mut self.waiting) {
            let begun = target.sink().and_then(|sink| {
                let begin = target.format.spec().rows.ok_or_else(|| {
                    io::Error::other(format!("this report has no {} form", target.format))
                })?;
                begin(report, target.style(), Box::new(sink))
            });
            match begun {
                Ok(writer) => self.renderings.push(Streaming {
                    target,
                    writer,
                    error: None,
                }),
                Err(e) => {
                    if let Err(e) = target.wrote(Err(e)) {
                        self.failed.push(e);
                    }
                }
            }
        }
    }

    /// Writes `row` into every rendering still going.
    pub fn row(&mut self, report: &R, row: &R::Row) {
        self.begin(report);
        let row = RowOf { report, row };
        for s in &mut self.renderings {
            if s.error.is_none() {
                s.error = s.writer.row(report, &row).err();
            }
        }
    }

    /// Whether every rendering stopped (a reader that went away, a full
    /// disk): the rows need not be made any more.
    pub fn all_stopped(&self) -> bool {
        self.waiting.is_empty() && self.renderings.iter().all(|s| s.error.is_some())
    }

    /// Writes each rendering's buffered bytes out now (before the command
    /// waits on something long).
    pub fn flush(&mut self) {
        for s in &mut self.renderings {
            if s.error.is_none() {
                s.error = s.writer.flush().err();
            }
        }
    }

    /// Writes the rest of every rendering and puts files in place; returns
    /// each failure (a closed pipe is none).
    pub fn finish(mut self, report: &R) -> Vec<OutputError> {
        self.begin(report);
        let mut failed = self.failed;
        for mut s in self.renderings {
            let result = match s.error.take() {
                Some(e) => Err(e),
                None => s.writer.finish(report),
            };
            // The writer holds the sink: what it wrote is out once it is
            // gone.
            drop(s.writer);
            if let Err(e) = s.target.wrote(result) {
                failed.push(e);
            }
        }
        failed
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

#[cfg(test)]
mod tests {
    use super::*;

    /// The sink's own buffer keeps every byte in order whatever the sizes
    /// of the writes (byte by byte, a slice, one beyond the buffer), and a
    /// sink that is dropped unfinished has written what it held.
    #[test]
    fn a_block_sink_writes_every_byte_in_order_and_on_drop() {
        let dir = tempfile::tempdir().expect("scratch dir");
        let path = dir.path().join("out");
        let mut want = Vec::new();
        {
            let mut sink = Sink::new(File::create(&path).expect("create")).expect("sink");
            let lens = [
                1,
                2,
                15,
                16,
                17,
                4096,
                3,
                SINK_BYTES - 1,
                7,
                2 * SINK_BYTES,
                1,
            ];
            for (i, len) in lens.into_iter().enumerate() {
                let chunk: Vec<u8> = (0..len).map(|k| ((i + k) % 251) as u8).collect();
                sink.write_all(&chunk).expect("write");
                want.extend_from_slice(&chunk);
            }
            let n = sink.write(b"xyz").expect("write");
            assert_eq!(n, 3);
            want.extend_from_slice(b"xyz");
        }
        assert_eq!(std::fs::read(&path).expect("read back"), want);
    }
}

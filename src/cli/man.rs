//! Man pages: `tally(1)` and one page per subcommand (`tally-run(1)`…),
//! generated from the clap definitions, with the EXIT STATUS and EXAMPLES
//! sections clap has no field for.

use std::io::{self, Write};

/// What a man page adds to the clap definition of its command.
pub struct Extra {
    /// The subcommand (`""` for the top page).
    pub name: &'static str,
    /// Exit codes and their meaning.
    pub exit_status: &'static [(&'static str, &'static str)],
    /// Command lines and what they do.
    pub examples: &'static [(&'static str, &'static str)],
}

const USAGE: (&str, &str) = (
    "2",
    "bad usage: an unknown option, a missing or invalid value.",
);

/// One entry per page; a test checks every subcommand has one.
pub const PAGES: &[Extra] = &[
    Extra {
        name: "",
        exit_status: &[
            ("0", "success."),
            ("1", "the command failed; each subcommand's page says how."),
            USAGE,
            (
                "3",
                "a regression gate failed (compare and bench --fail-on).",
            ),
            ("4", "a --strict regression gate could not decide a figure."),
        ],
        examples: &[
            ("tally run -- make -j2", "what a build cost."),
            ("tally mem", "memory per program."),
            (
                "tally bench --quick",
                "measure this machine within a minute.",
            ),
            ("tally man run", "the page of tally run."),
        ],
    },
    Extra {
        name: "run",
        exit_status: &[
            (
                "N",
                "the command's own exit status, kept even when the report cannot be written.",
            ),
            ("128+N", "the command was killed by signal N."),
            ("127", "the command was not found."),
            ("126", "the command could not be executed."),
            (
                "125",
                "tally itself failed before the command ran: bad usage, a report or --export \
                 file that cannot be created.",
            ),
        ],
        examples: &[
            (
                "tally run -- ls -lR /usr/share/doc",
                "what one listing cost.",
            ),
            (
                "tally run -n 10 --warmup 2 --quiet-command -- gzip -k -f big.file",
                "ten measured runs after two warm-ups: min, median, mean ± stddev, max.",
            ),
            (
                "tally run --cold model.bin -- ./load model.bin",
                "each run from a cold page cache, without root.",
            ),
            (
                "tally run --tree --format json -o report.json -- make -j2",
                "the whole process tree, as JSON in a file.",
            ),
            (
                "tally run -n 5 --export json=r.json --export csv=r.csv -- ./app",
                "the summary on the terminal, JSON and CSV of the same runs in files.",
            ),
        ],
    },
    Extra {
        name: "compare",
        exit_status: &[
            (
                "0",
                "every run ran, with no -i every command exited 0, and no --fail-on figure \
                 regressed (an inconclusive one passes without --strict).",
            ),
            (
                "1",
                "a command failed (exit status not 0, or killed) without -i; a run, --prepare, \
                 --conclude, --setup or --cleanup could not be run; a baseline could not be \
                 read (missing, truncated, not a baseline, a newer format) or written; a \
                 report could not be written.",
            ),
            (
                "2",
                "bad usage: no command, a bad -P range, an unknown {NAME}, --reference past \
                 the last command, a --cold or --warm path that does not exist, an unknown \
                 --fail-on figure or a malformed PCT, commands the --baseline does not hold.",
            ),
            (
                "3",
                "--fail-on found a regression: the whole interval of a gated figure's ratio \
                 lies beyond its limit; the report's first line says which.",
            ),
            (
                "4",
                "with --strict, no regression but a gated figure the runs could not decide.",
            ),
            (
                "128+N",
                "signal N stopped the comparison (what ran is reported).",
            ),
        ],
        examples: &[
            (
                "tally compare 'sleep 0.01' 'sleep 0.03'",
                "which is faster, by how much, and is it significant.",
            ),
            (
                "tally compare --cold model.bin 'python3 load.py --read model.bin' 'python3 load.py --mmap model.bin'",
                "two loaders from a cold page cache, without root: time, memory, faults, I/O.",
            ),
            (
                "tally compare -N -n 200 --reference 1 ./old ./new",
                "200 runs each, without a shell, against the first.",
            ),
            (
                "tally compare -P t 1 4 'xz -T{t} -c big > /dev/null' --html xz.html",
                "a parameter scan, with a page of plots.",
            ),
            (
                "tally compare -n 30 --format json -o c.json --export csv=c.csv 'a' 'b'",
                "the same comparison as JSON and CSV.",
            ),
            (
                "tally compare -N --fail-on wall=3% --fail-on maxrss=10% ./old ./new",
                "a regression gate in one interleaved run: exit 3 when ./new is slower by \
                 more than 3% or fatter by more than 10%.",
            ),
            (
                "tally compare -N --save-baseline main.json --name app ./app",
                "keep every run for a later gate.",
            ),
            (
                "tally compare -N --baseline main.json --fail-on wall=5% --name app ./app \
                 --export markdown=summary.md",
                "gate against the stored runs, with a Markdown summary for a pull request.",
            ),
        ],
    },
    Extra {
        name: "bench",
        exit_status: &[
            (
                "0",
                "every benchmark ran (and no --fail-on figure regressed).",
            ),
            (
                "1",
                "a benchmark failed or hung, or the baseline or HTML file is unusable.",
            ),
            (
                "2",
                "bad usage: an unknown option, a --fail-on glob that matches no figure of the \
                 baseline.",
            ),
            (
                "3",
                "--fail-on found a regression: a gated figure's whole interval lies beyond its \
                 limit in its worse direction.",
            ),
            (
                "4",
                "with --strict, no regression but a gated figure the runs could not decide.",
            ),
        ],
        examples: &[
            (
                "tally bench --quick",
                "every standard benchmark within a minute.",
            ),
            (
                "tally bench memlat membw --format json > run.json",
                "two benchmarks, as JSON.",
            ),
            (
                "tally bench --quick --html bench.html",
                "with a page of plots.",
            ),
            (
                "tally bench --baseline old.json",
                "ratios against an earlier run.",
            ),
            (
                "tally bench syscall --baseline old.json --fail-on 'syscall.*=10%'",
                "fail (exit 3) when a syscall figure got more than 10% slower.",
            ),
        ],
    },
    Extra {
        name: "mem",
        exit_status: &[
            ("0", "the report was written."),
            (
                "1",
                "/proc could not be read, or the report or an --export file could not be written.",
            ),
            USAGE,
        ],
        examples: &[
            ("tally mem", "RAM and swap per program, the biggest last."),
            (
                "tally mem --by user -h",
                "per user, sizes in their own unit.",
            ),
            ("tally mem --by cgroup --top 10", "the ten biggest cgroups."),
            (
                "tally mem --format prometheus > /var/lib/node_exporter/textfile/tally_mem.prom",
                "for the node_exporter textfile collector.",
            ),
        ],
    },
    Extra {
        name: "cache",
        exit_status: &[
            ("0", "ok."),
            (
                "1",
                "a path was skipped, or a file could not be locked (--lock).",
            ),
            USAGE,
        ],
        examples: &[
            (
                "tally cache model.bin",
                "how much of the file is in the page cache.",
            ),
            (
                "tally cache --evict big.iso",
                "drop it from the cache, no root needed.",
            ),
            (
                "find . -name '*.so' -print0 | tally cache -0 --warm -",
                "read the listed files into the cache.",
            ),
        ],
    },
    Extra {
        name: "cp",
        exit_status: &[("0", "ok."), ("1", "anything was not copied."), USAGE],
        examples: &[
            (
                "tally cp big.iso /backup/",
                "copy; the page cache stays as it was.",
            ),
            (
                "tally cp -r -p --sync photos/ /mnt/usb/",
                "a tree, times and owners kept, synced.",
            ),
            (
                "tally cp -v --export json=cp.json model.bin model.copy",
                "say how, and keep a record.",
            ),
        ],
    },
    Extra {
        name: "load",
        exit_status: &[
            ("0", "ok."),
            (
                "1",
                "the checksums differ or no method worked (with --procs: no load completed; an OOM kill under --mem-limit is a finding, not a failure).",
            ),
            USAGE,
            ("128+N", "signal N (SIGINT, SIGTERM, SIGHUP) stopped it."),
        ],
        examples: &[
            ("tally load model.bin", "every method, cold and warm."),
            (
                "tally load --methods read,mmap --warm -n 5 model.bin",
                "two methods, warm, medians of five.",
            ),
            (
                "tally load --format json --html load.html model.bin",
                "JSON and a plot.",
            ),
            (
                "tally load --procs 4 model.bin",
                "four processes load it at once and hold it: summed RSS and PSS, PSS per process, read against mmap.",
            ),
            (
                "tally load --procs 4 --cold --mem-limit 1536M model.bin",
                "the same in a memory-limited cgroup: completed, OOM-killed or thrashed.",
            ),
            (
                "tally load --procs-sweep --warm --html pss.html model.bin",
                "N = 1, 2, 4, 8 and a plot of summed PSS against N.",
            ),
        ],
    },
    Extra {
        name: "serve",
        exit_status: &[
            ("0", "stopped by SIGTERM or SIGINT."),
            (
                "1",
                "could not start: a config file error (with its line), an address in use.",
            ),
            USAGE,
        ],
        examples: &[
            (
                "tally serve",
                "memory per program on http://127.0.0.1:9643/metrics.",
            ),
            (
                "tally serve --listen 0.0.0.0:9643 --config /etc/tally/serve.toml",
                "every address, with the collectors of a config file.",
            ),
        ],
    },
    Extra {
        name: "history",
        exit_status: &[
            (
                "0",
                "the store was read (check: no gated figure changed for the worse at the newest point).",
            ),
            (
                "1",
                "the store cannot be read, is refused (foreign, damaged, newer), or a file to import cannot be read.",
            ),
            USAGE,
            (
                "3",
                "check: the newest point belongs to a change point that makes a gated figure worse beyond its --fail-on limit.",
            ),
            (
                "4",
                "check --strict: a change seen at the newest point alone (one more point decides).",
            ),
        ],
        examples: &[
            (
                "tally compare -N --record history.db ./app",
                "in CI, once per commit: record the comparison with its commit, branch and machine.",
            ),
            (
                "tally history history.db",
                "every series and the commits where it changed.",
            ),
            (
                "tally history check history.db --fail-on wall=5% --export markdown=summary.md",
                "the CI gate, with a summary for the pull request.",
            ),
            (
                "tally history history.db --figure wall --html history.html",
                "the wall-time series drawn against commit order.",
            ),
            (
                "tally history import history.db old/*.json",
                "old reports and baselines become history.",
            ),
        ],
    },
    Extra {
        name: "completions",
        exit_status: &[("0", "the script was written."), USAGE],
        examples: &[(
            "tally completions bash > /etc/bash_completion.d/tally",
            "install the bash completions.",
        )],
    },
    Extra {
        name: "man",
        exit_status: &[("0", "the page was written."), USAGE],
        examples: &[
            ("tally man | man -l -", "read the top page."),
            (
                "tally man --dir /usr/local/share/man/man1",
                "install every page (tally.1, tally-run.1, …), readable by all.",
            ),
        ],
    },
];

/// Writes the man page of `subcommand` (`None`: the top page `tally(1)`).
pub fn render(subcommand: Option<&str>, out: &mut dyn Write) -> io::Result<()> {
    let mut top = super::command();
    top.build();
    let (cmd, title) = match subcommand {
        None => (top.clone(), "tally".to_string()),
        Some(name) => {
            let sub = top.find_subcommand(name).cloned().ok_or_else(|| {
                io::Error::new(io::ErrorKind::NotFound, format!("no subcommand {name}"))
            })?;
            (sub, format!("tally-{name}"))
        }
    };
    let extra = PAGES.iter().find(|p| p.name == subcommand.unwrap_or(""));
    let man = clap_mangen::Man::new(cmd.clone()).title(title.to_uppercase());
    man.render_title(out)?;
    man.render_name_section(out)?;
    man.render_synopsis_section(out)?;
    man.render_description_section(out)?;
    if cmd.get_arguments().any(|a| !a.is_hide_set()) {
        man.render_options_section(out)?;
    }
    if cmd.has_subcommands() {
        man.render_subcommands_section(out)?;
    }
    if let Some(extra) = extra {
        writeln!(out, ".SH \"EXIT STATUS\"")?;
        for (code, meaning) in extra.exit_status {
            writeln!(out, ".TP\n\\fB{}\\fR\n{}", escape(code), escape(meaning))?;
        }
        // A command line is never filled, broken or hyphenated: its spaces
        // are unpaddable and hyphenation is off, so it reads (and copies)
        // as typed.
        writeln!(out, ".SH EXAMPLES\n.nh")?;
        for (line, what) in extra.examples {
            let line = escape(line).replace(' ', "\\ ");
            writeln!(out, ".TP\n\\fB{line}\\fR\n{}", escape(what))?;
        }
        writeln!(out, ".hy")?;
    }
    let after = cmd.get_after_long_help().or(cmd.get_after_help());
    if let Some(after) = after {
        let notes = notes(&after.to_string(), extra.is_some());
        if !notes.is_empty() {
            writeln!(out, ".SH NOTES")?;
            for (i, paragraph) in notes.iter().enumerate() {
                if i > 0 {
                    writeln!(out, ".PP")?;
                }
                writeln!(out, "{paragraph}")?;
            }
        }
    }
    man.render_version_section(out)?;
    if subcommand.is_some() {
        writeln!(out, ".SH \"SEE ALSO\"\n\\fBtally\\fR(1)")?;
    }
    Ok(())
}

/// The paragraphs (escaped, their lines kept apart) of `--help`'s closing
/// text that the man page does not
/// already say: the examples and the exit status have sections of their
/// own on a page with [`Extra`] (`sectioned`), so they are left out of
/// NOTES rather than repeated there, reflowed.
fn notes(after_help: &str, sectioned: bool) -> Vec<String> {
    after_help
        .split("\n\n")
        .filter(|p| !(sectioned && p.trim_start().starts_with("Examples:")))
        .map(|p| {
            p.lines()
                .filter(|l| !(sectioned && l.trim_start().starts_with("Exit status:")))
                .map(escape)
                .collect::<Vec<_>>()
                .join("\n.br\n")
        })
        .filter(|p| !p.trim().is_empty())
        .collect()
}

/// A man page that could not be installed.
#[derive(Debug, thiserror::Error)]
#[error(
    "cannot write the man page {}: {source}; check that the directory exists and is writable",
    crate::text::path::display(path)
)]
pub struct InstallError {
    pub path: std::path::PathBuf,
    pub source: io::Error,
}

/// Writes every page into `dir` as `tally.1`, `tally-run.1`, …, each
/// through a temporary file renamed into place, so a reader never sees half
/// a page. Returns the paths written.
pub fn install(dir: &std::path::Path) -> Result<Vec<std::path::PathBuf>, InstallError> {
    let mut written = Vec::new();
    for page in PAGES {
        let (sub, file) = match page.name {
            "" => (None, "tally.1".to_string()),
            name => (Some(name), format!("tally-{name}.1")),
        };
        let path = dir.join(&file);
        let fail = |source: io::Error| InstallError {
            path: path.clone(),
            source,
        };
        // tempfile's own errors name its random file; a missing or
        // unwritable directory is said plainly first.
        std::fs::metadata(dir)
            .and_then(|m| {
                if m.is_dir() {
                    Ok(())
                } else {
                    Err(io::Error::from_raw_os_error(libc::ENOTDIR))
                }
            })
            .map_err(fail)?;
        let mut tmp = tempfile::Builder::new()
            .prefix(".tally-man-")
            .tempfile_in(dir)
            .map_err(fail)?;
        // Dropping `tmp` removes it on an error; the guard, on a signal.
        let guard = crate::sys::cleanup::Guard::arm(tmp.path()).map_err(fail)?;
        render(sub, tmp.as_file_mut()).map_err(fail)?;
        // Pages are for everyone to read (a temporary file starts 0600).
        use std::os::unix::fs::PermissionsExt;
        tmp.as_file()
            .set_permissions(std::fs::Permissions::from_mode(0o644))
            .map_err(fail)?;
        tmp.as_file_mut().sync_all().map_err(fail)?;
        tmp.persist(&path).map_err(|e| fail(e.error))?;
        drop(guard);
        written.push(path);
    }
    Ok(written)
}

/// Text safe in a roff line: backslashes doubled, `-` as a real hyphen-minus,
/// and a leading `.` or `'` kept from reading as a request.
fn escape(s: &str) -> String {
    let mut t = s.replace('\\', "\\e").replace('-', "\\-");
    if t.starts_with('.') || t.starts_with('\'') {
        t.insert_str(0, "\\&");
    }
    t
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_subcommand_has_a_page_with_exit_status_and_examples() {
        let cmd = super::super::command();
        for sub in cmd.get_subcommands() {
            let name = sub.get_name();
            let page = PAGES.iter().find(|p| p.name == name);
            assert!(page.is_some(), "no man page extras for {name}");
            let mut out = Vec::new();
            render(Some(name), &mut out).expect("render");
            let text = String::from_utf8_lossy(&out);
            assert!(text.contains(".SH \"EXIT STATUS\""), "{name}");
            assert!(text.contains(".SH EXAMPLES"), "{name}");
        }
        let mut out = Vec::new();
        render(None, &mut out).expect("render");
        assert!(String::from_utf8_lossy(&out).contains(".SH \"EXIT STATUS\""));
    }
}

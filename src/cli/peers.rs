//! The peers' spellings of tally's options. People arrive with hyperfine's,
//! GNU time's, ps_mem's, smem's, vmtouch's, fincore's, coreutils' and
//! node_exporter's options in their fingers. The ones that mean what a tally
//! option means are aliases of it (in each command's `args.rs`); the ones
//! that do not are answered here, when clap finds them unknown: the peer's
//! meaning and what tally calls it, instead of clap's bare "unexpected
//! argument".

/// One peer option that tally does not take as such: the command, the
/// option as the peer spells it, and the answer.
struct Answer {
    command: &'static str,
    flag: &'static str,
    say: &'static str,
}

const fn a(command: &'static str, flag: &'static str, say: &'static str) -> Answer {
    Answer { command, flag, say }
}

/// Every answered spelling. An option found here must not be one tally
/// takes (a test checks it against the clap definitions).
const ANSWERS: &[Answer] = &[
    // hyperfine
    a(
        "compare",
        "--export-asciidoc",
        "hyperfine's --export-asciidoc: tally exports markdown, csv, json, html and hyperfine's JSON; use --export markdown=FILE",
    ),
    a(
        "compare",
        "--export-orgmode",
        "hyperfine's --export-orgmode: tally exports markdown, csv, json, html and hyperfine's JSON; use --export markdown=FILE",
    ),
    a(
        "compare",
        "--style",
        "hyperfine's --style: tally colours only a terminal (NO_COLOR or TERM=dumb turn it off) and has no progress bar when not on one; --format picks the report",
    ),
    a(
        "compare",
        "--reference-name",
        "hyperfine's --reference-name: give the reference command first with --name, then --reference 1",
    ),
    // GNU time
    a(
        "run",
        "-p",
        "GNU time's -p (--portability): tally calls this --format csv or --format json (seconds are µs here, named in each column)",
    ),
    a(
        "run",
        "--portability",
        "GNU time's --portability: tally calls this --format csv or --format json",
    ),
    a(
        "run",
        "-q",
        "GNU time's -q: tally names a command's abnormal exit in one line and exits with its status; --quiet-command silences the command itself",
    ),
    a(
        "run",
        "--quiet",
        "GNU time's --quiet: tally names a command's abnormal exit in one line; --quiet-command silences the command itself",
    ),
    // ps_mem and smem
    a(
        "mem",
        "-S",
        "ps_mem's -S: tally mem always shows swap (the Swap column, SwapPss)",
    ),
    a(
        "mem",
        "--swap",
        "ps_mem's --swap: tally mem always shows swap (the Swap column, SwapPss)",
    ),
    a(
        "mem",
        "-s",
        "ps_mem's -s (--split-args): tally calls this --split-args",
    ),
    a(
        "mem",
        "-d",
        "ps_mem's -d (--discriminate-by-pid): tally calls this --by pid",
    ),
    a(
        "mem",
        "--discriminate-by-pid",
        "ps_mem's --discriminate-by-pid: tally calls this --by pid",
    ),
    a("mem", "-w", "ps_mem's -w N: tally calls this --watch SECS"),
    a(
        "mem",
        "-u",
        "smem's -u: tally calls this --by user (and --user NAME keeps one user's processes)",
    ),
    a(
        "mem",
        "-k",
        "smem's -k (--abbreviate): tally calls this --human",
    ),
    a(
        "mem",
        "--abbreviate",
        "smem's --abbreviate: tally calls this --human",
    ),
    a(
        "mem",
        "-P",
        "smem's -P REGEX: tally calls this --filter REGEX",
    ),
    a(
        "mem",
        "-r",
        "smem's -r (--reverse): tally calls this --reverse",
    ),
    a(
        "mem",
        "-c",
        "smem's -c COLUMNS: tally mem's columns are fixed; --format json or csv for every figure",
    ),
    // vmtouch and fincore
    a(
        "cache",
        "-d",
        "vmtouch's -d (daemon): `tally cache --lock` holds the pages until it is stopped",
    ),
    a(
        "cache",
        "-L",
        "vmtouch's -L: tally calls this --lock (-l), which locks only the file's data, never its holes",
    ),
    a(
        "cache",
        "-f",
        "vmtouch's -f: tally does not follow links inside a tree; name the link's target",
    ),
    a(
        "cache",
        "-q",
        "vmtouch's -q: tally cache says nothing but its report; --format json or -o FILE put it elsewhere",
    ),
    a(
        "cache",
        "-m",
        "vmtouch's -m SIZE: tally does not skip large files; --top N keeps the report short",
    ),
    a(
        "cache",
        "-b",
        "vmtouch's -b FILE: give `-` and the paths on stdin (one per line, -0 for NUL-separated)",
    ),
    a(
        "cache",
        "-J",
        "fincore's -J (--json): tally calls this --format json",
    ),
    a(
        "cache",
        "--json",
        "fincore's --json: tally calls this --format json",
    ),
    a(
        "cache",
        "--bytes",
        "fincore's --bytes: tally's csv and json give bytes",
    ),
    a(
        "cache",
        "-n",
        "fincore's -n (--noheadings): tally calls this --format csv, then skip its first line",
    ),
    a(
        "cache",
        "--noheadings",
        "fincore's --noheadings: use --format csv and skip its first line",
    ),
    a(
        "cache",
        "--raw",
        "fincore's --raw: tally calls this --format csv",
    ),
    // coreutils cp
    a("cp", "-R", "cp's -R: tally calls this -r (--recursive)"),
    a(
        "cp",
        "-a",
        "cp's -a (--archive): tally calls this -r -p (--recursive --preserve)",
    ),
    a(
        "cp",
        "--archive",
        "cp's --archive: tally calls this -r -p (--recursive --preserve)",
    ),
    a(
        "cp",
        "--reflink",
        "cp's --reflink: tally calls this --via reflink (auto tries a reflink first)",
    ),
    a(
        "cp",
        "--sparse",
        "cp's --sparse: tally always keeps a source's holes (--via auto)",
    ),
    a(
        "cp",
        "-f",
        "cp's -f: tally replaces a destination it may write; a read-only one is refused",
    ),
    a(
        "cp",
        "-i",
        "cp's -i: tally asks nothing; it replaces a destination only when the copy is complete",
    ),
    // node_exporter
    a(
        "serve",
        "--web.listen-address",
        "node_exporter's --web.listen-address: tally calls this --listen (`:9643`, `HOST:PORT`)",
    ),
    a(
        "serve",
        "--web.config.file",
        "node_exporter's --web.config.file: tally calls this --web-config FILE",
    ),
    a(
        "serve",
        "--web.telemetry-path",
        "node_exporter's --web.telemetry-path: tally serves /metrics only",
    ),
    a(
        "serve",
        "--collector.textfile.directory",
        "node_exporter's textfile collector: `tally mem --textfile DIR` and `tally cache --textfile DIR` write into it",
    ),
];

/// The answer for `flag` (as typed: `--style`, `-v`, or with `=VALUE`)
/// given to `command`, if a peer has that option.
pub fn answer(command: &str, flag: &str) -> Option<&'static str> {
    let flag = flag.split_once('=').map_or(flag, |(f, _)| f);
    ANSWERS
        .iter()
        .find(|a| a.command == command && a.flag == flag)
        .map(|a| a.say)
}

/// The answer for a value tally refused where a peer takes another kind:
/// hyperfine's `-n NAME` (tally's -n is the number of runs).
pub fn answer_value(command: &str, arg: &str, value: &str) -> Option<String> {
    let is_runs = arg.starts_with("--runs") || arg.starts_with("-n");
    if is_runs && !value.is_empty() && value.parse::<i64>().is_err() {
        let tail = if command == "compare" {
            format!(
                "; to name a command, --name {value:?} (hyperfine's -n NAME, or --command-name)"
            )
        } else {
            String::new()
        };
        return Some(format!("-n is the number of runs here{tail}"));
    }
    None
}

/// The flag `clap` found unknown or refused, and the subcommand it was
/// given to, from its error.
pub fn from_error(e: &clap::Error, args: &[std::ffi::OsString]) -> Option<String> {
    use clap::error::{ContextKind, ContextValue, ErrorKind};
    let command = args.get(1)?.to_str()?;
    let text = |kind| match e.get(kind) {
        Some(ContextValue::String(s)) => Some(s.clone()),
        _ => None,
    };
    match e.kind() {
        ErrorKind::UnknownArgument => {
            let flag = text(ContextKind::InvalidArg)?;
            answer(command, &flag).map(str::to_owned)
        }
        ErrorKind::InvalidValue | ErrorKind::ValueValidation => {
            let arg = text(ContextKind::InvalidArg)?;
            let value = text(ContextKind::InvalidValue)?;
            answer_value(command, arg.split(' ').next().unwrap_or_default(), &value)
        }
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// An answered spelling that tally also takes would never be answered
    /// (clap accepts it first), and would mislead the table's reader.
    #[test]
    fn no_answered_spelling_is_an_option_tally_takes() {
        let cli = super::super::command();
        for a in ANSWERS {
            let sub = cli
                .find_subcommand(a.command)
                .unwrap_or_else(|| panic!("no subcommand {}", a.command));
            let taken = sub.get_arguments().any(|arg| {
                let long = a.flag.strip_prefix("--");
                let short = a.flag.strip_prefix('-').filter(|s| s.len() == 1);
                long.is_some_and(|l| {
                    arg.get_long() == Some(l)
                        || arg.get_all_aliases().unwrap_or_default().contains(&l)
                }) || short.and_then(|s| s.chars().next()).is_some_and(|s| {
                    arg.get_short() == Some(s)
                        || arg.get_all_short_aliases().unwrap_or_default().contains(&s)
                })
            });
            assert!(!taken, "{} {} is an option of tally", a.command, a.flag);
        }
    }
}

//! The lower floors (sys, procfs, pagecache, report, input, units, stats,
//! diag) import no command folder: commands build on floors, never the
//! reverse.

use std::path::{Path, PathBuf};

const FLOORS: &[&str] = &[
    "src/sys",
    "src/procfs",
    "src/pagecache",
    "src/report",
    "src/input.rs",
    "src/units.rs",
    "src/stats.rs",
    "src/diag.rs",
];
const COMMANDS: &[&str] = &[
    "run", "mem", "bench", "load", "cache", "copy", "compare", "serve", "cli", "app",
];

fn rust_files(path: &Path, out: &mut Vec<PathBuf>) {
    if path.is_dir() {
        let mut entries: Vec<PathBuf> = std::fs::read_dir(path)
            .unwrap_or_else(|e| panic!("{}: {e}", path.display()))
            .map(|e| e.expect("dir entry").path())
            .collect();
        entries.sort();
        for p in entries {
            rust_files(&p, out);
        }
    } else if path.extension().is_some_and(|e| e == "rs") {
        out.push(path.to_path_buf());
    }
}

/// The first path segments after `crate::` (or `tally::`) in `line`,
/// including each item of a `crate::{a, b::c}` group.
fn crate_roots(line: &str) -> Vec<String> {
    let mut roots = Vec::new();
    for prefix in ["crate::", "tally::"] {
        let mut rest = line;
        while let Some(at) = rest.find(prefix) {
            let before = rest[..at].chars().next_back();
            rest = &rest[at + prefix.len()..];
            if before.is_some_and(|c| c.is_alphanumeric() || c == '_') {
                continue; // `my_crate::`, not `crate::`
            }
            if let Some(group) = rest.strip_prefix('{') {
                let mut depth = 0;
                let mut item = String::new();
                let mut at_start = true;
                for c in group.chars() {
                    match c {
                        '{' => depth += 1,
                        '}' if depth == 0 => break,
                        '}' => depth -= 1,
                        ',' if depth == 0 => at_start = true,
                        c if at_start && (c.is_alphanumeric() || c == '_') => item.push(c),
                        _ if at_start && !item.is_empty() => {
                            roots.push(std::mem::take(&mut item));
                            at_start = false;
                        }
                        _ => {}
                    }
                }
                if !item.is_empty() {
                    roots.push(item);
                }
            } else {
                let name: String = rest
                    .chars()
                    .take_while(|c| c.is_alphanumeric() || *c == '_')
                    .collect();
                roots.push(name);
            }
        }
    }
    roots
}

#[test]
fn import_parser_sees_plain_and_grouped_paths() {
    assert_eq!(crate_roots("use crate::sys::{self, cache};"), ["sys"]);
    assert_eq!(
        crate_roots("use crate::{procfs::ProcRoot, run::Config};"),
        ["procfs", "run"]
    );
    assert_eq!(crate_roots("let x = tally::cache::x();"), ["cache"]);
    assert!(crate_roots("use my_crate::run;").is_empty());
}

#[test]
fn lower_floors_import_no_command_folder() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut files = Vec::new();
    for floor in FLOORS {
        rust_files(&root.join(floor), &mut files);
    }
    assert!(files.len() > 10, "floors found: {files:?}");
    let mut bad = Vec::new();
    for file in &files {
        let text = std::fs::read_to_string(file).expect("read source");
        // `super::` in a floor's top file (`src/x/mod.rs`, `src/x.rs`)
        // names the crate root too.
        let top = file.file_name().is_some_and(|n| n == "mod.rs")
            && file.parent().and_then(Path::parent) == Some(&root.join("src"))
            || file.parent() == Some(&root.join("src"));
        for (n, line) in text.lines().enumerate() {
            let mut roots = crate_roots(line);
            if top {
                roots.extend(crate_roots(&line.replace("super::", "crate::")));
            }
            for r in roots {
                if COMMANDS.contains(&r.as_str()) {
                    bad.push(format!(
                        "{}:{}: {}",
                        file.strip_prefix(root).unwrap_or(file).display(),
                        n + 1,
                        line.trim()
                    ));
                }
            }
        }
    }
    assert!(
        bad.is_empty(),
        "lower floors import command folders:\n{}",
        bad.join("\n")
    );
}

//! The floors of the code, read from its imports: every top-level module
//! of `src/` (a file `src/x.rs` or a folder `src/x/`; `src/app/` and
//! `src/main.rs` are the binary, `app`) stands above what it imports, and
//! none imports another back, however far round. The lower floors stand
//! in order (sys < input < procfs < place < report), the ground floor's
//! leaves import only each other, no lower floor imports a command, and
//! only the binary and `cli` know `cli` or a command's `Args`.
//!
//! `cargo test --test floors -- --nocapture` prints the module graph, floor
//! by floor, with what each module imports; `TALLY_TREE=DIR` reads another
//! checkout instead (an older one, to compare).

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

/// The lower floors, lowest first: each may import those before it, none
/// after it.
const ORDER: &[&str] = &["sys", "input", "procfs", "place", "report"];

/// Every floor below the commands (they import no command).
/// (`speed` times its probe's memory work in `sys`, where `unsafe` lives.)
const FLOORS: &[&str] = &[
    "sys",
    "input",
    "procfs",
    "place",
    "pagecache",
    "report",
    "speed",
];

/// The ground floor: leaves every floor uses, which import only each other.
const GROUND: &[&str] = &[
    "text", "units", "stats", "gate", "diag", "failure", "progress", "record",
];

/// The binary and the command-line definitions: they alone see `cli` and
/// the commands' `Args`.
const TOP: &[&str] = &["app", "cli"];

/// The commands' argument types, each in its own `src/<command>/args.rs`.
const ARGS: &[&str] = &[
    "RunArgs",
    "CompareArgs",
    "BenchArgs",
    "MemArgs",
    "CacheArgs",
    "CpArgs",
    "LoadArgs",
    "ServeArgs",
    "HistoryArgs",
];

/// The checkout read: this one, or `TALLY_TREE` (another checkout, to see
/// its structure beside this one's).
fn root() -> &'static Path {
    static ROOT: std::sync::OnceLock<PathBuf> = std::sync::OnceLock::new();
    ROOT.get_or_init(|| match std::env::var_os("TALLY_TREE") {
        Some(dir) => PathBuf::from(dir),
        None => PathBuf::from(env!("CARGO_MANIFEST_DIR")),
    })
}

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

/// The top-level module a file of `src/` belongs to: `run` for
/// `src/run/mod.rs` and `src/run/args.rs`, `units` for `src/units.rs`,
/// `app` for the binary; `None` for `src/lib.rs`.
fn module_of(file: &Path) -> Option<String> {
    let rel = file.strip_prefix(root().join("src")).ok()?;
    let first = rel.components().next()?.as_os_str().to_str()?;
    match first {
        "lib.rs" => None,
        "main.rs" | "app" => Some("app".into()),
        f => Some(f.strip_suffix(".rs").unwrap_or(f).to_string()),
    }
}

/// Whether `super::` in `file` names the crate root (`src/x.rs`,
/// `src/x/mod.rs`).
fn is_top_file(file: &Path) -> bool {
    let src = root().join("src");
    file.parent() == Some(&src)
        || file.file_name().is_some_and(|n| n == "mod.rs")
            && file.parent().and_then(Path::parent) == Some(&src)
}

/// The code of `text` as lines, without comments and without the unit
/// tests (`#[cfg(test)] mod … { … }`, which may reach anywhere); a `use`
/// over several lines is one.
fn code_lines(text: &str) -> Vec<(usize, String)> {
    let mut out: Vec<(usize, String)> = Vec::new();
    let mut open_use = false;
    let mut skip_depth: Option<i64> = None;
    let mut test_next = false;
    let mut depth = 0i64;
    for (n, raw) in text.lines().enumerate() {
        let line = strip_comment(raw);
        let trimmed = line.trim();
        if skip_depth.is_none() && trimmed.starts_with("#[cfg(test)]") {
            test_next = true;
        }
        let opens = line.matches('{').count() as i64;
        let closes = line.matches('}').count() as i64;
        if test_next && skip_depth.is_none() && trimmed.contains("mod ") && opens > 0 {
            skip_depth = Some(depth);
            test_next = false;
        }
        depth += opens - closes;
        if let Some(d) = skip_depth {
            if depth <= d {
                skip_depth = None;
            }
            continue;
        }
        if open_use && let Some(last) = out.last_mut() {
            last.1.push(' ');
            last.1.push_str(trimmed);
        } else {
            out.push((n + 1, line.clone()));
        }
        let starts_use = ["use ", "pub use ", "pub(crate) use ", "pub(super) use "]
            .iter()
            .any(|p| trimmed.starts_with(p));
        open_use = (open_use || starts_use) && !trimmed.ends_with(';');
    }
    out
}

/// `line` up to a `//` that is not inside a string.
fn strip_comment(line: &str) -> String {
    let mut in_string = false;
    let mut prev = ' ';
    let chars: Vec<char> = line.chars().collect();
    for (i, &c) in chars.iter().enumerate() {
        if c == '"' && prev != '\\' {
            in_string = !in_string;
        }
        if !in_string && c == '/' && chars.get(i + 1) == Some(&'/') {
            return chars[..i].iter().collect();
        }
        prev = c;
    }
    line.to_string()
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
                        ',' if depth == 0 => {
                            if !item.is_empty() {
                                roots.push(std::mem::take(&mut item));
                            }
                            at_start = true;
                        }
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

/// One import of a top-level module by another: where it stands.
struct Import {
    to: String,
    at: String,
}

/// Every top-level module and the imports of its code (not its tests).
fn graph() -> BTreeMap<String, Vec<Import>> {
    let mut files = Vec::new();
    rust_files(&root().join("src"), &mut files);
    let modules: BTreeSet<String> = files.iter().filter_map(|f| module_of(f)).collect();
    assert!(modules.len() > 15, "modules found: {modules:?}");
    let mut graph: BTreeMap<String, Vec<Import>> =
        modules.iter().map(|m| (m.clone(), Vec::new())).collect();
    for file in &files {
        let Some(from) = module_of(file) else {
            continue;
        };
        let text = std::fs::read_to_string(file).expect("read source");
        let top = is_top_file(file);
        for (n, line) in code_lines(&text) {
            let mut roots: BTreeSet<String> = crate_roots(&line).into_iter().collect();
            if top {
                roots.extend(crate_roots(&line.replace("super::", "crate::")));
            }
            for to in roots {
                if to != from && modules.contains(&to) {
                    let rel = file.strip_prefix(root()).unwrap_or(file);
                    graph.entry(from.clone()).or_default().push(Import {
                        to,
                        at: format!("{}:{n}: {}", rel.display(), line.trim()),
                    });
                }
            }
        }
    }
    graph
}

/// What each module imports, without repeats.
fn edges(graph: &BTreeMap<String, Vec<Import>>) -> BTreeMap<&str, BTreeSet<&str>> {
    graph
        .iter()
        .map(|(m, imports)| (m.as_str(), imports.iter().map(|i| i.to.as_str()).collect()))
        .collect()
}

/// The groups of modules that import each other, however far round
/// (Tarjan's strongly connected components of more than one module).
fn circles<'a>(edges: &BTreeMap<&'a str, BTreeSet<&'a str>>) -> Vec<Vec<&'a str>> {
    struct Walk<'a, 'e> {
        edges: &'e BTreeMap<&'a str, BTreeSet<&'a str>>,
        index: BTreeMap<&'a str, usize>,
        low: BTreeMap<&'a str, usize>,
        stack: Vec<&'a str>,
        found: Vec<Vec<&'a str>>,
    }
    impl<'a> Walk<'a, '_> {
        fn visit(&mut self, v: &'a str) {
            let i = self.index.len();
            self.index.insert(v, i);
            self.low.insert(v, i);
            self.stack.push(v);
            for &w in self.edges.get(v).into_iter().flatten() {
                if !self.index.contains_key(w) {
                    self.visit(w);
                    let lw = self.low[w];
                    let lv = self.low.get_mut(v).expect("visited");
                    *lv = (*lv).min(lw);
                } else if self.stack.contains(&w) {
                    let iw = self.index[w];
                    let lv = self.low.get_mut(v).expect("visited");
                    *lv = (*lv).min(iw);
                }
            }
            if self.low[v] == self.index[v] {
                let mut group = Vec::new();
                while let Some(w) = self.stack.pop() {
                    group.push(w);
                    if w == v {
                        break;
                    }
                }
                if group.len() > 1 {
                    group.sort_unstable();
                    self.found.push(group);
                }
            }
        }
    }
    let mut walk = Walk {
        edges,
        index: BTreeMap::new(),
        low: BTreeMap::new(),
        stack: Vec::new(),
        found: Vec::new(),
    };
    for &v in edges.keys() {
        if !walk.index.contains_key(v) {
            walk.visit(v);
        }
    }
    walk.found
}

/// Each module's floor: 1 for a module that imports none, else one above
/// the highest it imports (a module in a circle has none).
fn floors<'a>(edges: &BTreeMap<&'a str, BTreeSet<&'a str>>) -> BTreeMap<&'a str, usize> {
    let mut floor: BTreeMap<&str, usize> = BTreeMap::new();
    while floor.len() < edges.len() {
        let before = floor.len();
        for (&m, deps) in edges {
            if !floor.contains_key(m) && deps.iter().all(|d| floor.contains_key(d)) {
                let f = deps.iter().map(|d| floor[d]).max().unwrap_or(0) + 1;
                floor.insert(m, f);
            }
        }
        if floor.len() == before {
            break;
        }
    }
    floor
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
    assert_eq!(
        crate_roots("use crate::{a, b, c as d, e::{f, g}, h};"),
        ["a", "b", "c", "e", "h"]
    );
    let code = code_lines(
        "use crate::a; // crate::b\nlet s = \"http://x\"; crate::c();\n\
         #[cfg(test)]\nmod tests {\n    use crate::d;\n}\nuse crate::e;\n\
         use crate::{\n    f,\n    g::h,\n};\n",
    );
    let roots: Vec<String> = code.iter().flat_map(|(_, l)| crate_roots(l)).collect();
    assert_eq!(
        roots,
        ["a", "c", "e", "f", "g"],
        "comments and unit tests are not code; a use may span lines"
    );
}

#[test]
fn no_top_level_modules_import_each_other_however_far_round() {
    let graph = graph();
    let edges = edges(&graph);
    let circles = circles(&edges);
    let floor = floors(&edges);
    let top = floor.values().copied().max().unwrap_or(0);
    println!(
        "module graph of src/ ({} modules), highest floor first:",
        edges.len()
    );
    for f in (1..=top).rev() {
        for (m, _) in floor.iter().filter(|&(_, &g)| g == f) {
            let deps: Vec<&str> = edges[m].iter().copied().collect();
            println!("floor {f:2}  {m:<10} -> {}", deps.join(", "));
        }
    }
    for (m, deps) in edges.iter().filter(|(m, _)| !floor.contains_key(*m)) {
        let deps: Vec<&str> = deps.iter().copied().collect();
        println!("no floor  {m:<10} -> {}", deps.join(", "));
    }
    let mut why = String::new();
    for group in &circles {
        why.push_str(&format!("circle: {}\n", group.join(", ")));
        for m in group {
            for i in &graph[*m] {
                if group.contains(&i.to.as_str()) {
                    why.push_str(&format!("  {m} -> {}: {}\n", i.to, i.at));
                }
            }
        }
    }
    assert!(circles.is_empty(), "modules that import each other:\n{why}");
    assert_eq!(floor.len(), edges.len(), "every module has a floor");
}

#[test]
fn the_lower_floors_stand_in_order_and_the_ground_floor_imports_only_itself() {
    let graph = graph();
    let mut bad = Vec::new();
    for (from, imports) in &graph {
        for i in imports {
            let rank = |m: &str| ORDER.iter().position(|o| *o == m);
            let up = matches!((rank(from), rank(&i.to)), (Some(a), Some(b)) if b > a);
            let ground = GROUND.contains(&from.as_str()) && !GROUND.contains(&i.to.as_str());
            let floor = FLOORS.contains(&from.as_str())
                && !FLOORS.contains(&i.to.as_str())
                && !GROUND.contains(&i.to.as_str());
            if up || ground || floor {
                bad.push(format!("{from} -> {}: {}", i.to, i.at));
            }
        }
    }
    for m in ORDER.iter().chain(FLOORS).chain(GROUND) {
        assert!(graph.contains_key(*m), "no module {m} in src/");
    }
    assert!(bad.is_empty(), "imports up a floor:\n{}", bad.join("\n"));
}

#[test]
fn only_the_binary_and_cli_know_cli_and_the_commands_args() {
    let mut files = Vec::new();
    rust_files(&root().join("src"), &mut files);
    let mut bad = Vec::new();
    for file in &files {
        let module = module_of(file).unwrap_or_default();
        if TOP.contains(&module.as_str()) {
            continue;
        }
        let own_args = file.file_name().is_some_and(|n| n == "args.rs");
        let text = std::fs::read_to_string(file).expect("read source");
        let top = is_top_file(file);
        for (n, line) in code_lines(&text) {
            let mut roots = crate_roots(&line);
            if top {
                roots.extend(crate_roots(&line.replace("super::", "crate::")));
            }
            let names_args = ARGS.iter().any(|a| {
                line.match_indices(a).any(|(at, _)| {
                    let before = line[..at].chars().next_back();
                    let after = line[at + a.len()..].chars().next();
                    !before.is_some_and(|c| c.is_alphanumeric() || c == '_')
                        && !after.is_some_and(|c| c.is_alphanumeric() || c == '_')
                })
            });
            if roots.iter().any(|r| r == "cli") || names_args && !own_args {
                let rel = file.strip_prefix(root()).unwrap_or(file);
                bad.push(format!("{}:{n}: {}", rel.display(), line.trim()));
            }
        }
    }
    assert!(
        bad.is_empty(),
        "below app/, cli or a command's Args is read (a command's work takes its Config):\n{}",
        bad.join("\n")
    );
}

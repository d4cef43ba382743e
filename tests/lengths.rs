//! The length of every function of `src/`: none outside the unit tests is
//! longer than [`LIMIT`] lines, from its `fn` line to its closing brace,
//! but those named in [`ALLOWED`] while they are being shortened.
//!
//! `cargo test --test lengths -- --nocapture` prints the longest ones;
//! `TALLY_TREE=DIR` reads another checkout instead (an older one, to
//! compare).

use std::path::{Path, PathBuf};

/// The most lines a function may have.
const LIMIT: usize = 120;

/// Functions still longer than [`LIMIT`], as `file::name` under `src/`:
/// each is to be shortened, and then taken off this list.
const ALLOWED: &[&str] = &[];

/// How many of the longest functions `--nocapture` prints.
const SHOWN: usize = 15;

fn root() -> PathBuf {
    match std::env::var_os("TALLY_TREE") {
        Some(dir) => PathBuf::from(dir),
        None => PathBuf::from(env!("CARGO_MANIFEST_DIR")),
    }
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

/// `text` with every comment, string and character literal blanked to
/// spaces (newlines kept), so that the braces left are the code's.
fn blank_literals(text: &str) -> String {
    let c: Vec<char> = text.chars().collect();
    let mut out = String::with_capacity(text.len());
    let blank = |out: &mut String, ch: char| out.push(if ch == '\n' { '\n' } else { ' ' });
    let mut i = 0;
    while i < c.len() {
        let at = |k: usize| c.get(i + k).copied();
        if c[i] == '/' && at(1) == Some('/') {
            while i < c.len() && c[i] != '\n' {
                blank(&mut out, c[i]);
                i += 1;
            }
        } else if c[i] == '/' && at(1) == Some('*') {
            let mut depth = 0;
            while i < c.len() {
                if c[i] == '/' && c.get(i + 1) == Some(&'*') {
                    depth += 1;
                    blank(&mut out, c[i]);
                    blank(&mut out, c[i + 1]);
                    i += 2;
                } else if c[i] == '*' && c.get(i + 1) == Some(&'/') {
                    depth -= 1;
                    blank(&mut out, c[i]);
                    blank(&mut out, c[i + 1]);
                    i += 2;
                    if depth == 0 {
                        break;
                    }
                } else {
                    blank(&mut out, c[i]);
                    i += 1;
                }
            }
        } else if c[i] == 'r'
            && matches!(at(1), Some('"') | Some('#'))
            && (i == 0 || !(c[i - 1].is_alphanumeric() || c[i - 1] == '_') || c[i - 1] == 'b')
        {
            // A raw string: r"…", r#"…"#.
            let mut j = i + 1;
            let mut hashes = 0;
            while c.get(j) == Some(&'#') {
                hashes += 1;
                j += 1;
            }
            if c.get(j) != Some(&'"') {
                out.push(c[i]);
                i += 1;
                continue;
            }
            j += 1;
            loop {
                match c.get(j) {
                    None => break,
                    Some('"') if (1..=hashes).all(|h| c.get(j + h) == Some(&'#')) => {
                        j += 1 + hashes;
                        break;
                    }
                    _ => j += 1,
                }
            }
            for &ch in &c[i..j.min(c.len())] {
                blank(&mut out, ch);
            }
            i = j;
        } else if c[i] == '"' {
            blank(&mut out, c[i]);
            i += 1;
            while i < c.len() && c[i] != '"' {
                if c[i] == '\\' {
                    blank(&mut out, c[i]);
                    i += 1;
                }
                if i < c.len() {
                    blank(&mut out, c[i]);
                    i += 1;
                }
            }
            if i < c.len() {
                blank(&mut out, c[i]);
                i += 1;
            }
        } else if c[i] == '\'' {
            // A character literal ('x', '\n', '\u{7f}'), or a lifetime.
            let end = if at(1) == Some('\\') {
                (i + 2..c.len()).find(|&j| c[j] == '\'')
            } else if at(2) == Some('\'') {
                Some(i + 2)
            } else {
                None
            };
            match end {
                Some(e) => {
                    for &ch in &c[i..=e] {
                        blank(&mut out, ch);
                    }
                    i = e + 1;
                }
                None => {
                    out.push(c[i]);
                    i += 1;
                }
            }
        } else {
            out.push(c[i]);
            i += 1;
        }
    }
    out
}

/// One function: its name, the line its `fn` stands on, and its length.
#[derive(Debug, PartialEq)]
struct Function {
    name: String,
    line: usize,
    lines: usize,
}

/// Whether `word` starts at byte `at` of `line` as a whole word.
fn word_at(line: &str, at: usize, word: &str) -> bool {
    let before = line[..at].chars().next_back();
    let after = line[at + word.len()..].chars().next();
    line[at..].starts_with(word)
        && !before.is_some_and(|c| c.is_alphanumeric() || c == '_')
        && !after.is_some_and(|c| c.is_alphanumeric() || c == '_')
}

/// The functions of `text` with a body, nested ones included, leaving out
/// the unit tests (`#[cfg(test)]` items and `#[test]` functions).
fn functions(text: &str) -> Vec<Function> {
    let code = blank_literals(text);
    let lines: Vec<&str> = code.lines().collect();
    let mut found = Vec::new();
    // Brace depth at the start of each line.
    let mut depth = 0i64;
    let mut depths = Vec::with_capacity(lines.len());
    for l in &lines {
        depths.push(depth);
        depth += l.matches('{').count() as i64 - l.matches('}').count() as i64;
    }
    // Where a block that opens on line `n` closes: the first line after
    // which the depth is back to where it was.
    let close = |n: usize| -> Option<usize> {
        let start = depths[n];
        let mut d = start;
        let mut opened = false;
        let mut brackets = 0i64;
        for (k, l) in lines.iter().enumerate().skip(n) {
            for ch in l.chars() {
                match ch {
                    '{' => {
                        d += 1;
                        opened = true;
                    }
                    '}' => d -= 1,
                    '(' | '[' => brackets += 1,
                    ')' | ']' => brackets -= 1,
                    ';' if !opened && d == start && brackets == 0 => return None,
                    _ => {}
                }
                if opened && d == start {
                    return Some(k);
                }
            }
        }
        None
    };
    let mut skip_until: Option<usize> = None;
    let mut test_attr = false;
    for (n, l) in lines.iter().enumerate() {
        if skip_until.is_some_and(|end| n <= end) {
            continue;
        }
        let t = l.trim();
        if t.starts_with("#[cfg(test)]") || t.starts_with("#[test]") {
            test_attr = true;
            continue;
        }
        if t.starts_with("#[") || t.is_empty() {
            continue;
        }
        if test_attr {
            test_attr = false;
            if let Some(end) = close(n) {
                skip_until = Some(end);
            }
            continue;
        }
        let Some(at) = l
            .match_indices("fn ")
            .map(|(i, _)| i)
            .find(|&i| word_at(l, i, "fn"))
        else {
            continue;
        };
        let name: String = l[at + 3..]
            .chars()
            .take_while(|c| c.is_alphanumeric() || *c == '_')
            .collect();
        if name.is_empty() {
            continue; // `fn(…)`, a pointer type
        }
        if let Some(end) = close(n) {
            found.push(Function {
                name,
                line: n + 1,
                lines: end - n + 1,
            });
        }
    }
    found
}

/// Every function of `src/`, as `file::name` (the file under `src/`), its
/// line and its length, longest first.
fn all() -> Vec<(String, usize, usize)> {
    let src = root().join("src");
    let mut files = Vec::new();
    rust_files(&src, &mut files);
    let mut all = Vec::new();
    for f in files {
        let text = std::fs::read_to_string(&f).unwrap_or_else(|e| panic!("{}: {e}", f.display()));
        let rel = f
            .strip_prefix(&src)
            .expect("under src")
            .display()
            .to_string();
        for func in functions(&text) {
            all.push((format!("{rel}::{}", func.name), func.line, func.lines));
        }
    }
    all.sort_by(|a, b| b.2.cmp(&a.2).then(a.0.cmp(&b.0)));
    all
}

#[test]
fn the_reader_sees_functions_through_literals_comments_and_tests() {
    let text = r##"
fn one() {
    let s = "}{";
    let c = '}';
    let r = r#"}"#;
    // }
    /* { */
    if true { x('{') }
}
fn decl() -> [u8; 4];
impl X {
    pub(crate) fn two<'a>(x: &'a str) -> &'a str
    where
        X: Y,
    {
        x
    }
}
#[cfg(test)]
mod tests {
    fn helper() {
    }
}
#[test]
fn a_test() {
}
"##;
    let found = functions(text);
    assert_eq!(
        found,
        vec![
            Function {
                name: "one".into(),
                line: 2,
                lines: 8
            },
            Function {
                name: "two".into(),
                line: 12,
                lines: 6
            },
        ]
    );
}

#[test]
fn no_function_is_longer_than_the_limit() {
    let all = all();
    assert!(all.len() > 500, "only {} functions read", all.len());
    println!("the {SHOWN} longest functions of src/ (lines, fn to closing brace):");
    for (name, line, lines) in all.iter().take(SHOWN) {
        println!("{lines:>5}  {name} (line {line})");
    }
    let long: Vec<String> = all
        .iter()
        .filter(|(name, _, lines)| *lines > LIMIT && !ALLOWED.contains(&name.as_str()))
        .map(|(name, line, lines)| format!("{name} (line {line}): {lines} lines"))
        .collect();
    assert!(
        long.is_empty(),
        "functions longer than {LIMIT} lines; split them into named steps:\n{}",
        long.join("\n")
    );
    for allowed in ALLOWED {
        assert!(
            all.iter()
                .any(|(name, _, lines)| name == allowed && *lines > LIMIT),
            "{allowed} is no longer over {LIMIT} lines (or is gone): take it off ALLOWED"
        );
    }
}

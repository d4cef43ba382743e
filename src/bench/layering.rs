//! A test-only check that the files of a folder import each other
//! without circles (a file A using B while B uses A, directly or through
//! others), as the layering of the code requires.

/// The files of `folder` (`src/bench`) each file uses (through
/// `super::` or `crate::<folder>::`, outside its tests); `mod` is
/// `mod.rs`, which uses what its `registry!` names.
pub fn imports(folder: &str) -> Vec<(String, Vec<String>)> {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join(folder);
    let own = format!("crate::{}::", folder.rsplit('/').next().unwrap());
    let mut files: Vec<(String, String)> = std::fs::read_dir(&dir)
        .unwrap()
        .filter_map(|e| {
            let p = e.unwrap().path();
            let stem = p.file_stem()?.to_str()?.to_string();
            (p.extension()? == "rs").then(|| (stem, std::fs::read_to_string(&p).unwrap()))
        })
        .collect();
    files.sort();
    let stems: Vec<String> = files.iter().map(|f| f.0.clone()).collect();
    let module = |name: &str| {
        if stems.iter().any(|s| s == name && s != "mod") {
            name.to_string()
        } else {
            "mod".to_string()
        }
    };
    let mut out = Vec::new();
    for (stem, text) in &files {
        // Unit tests (at the end of each file) may reach anywhere.
        let code = [
            "\n#[cfg(test)]\nmod tests",
            "\n#[cfg(test)]\npub(crate) mod tests",
        ]
        .iter()
        .fold(text.as_str(), |code, end| code.split(end).next().unwrap());
        let code: String = code
            .lines()
            .map(|l| l.split("//").next().unwrap())
            .collect::<Vec<_>>()
            .join("\n");
        let mut uses: Vec<String> = Vec::new();
        if stem == "mod" {
            let list = code.split("registry! {").nth(1).unwrap_or("");
            let list = list.split('}').next().unwrap_or("");
            uses.extend(
                list.split(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
                    .filter(|w| !w.is_empty())
                    .map(module),
            );
            // `report::x`, not `crate::report::x` (another floor).
            for (i, _) in code.match_indices("::") {
                let head = code.get(..i).unwrap();
                let word_start = head
                    .rfind(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
                    .map_or(0, |j| j + 1);
                let word = head.get(word_start..).unwrap();
                let qualified = head.get(..word_start).unwrap().ends_with("::");
                if !qualified && stems.iter().any(|s| s == word && s != "mod") {
                    uses.push(word.to_string());
                }
            }
        } else {
            for prefix in ["super::", own.as_str()] {
                for rest in code.split(prefix).skip(1) {
                    let firsts: Vec<&str> = if let Some(group) = rest.strip_prefix('{') {
                        // Top-level items of `{a, b::{c, d}, e}`.
                        let mut depth = 0;
                        let mut items = vec![String::new()];
                        for c in group.chars() {
                            match c {
                                '{' => depth += 1,
                                '}' if depth == 0 => break,
                                '}' => depth -= 1,
                                ',' if depth == 0 => items.push(String::new()),
                                _ => items.last_mut().unwrap().push(c),
                            }
                        }
                        let items: Vec<String> = items
                            .iter()
                            .map(|i| i.trim().split("::").next().unwrap().to_string())
                            .filter(|i| !i.is_empty())
                            .collect();
                        uses.extend(items.iter().map(|i| module(i)));
                        Vec::new()
                    } else {
                        vec![
                            rest.split(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
                                .next()
                                .unwrap(),
                        ]
                    };
                    uses.extend(firsts.into_iter().map(module));
                }
            }
        }
        uses.sort();
        uses.dedup();
        uses.retain(|u| u != stem);
        out.push((stem.clone(), uses));
    }
    out
}

/// Panics naming the first circle in `graph` (from [`imports`]).
pub fn assert_no_circles(graph: &[(String, Vec<String>)]) {
    let uses = |a: &str| {
        graph
            .iter()
            .find(|g| g.0 == a)
            .map(|g| g.1.clone())
            .unwrap_or_default()
    };
    for (start, _) in graph {
        let mut stack: Vec<Vec<String>> = vec![vec![start.clone()]];
        let mut seen: Vec<String> = Vec::new();
        while let Some(path) = stack.pop() {
            let last = path.last().unwrap().clone();
            for next in uses(&last) {
                assert!(
                    next != *start,
                    "import circle: {} -> {next}",
                    path.join(" -> ")
                );
                if !seen.contains(&next) {
                    seen.push(next.clone());
                    let mut p = path.clone();
                    p.push(next);
                    stack.push(p);
                }
            }
        }
    }
}

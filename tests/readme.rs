//! Every example in README.md runs: each `$ ` line of its code blocks is
//! executed (`sh -c`, in a scratch directory holding a copy of Cargo.lock,
//! with the binary under test first on PATH as `tally`), must exit 0, and
//! its output must have the lines the README shows, by their leading words
//! (the figures differ from run to run; `…` stands for lines left out).

mod common;

use std::path::Path;

/// One example: the command line and the output the README shows.
struct Example {
    command: String,
    shown: Vec<String>,
}

fn examples(readme: &str) -> Vec<Example> {
    let mut out: Vec<Example> = Vec::new();
    let mut in_block = false;
    for line in readme.lines() {
        if line.starts_with("```") {
            in_block = !in_block;
            continue;
        }
        if !in_block {
            continue;
        }
        if let Some(cmd) = line.strip_prefix("$ ") {
            out.push(Example {
                command: cmd.to_string(),
                shown: Vec::new(),
            });
        } else if let Some(e) = out.last_mut() {
            e.shown.push(line.to_string());
        }
    }
    out
}

/// The words a line starts with before its first figure: what any run
/// prints the same (`tally: took`, `cold read`, `getpid (raw syscall)`).
fn leading_words(line: &str) -> String {
    line.split_whitespace()
        .take_while(|w| !w.chars().any(|c| c.is_ascii_digit()) && *w != "…")
        // A unit is chosen by the sizes measured (`tally mem` prints KiB
        // where this machine's processes are small, MiB where they are
        // not): the README's is one of them.
        .map(|w| match w {
            "KiB" | "MiB" | "GiB" => "<unit>",
            w => w,
        })
        .collect::<Vec<_>>()
        .join(" ")
}

#[test]
fn every_readme_example_runs_and_prints_what_the_readme_shows() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let readme = std::fs::read_to_string(root.join("README.md")).expect("README.md");
    let examples = examples(&readme);
    assert!(
        examples.len() >= 8,
        "only {} examples found",
        examples.len()
    );
    let dir = tempfile::Builder::new()
        .prefix("readme-")
        .tempdir_in(env!("CARGO_TARGET_TMPDIR"))
        .expect("scratch dir");
    std::fs::copy(root.join("Cargo.lock"), dir.path().join("Cargo.lock")).expect("Cargo.lock");
    // The program of the counted-work example.
    std::fs::copy(root.join("tests/fixtures/two.c"), dir.path().join("two.c")).expect("two.c");
    let bin = dir.path().join("bin");
    std::fs::create_dir(&bin).expect("bin dir");
    std::os::unix::fs::symlink(common::tally_bin(), bin.join("tally")).expect("link tally");
    let path = format!(
        "{}:{}",
        bin.display(),
        std::env::var("PATH").unwrap_or_default()
    );
    for e in &examples {
        if e.command.contains("--count=sim") && !common::have("valgrind") {
            common::skip_part!("valgrind is not installed: `{}` not run", e.command);
            continue;
        }
        let out = common::command("sh")
            .arg("-c")
            .arg(&e.command)
            .current_dir(dir.path())
            .env("PATH", &path)
            .env_remove("COLUMNS")
            .output()
            .expect("sh runs");
        let text = format!(
            "{}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
        assert!(
            out.status.success(),
            "`{}`: {}\n{text}",
            e.command,
            out.status
        );
        let printed: Vec<String> = text.lines().map(leading_words).collect();
        for line in &e.shown {
            let words = leading_words(line);
            if words.is_empty() {
                continue;
            }
            assert!(
                printed.iter().any(|p| p.starts_with(&words)),
                "`{}` printed no line starting {words:?} (the README shows {line:?}):\n{text}",
                e.command
            );
        }
    }
}

/// Item 17 of a user's first hour: the README's "two set-up commands" were
/// a build-and-demo and the test suite, said in a paragraph after the
/// first examples. Install comes first, and each of the two says what it
/// does on its own line.
#[test]
fn install_comes_before_the_examples_and_each_set_up_command_says_what_it_does() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let readme = std::fs::read_to_string(root.join("README.md")).expect("README.md");
    let install = readme.find("\n## Install\n").expect("an Install section");
    let glance = readme.find("\n## At a glance\n").expect("examples");
    assert!(install < glance, "Install comes before the examples");
    for command in [
        "bash link/setup.sh ",
        "cargo install --locked --path .",
        "bash link/setup.sh && cargo run --release -- run -- ls -lR /usr/share/doc",
        "bash tests/release.sh",
    ] {
        let line = readme
            .lines()
            .find(|l| l.trim_start().starts_with(command))
            .unwrap_or_else(|| panic!("no line for {command}"));
        let said = line.split_once(" # ").map(|(_, s)| s.trim());
        assert!(
            said.is_some_and(|s| s.split_whitespace().count() >= 4),
            "{command}: what it does, on its line: {line:?}"
        );
    }
}

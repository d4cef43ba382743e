//! The CI story, end to end: a small C program built at 30 successive
//! commits of a git repository, its work (read from a file the commits
//! change) 3% more from commit 20 on; each commit recorded with `tally run
//! --record` (the commit and branch from git), then gated with `tally
//! history check`. The gate must pass at every commit before 20, fail at
//! commit 20 or 21, and its Markdown name the commit.
//!
//! The gated figure is exact: the program writes its work's thousandth in
//! bytes, so `write_call_bytes` moves by exactly 3% (counted work,
//! `--count`, is gated too where the binary has it). Time is recorded and
//! analysed beside it, gated at 50% so a noisy machine does not fail it.

mod common;

use std::path::Path;
use std::process::Output;

use common::{command, tally};

const PROGRAM: &str = r#"
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>
int main(void) {
    FILE *f = fopen("work.txt", "r");
    long n = 0;
    if (!f || fscanf(f, "%ld", &n) != 1) return 2;
    fclose(f);
    volatile unsigned long x = 1;
    for (long i = 0; i < n; i++) x = x * 6364136223846793005UL + 1442695040888963407UL;
    long bytes = n / 1000;
    char *buf = calloc(bytes, 1);
    if (!buf || write(1, buf, bytes) != bytes) return 3;
    return 0;
}
"#;

fn git(repo: &Path, args: &[&str]) -> Output {
    let out = command("git")
        .args(args)
        .current_dir(repo)
        .env("GIT_AUTHOR_NAME", "ci")
        .env("GIT_AUTHOR_EMAIL", "ci@example.com")
        .env("GIT_COMMITTER_NAME", "ci")
        .env("GIT_COMMITTER_EMAIL", "ci@example.com")
        .output()
        .expect("run git");
    assert!(
        out.status.success(),
        "git {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    out
}

fn text(o: &Output) -> String {
    format!(
        "{}{}",
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    )
}

#[test]
fn history_check_fails_at_the_commit_that_changed_the_work_and_names_it() {
    common::require!(common::tool("gcc", "gcc"));
    common::require!(common::tool("git", "git"));
    let dir = tempfile::tempdir().unwrap();
    let repo = dir.path().join("repo");
    std::fs::create_dir(&repo).unwrap();
    git(&repo, &["init", "-q", "-b", "main"]);
    std::fs::write(repo.join("prog.c"), PROGRAM).unwrap();
    std::fs::write(repo.join(".gitignore"), "prog\n").unwrap();
    let store = dir.path().join("history.db");
    let summary = dir.path().join("summary.md");
    let help = tally().args(["run", "--help"]).output().unwrap();
    let help = String::from_utf8_lossy(&help.stdout).into_owned();
    // `--count`, not `--counters`.
    let counted = help.match_indices("--count").any(|(at, m)| {
        !help[at + m.len()..].starts_with(|c: char| c.is_ascii_alphanumeric() || c == '-')
    });
    let mut first_failure = None;
    let mut hashes = Vec::new();
    for i in 1..=30 {
        let work = if i < 20 { 2_000_000 } else { 2_060_000 };
        std::fs::write(repo.join("work.txt"), format!("{work}\n")).unwrap();
        std::fs::write(repo.join("CHANGES"), format!("change {i}\n")).unwrap();
        git(&repo, &["add", "-A"]);
        git(&repo, &["commit", "-q", "-m", &format!("commit {i}")]);
        let head = git(&repo, &["rev-parse", "HEAD"]);
        hashes.push(String::from_utf8_lossy(&head.stdout).trim().to_string());
        let built = command("gcc")
            .args(["-O1", "-o", "prog", "prog.c"])
            .current_dir(&repo)
            .output()
            .unwrap();
        assert!(built.status.success(), "{}", text(&built));
        let mut run = tally();
        run.current_dir(&repo)
            .args(["run", "-n", "5", "--quiet-command", "--record"])
            .arg(&store);
        if counted {
            run.arg("--count");
        }
        let out = run.args(["--", "./prog"]).output().unwrap();
        assert!(out.status.success(), "commit {i}: {}", text(&out));
        assert!(
            text(&out).contains("recorded in"),
            "commit {i}: {}",
            text(&out)
        );
        let mut check = tally();
        check.args(["history", "check"]).arg(&store).args([
            "--command",
            "./prog",
            "--fail-on",
            "write_call_bytes=1%",
            "--fail-on",
            "wall=50%",
        ]);
        if counted {
            check.args(["--fail-on", "instructions=1%"]);
        }
        let out = check
            .arg("--export")
            .arg(format!("markdown={}", summary.display()))
            .output()
            .unwrap();
        let code = out.status.code();
        assert!(
            matches!(code, Some(0) | Some(3)),
            "commit {i}: {}",
            text(&out)
        );
        if i < 20 {
            assert_eq!(code, Some(0), "a false alarm at commit {i}: {}", text(&out));
        }
        if code == Some(3) && first_failure.is_none() {
            first_failure = Some(i);
            let md = std::fs::read_to_string(&summary).unwrap();
            let commit20 = &hashes[19][..10];
            assert!(
                md.starts_with("**tally history check: 1 regression**"),
                "{md}"
            );
            assert!(
                md.contains(commit20),
                "the Markdown names commit 20 ({commit20}):\n{md}"
            );
            assert!(
                md.contains("write_call_bytes") && md.contains("+3.00%"),
                "{md}"
            );
            assert!(
                md.contains("| figure | before | now | change | commits | verdict |"),
                "{md}"
            );
        }
    }
    let failed = first_failure.expect("history check never failed");
    assert!(
        (20..=21).contains(&failed),
        "first failed at commit {failed}, not 20 or 21"
    );
    // The series: 30 points, the change at commit 20, measured exactly.
    let out = tally()
        .args(["history"])
        .arg(&store)
        .args(["--format", "json", "--figure", "write_call_bytes"])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", text(&out));
    let doc: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let s = &doc["series"][0];
    assert_eq!(s["points"].as_array().unwrap().len(), 30);
    let cps = s["change_points"].as_array().unwrap();
    assert_eq!(cps.len(), 1, "{cps:?}");
    assert_eq!(cps[0]["index"], 19);
    assert_eq!(
        doc["commits"][cps[0]["first_after"].as_u64().unwrap() as usize]["commit"],
        hashes[19].as_str()
    );
    assert_eq!(
        doc["commits"][cps[0]["last_before"].as_u64().unwrap() as usize]["commit"],
        hashes[18].as_str()
    );
    assert!((cps[0]["change"].as_f64().unwrap() - 0.03).abs() < 1e-9);
    if !counted {
        eprintln!("recorded with time and write_call_bytes (exact); this tally has no --count");
    }
}

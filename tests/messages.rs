//! Messages that stuttered or left something out: each names the thing
//! once, the problem once, and the fix.

mod common;

use std::path::Path;

fn stderr_of(args: &[&str], dir: &Path) -> (Option<i32>, String) {
    let out = common::tally_std()
        .args(args)
        .current_dir(dir)
        .output()
        .expect("tally runs");
    (
        out.status.code(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// How often `word` occurs in `text`.
fn count(text: &str, word: &str) -> usize {
    text.matches(word).count()
}

#[test]
fn cp_of_a_fifo_named_the_fifo_twice() {
    // Was: "tally: cp: fifo: fifo: not a regular file (device, FIFO or
    // socket); not copied".
    let dir = tempfile::tempdir().expect("tempdir");
    tally::sys::ipc::mkfifo(&dir.path().join("fifo"), 0o600).expect("mkfifo");
    let (code, err) = stderr_of(&["cp", "fifo", "x"], dir.path());
    assert_eq!(code, Some(1), "{err}");
    assert_eq!(
        err.trim_end(),
        "tally: cp: fifo is a FIFO, not a regular file: not copied; cp copies regular files, \
         links and directories (-r)"
    );
    assert_eq!(count(&err, "fifo"), 1, "{err}");
    assert!(!dir.path().join("x").exists());
    // A message that does not name its file gets the name in front, once.
    let (_, err) = stderr_of(&["cp", "gone", "x"], dir.path());
    assert!(err.starts_with("tally: cp: gone: cannot read: "), "{err}");
    std::fs::create_dir(dir.path().join("d")).expect("mkdir");
    let (_, err) = stderr_of(&["cp", "d", "x"], dir.path());
    assert_eq!(
        err.trim_end(),
        "tally: cp: d: is a directory: add -r to copy it and what is under it"
    );
}

#[test]
fn cache_of_a_fifo_said_skipped_twice() {
    // Was: "tally: fifo: skipped: not a regular file (device, FIFO or
    // socket): skipped".
    let dir = tempfile::tempdir().expect("tempdir");
    tally::sys::ipc::mkfifo(&dir.path().join("fifo"), 0o600).expect("mkfifo");
    let (code, err) = stderr_of(&["cache", "fifo", "/dev/null"], dir.path());
    assert_eq!(code, Some(1), "{err}");
    assert!(
        err.contains(
            "tally: fifo: skipped: a FIFO, not a regular file: it has no page cache of its \
             own; name regular files, or directories with -r\n"
        ),
        "{err}"
    );
    assert!(
        err.contains("tally: /dev/null: skipped: a character device, not a regular file"),
        "{err}"
    );
    for line in err.lines().filter(|l| l.contains("skipped:")) {
        assert_eq!(count(line, "skipped"), 1, "{line}");
    }
}

#[test]
fn a_report_to_a_full_disk_names_what_could_not_be_written_and_the_fix() {
    // Was: "No space left on device" alone.
    if !Path::new("/dev/full").exists() {
        common::skip!("no /dev/full");
    }
    let dir = tempfile::tempdir().expect("tempdir");
    let (code, err) = stderr_of(
        &[
            "bench",
            "timer",
            "--quick",
            "--format",
            "json",
            "-o",
            "/dev/full",
        ],
        dir.path(),
    );
    assert_eq!(code, Some(1), "{err}");
    assert!(
        err.contains("cannot write the json report to /dev/full: No space left on device"),
        "{err}"
    );
    assert!(
        err.contains("free space there, or write elsewhere"),
        "the fix: {err}"
    );
    // A real full filesystem: a 64 KiB tmpfs in a private mount namespace,
    // filled; the report's file cannot even be begun there.
    if !common::is_root() || !common::have("unshare") {
        common::skip_part!("the full tmpfs part: needs root and unshare");
        return;
    }
    let script = r#"mount -t tmpfs -o size=64k tmpfs "$1" || exit 97
dd if=/dev/zero of="$1/fill" bs=4k count=100 2>/dev/null
shift; exec "$@""#;
    let mnt = dir.path().join("mnt");
    std::fs::create_dir(&mnt).expect("mkdir");
    let report = mnt.join("report.json");
    let out = common::command("unshare")
        .args(["-m", "--propagation", "private", "sh", "-c", script, "sh"])
        .arg(&mnt)
        .arg(common::tally_bin())
        .args(["bench", "timer", "--quick", "--format", "json", "-o"])
        .arg(&report)
        .output()
        .expect("unshare");
    if out.status.code() == Some(97) {
        common::skip_part!("the full tmpfs part: no tmpfs mount here");
        return;
    }
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(
        err.contains(&format!("{}", report.display())),
        "names the report: {err}"
    );
    assert!(err.contains("No space left on device"), "{err}");
    assert!(
        err.contains("its filesystem is full: free space there, or write elsewhere"),
        "{err}"
    );
    assert!(
        !err.contains("check the directory exists"),
        "a wrong fix: {err}"
    );
}

/// `-P x 1 9223372036854775807` said "not an integer" and `-D 1e308` "not
/// a number above 0": each now says what is wrong with the number.
#[test]
fn a_scan_bound_too_long_or_with_an_exponent_was_called_not_a_number() {
    let dir = tempfile::tempdir().expect("tempdir");
    let (code, err) = stderr_of(
        &["compare", "-P", "x", "1", "9223372036854775807", "true {x}"],
        dir.path(),
    );
    assert_eq!(code, Some(2), "{err}");
    assert!(err.contains("has more than 18 digits"), "{err}");
    let (code, err) = stderr_of(
        &["compare", "-P", "x", "1", "5", "-D", "1e308", "true {x}"],
        dir.path(),
    );
    assert_eq!(code, Some(2), "{err}");
    assert!(err.contains("is written with an exponent"), "{err}");
    let (code, err) = stderr_of(
        &["compare", "-P", "x", "1", "5", "-D", "0", "true {x}"],
        dir.path(),
    );
    assert_eq!(code, Some(2), "{err}");
    assert!(err.contains("\"0\" is not above 0"), "{err}");
}

/// `--fail-on wall=5%%` was taken as 5%: one `%` at most, in compare and
/// in bench.
#[test]
fn a_fail_on_limit_with_two_percent_signs_was_accepted() {
    let dir = tempfile::tempdir().expect("tempdir");
    let (code, err) = stderr_of(
        &[
            "compare",
            "-n",
            "2",
            "--fail-on",
            "wall=5%%",
            "true",
            "true",
        ],
        dir.path(),
    );
    assert_eq!(code, Some(2), "{err}");
    assert!(err.contains("\"5%%\" is not a percentage"), "{err}");
    let (code, err) = stderr_of(&["bench", "--fail-on", "syscall.*=5%%"], dir.path());
    assert_eq!(code, Some(2), "{err}");
    assert!(err.contains("\"5%%\" is not a percentage"), "{err}");
}

/// `bench --fail-on '=5%'` suggested compare's `wall=5%`, which names no
/// benchmark's figure.
#[test]
fn bench_fail_on_without_a_figure_suggested_a_compare_rule() {
    let dir = tempfile::tempdir().expect("tempdir");
    let (code, err) = stderr_of(&["bench", "--fail-on", "=5%"], dir.path());
    assert_eq!(code, Some(2), "{err}");
    assert!(
        err.contains("names no figure: give e.g. syscall.*=5%"),
        "{err}"
    );
    assert!(!err.contains("wall=5%"), "{err}");
}

/// A compare baseline whose `schema_version` is given twice, negative or
/// a string was called "a JSON document of another kind": it is a
/// damaged baseline, and the message names the field.
#[test]
fn a_baseline_schema_version_of_the_wrong_kind_was_called_another_document() {
    let dir = tempfile::tempdir().expect("tempdir");
    let base = dir.path().join("base.json");
    let (code, err) = stderr_of(
        &[
            "compare",
            "-n",
            "2",
            "--save-baseline",
            base.to_str().unwrap(),
            "true",
        ],
        dir.path(),
    );
    assert_eq!(code, Some(0), "{err}");
    let text = std::fs::read_to_string(&base).expect("baseline");
    let cases = [
        (
            "\"schema_version\": -1",
            "schema_version is -1, not a whole number",
        ),
        (
            "\"schema_version\": \"1\"",
            "schema_version is \"1\", not a whole number",
        ),
        (
            "\"schema_version\": 1, \"schema_version\": 1",
            "duplicate field `schema_version`",
        ),
    ];
    for (field, said) in cases {
        let bad = dir.path().join("bad.json");
        std::fs::write(&bad, text.replacen("\"schema_version\": 2", field, 1)).unwrap();
        let (code, err) = stderr_of(
            &["compare", "-n", "2", "--baseline", "bad.json", "true"],
            dir.path(),
        );
        assert_eq!(code, Some(1), "{field}: {err}");
        assert!(
            err.contains("is corrupt") && err.contains(said),
            "{field}: {err}"
        );
        assert!(!err.contains("another kind"), "{field}: {err}");
    }
}

/// Runs `tally serve` on a config that must be refused; its stderr.
fn serve_refuses(flag: &str, name: &str, text: &str) -> String {
    let dir = tempfile::tempdir().expect("tempdir");
    std::fs::write(dir.path().join(name), text).unwrap();
    let child = common::tally_std()
        .args(["serve", "--listen", "127.0.0.1:0", flag, name])
        .current_dir(dir.path())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("tally runs");
    let out = common::wait_or_kill(child, std::time::Duration::from_secs(20));
    let err = String::from_utf8_lossy(&out.stderr).into_owned();
    assert_eq!(out.status.code(), Some(1), "{text}: {err}");
    err
}

/// A web config's duplicate key said "set DuplicateKeyPolicy in Options",
/// an option of the YAML parser, not of the file.
#[test]
fn a_web_config_duplicate_key_named_the_parsers_option() {
    let err = serve_refuses(
        "--web-config",
        "web.yml",
        "basic_auth_users:\n  a: x\n  a: y\n",
    );
    assert!(err.contains("web.yml:3: the key a is given twice"), "{err}");
    assert!(!err.contains("DuplicateKeyPolicy"), "{err}");
    // serve's TOML said "duplicate key" without naming it.
    let err = serve_refuses("--config", "serve.toml", "[mem]\ntop = 5\ntop = 6\n");
    assert!(
        err.contains("serve.toml:3: the key top is given twice; keep one"),
        "{err}"
    );
}

/// A web config value of the wrong kind (a number where a mapping goes,
/// a list where a string goes) said the parser's "expected mapping start"
/// or "expected string scalar", naming no field: each names the field's
/// dotted path and what it must be.
#[test]
fn a_web_config_value_of_the_wrong_kind_named_no_field() {
    for (text, want) in [
        (
            "tls_server_config: 5\n",
            "web.yml:1: tls_server_config must be a mapping",
        ),
        (
            "http_server_config:\n  headers: 3\n",
            "web.yml:2: http_server_config.headers must be a mapping",
        ),
        (
            "basic_auth_users:\n  bob: [1]\n",
            "web.yml:2: basic_auth_users.bob must be a string",
        ),
        (
            "- a\n- b\n",
            "web.yml:1: the file must be a mapping of tls_server_config",
        ),
    ] {
        let err = serve_refuses("--web-config", "web.yml", text);
        assert!(err.contains(want), "{text:?}: {err}");
        assert!(!err.contains("expected mapping start"), "{err}");
        assert!(!err.contains("scalar"), "{err}");
    }
}

/// `rate_limit.burst` of `-1s` said "invalid i64", of 2^64 the same; the
/// serve config's limits of 2^64 said "expected i64": each names the
/// field and its range.
#[test]
fn a_number_out_of_the_parsers_range_said_invalid_i64() {
    for burst in ["-1s", "18446744073709551616"] {
        let err = serve_refuses(
            "--web-config",
            "web.yml",
            &format!("rate_limit:\n  interval: 1s\n  burst: {burst}\n"),
        );
        assert!(
            err.contains("web.yml:3: rate_limit.burst must be between 0 and 4294967295"),
            "{err}"
        );
        assert!(!err.contains("i64"), "{err}");
    }
    let err = serve_refuses(
        "--config",
        "serve.toml",
        "[limits]\nmax_connections = 18446744073709551616\n",
    );
    assert!(
        err.contains(
            "serve.toml:2: limits.max_connections must be between 2 and 10000, not 18446744073709551616"
        ),
        "{err}"
    );
    assert!(!err.contains("i64"), "{err}");
}

/// `min_interval = 1e308` printed the number in 300 digits.
#[test]
fn a_huge_min_interval_was_printed_in_300_digits() {
    let err = serve_refuses("--config", "serve.toml", "min_interval = 1e308\n");
    assert!(
        err.contains("min_interval must be between 0 and 3600 seconds, not 1e308"),
        "{err}"
    );
    assert!(err.len() < 200, "{err}");
}

/// `cp` of a socket said "No such device or address" (the open's ENXIO):
/// it says what the file is, as for a FIFO.
#[test]
fn cp_of_a_socket_said_no_such_device() {
    let dir = tempfile::tempdir().expect("tempdir");
    let _socket = std::os::unix::net::UnixListener::bind(dir.path().join("sock")).expect("bind");
    let (code, err) = stderr_of(&["cp", "sock", "copy"], dir.path());
    assert_eq!(code, Some(1), "{err}");
    assert!(
        err.contains("sock is a socket, not a regular file"),
        "{err}"
    );
    assert!(!err.contains("No such device"), "{err}");
    assert!(!dir.path().join("copy").exists());
}

/// Runs `tally ARGS` from `sh` with `redirect` (`<&-`, `>&-`); the exit
/// status and stderr.
fn through_sh(args: &str, redirect: &str, dir: &Path) -> (Option<i32>, String) {
    let out = common::command("sh")
        .arg("-c")
        .arg(format!("exec \"$0\" {args} {redirect}"))
        .arg(common::tally_bin())
        .current_dir(dir)
        .output()
        .expect("sh runs");
    (
        out.status.code(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// `cache -` with stdin empty or closed said "no paths given … or `-`",
/// though `-` was given.
#[test]
fn cache_dash_with_an_empty_stdin_said_no_paths_given() {
    let dir = tempfile::tempdir().expect("tempdir");
    for redirect in ["</dev/null", "<&-"] {
        let (code, err) = through_sh("cache -", redirect, dir.path());
        assert_eq!(code, Some(1), "{redirect}: {err}");
        assert!(
            err.contains("`-` read no path from stdin (it was empty or closed)"),
            "{redirect}: {err}"
        );
    }
}

/// `bench --list >&-` and `man >&-` exited 0 with their output lost.
#[test]
fn a_listing_to_a_closed_stdout_exited_0() {
    let dir = tempfile::tempdir().expect("tempdir");
    for args in ["bench --list", "man", "completions bash"] {
        let (code, err) = through_sh(args, ">&-", dir.path());
        assert_eq!(code, Some(1), "{args}: {err}");
        assert!(err.contains("stdout is closed"), "{args}: {err}");
    }
}

/// An empty bench baseline (no benchmark) said "figure ids look like ;"
/// for a `--fail-on` glob: it is refused as corrupt, naming the field.
#[test]
fn an_empty_bench_baseline_listed_no_figure_ids() {
    let dir = tempfile::tempdir().expect("tempdir");
    let out = common::tally_std()
        .args(["bench", "timer", "--format", "json", "-o", "old.json"])
        .current_dir(dir.path())
        .output()
        .expect("tally runs");
    assert!(out.status.success(), "{out:?}");
    let text = std::fs::read_to_string(dir.path().join("old.json")).unwrap();
    let mut v: serde_json::Value = serde_json::from_str(&text).unwrap();
    v["benchmarks"] = serde_json::json!([]);
    std::fs::write(dir.path().join("empty.json"), v.to_string()).unwrap();
    let (code, err) = stderr_of(
        &[
            "bench",
            "--baseline",
            "empty.json",
            "--fail-on",
            "timer.*=5%",
        ],
        dir.path(),
    );
    assert_eq!(code, Some(1), "{err}");
    assert!(
        err.contains("empty.json is corrupt: it holds no benchmark (benchmarks is empty)"),
        "{err}"
    );
    assert!(!err.contains("look like"), "{err}");
}

/// Regression: `run --cold` as a user the kernel would not tell a file's
/// residency said "0 of 0 cached bytes left the cache", a made-up figure.
/// Now the eviction is said and the amount is called unknown, with the
/// file's reason below.
#[test]
fn run_cold_as_nobody_said_0_of_0_cached_bytes_left_when_residency_was_unknown() {
    use std::os::unix::fs::PermissionsExt;
    common::require!(common::can_switch_users());
    let dir = tempfile::tempdir().expect("tempdir");
    std::fs::set_permissions(dir.path(), std::fs::Permissions::from_mode(0o755)).unwrap();
    // Root's, readable by all: nobody may open it but not learn its pages.
    let file = dir.path().join("data");
    std::fs::write(&file, vec![1u8; 1 << 20]).unwrap();
    std::fs::set_permissions(&file, std::fs::Permissions::from_mode(0o644)).unwrap();
    let bin = common::tally_for_others();
    let out = common::command("setpriv")
        .args(["--reuid=65534", "--regid=65534", "--clear-groups", "--"])
        .arg(&bin)
        .arg("run")
        .arg("--cold")
        .arg(&file)
        .args(["--", "true"])
        .current_dir("/")
        .output()
        .expect("setpriv runs");
    let said = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{said}");
    let joined = said.replace("\ntally:   ", " ");
    assert!(!joined.contains("0 of 0 cached bytes"), "{said}");
    assert!(
        joined.contains("tally: cold: 1 file (1.0 MiB) evicted in ")
            && joined.contains("how much left the cache is unknown"),
        "{said}"
    );
    assert!(joined.contains("residency unknown: "), "{said}");
}

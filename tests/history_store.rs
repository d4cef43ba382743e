//! The history store, the same tests against a SQLite file and against a
//! real PostgreSQL server (started per test in a scratch directory, on a
//! free port, as user 65534 when run as root; see tests/history_common):
//! recording from run, compare and bench, importing reports, baselines
//! and CSV, two writers at once losing nothing, a hostile or damaged store
//! refused naming the table and field, a read-only store said before any
//! run, and a result kept in a side file when the store fails after the
//! runs.

mod common;
mod history_common;

use std::path::Path;
use std::process::Output;

use common::{command, tally};
use history_common::Where;
use serde_json::Value;

both_stores!(
    records_from_run_compare_and_bench,
    imports_reports_baselines_and_csv_all_or_nothing,
    two_writers_at_once_lose_nothing,
    absurd_values_are_refused_naming_table_and_field,
    foreign_objects_are_refused,
    schema_versions_are_checked,
    a_store_that_fails_after_the_runs_gets_a_side_file,
    filters_select_and_machines_stay_apart,
    counted_compare_gives_exact_points_and_is_gated,
    long_histories_are_packed_and_read_whole,
    an_older_store_is_stepped_up_by_a_write_not_a_read,
);

fn text(o: &Output) -> String {
    format!(
        "{}{}",
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    )
}

/// `tally history STORE --format json ARGS`, parsed.
fn history_json(w: &Where, args: &[&str]) -> Value {
    let out = tally()
        .args(["history", &w.store(), "--format", "json"])
        .args(args)
        .output()
        .expect("run tally history");
    assert!(out.status.success(), "{}", text(&out));
    serde_json::from_slice(&out.stdout).expect("history JSON")
}

/// The series of `command` and `figure` in a history document.
fn series<'a>(doc: &'a Value, command: &str, figure: &str) -> Vec<&'a Value> {
    doc["series"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|s| s["command"] == command && s["figure"] == figure)
        .collect()
}

/// The commits of a series' points.
fn commits_of(doc: &Value, s: &Value) -> Vec<String> {
    s["points"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| {
            doc["commits"][p["point"].as_u64().unwrap() as usize]["commit"]
                .as_str()
                .unwrap_or("")
                .to_string()
        })
        .collect()
}

/// Runs `sql` (with `{p}` for the table prefix) on the store directly.
fn exec(w: &Where, sql: &str) {
    match w {
        Where::Sqlite(_) => {
            let c = rusqlite::Connection::open(w.store()).unwrap();
            c.execute_batch(&sql.replace("{p}", "").replace("chr(", "char("))
                .unwrap();
        }
        Where::Postgres(pg) => {
            pg.client()
                .batch_execute(&sql.replace("{p}", "tally_history."))
                .unwrap();
        }
    }
}

/// A number from the store, by `sql`.
fn scalar(w: &Where, sql: &str) -> i64 {
    match w {
        Where::Sqlite(_) => {
            let c = rusqlite::Connection::open(w.store()).unwrap();
            c.query_row(&sql.replace("{p}", ""), [], |r| r.get(0))
                .unwrap()
        }
        Where::Postgres(pg) => pg
            .client()
            .query_one(&sql.replace("{p}", "tally_history."), &[])
            .unwrap()
            .get(0),
    }
}

/// Empties the store (for the next spoiled copy).
fn reset(w: &Where) {
    match w {
        Where::Sqlite(_) => {
            for suffix in ["", "-wal", "-shm"] {
                let _ = std::fs::remove_file(format!("{}{suffix}", w.store()));
            }
        }
        Where::Postgres(pg) => pg
            .client()
            .batch_execute("DROP SCHEMA IF EXISTS tally_history CASCADE")
            .unwrap(),
    }
}

fn csv(dir: &Path, name: &str, rows: &[(&str, f64)]) -> std::path::PathBuf {
    let mut t = String::from("time,commit,branch,wall_ns,write_call_bytes\n");
    for (i, (commit, v)) in rows.iter().enumerate() {
        // Seconds since 1970: a day apart, from 2026-11-01.
        let when = 1_793_491_200 + 86_400 * i as i64;
        t.push_str(&format!("{when},{commit},main,{v},{}\n", 8000 + i));
    }
    let p = dir.join(name);
    std::fs::write(&p, t).unwrap();
    p
}

/// `tally history STORE` refuses the store (exit 1), saying `want`.
fn refused(w: &Where, want: &str) {
    let out = tally().args(["history", &w.store()]).output().unwrap();
    assert_eq!(out.status.code(), Some(1), "{}", text(&out));
    assert!(text(&out).contains(want), "{want}: {}", text(&out));
}

/// `tally history import ARGS STORE FILE`, which must succeed.
fn import(w: &Where, args: &[&str], file: &Path) {
    let out = tally()
        .args(["history", "import"])
        .args(args)
        .arg(w.store())
        .arg(file)
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", text(&out));
}

/// A CSV of `n` points of `/bin/true`'s wall time, a minute apart from
/// 2026-11-01: `old-0`, `old-1`, …, 10 ms, 11 ms from point `step` on.
fn long_csv(dir: &Path, n: usize, step: usize) -> std::path::PathBuf {
    let mut t = String::from("time,commit,wall_ns\n");
    for i in 0..n {
        let v = if i < step { 10e6 } else { 11e6 }
            * (1.0 + 0.01 * ((i * 7919 % 13) as f64 - 6.0) / 6.0);
        t.push_str(&format!("{},old-{i},{v}\n", 1_793_491_200 + 60 * i));
    }
    let p = dir.join("long.csv");
    std::fs::write(&p, t).unwrap();
    p
}

/// The store's packs: how many, and meta's packed_through.
fn packed(w: &Where) -> (i64, i64) {
    (
        scalar(w, "SELECT COUNT(*) FROM {p}packs"),
        scalar(
            w,
            "SELECT CAST(value AS BIGINT) FROM {p}meta WHERE key = 'packed_through'",
        ),
    )
}

fn long_histories_are_packed_and_read_whole(w: &Where) {
    // 4,096 points make a pack (docs/history.md); 4,300 make one and a
    // tail of rows.
    let table = long_csv(w.scratch(), 4300, 3000);
    import(w, &["--as-command", "app"], &table);
    assert_eq!(packed(w), (1, 4096));
    let doc = history_json(w, &[]);
    let s = series(&doc, "app", "wall_ns");
    assert_eq!(s.len(), 1);
    let mut got = commits_of(&doc, s[0]);
    assert_eq!(got.len(), 4300, "every point once");
    got.sort();
    got.dedup();
    assert_eq!(got.len(), 4300, "every point once");
    let cps = s[0]["change_points"].as_array().unwrap();
    assert_eq!(cps.len(), 1, "{cps:?}");
    let after = cps[0]["first_after"].as_u64().unwrap() as usize;
    assert_eq!(doc["commits"][after]["commit"], "old-3000", "{cps:?}");
    // --since inside the pack: the points after it, from pack and rows.
    let since = history_json(w, &["--since", "2026-11-03T20:00:00Z"]);
    let n = commits_of(&since, series(&since, "app", "wall_ns")[0]).len();
    assert_eq!(n, 4300 - 2 * 1440 - 1200, "points from 2026-11-03 20:00 on");
    // A damaged pack is refused naming the table, the field and the pack.
    exec(w, "UPDATE {p}packs SET count = count + 1");
    refused(
        w,
        "table packs: field count of the pack of series 1 from point 1 is 4097, not 1 to 4096",
    );
    exec(w, "UPDATE {p}packs SET count = count - 1");
    // A pack too large to be tally's is refused before it is read.
    exec(
        w,
        match w {
            Where::Sqlite(_) => "UPDATE packs SET data = zeroblob(40000000)",
            Where::Postgres(_) => {
                "UPDATE {p}packs SET data = convert_to(repeat('a', 40000000), 'UTF8')"
            }
        },
    );
    refused(
        w,
        "table packs: field data of the pack of series 1 from point 1 is 40000000 bytes, over 37748736",
    );
    // (meta is read before any pack: the next checks reach it.)
    exec(
        w,
        "UPDATE {p}meta SET value = '9223372036854775807' WHERE key = 'packed_through'",
    );
    refused(
        w,
        "table meta: field value of key packed_through is 9223372036854775807, beyond the newest point (4300)",
    );
    exec(
        w,
        "UPDATE {p}meta SET value = '1e9' WHERE key = 'packed_through'",
    );
    refused(
        w,
        "table meta: field value of key packed_through is \"1e9\", not a point id",
    );
}

fn an_older_store_is_stepped_up_by_a_write_not_a_read(w: &Where) {
    let table = csv(w.scratch(), "app.csv", &[("c1", 100.0), ("c2", 101.0)]);
    import(w, &[], &table);
    // As version 1 made it: no packs.
    exec(
        w,
        "DROP TABLE {p}packs; DELETE FROM {p}meta WHERE key = 'packed_through'; \
         UPDATE {p}meta SET value = '1' WHERE key = 'schema_version'",
    );
    refused(
        w,
        "its schema is older than this tally's: record into it once",
    );
    let out = tally()
        .args(["history", "import", &w.store()])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", text(&out));
    assert!(
        text(&out)
            .contains("a store of this tally's schema (version 2); no files, nothing imported"),
        "{}",
        text(&out)
    );
    assert_eq!(
        scalar(
            w,
            "SELECT CAST(value AS BIGINT) FROM {p}meta WHERE key = 'schema_version'"
        ),
        2
    );
    assert_eq!(packed(w), (0, 0));
    let doc = history_json(w, &[]);
    assert_eq!(
        commits_of(&doc, series(&doc, "app", "wall_ns")[0]),
        ["c1", "c2"]
    );
}

fn records_from_run_compare_and_bench(w: &Where) {
    let store = w.store();
    let out = tally()
        .args([
            "run",
            "-n",
            "3",
            "--record",
            &store,
            "--commit",
            "aaa111",
            "--branch",
            "main",
            "--",
            "/bin/true",
        ])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", text(&out));
    assert!(text(&out).contains("tally: recorded in "), "{}", text(&out));
    let report = w.scratch().join("c.json");
    let out = tally()
        .args([
            "compare", "-N", "-n", "3", "--record", &store, "--commit", "bbb222", "--branch",
            "main",
        ])
        .args(["--format", "json", "-o"])
        .arg(&report)
        .args(["/bin/true", "head -c 1000 /dev/zero"])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", text(&out));
    let out = tally()
        .args([
            "bench",
            "--quick",
            "timer",
            "--record",
            &store,
            "--commit",
            "ccc333",
            // Named: else the branch of the checkout the tests run in
            // (main in CI's clone) would be taken.
            "--branch",
            "release",
            "-o",
            "/dev/null",
        ])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", text(&out));
    let doc = history_json(w, &[]);
    let run = series(&doc, "/bin/true", "wall_ns");
    let by_tool = |tool: &str| {
        run.iter()
            .find(|s| s["tool"] == tool)
            .copied()
            .unwrap_or_else(|| panic!("no {tool} series"))
    };
    assert_eq!(commits_of(&doc, by_tool("run")), ["aaa111"]);
    assert_eq!(commits_of(&doc, by_tool("compare")), ["bbb222"]);
    // Every figure compare's report lists is a series, by its own name.
    let rep: Value = serde_json::from_slice(&std::fs::read(&report).unwrap()).unwrap();
    for c in rep["commands"].as_array().unwrap() {
        for f in c["summary"].as_array().unwrap() {
            let name = c["name"].as_str().unwrap();
            let figure = f["figure"].as_str().unwrap();
            let s = series(&doc, name, figure);
            let s = s
                .iter()
                .find(|s| s["tool"] == "compare")
                .unwrap_or_else(|| panic!("{name} {figure} not recorded"));
            assert_eq!(
                s["points"][0]["n"].as_u64(),
                f["count"].as_u64(),
                "{name} {figure}"
            );
        }
    }
    let bench: Vec<&Value> = doc["series"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|s| s["tool"] == "bench")
        .collect();
    assert!(
        !bench.is_empty() && bench.iter().all(|s| s["command"] == "bench"),
        "{bench:?}"
    );
    // The samples are kept with each summary: 3 runs of /bin/true.
    let kept = scalar(
        w,
        "SELECT COUNT(*) FROM {p}results WHERE samples IS NOT NULL AND n = 3",
    );
    assert!(kept >= 19, "{kept} results with their 3 samples");
    let branch = scalar(w, "SELECT COUNT(*) FROM {p}points WHERE branch = 'main'");
    assert_eq!(branch, 2);
}

fn imports_reports_baselines_and_csv_all_or_nothing(w: &Where) {
    let d = w.scratch();
    let store = w.store();
    let report = d.join("rep.json");
    let baseline = d.join("base.json");
    let out = tally()
        .args(["compare", "-N", "-n", "3", "--format", "json", "-o"])
        .arg(&report)
        .arg("--save-baseline")
        .arg(&baseline)
        .args([
            "--name",
            "true",
            "--name",
            "head",
            "/bin/true",
            "head -c 10 /dev/zero",
        ])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", text(&out));
    // A report with a figure no list in tally names: taken by its name.
    let counted = d.join("counted.json");
    std::fs::write(
        &counted,
        serde_json::json!({
            "tally_version": "0.1.0", "timestamp": "2026-10-01T00:00:00Z", "schema_version": 2,
            "commands": [{"name": "app", "command": "./app",
                "runs": [{"counted": {"instructions": 1000}}, {"counted": {"instructions": 1000}}],
                "summary": [{"figure": "instructions", "count": 2, "min": 1000.0, "median": 1000.0,
                             "max": 1000.0, "mad": 0.0}]}],
            "counting": {"source": "cachegrind", "version": "3.19.0"}
        })
        .to_string(),
    )
    .unwrap();
    let table = csv(d, "app.csv", &[("c1", 100.0), ("c2", 101.0), ("c3", 99.0)]);
    let out = tally()
        .args(["history", "import", &store])
        .args([&report, &baseline, &counted, &table])
        .args(["--commit", "old1", "--this-machine"])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", text(&out));
    assert!(text(&out).contains("6 points"), "{}", text(&out));
    let doc = history_json(w, &[]);
    assert_eq!(
        series(&doc, "true", "wall_ns").len(),
        1,
        "report and baseline on one machine, one tool"
    );
    assert_eq!(
        series(&doc, "true", "wall_ns")[0]["points"]
            .as_array()
            .unwrap()
            .len(),
        2
    );
    let ins = series(&doc, "app", "instructions");
    assert_eq!(ins.len(), 1);
    let m = doc["machines"]
        .as_array()
        .unwrap()
        .iter()
        .find(|m| m["fingerprint"] == ins[0]["machine"])
        .unwrap();
    assert_eq!(m["counting"], "cachegrind");
    assert_eq!(commits_of(&doc, ins[0]), ["old1"]);
    assert_eq!(
        commits_of(&doc, series(&doc, "app", "wall_ns")[0]),
        ["c1", "c2", "c3"]
    );
    // All or nothing: a bad file among good ones imports none of them.
    let points = scalar(w, "SELECT COUNT(*) FROM {p}points");
    let bad = d.join("bad.csv");
    std::fs::write(&bad, "time,wall_ns\n2026-11-01,12\n2026-11-02,twelve\n").unwrap();
    let out = tally()
        .args(["history", "import", &store])
        .arg(&table)
        .arg(&bad)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1), "{}", text(&out));
    assert!(
        text(&out).contains("bad.csv: line 3: wall_ns is twelve, not a number"),
        "{}",
        text(&out)
    );
    assert_eq!(scalar(w, "SELECT COUNT(*) FROM {p}points"), points);
}

fn two_writers_at_once_lose_nothing(w: &Where) {
    let store = w.store();
    // Made first, so both writers find it (making it at once is tested by
    // the writers racing in the second half). 4,046 points before them:
    // the 50th of their 100 recordings makes the first pack, while the
    // other writer records.
    let table = long_csv(w.scratch(), 4046, 4046);
    import(w, &["--as-command", "/bin/true"], &table);
    assert_eq!(packed(w), (0, 0));
    let out = tally()
        .args([
            "run",
            "--record",
            &store,
            "--commit",
            "first",
            "--",
            "/bin/true",
        ])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", text(&out));
    let writer = |who: &'static str| {
        let store = store.clone();
        std::thread::spawn(move || {
            for i in 0..50 {
                let out = tally()
                    .args([
                        "run",
                        "--record",
                        &store,
                        "--commit",
                        &format!("{who}-{i}"),
                        "--",
                        "/bin/true",
                    ])
                    .output()
                    .unwrap();
                assert!(out.status.success(), "{who} {i}: {}", text(&out));
                assert!(
                    text(&out).contains("recorded in"),
                    "{who} {i}: {}",
                    text(&out)
                );
            }
        })
    };
    let (a, b) = (writer("a"), writer("b"));
    a.join().unwrap();
    b.join().unwrap();
    // The imported points are of another machine: --all-machines reads
    // them in the one series.
    let doc = history_json(
        w,
        &[
            "--command",
            "/bin/true",
            "--figure",
            "wall",
            "--all-machines",
        ],
    );
    let s = series(&doc, "/bin/true", "wall_ns");
    assert_eq!(s.len(), 1);
    let mut got = commits_of(&doc, s[0]);
    got.sort();
    let mut want: Vec<String> = ["a", "b"]
        .iter()
        .flat_map(|w| (0..50).map(move |i| format!("{w}-{i}")))
        .collect();
    want.push("first".into());
    want.extend((0..4046).map(|i| format!("old-{i}")));
    want.sort();
    assert_eq!(got, want, "every recording once");
    assert_eq!(scalar(w, "SELECT COUNT(*) FROM {p}points"), 4147);
    let (packs, through) = packed(w);
    assert_eq!(through, 4096);
    assert!(packs >= 1, "{packs} packs");
}

/// Spoils a fresh store with `sql` and checks `tally history` refuses it
/// saying `want`.
fn refused_after(w: &Where, sql: &str, want: &str) {
    reset(w);
    let table = csv(
        w.scratch(),
        "app.csv",
        &[("c1", 100.0), ("c2", 101.0), ("c3", 99.0)],
    );
    import(w, &[], &table);
    exec(w, sql);
    refused(w, want);
}

fn absurd_values_are_refused_naming_table_and_field(w: &Where) {
    refused_after(
        w,
        "UPDATE {p}results SET mad = -1 WHERE point_id = 2",
        "table results: field mad of point 2 of series",
    );
    refused_after(
        w,
        "UPDATE {p}results SET median = 1e300 WHERE point_id = 1",
        "field median of point 1 of series",
    );
    refused_after(
        w,
        "UPDATE {p}results SET n = 0",
        "field n of point 1 of series",
    );
    refused_after(
        w,
        "UPDATE {p}points SET recorded_at_ns = 5 WHERE id = 3",
        "table points: field recorded_at_ns of point 3 is 5",
    );
    refused_after(
        w,
        "UPDATE {p}points SET commit_id = 'a' || chr(27) || '[2J' WHERE id = 1",
        "table points: field commit_id of point 1 holds control characters (\"a\\x1b[2J\")",
    );
    refused_after(
        w,
        "UPDATE {p}points SET dirty = 7 WHERE id = 2",
        "table points: field dirty of point 2 is 7",
    );
    refused_after(
        w,
        "UPDATE {p}machines SET cpus = -2",
        "table machines: field cpus of machine 1 is -2",
    );
    refused_after(
        w,
        "DELETE FROM {p}meta WHERE key = 'format'",
        "table meta: field value of key format is missing",
    );
    if matches!(w, Where::Sqlite(_)) {
        // SQLite keeps what it is given: a text where a number belongs.
        refused_after(
            w,
            "UPDATE results SET median = 'fast' WHERE point_id = 1",
            "table results: field median holds text",
        );
    }
}

fn foreign_objects_are_refused(w: &Where) {
    refused_after(
        w,
        "CREATE TABLE {p}evil (x INTEGER)",
        "table evil is not tally's",
    );
    refused_after(
        w,
        "CREATE VIEW {p}seen AS SELECT 1 AS one",
        "view seen is not tally's",
    );
    refused_after(
        w,
        "ALTER TABLE {p}points ADD COLUMN note TEXT",
        "table points: field note is not tally's",
    );
    let trigger = match w {
        Where::Sqlite(_) => "CREATE TRIGGER grab AFTER INSERT ON points BEGIN DELETE FROM results; END".to_string(),
        Where::Postgres(_) => "CREATE FUNCTION {p}grab() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN RETURN NULL; END $$; \
             CREATE TRIGGER grab AFTER INSERT ON {p}points FOR EACH ROW EXECUTE FUNCTION {p}grab()"
            .to_string(),
    };
    if let Where::Postgres(_) = w {
        refused_after(
            w,
            "ALTER TABLE {p}results ALTER COLUMN median TYPE text",
            "table results: field median is of type text, not double precision",
        );
    }
    refused_after(w, &trigger, "is not tally's");
    // And --record refuses it before the command runs.
    let marker = w.scratch().join("ran");
    let out = tally()
        .args(["run", "--record", &w.store(), "--", "touch"])
        .arg(&marker)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(125), "{}", text(&out));
    assert!(text(&out).contains("is not tally's"), "{}", text(&out));
    assert!(!marker.exists(), "the command ran");
}

fn schema_versions_are_checked(w: &Where) {
    refused_after(
        w,
        "UPDATE {p}meta SET value = '3' WHERE key = 'schema_version'",
        "its schema is version 3, newer than this tally's (2): use a newer tally",
    );
    refused_after(
        w,
        "UPDATE {p}meta SET value = 'banana' WHERE key = 'schema_version'",
        "table meta: field value of key schema_version is not a version",
    );
    refused_after(
        w,
        "UPDATE {p}meta SET value = 'otava' WHERE key = 'format'",
        "not a tally history store: table meta: field value of key format is \"otava\", not tally-history",
    );
}

fn a_store_that_fails_after_the_runs_gets_a_side_file(w: &Where) {
    let store = w.store();
    let out = tally()
        .args([
            "run",
            "--record",
            &store,
            "--commit",
            "before",
            "--",
            "/bin/true",
        ])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", text(&out));
    // The measured command makes the store fail: it stops the server, or
    // holds SQLite's write lock past the busy timeout.
    let mut cmd = tally();
    cmd.current_dir(w.scratch()).args([
        "run",
        "--record",
        &store,
        "--commit",
        "lost-and-found",
        "--",
    ]);
    match w {
        Where::Postgres(pg) => {
            cmd.args(pg.stop_command());
        }
        Where::Sqlite(_) => {
            // A writer that holds the lock (for 4 s) from before the
            // command ends until after tally's wait (0.3 s) is over.
            let locked = w.scratch().join("locked");
            let script = w.scratch().join("lock.py");
            std::fs::write(
                &script,
                "import sqlite3, sys, time\n\
                 c = sqlite3.connect(sys.argv[1], isolation_level=None)\n\
                 c.execute('BEGIN IMMEDIATE')\n\
                 open(sys.argv[2], 'w').close()\n\
                 time.sleep(4)\n",
            )
            .unwrap();
            let wait = "python3 \"$1\" \"$2\" \"$3\" & i=0; \
                        while [ ! -e \"$3\" ] && [ $i -lt 200 ]; do sleep 0.05; i=$((i+1)); done";
            cmd.env("TALLY_HISTORY_BUSY_MS", "300")
                .args(["sh", "-c", wait, "sh"])
                .arg(&script)
                .arg(&store)
                .arg(&locked);
        }
    }
    let out = cmd.output().unwrap();
    let said = text(&out);
    assert!(out.status.success(), "{said}");
    let line = said
        .lines()
        .find(|l| l.contains("record it later with: tally history import"))
        .unwrap_or_else(|| panic!("no side file said: {said}"));
    let import = line.split("record it later with: ").nth(1).unwrap();
    let side = import.split_whitespace().last().unwrap();
    let side = if Path::new(side).is_absolute() {
        Path::new(side).to_path_buf()
    } else {
        w.scratch().join(side)
    };
    assert!(side.is_file(), "{}", side.display());
    if let Where::Postgres(pg) = w {
        assert!(!said.contains("s3cret"), "{said}");
        pg.start_again().unwrap();
    }
    let out = tally()
        .current_dir(w.scratch())
        .args(["history", "import", &store])
        .arg(&side)
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", text(&out));
    // The point the store missed is there now, with its commit.
    let doc = history_json(w, &[]);
    let commits: Vec<&str> = doc["commits"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|c| c["commit"].as_str())
        .collect();
    assert_eq!(
        commits.iter().filter(|c| **c == "lost-and-found").count(),
        1,
        "{commits:?}"
    );
    assert_eq!(
        commits.iter().filter(|c| **c == "before").count(),
        1,
        "{commits:?}"
    );
    assert_eq!(scalar(w, "SELECT COUNT(*) FROM {p}points"), 2);
}

fn filters_select_and_machines_stay_apart(w: &Where) {
    let d = w.scratch();
    let base = |name: &str, cpu: &str, when: &str, v: f64| {
        let p = d.join(name);
        std::fs::write(
            &p,
            serde_json::json!({
                "tally_version": "0.1.0", "timestamp": when, "hostname": "h", "kernel": "6.1",
                "format": "tally-compare-baseline", "schema_version": 1,
                "machine": {"cpu_model": cpu, "cpus": 4, "kernel": "6.1", "memory_bytes": 1},
                "commands": [{"name": "app", "command": "./app", "runs": 3,
                              "samples": {"wall_ns": [v, v, v], "cpu_us": [1, 1, 1]}},
                             {"name": "tool", "command": "./tool", "runs": 3,
                              "samples": {"wall_ns": [5, 5, 5]}}]
            })
            .to_string(),
        )
        .unwrap();
        p
    };
    let files = [
        base("a.json", "Xeon", "2026-01-01T00:00:00Z", 100.0),
        base("b.json", "Epyc", "2026-02-01T00:00:00Z", 200.0),
        base("c.json", "Xeon", "2026-03-01T00:00:00Z", 101.0),
    ];
    let out = tally()
        .args(["history", "import", &w.store(), "--branch", "main"])
        .args(&files)
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", text(&out));
    let doc = history_json(w, &["--command", "app", "--figure", "wall"]);
    let s = series(&doc, "app", "wall_ns");
    assert_eq!(s.len(), 2, "one series per machine");
    assert!(
        doc["series"]
            .as_array()
            .unwrap()
            .iter()
            .all(|s| s["command"] == "app" && s["figure"] == "wall_ns")
    );
    let mixed = history_json(
        w,
        &["--command", "app", "--figure", "wall", "--all-machines"],
    );
    assert_eq!(
        series(&mixed, "app", "wall_ns")[0]["points"]
            .as_array()
            .unwrap()
            .len(),
        3
    );
    let xeon = history_json(
        w,
        &[
            "--figure",
            "wall_ns",
            "--machine",
            "Xeon",
            "--command",
            "a*",
        ],
    );
    let medians: Vec<f64> = series(&xeon, "app", "wall_ns")[0]["points"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| p["median"].as_f64().unwrap())
        .collect();
    assert_eq!(medians, [100.0, 101.0]);
    let fp = series(&xeon, "app", "wall_ns")[0]["machine"]
        .as_str()
        .unwrap()
        .to_string();
    let by_fp = history_json(
        w,
        &[
            "--machine",
            &fp[..6],
            "--command",
            "app",
            "--figure",
            "wall",
        ],
    );
    assert_eq!(series(&by_fp, "app", "wall_ns").len(), 1);
    let since = history_json(
        w,
        &[
            "--since",
            "2026-01-15",
            "--command",
            "app",
            "--figure",
            "wall",
            "--all-machines",
        ],
    );
    assert_eq!(
        series(&since, "app", "wall_ns")[0]["points"]
            .as_array()
            .unwrap()
            .len(),
        2
    );
    let other = history_json(w, &["--branch", "other"]);
    assert!(
        other["series"]
            .as_array()
            .unwrap()
            .iter()
            .all(|s| s["points"].as_array().unwrap().is_empty())
            || other["series"].as_array().unwrap().is_empty()
    );
    let all = history_json(w, &[]);
    assert_eq!(series(&all, "tool", "wall_ns").len(), 2);
    assert_eq!(series(&all, "app", "cpu_us").len(), 2);
}

/// The SQLite store in a place the caller may not write is said before
/// the command runs (as user 65534: root writes anywhere).
#[test]
fn sqlite_read_only_place_is_said_before_any_run() {
    common::require!(common::can_switch_users());
    let dir = tempfile::tempdir().unwrap();
    let ro = dir.path().join("ro");
    std::fs::create_dir(&ro).unwrap();
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(dir.path(), std::fs::Permissions::from_mode(0o755)).unwrap();
    std::fs::set_permissions(&ro, std::fs::Permissions::from_mode(0o555)).unwrap();
    let marker = dir.path().join("ran");
    let writable = dir.path().join("w");
    std::fs::create_dir(&writable).unwrap();
    std::os::unix::fs::chown(&writable, Some(65534), Some(65534)).unwrap();
    for store in [ro.join("h.db"), ro.join("existing.db")] {
        if store.ends_with("existing.db") {
            // An existing store, its directory read-only (SQLite needs -wal beside it).
            let out = tally()
                .args(["history", "import"])
                .arg(&store)
                .arg(csv(&writable, "x.csv", &[("c", 1.0)]))
                .output()
                .unwrap();
            assert!(out.status.success(), "{}", text(&out));
            std::fs::set_permissions(&store, std::fs::Permissions::from_mode(0o644)).unwrap();
        }
        let out = command("setpriv")
            .args(["--reuid=65534", "--regid=65534", "--clear-groups"])
            .arg(common::tally_bin())
            .args(["run", "--record"])
            .arg(&store)
            .args(["--", "touch"])
            .arg(&marker)
            .current_dir(&writable)
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(125), "{}", text(&out));
        assert!(text(&out).contains("cannot be written"), "{}", text(&out));
        assert!(
            !marker.exists(),
            "the command ran before the store was refused"
        );
    }
}

/// A store that is not SQLite, or a damaged one, is refused with the fix.
#[test]
fn sqlite_foreign_and_damaged_files_are_refused() {
    let dir = tempfile::tempdir().unwrap();
    let junk = dir.path().join("junk.db");
    std::fs::write(
        &junk,
        "this is a text file, not a database, long enough to look at",
    )
    .unwrap();
    let out = tally().args(["history"]).arg(&junk).output().unwrap();
    assert_eq!(out.status.code(), Some(1));
    assert!(
        text(&out).contains("not a tally history store: it is not a SQLite database"),
        "{}",
        text(&out)
    );
    let out = tally()
        .args(["history"])
        .arg(dir.path().join("none.db"))
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    assert!(
        text(&out).contains("there is none: record one first"),
        "{}",
        text(&out)
    );
    // A store cut short in the middle of its pages.
    let store = dir.path().join("h.db");
    let rows: Vec<(String, f64)> = (0..3000)
        .map(|i| (format!("c{i}"), 100.0 + (i % 7) as f64))
        .collect();
    let rows: Vec<(&str, f64)> = rows.iter().map(|(c, v)| (c.as_str(), *v)).collect();
    let out = tally()
        .args(["history", "import"])
        .arg(&store)
        .arg(csv(dir.path(), "big.csv", &rows))
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", text(&out));
    let c = rusqlite::Connection::open(&store).unwrap();
    c.execute_batch("PRAGMA wal_checkpoint(TRUNCATE)").unwrap();
    drop(c);
    let len = std::fs::metadata(&store).unwrap().len();
    let f = std::fs::OpenOptions::new()
        .write(true)
        .open(&store)
        .unwrap();
    f.set_len(len / 2).unwrap();
    drop(f);
    let out = tally().args(["history"]).arg(&store).output().unwrap();
    assert_eq!(out.status.code(), Some(1), "{}", text(&out));
    assert!(text(&out).contains("damaged: table "), "{}", text(&out));
    assert!(
        text(&out).contains("import its reports into a new store"),
        "{}",
        text(&out)
    );
}

/// TLS as libpq does it, against a server with a certificate for
/// `localhost` from a test CA and SCRAM passwords.
#[test]
fn postgres_tls_modes_as_libpq() {
    let pg = common::require!(history_common::Pg::start(history_common::Options {
        password: true,
        tls: true
    }));
    let ca = pg.ca.clone().unwrap().display().to_string();
    let ok = |url: &str| {
        let out = tally()
            .args(["history", "import", url])
            .arg(csv(pg.dir.path(), "t.csv", &[("c", 1.0)]))
            .output()
            .unwrap();
        (out.status.success(), text(&out))
    };
    let local = pg.url("").replace("127.0.0.1", "localhost");
    for (url, works, why) in [
        (pg.url("sslmode=require"), true, "require: any certificate"),
        (
            pg.url("sslmode=require&channel_binding=require"),
            true,
            "SCRAM-SHA-256-PLUS over TLS",
        ),
        (
            format!("{local}?sslmode=verify-full&sslrootcert={ca}"),
            true,
            "verify-full for localhost",
        ),
        (
            pg.url(&format!("sslmode=verify-ca&sslrootcert={ca}")),
            true,
            "verify-ca ignores the name",
        ),
        (
            pg.url(&format!("sslmode=verify-full&sslrootcert={ca}")),
            false,
            "127.0.0.1 is not in the certificate",
        ),
        (
            format!("{local}?sslmode=verify-full&sslrootcert=system"),
            false,
            "not signed by a system CA",
        ),
        (
            pg.url("sslmode=verify-full"),
            false,
            "verify-full without roots",
        ),
        (
            pg.url("sslmode=disable&channel_binding=require"),
            false,
            "no binding without TLS",
        ),
        (
            pg.url("sslmode=prefer").replace("s3cret%20pass", "wrong"),
            false,
            "a wrong password",
        ),
    ] {
        let (success, said) = ok(&url);
        assert_eq!(success, works, "{why}: {said}");
        assert!(!said.contains("s3cret"), "the password shows: {said}");
    }
    let (_, said) = ok(&pg.url(&format!("sslmode=verify-full&sslrootcert={ca}")));
    assert!(said.contains("cannot be reached"), "{said}");
}

/// A PostgreSQL user who may read but not write: --record says so
/// before the command runs; reading works.
#[test]
fn postgres_read_only_user_is_said_before_any_run() {
    let pg = common::require!(history_common::Pg::start(Default::default()));
    let w = Where::Postgres(pg);
    let out = tally()
        .args(["history", "import", &w.store()])
        .arg(csv(w.scratch(), "t.csv", &[("c", 1.0)]))
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", text(&out));
    exec(
        &w,
        "CREATE ROLE reader LOGIN; GRANT USAGE ON SCHEMA tally_history TO reader; GRANT SELECT ON ALL TABLES IN SCHEMA tally_history TO reader",
    );
    let Where::Postgres(pg) = &w else {
        unreachable!()
    };
    let url = pg.url("").replace("tally@", "reader@");
    let marker = w.scratch().join("ran");
    let out = tally()
        .args(["run", "--record", &url, "--", "touch"])
        .arg(&marker)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(125), "{}", text(&out));
    assert!(
        text(&out).contains("may not insert into tally_history."),
        "{}",
        text(&out)
    );
    assert!(!marker.exists());
    let out = tally().args(["history", &url]).output().unwrap();
    assert!(out.status.success(), "{}", text(&out));
}

/// Without PostgreSQL the PostgreSQL tests are skipped outside CI and
/// fail under CI: the helper says which.
#[test]
fn postgres_is_found_where_install_deps_puts_it() {
    match history_common::bindir() {
        Some(dir) => assert!(dir.join("initdb").is_file()),
        None if common::in_ci() => {
            panic!("PostgreSQL is not installed, though CI installs it (tests/install-deps.sh)")
        }
        None => common::skip!("postgresql is not installed: Debian package postgresql-15"),
    }
}

/// `compare --count=sim` recorded at 8 commits, the shell script it runs
/// 10% more loop turns from commit 7: the instructions series is exact
/// (one count per commit, the same at every commit of the same work,
/// kept with the simulator's fingerprint), and `history check --fail-on
/// instructions=1%` passes while the change is pending and fails once it
/// is a change point, naming the commit; a 20% limit lets it pass.
fn counted_compare_gives_exact_points_and_is_gated(w: &Where) {
    common::require!(common::tool("valgrind", "valgrind"));
    let store = w.store();
    let dir = w.scratch().join("counted");
    std::fs::create_dir_all(&dir).unwrap();
    let check = |limit: &str| {
        let md = dir.join("check.md");
        let out = tally()
            .args([
                "history",
                "check",
                &store,
                "--figure",
                "instructions",
                "--fail-on",
            ])
            .arg(format!("instructions={limit}"))
            .arg("--export")
            .arg(format!("markdown={}", md.display()))
            .output()
            .unwrap();
        (out, std::fs::read_to_string(&md).unwrap_or_default())
    };
    for i in 1..=8 {
        let turns = if i < 7 { 1000 } else { 1100 };
        std::fs::write(
            dir.join("work.sh"),
            format!("i=0; while [ $i -lt {turns} ]; do i=$((i+1)); done\n"),
        )
        .unwrap();
        let out = tally()
            .current_dir(&dir)
            .args([
                "compare",
                "--count=sim",
                "--count-runs",
                "1",
                "--record",
                &store,
            ])
            .args(["--commit", &format!("c{i}"), "sh work.sh"])
            .output()
            .unwrap();
        assert!(out.status.success(), "commit {i}: {}", text(&out));
        let (out, md) = check("1%");
        let want = if i < 8 { 0 } else { 3 };
        assert_eq!(out.status.code(), Some(want), "commit {i}: {}", text(&out));
        if i == 8 {
            assert!(md.contains("| instructions |") && md.contains("c7"), "{md}");
        }
    }
    let (out, _) = check("20%");
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    let doc = history_json(w, &["--figure", "instructions"]);
    let s = series(&doc, "sh work.sh", "instructions");
    assert_eq!(s.len(), 1, "{doc}");
    let points = s[0]["points"].as_array().unwrap();
    let medians: Vec<f64> = points
        .iter()
        .map(|p| p["median"].as_f64().unwrap())
        .collect();
    assert_eq!(medians.len(), 8);
    // The same work counts the same at every commit but for the digits of
    // the process ids: a process under Valgrind counts about 19
    // instructions more when its pid has one more digit (measured: `sh work.sh`
    // counted 11,642,072 at pid 8,718 and 11,642,091 at pid 10,162), and
    // pids wrap at 32,768 here (12,154,433 and 12,154,471 were seen for two
    // processes). A hundred-thousandth of the count holds that.
    let same = |a: f64, b: f64| (a - b).abs() <= a * 1e-5;
    assert!(
        medians[..6].iter().all(|&m| same(m, medians[0]))
            && medians[6..].iter().all(|&m| same(m, medians[6]))
            && medians[6] > medians[0] * 1.01,
        "counts are exact: {medians:?}"
    );
    assert!(
        points.iter().all(|p| p["mad"] == 0.0 && p["n"] == 1),
        "{points:?}"
    );
    let cps = s[0]["change_points"].as_array().unwrap();
    assert_eq!(cps.len(), 1, "{cps:?}");
    assert_eq!(cps[0]["index"], 6);
    assert_eq!(commits_of(&doc, s[0])[6], "c7");
    let machine = doc["machines"]
        .as_array()
        .unwrap()
        .iter()
        .find(|m| m["fingerprint"] == s[0]["machine"])
        .unwrap_or_else(|| panic!("{doc}"));
    assert_eq!(machine["counting"], "sim", "{machine}");
}

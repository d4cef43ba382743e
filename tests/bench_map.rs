//! CLI tests of the benchmarks that complete the map of the machine: ipc,
//! signal, fsops, mmap and filebw. Counts, structure, monotone sweeps and
//! clean-up, never timings.

mod common;

use std::path::Path;
use std::time::{Duration, Instant};

use serde_json::Value;

const NEW: [&str; 5] = ["ipc", "signal", "fsops", "mmap", "filebw"];

/// Runs `tally bench ARGS` with tiny budgets, JSON out, in `dir`.
fn run_json(args: &[&str], dir: &Path) -> Value {
    let out = common::tally()
        .arg("bench")
        .args(args)
        .args(["--budget-ms", "2", "--max-mem", "1M", "--format", "json"])
        .arg("--dir")
        .arg(dir)
        .assert()
        .success()
        .get_output()
        .stdout
        .clone();
    serde_json::from_slice(&out).expect("bench JSON parses")
}

fn bench<'a>(r: &'a Value, name: &str) -> &'a Value {
    r["benchmarks"]
        .as_array()
        .unwrap()
        .iter()
        .find(|b| b["name"] == name)
        .unwrap_or_else(|| panic!("benchmark {name} missing"))
}

fn figures<'a>(r: &'a Value, name: &str) -> &'a Vec<Value> {
    bench(r, name)["figures"].as_array().unwrap()
}

fn ids(r: &Value, name: &str) -> Vec<String> {
    figures(r, name)
        .iter()
        .map(|f| f["id"].as_str().unwrap().to_string())
        .collect()
}

fn measured(f: &Value) -> bool {
    f.get("unavailable").is_none()
}

/// The x of every figure whose id starts with `prefix`, in report order.
fn xs(r: &Value, name: &str, prefix: &str) -> Vec<u64> {
    figures(r, name)
        .iter()
        .filter(|f| f["id"].as_str().unwrap().starts_with(prefix))
        .map(|f| f["x"].as_u64().expect("sweep figures have x"))
        .collect()
}

fn rising(v: &[u64]) -> bool {
    v.windows(2).all(|w| w[0] < w[1])
}

/// Names under `dir` (scratch files, FIFOs, fsops batches).
fn left_in(dir: &Path) -> Vec<String> {
    std::fs::read_dir(dir)
        .unwrap()
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .collect()
}

#[test]
fn every_new_benchmark_is_registered_listed_and_quick() {
    let names = tally::bench::registry::names();
    for n in NEW {
        let b = tally::bench::registry::find(n).unwrap_or_else(|| panic!("{n} not registered"));
        assert!(!b.heavy, "{n} runs in --quick");
        assert!(names.contains(&n));
    }
    let out = common::tally().args(["bench", "--list"]).assert().success();
    let text = String::from_utf8(out.get_output().stdout.clone()).unwrap();
    for n in NEW {
        assert!(
            text.lines().any(|l| l.split_whitespace().next() == Some(n)),
            "{n}"
        );
    }
}

#[test]
fn new_benchmarks_give_every_figure_and_leave_nothing_in_dir() {
    let dir = tempfile::tempdir().unwrap();
    let html = dir.path().join("map.html");
    let r = run_json(
        &["--html", html.to_str().unwrap(), "--quick"]
            .iter()
            .copied()
            .chain(NEW)
            .collect::<Vec<_>>(),
        dir.path(),
    );
    for n in NEW {
        let b = bench(&r, n);
        assert!(b["error"].is_null(), "{n} failed: {}", b["error"]);
        for f in figures(&r, n) {
            let id = f["id"].as_str().unwrap();
            assert!(id.starts_with(&format!("{n}.")), "{id}");
            assert!(!f["definition"].as_str().unwrap().is_empty(), "{id}");
        }
    }
    let cpus = r["machine"]["logical_cpus"].as_u64().unwrap();
    let places: Vec<&str> = if r["harness"]["pinned_cpu"].is_null() {
        vec!["unpinned"]
    } else if cpus > 1 {
        vec!["pinned", "across"]
    } else {
        vec!["pinned"]
    };
    let transports = ["pipe", "fifo", "unix_stream", "unix_dgram", "tcp", "udp"];

    // ipc: one-task costs, round trips per placement, per-switch when
    // pinned, the bandwidth sweep, the headline elsewhere, TCP connect.
    let ipc = ids(&r, "ipc");
    for t in transports {
        assert!(ipc.contains(&format!("ipc.one_task.{t}")), "{t}");
        for p in &places {
            assert!(ipc.contains(&format!("ipc.rtt.{t}.{p}")), "{t} {p}");
        }
        // Per switch where a send delivers in the sender's context.
        let switch = places.contains(&"pinned") && !["tcp", "udp"].contains(&t);
        assert_eq!(ipc.contains(&format!("ipc.switch.{t}")), switch, "{t}");
        let sweep = xs(&r, "ipc", &format!("ipc.bw.{t}."));
        assert!(rising(&sweep), "{t}: {sweep:?}");
        assert_eq!(sweep.first(), Some(&64), "{t}");
        let top = match t {
            "udp" => 65_507,
            "unix_dgram" => 65_536,
            _ => 1 << 20,
        };
        assert_eq!(sweep.last(), Some(&top), "{t}");
        assert!(
            sweep.contains(&(if t == "udp" { 65_507 } else { 65_536 })),
            "{t}"
        );
        if places.len() > 1 {
            assert!(ipc.contains(&format!("ipc.bw_pinned.{t}")), "{t}");
        }
    }
    for p in &places {
        assert!(ipc.contains(&format!("ipc.tcp_connect.{p}")), "{p}");
    }
    // One-task, a round trip per placement, the headline bandwidth on
    // every placement but the sweep's; per switch for 4 transports.
    let switches = if places.contains(&"pinned") { 4 } else { 0 };
    let per_transport = 1 + places.len() + (places.len() - 1);
    let sweep_points: usize = transports
        .iter()
        .map(|t| xs(&r, "ipc", &format!("ipc.bw.{t}.")).len())
        .sum();
    assert_eq!(
        ipc.len(),
        6 * per_transport + switches + sweep_points + places.len(),
        "{ipc:?}"
    );
    for f in figures(&r, "ipc") {
        assert!(measured(f), "{}: {}", f["id"], f["unavailable"]);
    }

    // signal: the four figures, all measured.
    assert_eq!(
        ids(&r, "signal"),
        [
            "signal.install",
            "signal.deliver",
            "signal.prot_fault",
            "signal.mprotect_pair"
        ]
    );
    assert!(figures(&r, "signal").iter().all(measured));

    // fsops: create and delete at each lmbench size, then fsync; files
    // per second in the notes.
    let mut want = Vec::new();
    for s in [0, 1024, 4096, 10240] {
        want.push(format!("fsops.create.{s}"));
        want.push(format!("fsops.delete.{s}"));
    }
    want.push("fsops.fsync".into());
    assert_eq!(ids(&r, "fsops"), want);
    for f in figures(&r, "fsops")
        .iter()
        .filter(|f| f["implausible"].is_null())
    {
        if f["id"] != "fsops.fsync" {
            let notes = f["notes"].as_array().unwrap();
            assert!(
                notes
                    .iter()
                    .any(|n| n.as_str().unwrap().ends_with("files per second")),
                "{}",
                f["id"]
            );
        }
    }

    // mmap: every figure on the size axis; untouched sweeps 4 KiB up by
    // ×4, touched ones within the memory cap (1 MiB here).
    for f in figures(&r, "mmap") {
        assert!(f["x"].is_u64(), "{}", f["id"]);
    }
    for series in ["file", "anon", "file_touch", "anon_touch"] {
        let v = xs(&r, "mmap", &format!("mmap.map.{series}."));
        assert!(rising(&v), "{series}");
        assert_eq!(v.first(), Some(&4096), "{series}");
        assert!(v.windows(2).all(|w| w[1] == w[0] * 4), "{series}");
        assert!(*v.last().unwrap() <= 1 << 20, "{series}");
    }
    assert_eq!(xs(&r, "mmap", "mmap.dontneed."), [1 << 20, 1 << 20]);

    // filebw: the two ways to read and their two bounds.
    assert_eq!(
        ids(&r, "filebw"),
        [
            "filebw.read",
            "filebw.mmap",
            "filebw.mmap_mapped",
            "filebw.memory_copy",
            "filebw.memory_sum"
        ]
    );
    assert!(
        figures(&r, "filebw")
            .iter()
            .all(|f| f.get("gb_per_s").is_some())
    );

    // The HTML page draws each plot the five declare: ipc's bars and
    // bandwidth sweep (a line per transport), fsops' bars, mmap's sweep.
    let page = std::fs::read_to_string(&html).unwrap();
    let declared: usize = NEW
        .iter()
        .map(|n| tally::bench::registry::find(n).unwrap().plots.len())
        .sum();
    assert_eq!(page.matches("<svg").count(), declared);
    assert!(page.matches("<polyline").count() >= transports.len() + 4);
    assert!(!page.contains("NaN"));

    // No FIFO, no fsops batch, no scratch file.
    assert_eq!(left_in(dir.path()), ["map.html"]);
}

/// Children of `pid` (its threads' `children` lists).
fn children(pid: u32) -> Vec<u32> {
    let Ok(tasks) = std::fs::read_dir(format!("/proc/{pid}/task")) else {
        return Vec::new();
    };
    tasks
        .flatten()
        .filter_map(|t| std::fs::read_to_string(t.path().join("children")).ok())
        .flat_map(|s| {
            s.split_whitespace()
                .filter_map(|p| p.parse().ok())
                .collect::<Vec<u32>>()
        })
        .collect()
}

/// Whether `pid` has exited (gone, or a zombie nobody reaped yet).
fn exited(pid: u32) -> bool {
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        Err(_) => true,
        Ok(s) => s
            .rsplit(')')
            .next()
            .is_some_and(|rest| rest.trim_start().starts_with('Z')),
    }
}

/// A peer killed in the middle of a figure: that figure is unavailable
/// with the reason, the rest of the run goes on, nothing hangs.
#[test]
fn ipc_peer_killed_mid_run_gives_an_unavailable_figure() {
    let dir = tempfile::tempdir().unwrap();
    // JSON to a file: a pipe nobody reads while waiting would fill up.
    let json = dir.path().join("out.json");
    let child = common::tally_std()
        .args([
            "bench",
            "ipc",
            "--budget-ms",
            "150",
            "--format",
            "json",
            "--dir",
        ])
        .arg(dir.path())
        .stdout(std::fs::File::create(&json).unwrap())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let pid = child.id();
    let deadline = Instant::now() + Duration::from_secs(30);
    let mut killed = None;
    while Instant::now() < deadline && killed.is_none() {
        if let Some(&peer) = children(pid).first() {
            // Well inside its figure (150 ms): not one that is finishing.
            std::thread::sleep(Duration::from_millis(30));
            if !children(pid).contains(&peer) || exited(peer) {
                continue;
            }
            let ok = common::command("kill")
                .args(["-KILL", &peer.to_string()])
                .status()
                .unwrap()
                .success();
            if ok {
                killed = Some(peer);
            }
        }
        std::thread::sleep(Duration::from_millis(2));
    }
    assert!(killed.is_some(), "no peer process was seen");
    let out = common::wait_or_kill(child, Duration::from_secs(120));
    assert!(out.status.success(), "{:?}", out.status);
    let r: Value = serde_json::from_slice(&std::fs::read(&json).unwrap()).unwrap();
    // Every figure is measured in two passes: the pass whose peer died
    // has that figure unavailable, and the figure says so (measured by
    // the other pass, or unavailable in both).
    let why_of = |f: &Value| -> Option<String> {
        if !measured(f) {
            return f["unavailable"].as_str().map(str::to_string);
        }
        f["notes"]
            .as_array()?
            .iter()
            .filter_map(Value::as_str)
            .find_map(|n| {
                n.strip_prefix("first pass unavailable: ")
                    .or_else(|| n.strip_prefix("second pass unavailable: "))
            })
            .map(str::to_string)
    };
    let gone: Vec<String> = figures(&r, "ipc").iter().filter_map(why_of).collect();
    assert_eq!(
        gone.len(),
        1,
        "exactly the figure whose peer died: {gone:?}"
    );
    assert!(!gone[0].is_empty());
}

/// The socket inodes process `pid` holds.
fn socket_fds(pid: u32) -> Vec<String> {
    let Ok(fds) = std::fs::read_dir(format!("/proc/{pid}/fd")) else {
        return Vec::new();
    };
    fds.flatten()
        .filter_map(|e| std::fs::read_link(e.path()).ok())
        .filter_map(|t| {
            let t = t.to_string_lossy().into_owned();
            Some(t.strip_prefix("socket:[")?.strip_suffix(']')?.to_string())
        })
        .collect()
}

/// Whether `inode` is a UDP socket (`/proc/net/udp`, a short table).
fn is_udp(inode: &str) -> bool {
    std::fs::read_to_string("/proc/net/udp")
        .unwrap_or_default()
        .lines()
        .any(|l| l.split_whitespace().nth(9) == Some(inode))
}

/// SIGKILL of tally in the middle of ipc: its peers notice (end of
/// stream, or a receive timeout, also on a listening socket's accept)
/// and exit instead of waiting for ever. A peer that waited for ever in
/// accept() outlived a killed tally.
#[test]
fn ipc_peers_outlive_no_killed_tally() {
    let dir = tempfile::tempdir().unwrap();
    // The UDP echo peer (one socket, as reader and writer), then the TCP
    // accept peer (the only peer with a single socket descriptor: the
    // listener).
    for udp in [true, false] {
        let child = common::tally_std()
            .args(["bench", "ipc", "--budget-ms", "100", "--dir"])
            .arg(dir.path())
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .spawn()
            .unwrap();
        let pid = child.id();
        let mut reaper = common::Reaper(vec![child]);
        let deadline = Instant::now() + Duration::from_secs(60);
        let mut peer = None;
        while Instant::now() < deadline && peer.is_none() {
            let wanted = |c: u32| {
                let socks = socket_fds(c);
                !exited(c)
                    && if udp {
                        socks.len() == 2 && socks[0] == socks[1] && is_udp(&socks[0])
                    } else {
                        socks.len() == 1
                    }
            };
            // Still so a moment later: not a peer closing its descriptors
            // on its way out.
            peer = children(pid).into_iter().find(|c| {
                wanted(*c) && {
                    std::thread::sleep(Duration::from_millis(20));
                    wanted(*c)
                }
            });
            if reaper.0[0].try_wait().unwrap().is_some() {
                break;
            }
        }
        let Some(peer) = peer else {
            panic!("no peer seen (udp: {udp})")
        };
        reaper.0[0].kill().unwrap();
        let _ = reaper.0[0].wait();
        let deadline = Instant::now() + Duration::from_secs(10);
        while Instant::now() < deadline && !exited(peer) {
            std::thread::sleep(Duration::from_millis(50));
        }
        assert!(
            exited(peer),
            "peer {peer} (udp: {udp}) still runs after tally died"
        );
    }
    assert!(left_in(dir.path()).is_empty());
}

/// SIGINT in the middle of fsops: the batch of files is removed.
#[test]
fn interrupted_fsops_leaves_no_file() {
    use std::os::unix::process::ExitStatusExt;
    for sig in ["INT", "TERM"] {
        let dir = tempfile::tempdir().unwrap();
        let child = common::tally_std()
            .args(["bench", "fsops", "--budget-ms", "2000", "--dir"])
            .arg(dir.path())
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .spawn()
            .unwrap();
        let pid = child.id();
        let mut reaper = common::Reaper(vec![child]);
        let deadline = Instant::now() + Duration::from_secs(30);
        let mut seen = false;
        while Instant::now() < deadline {
            if !left_in(dir.path()).is_empty() {
                seen = true;
                break;
            }
        }
        assert!(seen, "SIG{sig}: no fsops file was seen");
        assert!(
            common::command("kill")
                .args([format!("-{sig}"), pid.to_string()])
                .status()
                .unwrap()
                .success()
        );
        let status = reaper.0[0].wait().unwrap();
        assert!(status.signal().is_some(), "SIG{sig}: {status:?}");
        assert_eq!(left_in(dir.path()), Vec::<String>::new(), "SIG{sig}");
    }
}

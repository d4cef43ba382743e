//! GPU figures of `tally run`: what it says without nvidia-smi, with one
//! that cannot reach a driver, and with a stand-in printing canned
//! samples in nvidia-smi's shapes (tests/fixtures/fake-nvidia-smi). The
//! one test that needs a real NVIDIA GPU is a counted skip without one.

mod common;

use std::path::{Path, PathBuf};
use std::process::Output;

use serde_json::Value;

fn scratch() -> tempfile::TempDir {
    tempfile::Builder::new()
        .prefix("tally-gpu-test")
        .tempdir()
        .expect("a scratch directory")
}

/// A directory holding only a copy of the stand-in nvidia-smi, its own
/// per test, so a test can look for processes started from it.
fn fake_dir(scratch: &Path) -> PathBuf {
    let dir = scratch.join("bin");
    std::fs::create_dir(&dir).unwrap();
    let fake =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/fake-nvidia-smi/nvidia-smi");
    std::fs::copy(&fake, dir.join("nvidia-smi")).unwrap();
    dir
}

/// A PATH of the system's directories (no nvidia-smi in them, checked),
/// with `first` ahead when given.
fn path_with(first: Option<&Path>) -> String {
    let system = "/usr/local/bin:/usr/bin:/bin";
    match first {
        Some(d) => format!("{}:{system}", d.display()),
        None => system.to_string(),
    }
}

/// Whether nvidia-smi is on PATH or in a system directory.
fn real_nvidia_smi() -> bool {
    tally::gpu::on_path("nvidia-smi").is_some()
        || ["/usr/local/bin", "/usr/bin", "/bin"]
            .iter()
            .any(|d| Path::new(d).join("nvidia-smi").exists())
}

fn run(path: &str, env: &[(&str, &str)], args: &[&str]) -> Output {
    let mut cmd = common::tally_std();
    cmd.env("PATH", path).arg("run").args(args);
    for (k, v) in env {
        cmd.env(k, v);
    }
    cmd.output().expect("tally runs")
}

fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

/// The JSON report (on stderr, where reports go by default).
fn report(o: &Output) -> Value {
    serde_json::from_slice(&o.stderr).unwrap_or_else(|e| panic!("not JSON ({e}): {}", stderr(o)))
}

fn first_run(o: &Output) -> Value {
    report(o)["runs"][0].clone()
}

/// Processes whose command line names `dir`: the stand-in's, still running.
fn started_from(dir: &Path) -> Vec<String> {
    let needle = dir.to_string_lossy().into_owned();
    let mut left = Vec::new();
    for e in std::fs::read_dir("/proc").unwrap().flatten() {
        if let Ok(cmdline) = std::fs::read(e.path().join("cmdline")) {
            let text = String::from_utf8_lossy(&cmdline).replace('\0', " ");
            if text.contains(&needle) {
                left.push(format!("{}: {text}", e.file_name().to_string_lossy()));
            }
        }
    }
    left
}

#[test]
fn run_gpu_without_nvidia_smi_says_unavailable_and_why() {
    if real_nvidia_smi() {
        common::skip!("nvidia-smi is installed here: the case without it cannot be made");
    }
    let o = run(&path_with(None), &[], &["--gpu", "--", "true"]);
    assert!(o.status.success(), "{}", stderr(&o));
    let lines: Vec<&str> = std::str::from_utf8(&o.stderr)
        .unwrap()
        .lines()
        .filter(|l| l.contains("GPU"))
        .collect();
    assert_eq!(
        lines,
        [
            "tally: GPU figures unavailable: nvidia-smi is not on PATH: no NVIDIA driver is installed here, or its tools are not on PATH (install the driver, or add the directory holding nvidia-smi to PATH)"
        ]
    );
    let o = run(
        &path_with(None),
        &[],
        &["--gpu", "--format", "json", "--", "true"],
    );
    let r = first_run(&o);
    assert_eq!(r["gpu"], Value::Null);
    assert!(
        r["gpu_reason"]
            .as_str()
            .unwrap()
            .starts_with("nvidia-smi is not on PATH")
    );
}

#[test]
fn default_run_without_nvidia_smi_adds_nothing() {
    if real_nvidia_smi() {
        common::skip!("nvidia-smi is installed here: the case without it cannot be made");
    }
    let o = run(&path_with(None), &[], &["--", "true"]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(!stderr(&o).contains("GPU"), "{}", stderr(&o));
    let o = run(&path_with(None), &[], &["--format", "json", "--", "true"]);
    let r = first_run(&o);
    let keys: Vec<&String> = r.as_object().unwrap().keys().collect();
    assert!(
        r.get("gpu").is_none() && r.get("gpu_reason").is_none(),
        "{keys:?}"
    );
}

/// Regression: `load`'s runs of its own child went through run's path and
/// sampled the GPUs whenever nvidia-smi was on PATH, for figures no report
/// of `load` holds. With a stand-in on PATH, `tally load` starts no
/// nvidia-smi, while `tally run` (the same PATH) does.
#[test]
fn load_samples_no_gpu_with_nvidia_smi_on_path() {
    let tmp = scratch();
    let bin = fake_dir(tmp.path());
    let log = tmp.path().join("started");
    let file = tmp.path().join("data");
    std::fs::write(&file, vec![7u8; 1 << 20]).unwrap();
    let o = common::tally_std()
        .env("PATH", path_with(Some(&bin)))
        .env("FAKE_GPU_LOG", &log)
        .args(["load", "--methods", "read", "--format", "json"])
        .arg(&file)
        .output()
        .expect("tally runs");
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(
        !log.exists(),
        "load started nvidia-smi: {}",
        std::fs::read_to_string(&log).unwrap_or_default()
    );
    let o = run(
        &path_with(Some(&bin)),
        &[("FAKE_GPU_LOG", log.to_str().unwrap())],
        &["--", "true"],
    );
    assert!(o.status.success(), "{}", stderr(&o));
    let started = std::fs::read_to_string(&log).unwrap_or_default();
    assert_eq!(
        started.lines().count(),
        2,
        "run starts both queries: {started}"
    );
}

#[test]
fn run_with_a_sampled_gpu_reports_the_tree_peak_busy_and_energy() {
    let tmp = scratch();
    let bin = fake_dir(tmp.path());
    let pidfile = tmp.path().join("pid");
    let pidfile_s = pidfile.to_str().unwrap();
    // The pid file is emptied before the command ends: the next run's
    // samples do not name a process that has gone.
    let script = format!("echo $$ > {pidfile_s}; sleep 1; : > {pidfile_s}");
    let env = [("FAKE_GPU_PIDFILE", pidfile_s)];
    let o = run(&path_with(Some(&bin)), &env, &["--", "sh", "-c", &script]);
    assert!(o.status.success(), "{}", stderr(&o));
    let said = stderr(&o);
    let line = said
        .lines()
        .find(|l| l.starts_with("tally: GPU 0"))
        .unwrap_or_else(|| panic!("no GPU line in:\n{said}"));
    // Another user's process holds 9,999 MiB on the same GPU: left out.
    assert!(
        line.starts_with("tally: GPU 0 (NVIDIA H200): peak 4,112MiB, busy 38% of the wall time, ")
            && line.ends_with(" J (sampled every 20 ms)"),
        "{line}"
    );
    let o = run(
        &path_with(Some(&bin)),
        &env,
        &["-n", "2", "--format", "json", "--", "sh", "-c", &script],
    );
    assert!(o.status.success(), "{}", stderr(&o));
    let v = report(&o);
    for r in v["runs"].as_array().unwrap() {
        let g = &r["gpu"];
        assert_eq!(g["gpu_mem_peak_bytes"], 4112u64 * 1024 * 1024, "{g}");
        assert_eq!(g["sample_interval_ns"], 20_000_000u64);
        let wall = r["wall_ns"].as_f64().unwrap();
        let busy = g["gpu_busy_ns"].as_f64().unwrap();
        // Every piece of the wall time is at the samples' 38%.
        assert!((busy / wall - 0.38).abs() < 0.001, "busy {busy} of {wall}");
        let watts = g["gpu_energy_joules"].as_f64().unwrap() / (wall / 1e9);
        assert!((watts - 212.45).abs() < 0.5, "{watts} W");
        let one = &g["gpus"][0];
        assert_eq!(one["name"], "NVIDIA H200");
        assert_eq!(one["uuid"], "GPU-5c6e1b2a-9d1f-4a57-8a0e-2f6c7a1b3c4d");
        // One second at 20 ms: tens of samples, however loaded the machine.
        assert!(one["samples"].as_u64().unwrap() >= 10, "{one}");
        assert_eq!(g["notes"], Value::Array(vec![]));
        assert!(r.get("gpu_reason").is_none());
    }
    assert_eq!(
        started_from(&bin),
        Vec::<String>::new(),
        "nvidia-smi left running"
    );
}

#[test]
fn run_gpu_with_nvidia_smi_but_no_driver_says_nvidia_smis_words() {
    let tmp = scratch();
    let bin = fake_dir(tmp.path());
    let env = [("FAKE_GPU_MODE", "nodriver")];
    let o = run(&path_with(Some(&bin)), &env, &["--gpu", "--", "true"]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(
        stderr(&o).contains(
            "tally: GPU figures unavailable: nvidia-smi exited with status 9: NVIDIA-SMI has failed because it couldn't communicate with the NVIDIA driver."
        ),
        "{}",
        stderr(&o)
    );
    // Not asked for: nothing said, nothing in the record.
    let o = run(
        &path_with(Some(&bin)),
        &env,
        &["--format", "json", "--", "true"],
    );
    assert!(!stderr(&o).contains("GPU"), "{}", stderr(&o));
    assert!(first_run(&o).get("gpu").is_none());
    assert_eq!(
        started_from(&bin),
        Vec::<String>::new(),
        "nvidia-smi left running"
    );
}

#[test]
fn a_silent_nvidia_smi_is_given_up_and_stopped() {
    let tmp = scratch();
    let bin = fake_dir(tmp.path());
    let env = [("FAKE_GPU_MODE", "silent")];
    let o = run(
        &path_with(Some(&bin)),
        &env,
        &["--gpu", "--format", "json", "--", "true"],
    );
    assert!(o.status.success(), "{}", stderr(&o));
    let r = first_run(&o);
    assert_eq!(r["gpu"], Value::Null);
    assert_eq!(r["gpu_reason"], "nvidia-smi printed no GPU sample in 5 s");
    assert_eq!(
        started_from(&bin),
        Vec::<String>::new(),
        "nvidia-smi left running"
    );
}

#[test]
fn a_command_not_found_leaves_no_nvidia_smi_running() {
    let tmp = scratch();
    let bin = fake_dir(tmp.path());
    let o = run(
        &path_with(Some(&bin)),
        &[],
        &["--gpu", "--", "/nonexistent-command"],
    );
    assert_eq!(o.status.code(), Some(127), "{}", stderr(&o));
    assert!(stderr(&o).contains("command not found"), "{}", stderr(&o));
    assert_eq!(
        started_from(&bin),
        Vec::<String>::new(),
        "nvidia-smi left running"
    );
}

/// The property, whichever ends it first: `PR_SET_PDEATHSIG`, or the
/// stand-in's next write to a pipe nobody reads.
#[test]
fn killing_tally_kills_its_nvidia_smi() {
    let tmp = scratch();
    let bin = fake_dir(tmp.path());
    let child = common::tally_std()
        .env("PATH", path_with(Some(&bin)))
        .args(["run", "--gpu", "--", "sleep", "30"])
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let pid = child.id();
    let mut reaper = common::Reaper(vec![child]);
    let until = std::time::Instant::now() + std::time::Duration::from_secs(10);
    while started_from(&bin).len() < 2 {
        assert!(
            std::time::Instant::now() < until,
            "nvidia-smi never started"
        );
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    let killed = common::command("kill")
        .args(["-KILL", &pid.to_string()])
        .status();
    assert!(killed.unwrap().success());
    let _ = reaper.0[0].wait();
    let until = std::time::Instant::now() + std::time::Duration::from_secs(2);
    while !started_from(&bin).is_empty() {
        assert!(
            std::time::Instant::now() < until,
            "nvidia-smi outlived tally: {:?}",
            started_from(&bin)
        );
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
}

// ---- on a real GPU (counted skips elsewhere) ----

/// A program for python3 with PyTorch: after a bare CUDA context, holds
/// `argv[1]` GiB on GPU 0 for `argv[2]` s (allocated with the caching
/// allocator's cudaMalloc and written), then frees it back to the driver.
const ALLOCATE: &str = r#"
import sys, time, torch
gib, hold = float(sys.argv[1]), float(sys.argv[2])
torch.zeros(1, device="cuda"); torch.cuda.synchronize(); time.sleep(0.2)
if gib > 0:
    x = torch.empty(int(gib * 2**30), dtype=torch.uint8, device="cuda"); x.fill_(1)
    torch.cuda.synchronize(); time.sleep(hold); del x; torch.cuda.empty_cache()
    torch.cuda.synchronize()
time.sleep(0.2)
"#;

/// The script [`ALLOCATE`] in a file, when nvidia-smi is on PATH and
/// python3 has PyTorch for CUDA and a usable GPU; else why not.
fn real_gpu(scratch: &Path) -> Result<PathBuf, String> {
    if tally::gpu::on_path("nvidia-smi").is_none() {
        return Err("needs an NVIDIA GPU and its driver (nvidia-smi is not on PATH)".into());
    }
    let probe = common::command("python3")
        .args([
            "-c",
            "import torch,sys; sys.exit(0 if torch.cuda.is_available() else 1)",
        ])
        .output();
    if !probe.is_ok_and(|o| o.status.success()) {
        return Err("needs python3 with PyTorch built for CUDA and a usable GPU".into());
    }
    let script = scratch.join("allocate.py");
    std::fs::write(&script, ALLOCATE).unwrap();
    Ok(script)
}

const GIB: u64 = 1 << 30;

/// `tally ARGS`, which must succeed, and its JSON report: on stdout
/// (`compare`'s place) or else on stderr (`run`'s).
fn tally_json(args: &[&str]) -> Value {
    let o = common::tally_std().args(args).output().unwrap();
    assert!(o.status.success(), "{}", stderr(&o));
    match serde_json::from_slice(&o.stdout) {
        Ok(v) => v,
        Err(_) => report(&o),
    }
}

/// The GPU memory peak of one run of `script` holding `gib` GiB.
fn run_peak(script: &Path, gib: &str) -> Value {
    let s = script.to_str().unwrap();
    let r = tally_json(&[
        "run", "--gpu", "--format", "json", "--", "python3", s, gib, "1",
    ]);
    r["runs"][0]["gpu"].clone()
}

/// `peak` is `asked` plus the driver's per-context overhead `context`,
/// within 5% of `asked`.
fn within_5_percent(peak: u64, asked: u64, context: u64, what: &str) {
    let want = asked + context;
    let off = peak.abs_diff(want);
    eprintln!(
        "{what}: peak {} MiB for {} MiB asked + {} MiB of context: off by {:.2}% of the allocation",
        peak >> 20,
        asked >> 20,
        context >> 20,
        off as f64 * 100.0 / asked as f64
    );
    assert!(
        off * 20 <= asked,
        "{what}: peak {peak} B, expected {asked} + {context} (context) within 5% of {asked}"
    );
}

/// On a machine with an NVIDIA GPU, nvidia-smi and PyTorch with CUDA:
/// programs that hold 2 GiB and 6 GiB are reported at that amount plus
/// the driver's per-context overhead (what the same program holds with
/// its context alone), within 5%.
#[test]
fn run_on_a_real_gpu_reports_2_and_6_gib_within_5_percent_plus_the_context() {
    let dir = scratch();
    let script = match real_gpu(dir.path()) {
        Ok(s) => s,
        Err(why) => common::skip!("{why}"),
    };
    let context = run_peak(&script, "0")["gpu_mem_peak_bytes"]
        .as_u64()
        .expect("a bare context's peak");
    assert!(context > 0 && context < 2 * GIB, "context {context}");
    for gib in [2, 6] {
        let g = run_peak(&script, &gib.to_string());
        let peak = g["gpu_mem_peak_bytes"].as_u64().expect("a peak");
        within_5_percent(peak, gib * GIB, context, &format!("run, {gib} GiB"));
        assert!(
            g["gpu_busy_ns"].is_u64() && g["gpu_energy_joules"].is_f64(),
            "{g}"
        );
        assert!(g["gpus"][0]["samples"].as_u64() > Some(10), "{g}");
    }
}

/// compare on a real GPU: each command's median GPU memory peak is its
/// allocation plus the context, within 5%, and the two differ.
#[test]
fn compare_on_a_real_gpu_reports_each_commands_allocation() {
    let dir = scratch();
    let script = match real_gpu(dir.path()) {
        Ok(s) => s,
        Err(why) => common::skip!("{why}"),
    };
    let s = script.display();
    let context = run_peak(&script, "0")["gpu_mem_peak_bytes"]
        .as_u64()
        .expect("a bare context's peak");
    let (two, six) = (format!("python3 {s} 2 0.5"), format!("python3 {s} 6 0.5"));
    let r = tally_json(&[
        "compare", "-n", "3", "--gpu", "--format", "json", &two, &six,
    ]);
    for (c, gib) in r["commands"].as_array().unwrap().iter().zip([2u64, 6]) {
        let median = c["summary"]
            .as_array()
            .unwrap()
            .iter()
            .find(|f| f["figure"] == "gpu_mem_peak_bytes")
            .and_then(|f| f["median"].as_f64())
            .unwrap_or_else(|| panic!("no GPU memory summary: {c}"));
        within_5_percent(
            median as u64,
            gib * GIB,
            context,
            &format!("compare, {gib} GiB"),
        );
    }
}

/// A peak held for three sampling periods (60 ms) is never missed: ten
/// runs of a program that holds 4 GiB for 60 ms between two stretches of
/// its bare context each report at least the 4 GiB.
#[test]
fn a_real_gpu_peak_held_for_three_periods_is_never_missed() {
    let dir = scratch();
    let script = match real_gpu(dir.path()) {
        Ok(s) => s,
        Err(why) => common::skip!("{why}"),
    };
    let s = script.to_str().unwrap();
    let r = tally_json(&[
        "run", "-n", "10", "--gpu", "--format", "json", "--", "python3", s, "4", "0.06",
    ]);
    let peaks: Vec<u64> = r["runs"]
        .as_array()
        .unwrap()
        .iter()
        .map(|run| run["gpu"]["gpu_mem_peak_bytes"].as_u64().unwrap_or(0))
        .collect();
    eprintln!(
        "peaks of 60 ms (MiB): {:?}",
        peaks.iter().map(|p| p >> 20).collect::<Vec<_>>()
    );
    assert!(peaks.iter().all(|p| *p >= 4 * GIB), "{peaks:?}");
}

// ---- tally mem: GPU memory per row ----

/// `tally mem ARGS` with `PATH` and `env`.
fn mem(path: &str, env: &[(&str, &str)], args: &[&str]) -> Output {
    let mut cmd = common::tally_std();
    cmd.env("PATH", path).arg("mem").args(args);
    for (k, v) in env {
        cmd.env(k, v);
    }
    cmd.output().expect("tally runs")
}

fn stdout(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}

/// stderr with each `tally:` paragraph on one line (notes are wrapped).
fn paragraphs(o: &Output) -> Vec<String> {
    stderr(o)
        .replace("\ntally:   ", " ")
        .lines()
        .map(str::to_string)
        .collect()
}

fn json(o: &Output) -> Value {
    serde_json::from_slice(&o.stdout)
        .unwrap_or_else(|e| panic!("not JSON ({e}): {}{}", stdout(o), stderr(o)))
}

/// Sleeping processes named `name` (a copy of sleep), their pids written
/// to the stand-in's pid file, reaped when dropped.
fn holders(dir: &Path, name: &str, n: usize) -> (common::Reaper, Vec<u32>, PathBuf) {
    let exe = dir.join(name);
    std::fs::copy(which("sleep"), &exe).unwrap();
    let children: Vec<_> = (0..n)
        .map(|_| common::command(&exe).arg("60").spawn().unwrap())
        .collect();
    let pids: Vec<u32> = children.iter().map(|c| c.id()).collect();
    let pidfile = dir.join("pids");
    let text: String = pids.iter().map(|p| format!("{p}\n")).collect();
    std::fs::write(&pidfile, text).unwrap();
    (common::Reaper(children), pids, pidfile)
}

/// `name` on the test's own PATH.
fn which(name: &str) -> PathBuf {
    std::env::split_paths(&std::env::var_os("PATH").unwrap_or_default())
        .map(|d| d.join(name))
        .find(|p| p.is_file())
        .unwrap_or_else(|| panic!("{name} is not on PATH"))
}

fn pid_list(pids: &[u32]) -> String {
    pids.iter()
        .map(u32::to_string)
        .collect::<Vec<_>>()
        .join(",")
}

const MIB_4112: u64 = 4112 << 20;

#[test]
fn mem_shows_the_stand_ins_mib_for_the_process_row_in_json_human_and_csv() {
    let tmp = scratch();
    let bin = fake_dir(tmp.path());
    let (_reaper, pids, pidfile) = holders(tmp.path(), "gpu-holder", 1);
    let env = [("FAKE_GPU_PIDFILE", pidfile.to_str().unwrap())];
    let path = path_with(Some(&bin));
    let pid = pids[0].to_string();
    let o = mem(&path, &env, &["--pid", &pid, "--format", "json"]);
    assert!(o.status.success(), "{}", stderr(&o));
    let v = json(&o);
    assert_eq!(v["groups"][0]["name"], "gpu-holder", "{v}");
    assert_eq!(v["groups"][0]["gpu_bytes"], MIB_4112, "{v}");
    assert_eq!(v["total"]["gpu_bytes"], MIB_4112, "{v}");
    let g = &v["gpu"];
    assert_eq!(g["listed_processes"], 1, "pid 1 was not asked for: {g}");
    assert_eq!(g["elsewhere_processes"], 0, "{g}");
    assert!(v.get("gpu_reason").is_none(), "{v}");
    let o = mem(&path, &env, &["--pid", &pid]);
    let text = stdout(&o);
    let lines: Vec<&str> = text.lines().collect();
    assert!(lines[0].contains("Swap MiB  GPU MiB  Program"), "{text}");
    assert!(lines[1].ends_with("  4,112.0  gpu-holder (1)"), "{text}");
    assert!(lines[3].contains("  4,112.0  TOTAL (1 process"), "{text}");
    let o = mem(&path, &env, &["--pid", &pid, "--format", "csv"]);
    let text = stdout(&o);
    let mut rows = text.lines().map(|l| l.split(',').collect::<Vec<_>>());
    let header = rows.next().unwrap();
    let col = header
        .iter()
        .position(|h| *h == "gpu_bytes")
        .expect("gpu_bytes");
    assert_eq!(header.last(), Some(&"swap_not_attributed_bytes"));
    for row in rows {
        assert_eq!(row[col], MIB_4112.to_string(), "{text}");
    }
    assert_eq!(
        started_from(&bin),
        Vec::<String>::new(),
        "nvidia-smi left running"
    );
}

/// tally leaves itself out, and so its own nvidia-smi, though it runs
/// while /proc is read. Regression: the test once asked that no row be
/// named nvidia-smi, and another test's stand-in, running beside it,
/// was one; tally's own are told by this test's directory in their
/// command lines, seen while tally runs.
#[test]
fn mem_leaves_its_own_nvidia_smi_out() {
    use std::sync::atomic::{AtomicBool, Ordering};
    let tmp = scratch();
    let bin = fake_dir(tmp.path());
    // The stand-in is a shell script: its comm is its name.
    let mut cmd = common::tally_std();
    cmd.env("PATH", path_with(Some(&bin)))
        .env("FAKE_GPU_DELAY", "0.3")
        .args(["mem", "--name", "comm", "--format", "json"]);
    let child = cmd
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("tally runs");
    let done = AtomicBool::new(false);
    let (o, own) = std::thread::scope(|s| {
        let watcher = s.spawn(|| {
            let mut own = std::collections::BTreeSet::new();
            while !done.load(Ordering::Relaxed) {
                for line in started_from(&bin) {
                    if let Some(pid) = line.split(':').next().and_then(|p| p.parse::<u64>().ok()) {
                        own.insert(pid);
                    }
                }
                std::thread::sleep(std::time::Duration::from_millis(5));
            }
            own
        });
        let o = child.wait_with_output().expect("tally ends");
        done.store(true, Ordering::Relaxed);
        (o, watcher.join().expect("the watcher"))
    });
    assert!(o.status.success(), "{}", stderr(&o));
    let v = json(&o);
    assert!(v["gpu"].is_object(), "{v}");
    assert!(!own.is_empty(), "tally's nvidia-smi was never seen running");
    let listed: Vec<(u64, &str)> = v["groups"]
        .as_array()
        .unwrap()
        .iter()
        .flat_map(|g| {
            let name = g["name"].as_str().unwrap_or("");
            g["pids"]
                .as_array()
                .into_iter()
                .flatten()
                .filter_map(|p| p.as_u64())
                .map(move |p| (p, name))
        })
        .collect();
    let theirs: Vec<_> = listed.iter().filter(|(p, _)| own.contains(p)).collect();
    assert!(
        theirs.is_empty(),
        "tally's own nvidia-smi listed: {theirs:?} (own: {own:?})"
    );
}

#[test]
fn mem_by_user_and_by_program_sum_the_gpu_memory_of_their_processes() {
    let tmp = scratch();
    let bin = fake_dir(tmp.path());
    let (_reaper, pids, pidfile) = holders(tmp.path(), "gpu-holder", 2);
    let env = [("FAKE_GPU_PIDFILE", pidfile.to_str().unwrap())];
    let path = path_with(Some(&bin));
    for by in ["user", "program"] {
        let o = mem(
            &path,
            &env,
            &["--by", by, "--pid", &pid_list(&pids), "--format", "json"],
        );
        assert!(o.status.success(), "{}", stderr(&o));
        let v = json(&o);
        assert_eq!(v["groups"].as_array().unwrap().len(), 1, "{v}");
        assert_eq!(v["groups"][0]["processes"], 2, "{v}");
        assert_eq!(v["groups"][0]["gpu_bytes"], 2 * MIB_4112, "--by {by}: {v}");
        assert_eq!(v["total"]["gpu_bytes"], 2 * MIB_4112, "{v}");
    }
    let o = mem(
        &path,
        &env,
        &["--by", "pid", "--pid", &pid_list(&pids), "--format", "json"],
    );
    let v = json(&o);
    for g in v["groups"].as_array().unwrap() {
        assert_eq!(g["gpu_bytes"], MIB_4112, "{v}");
    }
}

#[test]
fn mem_gpu_without_nvidia_smi_says_unavailable_and_why_with_the_same_exit_status() {
    if real_nvidia_smi() {
        common::skip!("nvidia-smi is installed here: the case without it cannot be made");
    }
    let o = mem(&path_with(None), &[], &["--gpu", "--pid", "1"]);
    assert!(o.status.success(), "{}", stderr(&o));
    let said: Vec<String> = paragraphs(&o)
        .into_iter()
        .filter(|l| l.contains("GPU"))
        .collect();
    assert_eq!(
        said,
        [
            "tally: GPU memory unavailable: nvidia-smi is not on PATH: no NVIDIA driver is installed here, or its tools are not on PATH (install the driver, or add the directory holding nvidia-smi to PATH)"
        ]
    );
    assert!(!stdout(&o).contains("GPU"), "no column: {}", stdout(&o));
    let o = mem(
        &path_with(None),
        &[],
        &["--gpu", "--pid", "1", "--format", "json"],
    );
    let v = json(&o);
    assert_eq!(v["gpu"], Value::Null, "{v}");
    assert!(
        v["gpu_reason"]
            .as_str()
            .unwrap()
            .starts_with("nvidia-smi is not on PATH")
    );
    assert!(v["total"].get("gpu_bytes").is_none(), "{v}");
}

#[test]
fn mem_without_nvidia_smi_or_on_a_fixture_tree_is_unchanged() {
    if real_nvidia_smi() {
        common::skip!("nvidia-smi is installed here: the case without it cannot be made");
    }
    let tmp = scratch();
    let bin = fake_dir(tmp.path());
    let tree = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/proc/typical");
    let tree = tree.to_str().unwrap();
    // The stand-in on PATH does not touch a fixture tree's report unless
    // --gpu asks: its pids are not the driver's.
    for format in ["human", "json", "csv", "markdown", "prometheus"] {
        let args = ["--procfs", tree, "--format", format];
        let without = mem(&path_with(None), &[], &args);
        let with = mem(&path_with(Some(&bin)), &[], &args);
        assert!(without.status.success(), "{}", stderr(&without));
        let strip = |o: &Output| {
            // The JSON header's timestamp may tick between the two.
            stdout(o)
                .lines()
                .filter(|l| !l.contains("\"timestamp\""))
                .collect::<Vec<_>>()
                .join("\n")
        };
        assert_eq!(strip(&without), strip(&with), "{format}");
        assert!(!stdout(&without).to_lowercase().contains("gpu"), "{format}");
        assert_eq!(stderr(&without), stderr(&with), "{format}");
    }
    // Live, without nvidia-smi: no key, no column, nothing said.
    let o = mem(&path_with(None), &[], &["--pid", "1", "--format", "json"]);
    let v = json(&o);
    assert!(
        v.get("gpu").is_none() && v.get("gpu_reason").is_none(),
        "{v}"
    );
    assert!(!stderr(&o).contains("GPU"), "{}", stderr(&o));
}

#[test]
fn mem_gpu_with_nvidia_smi_but_no_driver_says_nvidia_smis_words() {
    let tmp = scratch();
    let bin = fake_dir(tmp.path());
    let env = [("FAKE_GPU_MODE", "nodriver")];
    let path = path_with(Some(&bin));
    let o = mem(&path, &env, &["--gpu", "--pid", "1"]);
    assert!(o.status.success(), "{}", stderr(&o));
    let said = paragraphs(&o);
    assert!(
        said.iter().any(|l| l == "tally: GPU memory unavailable: nvidia-smi exited with status 9: NVIDIA-SMI has failed because it couldn't communicate with the NVIDIA driver. Make sure that the latest NVIDIA driver is installed and running."),
        "{said:?}"
    );
    // Not asked for: the report is as without GPU support.
    let o = mem(&path, &env, &["--pid", "1", "--format", "json"]);
    assert!(!stderr(&o).contains("GPU"), "{}", stderr(&o));
    assert!(json(&o).get("gpu").is_none());
}

#[test]
fn mem_leaves_out_a_process_not_in_this_proc_and_says_how_many_and_how_much() {
    let tmp = scratch();
    let bin = fake_dir(tmp.path());
    // Above the largest pid_max: never in /proc.
    let env = [("FAKE_GPU_ELSEWHERE", "4194304")];
    let o = mem(
        &path_with(Some(&bin)),
        &env,
        &["--filter", "^no such program$", "--format", "json"],
    );
    assert!(o.status.success(), "{}", stderr(&o));
    let v = json(&o);
    let g = &v["gpu"];
    assert_eq!(g["elsewhere_processes"], 1, "{g}");
    assert_eq!(g["elsewhere_bytes"], 777u64 << 20, "{g}");
    assert_eq!(v["total"]["gpu_bytes"], 0, "no row kept: {v}");
    assert!(
        paragraphs(&o).iter().any(|l| l.starts_with(
            "tally: the NVIDIA driver lists 1 process holding 777 MiB that this /proc does not show"
        )),
        "{}",
        stderr(&o)
    );
}

#[test]
fn mem_unknown_gpu_memory_is_null_and_a_dash_never_zero() {
    let tmp = scratch();
    let bin = fake_dir(tmp.path());
    let (_reaper, pids, pidfile) = holders(tmp.path(), "gpu-holder", 1);
    let env = [
        ("FAKE_GPU_PIDFILE", pidfile.to_str().unwrap()),
        ("FAKE_GPU_MIB", "[N/A]"),
    ];
    let pid = pids[0].to_string();
    let o = mem(
        &path_with(Some(&bin)),
        &env,
        &["--pid", &pid, "--format", "json"],
    );
    let v = json(&o);
    assert_eq!(v["groups"][0]["gpu_bytes"], Value::Null, "{v}");
    assert_eq!(v["total"]["gpu_bytes"], Value::Null, "{v}");
    assert_eq!(v["gpu"]["unknown_processes"], 1, "{v}");
    let o = mem(&path_with(Some(&bin)), &env, &["--pid", &pid]);
    assert!(
        stdout(&o).contains("        —  gpu-holder (1)"),
        "{}",
        stdout(&o)
    );
    let o = mem(
        &path_with(Some(&bin)),
        &env,
        &["--pid", &pid, "--format", "prometheus"],
    );
    assert!(!stdout(&o).contains("gpu_bytes"), "{}", stdout(&o));
}

/// Processes whose environment holds `marker` (`KEY=VALUE`): what tally
/// started with it, however it renamed itself (the silent stand-in execs
/// `sleep`).
fn running_with(marker: &str) -> Vec<String> {
    let mut found = Vec::new();
    for e in std::fs::read_dir("/proc").unwrap().flatten() {
        let Ok(environ) = std::fs::read(e.path().join("environ")) else {
            continue;
        };
        if environ.split(|&b| b == 0).any(|v| v == marker.as_bytes()) {
            found.push(e.file_name().to_string_lossy().into_owned());
        }
    }
    found
}

#[test]
fn mem_gives_up_on_a_silent_nvidia_smi_after_5_s_and_leaves_none_running() {
    let tmp = scratch();
    let bin = fake_dir(tmp.path());
    let marker = format!("TALLY_GPU_TEST_MARKER={}", std::process::id());
    let (key, value) = marker.split_once('=').unwrap();
    let env = [("FAKE_GPU_MODE", "silent"), (key, value)];
    let o = mem(
        &path_with(Some(&bin)),
        &env,
        &["--gpu", "--pid", "1", "--format", "json"],
    );
    assert!(o.status.success(), "{}", stderr(&o));
    assert_eq!(
        json(&o)["gpu_reason"],
        "nvidia-smi gave no answer in 5 s (stopped)"
    );
    assert_eq!(
        running_with(&marker),
        Vec::<String>::new(),
        "nvidia-smi left running"
    );
}

// ---- tally serve: the GPU gauge ----

/// What `tally serve` exports at its first scrape with `PATH` and `env`,
/// and what it said on stderr by then.
fn serve_scrape(path: &str, env: &[(&str, &str)], dir: &Path) -> (String, String) {
    use std::io::{Read, Write};
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .unwrap()
        .port();
    let config = dir.join("serve.toml");
    std::fs::write(&config, "[mem]\ntop = 10000\n").unwrap();
    let log = dir.join("serve.log");
    let mut cmd = common::tally_std();
    cmd.env("PATH", path)
        .args([
            "serve",
            "--listen",
            &format!("127.0.0.1:{port}"),
            "--config",
        ])
        .arg(&config)
        .stdout(std::process::Stdio::null())
        .stderr(std::fs::File::create(&log).unwrap());
    for (k, v) in env {
        cmd.env(k, v);
    }
    let _server = common::Reaper(vec![cmd.spawn().unwrap()]);
    let until = std::time::Instant::now() + std::time::Duration::from_secs(20);
    loop {
        let answer = std::net::TcpStream::connect(("127.0.0.1", port)).and_then(|mut s| {
            s.write_all(b"GET /metrics HTTP/1.0\r\nHost: localhost\r\n\r\n")?;
            let mut raw = String::new();
            s.read_to_string(&mut raw)?;
            Ok(raw)
        });
        if let Ok(raw) = answer
            && let Some((_, body)) = raw.split_once("\r\n\r\n")
        {
            return (body.to_string(), std::fs::read_to_string(&log).unwrap());
        }
        assert!(
            std::time::Instant::now() < until,
            "tally serve never answered: {}",
            std::fs::read_to_string(&log).unwrap_or_default()
        );
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
}

#[test]
fn serve_exports_gpu_memory_per_program_as_a_gauge_beside_the_ram_gauges() {
    let tmp = scratch();
    let bin = fake_dir(tmp.path());
    let (_reaper, _pids, pidfile) = holders(tmp.path(), "gpu-holder", 1);
    let env = [("FAKE_GPU_PIDFILE", pidfile.to_str().unwrap())];
    let (body, log) = serve_scrape(&path_with(Some(&bin)), &env, tmp.path());
    for line in [
        "# TYPE tally_mem_gpu_bytes gauge",
        &format!("tally_mem_gpu_bytes{{program=\"gpu-holder\"}} {MIB_4112}"),
        "# TYPE tally_mem_total_gpu_bytes gauge",
        "tally_serve_collector_success{collector=\"gpu\"} 1",
    ] {
        assert!(
            body.lines().any(|l| l == line),
            "no {line:?} in\n{body}\n{log}"
        );
    }
    assert!(
        body.contains("tally_mem_pss_bytes{program=\"gpu-holder\"}"),
        "{body}"
    );
    if let Some(promtool) = std::env::split_paths(&std::env::var_os("PATH").unwrap_or_default())
        .map(|d| d.join("promtool"))
        .find(|p| p.is_file())
    {
        let (status, said) = common::promtool_check_metrics(&promtool, &body);
        assert!(status.success() && said.trim().is_empty(), "{said}\n{body}");
    } else {
        common::skip_part!("promtool is not installed: the GPU gauge was not checked by it");
    }
}

#[test]
fn serve_exports_no_gpu_figure_when_nvidia_smi_fails_and_says_why_once() {
    let tmp = scratch();
    let bin = fake_dir(tmp.path());
    let env = [("FAKE_GPU_MODE", "nodriver")];
    let (body, log) = serve_scrape(&path_with(Some(&bin)), &env, tmp.path());
    assert!(
        !body.contains("tally_mem_gpu") && !body.contains("total_gpu"),
        "{body}"
    );
    assert!(
        body.lines()
            .any(|l| l == "tally_serve_collector_success{collector=\"gpu\"} 0"),
        "{body}"
    );
    assert!(
        body.contains("tally_mem_pss_bytes"),
        "mem still exported: {body}"
    );
    assert_eq!(
        log.matches("GPU memory unavailable: nvidia-smi exited with status 9")
            .count(),
        1,
        "{log}"
    );
    if real_nvidia_smi() {
        common::skip_part!("nvidia-smi is installed here: serve without it cannot be seen");
        return;
    }
    let (body, _) = serve_scrape(&path_with(None), &[], tmp.path());
    for gpu in ["tally_mem_gpu", "tally_mem_total_gpu", "collector=\"gpu\""] {
        assert!(
            !body.contains(gpu),
            "nothing GPU without nvidia-smi: {body}"
        );
    }
}

/// A python3 program that holds 1 GiB of GPU memory, through PyTorch or,
/// without it, the driver's own library (libcuda): prints `ready` once it
/// holds it, then sleeps.
const HOLD_1_GIB: &str = r#"
import sys, time
try:
    import torch
    x = torch.ones(2**28, device="cuda")
    torch.cuda.synchronize()
except Exception:
    import ctypes
    cuda = ctypes.CDLL("libcuda.so.1")
    dev, ctx, ptr = ctypes.c_int(), ctypes.c_void_p(), ctypes.c_uint64()
    ok = cuda.cuInit(0) == 0 and cuda.cuDeviceGet(ctypes.byref(dev), 0) == 0
    ok = ok and cuda.cuCtxCreate_v2(ctypes.byref(ctx), 0, dev) == 0
    ok = ok and cuda.cuMemAlloc_v2(ctypes.byref(ptr), ctypes.c_size_t(1 << 30)) == 0
    if not ok:
        sys.exit(3)
print("ready", flush=True)
time.sleep(60)
"#;

/// `nvidia-smi --query-compute-apps=pid,used_memory`'s listing: MiB per
/// pid (summed over GPUs; `None` where a figure is not a number).
fn smi_listing(smi: &Path) -> std::collections::BTreeMap<u32, Option<u64>> {
    let o = common::command(smi)
        .args([
            "--query-compute-apps=pid,used_memory",
            "--format=csv,noheader,nounits",
        ])
        .output()
        .expect("nvidia-smi runs");
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stdout));
    let mut listing = std::collections::BTreeMap::new();
    for line in String::from_utf8_lossy(&o.stdout).lines() {
        let Some((pid, mib)) = line.split_once(',') else {
            continue;
        };
        let Ok(pid) = pid.trim().parse::<u32>() else {
            continue;
        };
        let mib = mib.trim().parse::<u64>().ok();
        let slot = listing.entry(pid).or_insert(Some(0));
        *slot = slot.zip(mib).map(|(a, b)| a + b);
    }
    listing
}

/// On a machine with an NVIDIA GPU (nvidia-smi on PATH) and python3 with
/// PyTorch for CUDA (or the driver's libcuda): `tally mem --by pid` gives
/// every process nvidia-smi lists, and which the scan read, the MiB
/// nvidia-smi gives it, to the MiB; a process whose figure changed between
/// the listings made before and after tally's is not compared.
#[test]
fn mem_on_a_real_gpu_agrees_with_nvidia_smi_to_the_mib() {
    let Some(smi) = std::env::split_paths(&std::env::var_os("PATH").unwrap_or_default())
        .map(|d| d.join("nvidia-smi"))
        .find(|p| p.is_file())
    else {
        common::skip!("needs an NVIDIA GPU and its driver (nvidia-smi is not on PATH)");
    };
    let Ok(mut child) = common::command("python3")
        .args(["-c", HOLD_1_GIB])
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::null())
        .spawn()
    else {
        common::skip!("needs python3 (with PyTorch for CUDA, or ctypes and libcuda)");
    };
    let out = child.stdout.take().unwrap();
    let holder = child.id();
    let _reaper = common::Reaper(vec![child]);
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let mut line = String::new();
        let _ = std::io::BufRead::read_line(&mut std::io::BufReader::new(out), &mut line);
        let _ = tx.send(line);
    });
    let ready = rx.recv_timeout(std::time::Duration::from_secs(120));
    if !ready.is_ok_and(|l| l.trim() == "ready") {
        common::skip!(
            "python3 could not take GPU memory (no PyTorch for CUDA, no libcuda, or no usable GPU)"
        );
    }
    let before = smi_listing(&smi);
    let o = common::tally_std()
        .args(["mem", "--by", "pid", "--gpu", "--format", "json"])
        .output()
        .unwrap();
    let after = smi_listing(&smi);
    assert!(o.status.success(), "{}", stderr(&o));
    let v = json(&o);
    assert!(v["gpu"].is_object(), "{v}");
    let rows: std::collections::BTreeMap<u64, Value> = v["groups"]
        .as_array()
        .unwrap()
        .iter()
        .map(|g| (g["pid"].as_u64().unwrap(), g["gpu_bytes"].clone()))
        .collect();
    if !before.contains_key(&holder) {
        common::skip!(
            "nvidia-smi does not list the process holding GPU memory ({holder}): the driver names \
             processes of another PID namespace (a container)"
        );
    }
    let mut compared = 0;
    for (pid, mib) in &before {
        if after.get(pid) != Some(mib) {
            continue;
        }
        let Some(row) = rows.get(&u64::from(*pid)) else {
            continue;
        };
        let want = mib.map_or(Value::Null, |m| Value::from(m << 20));
        assert_eq!(row, &want, "pid {pid}: nvidia-smi {mib:?} MiB; {v}");
        compared += 1;
    }
    assert!(
        rows.contains_key(&u64::from(holder)),
        "no row for {holder}: {v}"
    );
    assert!(compared >= 1, "nothing compared: {before:?} {after:?}");
}

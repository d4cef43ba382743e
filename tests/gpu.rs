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

fn real_nvidia_smi() -> bool {
    ["/usr/local/bin", "/usr/bin", "/bin"]
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

/// On a machine with an NVIDIA GPU, nvidia-smi and PyTorch with CUDA: a
/// program that holds 2 GiB of GPU memory is reported at 2 GiB plus the
/// driver's per-context overhead (at most 1 GiB allowed for it), and the
/// figure agrees with nvidia-smi's own listing made while it ran.
#[test]
fn run_on_a_real_gpu_reports_a_known_allocation() {
    if !real_nvidia_smi() {
        common::skip!("needs an NVIDIA GPU and its driver (nvidia-smi is not installed)");
    }
    let probe = common::command("python3")
        .args([
            "-c",
            "import torch,sys; sys.exit(0 if torch.cuda.is_available() else 1)",
        ])
        .output();
    if !probe.is_ok_and(|o| o.status.success()) {
        common::skip!("needs python3 with PyTorch built for CUDA and a usable GPU");
    }
    let script = "import torch,time; x = torch.ones(2**29, device='cuda'); torch.cuda.synchronize(); time.sleep(1)";
    let o = common::tally_std()
        .args([
            "run", "--gpu", "--format", "json", "--", "python3", "-c", script,
        ])
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", stderr(&o));
    let r = first_run(&o);
    let peak = r["gpu"]["gpu_mem_peak_bytes"].as_u64().unwrap();
    let asked = 2u64 << 30;
    assert!(
        peak >= asked * 95 / 100 && peak <= asked + (1 << 30),
        "peak {peak} for {asked} asked; {}",
        r["gpu"]
    );
}

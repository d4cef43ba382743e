//! Lays out the `tally` binary so that `tally run`'s path to `fork` is
//! contiguous: `link/run-hot-path.order` lists the functions that path
//! executes (std's and the C library's included), and the linker puts them
//! side by side. Scattered over the text they cost one page fault per
//! 64 KiB window they touch (about 25 more faults, 0.1 ms, added to every
//! measured run); together they fit in three windows.
//!
//! The list is a layout hint, never a requirement: names missing from the
//! binary are skipped. The option needs lld: rustc's own (`rust-lld`) is
//! the default linker of x86_64-unknown-linux-gnu since Rust 1.90, and for
//! x86_64-unknown-linux-musl, tally's target, the C compiler that links is
//! pointed at it here (`-B` the toolchain's `gcc-ld`, `-fuse-ld=lld`, as
//! rustc does itself for the gnu target) when the toolchain ships it. Not
//! when another linker is configured. `link/order-hot-path.sh` regenerates
//! the list.

use std::env;
use std::path::Path;
use std::process::Command;

fn main() {
    build_info();
    let order = Path::new("link/run-hot-path.order");
    println!("cargo:rerun-if-changed={}", order.display());
    println!("cargo:rerun-if-changed=build.rs");
    println!("cargo:rerun-if-env-changed=RUSTC_LINKER");
    let lld = rust_lld();
    if let Some(Some(gcc_ld)) = &lld {
        println!("cargo:rustc-link-arg-bins=-B{}", gcc_ld.display());
        println!("cargo:rustc-link-arg-bins=-fuse-ld=lld");
    }
    if lld.is_some() {
        let path = Path::new(&env::var("CARGO_MANIFEST_DIR").unwrap_or_default()).join(order);
        println!(
            "cargo:rustc-link-arg-bins=-Wl,--symbol-ordering-file={}",
            path.display()
        );
        println!("cargo:rustc-link-arg-bins=-Wl,--no-warn-symbol-ordering");
    }
}

/// Whether the binary will be linked by rustc's own lld: `Some(None)`
/// where it is the target's default linker (x86_64 gnu, Rust 1.90 or
/// newer), `Some(Some(dir))` where the C compiler must be pointed at it
/// (x86_64 musl: `dir` holds the toolchain's `ld.lld` wrapper), `None`
/// where it is not at hand or another linker is configured.
fn rust_lld() -> Option<Option<std::path::PathBuf>> {
    let var = |k: &str| env::var(k).unwrap_or_default();
    if var("CARGO_CFG_TARGET_ARCH") != "x86_64" || var("CARGO_CFG_TARGET_OS") != "linux" {
        return None;
    }
    let flags = var("CARGO_ENCODED_RUSTFLAGS");
    // -C linker=…, -C linker-flavor=…, -C link-self-contained=…, -fuse-ld=…
    let linker_overridden = env::var_os("RUSTC_LINKER").is_some()
        || ["linker", "link-self-contained", "fuse-ld"]
            .iter()
            .any(|k| flags.contains(k));
    if linker_overridden {
        return None;
    }
    match var("CARGO_CFG_TARGET_ENV").as_str() {
        "gnu" => rustc_minor().is_some_and(|m| m >= 90).then_some(None),
        "musl" => {
            let gcc_ld = rustc_sysroot()?
                .join("lib/rustlib")
                .join(var("HOST"))
                .join("bin/gcc-ld");
            gcc_ld.join("ld.lld").is_file().then_some(Some(gcc_ld))
        }
        _ => None,
    }
}

/// The sysroot of the compiler building this crate.
fn rustc_sysroot() -> Option<std::path::PathBuf> {
    let rustc = env::var_os("RUSTC")?;
    let out = Command::new(rustc)
        .args(["--print", "sysroot"])
        .output()
        .ok()?;
    let text = String::from_utf8(out.stdout).ok()?;
    Some(text.trim().into())
}

/// The minor version of the compiler building this crate (`1.M.p`).
fn rustc_minor() -> Option<u32> {
    let rustc = env::var_os("RUSTC")?;
    let out = Command::new(rustc).arg("-vV").output().ok()?;
    let text = String::from_utf8(out.stdout).ok()?;
    let release = text.lines().find_map(|l| l.strip_prefix("release: "))?;
    release.split('.').nth(1)?.parse().ok()
}

/// `TALLY_GIT_REVISION` and `TALLY_RUSTC_VERSION` for `tally serve`'s
/// `tally_build_info`: the commit checked out and the compiler's version;
/// unset where git or the compiler cannot say (a source tarball), and
/// tally says "unknown". Uncommitted changes are not marked: watching for
/// them would rebuild tally after every `git add`.
fn build_info() {
    let run = |cmd: &mut Command| {
        cmd.output()
            .ok()
            .filter(|o| o.status.success())
            .and_then(|o| String::from_utf8(o.stdout).ok())
            .map(|s| s.trim().to_string())
            .filter(|s| !s.is_empty())
    };
    if let Some(rev) = run(Command::new("git").args(["rev-parse", "--short=12", "HEAD"])) {
        println!("cargo:rustc-env=TALLY_GIT_REVISION={rev}");
        // A new commit, or a checkout: HEAD or the branch's ref moves.
        if let Some(git_dir) = run(Command::new("git").args(["rev-parse", "--absolute-git-dir"])) {
            println!("cargo:rerun-if-changed={git_dir}/HEAD");
            if let Some(head_ref) = run(Command::new("git").args(["symbolic-ref", "-q", "HEAD"]))
                && let Some(ref_path) =
                    run(Command::new("git").args(["rev-parse", "--git-path", &head_ref]))
            {
                // A packed ref has no file of its own: watch packed-refs. A
                // missing file would rerun this script on every build.
                let packed =
                    run(Command::new("git").args(["rev-parse", "--git-path", "packed-refs"]));
                for path in std::iter::once(ref_path).chain(packed) {
                    if Path::new(&path).exists() {
                        println!("cargo:rerun-if-changed={path}");
                    }
                }
            }
        }
    }
    if let Some(rustc) = env::var_os("RUSTC")
        && let Some(version) = run(Command::new(rustc).arg("--version"))
    {
        // "rustc 1.95.0 (59807616e 2026-04-14)" -> "1.95.0"
        let v = version
            .split_whitespace()
            .nth(1)
            .unwrap_or(&version)
            .to_string();
        println!("cargo:rustc-env=TALLY_RUSTC_VERSION={v}");
    }
}

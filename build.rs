//! Lays out the `tally` binary so that `tally run`'s path to `fork` is
//! contiguous: `link/run-hot-path.order` lists the functions that path
//! executes (std's and glibc's included), and the linker puts them side by
//! side. Scattered over the 3.7 MB of text they cost one page fault per
//! 64 KiB window they touch (about 25 more faults, 0.1 ms, added to every
//! measured run); together they fit in three windows.
//!
//! The list is a layout hint, never a requirement: names missing from the
//! binary are skipped, and the option is only passed to rust-lld, the
//! default linker of x86_64-unknown-linux-gnu since Rust 1.90, when no
//! other linker is configured. `link/order-hot-path.sh` regenerates it.

use std::env;
use std::path::Path;
use std::process::Command;

fn main() {
    let order = Path::new("link/run-hot-path.order");
    println!("cargo:rerun-if-changed={}", order.display());
    println!("cargo:rerun-if-changed=build.rs");
    println!("cargo:rerun-if-env-changed=RUSTC_LINKER");
    if uses_rust_lld() {
        let path = Path::new(&env::var("CARGO_MANIFEST_DIR").unwrap_or_default()).join(order);
        println!(
            "cargo:rustc-link-arg-bins=-Wl,--symbol-ordering-file={}",
            path.display()
        );
        println!("cargo:rustc-link-arg-bins=-Wl,--no-warn-symbol-ordering");
    }
}

/// Whether the binary will be linked by rustc's own lld.
fn uses_rust_lld() -> bool {
    let var = |k: &str| env::var(k).unwrap_or_default();
    let target_is_default_lld = var("CARGO_CFG_TARGET_ARCH") == "x86_64"
        && var("CARGO_CFG_TARGET_OS") == "linux"
        && var("CARGO_CFG_TARGET_ENV") == "gnu";
    let flags = var("CARGO_ENCODED_RUSTFLAGS");
    // -C linker=…, -C linker-flavor=…, -C link-self-contained=…, -fuse-ld=…
    let linker_overridden = env::var_os("RUSTC_LINKER").is_some()
        || ["linker", "link-self-contained", "fuse-ld"]
            .iter()
            .any(|k| flags.contains(k));
    target_is_default_lld && !linker_overridden && rustc_minor().is_some_and(|m| m >= 90)
}

/// The minor version of the compiler building this crate (`1.M.p`).
fn rustc_minor() -> Option<u32> {
    let rustc = env::var_os("RUSTC")?;
    let out = Command::new(rustc).arg("-vV").output().ok()?;
    let text = String::from_utf8(out.stdout).ok()?;
    let release = text.lines().find_map(|l| l.strip_prefix("release: "))?;
    release.split('.').nth(1)?.parse().ok()
}

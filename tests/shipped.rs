//! The binary under test is the binary users get.
//!
//! `bash tests/release.sh` (the README's test command) and `.ci/run` build
//! the release binary, with every link flag of `.cargo/config.toml` and
//! `build.rs`, and run the whole suite against it through `$TALLY_BIN`.
//! These tests check that this is so, and guard the link tricks: a libc
//! function that src/ calls directly must not be a weak undefined symbol
//! in the static binary, where it would resolve to address 0 and crash on
//! the first call (as `copy_file_range` did under fat LTO: issue "Trust
//! what ships", `tally cp` exit 139).

mod common;

use std::collections::BTreeSet;
use std::path::Path;

/// The symbols of an ELF64 little-endian file: (name, bind, section index).
fn symbols(elf: &[u8]) -> Vec<(String, u8, u16)> {
    let u16_at = |o: usize| u16::from_le_bytes(elf[o..o + 2].try_into().unwrap());
    let u32_at = |o: usize| u32::from_le_bytes(elf[o..o + 4].try_into().unwrap());
    let u64_at = |o: usize| u64::from_le_bytes(elf[o..o + 8].try_into().unwrap()) as usize;
    assert_eq!(&elf[..4], b"\x7fELF", "not an ELF file");
    assert_eq!(elf[4], 2, "not a 64-bit ELF file");
    let shoff = u64_at(0x28);
    let shentsize = u16_at(0x3a) as usize;
    let shnum = u16_at(0x3c) as usize;
    let section = |i: usize| shoff + i * shentsize;
    let mut out = Vec::new();
    for i in 0..shnum {
        let sh = section(i);
        if u32_at(sh + 4) != 2 {
            continue; // SHT_SYMTAB only
        }
        let (off, size, link, entsize) = (
            u64_at(sh + 0x18),
            u64_at(sh + 0x20),
            u32_at(sh + 0x28) as usize,
            u64_at(sh + 0x38),
        );
        let strtab = u64_at(section(link) + 0x18);
        for s in (off..off + size).step_by(entsize) {
            let name_off = strtab + u32_at(s) as usize;
            let end = elf[name_off..].iter().position(|&b| b == 0).unwrap();
            let name = String::from_utf8_lossy(&elf[name_off..name_off + end]).into_owned();
            out.push((name, elf[s + 4] >> 4, u16_at(s + 6)));
        }
    }
    out
}

/// Every `libc::NAME(` called in src/.
fn libc_calls() -> BTreeSet<String> {
    let re = regex::Regex::new(r"libc::([a-z_][a-z0-9_]*)\s*\(").unwrap();
    let mut names = BTreeSet::new();
    for entry in walkdir::WalkDir::new(Path::new(env!("CARGO_MANIFEST_DIR")).join("src")) {
        let entry = entry.unwrap();
        if entry.path().extension().is_some_and(|e| e == "rs") {
            let text = std::fs::read_to_string(entry.path()).unwrap();
            names.extend(re.captures_iter(&text).map(|c| c[1].to_string()));
        }
    }
    names
}

fn shipped() -> Vec<u8> {
    let bin = common::tally_bin();
    std::fs::read(&bin).unwrap_or_else(|e| panic!("cannot read {}: {e}", bin.display()))
}

#[test]
fn suite_runs_against_the_release_binary() {
    let bin = std::env::var_os("TALLY_BIN").unwrap_or_default();
    assert!(
        !bin.is_empty(),
        "TALLY_BIN is not set, so this run tested cargo's test build, not the \
         binary users get: run `bash tests/release.sh` (it builds the release \
         binary and runs every test against it)"
    );
    let path = Path::new(&bin);
    assert!(
        path.components().any(|c| c.as_os_str() == "release"),
        "TALLY_BIN={} is not a release build",
        path.display()
    );
}

#[test]
fn shipped_binary_is_static_and_not_position_independent() {
    let elf = shipped();
    let u16_at = |o: usize| u16::from_le_bytes(elf[o..o + 2].try_into().unwrap());
    assert_eq!(u16_at(0x10), 2, "e_type is not ET_EXEC: the binary is PIE");
    let (phoff, phentsize, phnum) = (
        u64::from_le_bytes(elf[0x20..0x28].try_into().unwrap()) as usize,
        u16_at(0x36) as usize,
        u16_at(0x38) as usize,
    );
    for i in 0..phnum {
        let p_type = u32::from_le_bytes(elf[phoff + i * phentsize..][..4].try_into().unwrap());
        assert_ne!(p_type, 3, "PT_INTERP: the binary is dynamically linked");
    }
}

#[test]
fn no_libc_function_called_from_src_is_weak_undefined() {
    let elf = shipped();
    let weak_undefined: BTreeSet<String> = symbols(&elf)
        .into_iter()
        .filter(|(_, bind, shndx)| *bind == 2 && *shndx == 0)
        .map(|(name, _, _)| name)
        .collect();
    assert!(
        !symbols(&elf).is_empty(),
        "the binary has no symbol table (stripped?): the check cannot run"
    );
    let called = libc_calls();
    assert!(
        called.contains("syscall"),
        "the source scan found no libc calls"
    );
    let broken: Vec<&String> = called.intersection(&weak_undefined).collect();
    assert!(
        broken.is_empty(),
        "libc functions called from src/ are weak undefined symbols in {} and \
         would jump to address 0: {broken:?}; call them through libc::syscall",
        common::tally_bin().display()
    );
}

/// `compare`'s runs start from a spawner whose peak resident set the kernel
/// carries into every command's (src/run/spawner.rs); it stays below the
/// smallest program only while link/run-hot-path.order keeps the
/// spawner's code together. A list left stale by later changes let the
/// spawner's peak grow from 480 to 760 kB, above a static `main(){}`
/// (548 kB), and `compare` called that program's own peaks upper bounds.
#[test]
fn the_hot_path_order_is_not_stale() {
    let elf = shipped();
    let defined: BTreeSet<String> = symbols(&elf)
        .into_iter()
        .filter(|(_, _, shndx)| *shndx != 0)
        .map(|(name, _, _)| name)
        .collect();
    assert!(!defined.is_empty(), "the binary has no symbol table");
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("link/run-hot-path.order");
    let text = std::fs::read_to_string(&path).expect("link/run-hot-path.order");
    // Symbol names carry a hash of the compiler's version: under another
    // compiler the list is a hint that no longer applies.
    let made_with = text
        .lines()
        .find_map(|l| l.strip_prefix("# made with: "))
        .expect("the list names the compiler that made it");
    let rustc = std::env::var("RUSTC").unwrap_or_else(|_| "rustc".into());
    let out = common::command(rustc).arg("-V").output().expect("rustc -V");
    let this = String::from_utf8_lossy(&out.stdout).trim().to_string();
    if this != made_with {
        common::skip!(
            "link/run-hot-path.order was made with {made_with}, this build used {this}: \
             run link/order-hot-path.sh for the layout"
        );
    }
    let listed: BTreeSet<&str> = text
        .lines()
        .filter(|l| !l.is_empty() && !l.starts_with('#'))
        .collect();
    let fix = "run link/order-hot-path.sh and commit the list";
    let spawner: Vec<&String> = defined
        .iter()
        .filter(|n| n.starts_with("_ZN5tally3run7spawner") && !listed.contains(n.as_str()))
        .collect();
    assert!(
        spawner.is_empty(),
        "functions of the spawner missing from {}: {spawner:?}; {fix}",
        path.display()
    );
    let missing = listed.iter().filter(|n| !defined.contains(**n)).count();
    assert!(
        listed.len() > 100 && missing * 20 <= listed.len(),
        "{missing} of the {} functions in {} are not in the binary; {fix}",
        listed.len(),
        path.display()
    );
}

//! Why `execvp` said "no such file" about a file that exists.
//!
//! `execve` fails with ENOENT not only when the program is missing but
//! also when the program it needs is: the interpreter on a script's `#!`
//! line, or an ELF binary's dynamic loader (`PT_INTERP`, e.g. a musl or
//! 32-bit binary on a system without that loader). "command not found"
//! would then point at the wrong file; this finds the one that is missing.

use std::ffi::{OsStr, OsString};
use std::fs::File;
use std::os::unix::ffi::{OsStrExt, OsStringExt};
use std::os::unix::fs::{FileExt, PermissionsExt};
use std::path::{Path, PathBuf};

/// What `execve` looked for and did not find, on behalf of `file`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MissingInterpreter {
    /// The program file that exists.
    pub file: PathBuf,
    /// The interpreter or loader it names, which does not.
    pub interpreter: PathBuf,
    /// Where `file` names it: "#! line" or "ELF program header (PT_INTERP)".
    pub named_by: &'static str,
}

/// The file `execvp` would run for `program`: the program itself when it
/// holds a `/`, else the first executable regular file of that name in
/// `$PATH` (musl's default `/usr/local/bin:/bin:/usr/bin` when PATH is
/// unset, as `execvp` in tally's static binary searches; an empty
/// entry is the current directory).
pub fn resolve(program: &OsStr) -> Option<PathBuf> {
    if program.is_empty() {
        return None;
    }
    if program.as_bytes().contains(&b'/') {
        return Some(PathBuf::from(program));
    }
    let path =
        std::env::var_os("PATH").unwrap_or_else(|| OsString::from("/usr/local/bin:/bin:/usr/bin"));
    path.as_bytes().split(|b| *b == b':').find_map(|dir| {
        let dir = if dir.is_empty() {
            Path::new(".")
        } else {
            Path::new(OsStr::from_bytes(dir))
        };
        let candidate = dir.join(program);
        let meta = std::fs::metadata(&candidate).ok()?;
        (meta.is_file() && meta.permissions().mode() & 0o111 != 0).then_some(candidate)
    })
}

/// After `execvp(program)` failed with ENOENT: the interpreter or loader
/// that is missing, when the program file itself exists.
pub fn missing_interpreter(program: &OsStr) -> Option<MissingInterpreter> {
    let file = resolve(program)?;
    let f = File::open(&file).ok()?;
    // The kernel reads the first 256 bytes for `#!` (BINPRM_BUF_SIZE).
    let mut head = [0u8; 256];
    let n = read_at_most(&f, &mut head, 0);
    let head = head.get(..n)?;
    let (interpreter, named_by) = if let Some(line) = head.strip_prefix(b"#!") {
        (shebang_interpreter(line)?, "#! line")
    } else if head.starts_with(b"\x7fELF") {
        (elf_interpreter(&f, head)?, "ELF program header (PT_INTERP)")
    } else {
        return None;
    };
    if interpreter.exists() {
        return None;
    }
    Some(MissingInterpreter {
        file,
        interpreter,
        named_by,
    })
}

fn read_at_most(f: &File, buf: &mut [u8], offset: u64) -> usize {
    let mut got = 0;
    while got < buf.len() {
        match f.read_at(&mut buf[got..], offset + got as u64) {
            Ok(0) => break,
            Ok(n) => got += n,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
            Err(_) => break,
        }
    }
    got
}

/// The interpreter of a `#!` line (the bytes after `#!`): leading blanks
/// skipped, up to the next blank or end of line, as the kernel reads it.
fn shebang_interpreter(line: &[u8]) -> Option<PathBuf> {
    let line = line.split(|b| *b == b'\n').next()?;
    let word = line
        .split(|b| matches!(b, b' ' | b'\t'))
        .find(|w| !w.is_empty())?;
    Some(PathBuf::from(OsString::from_vec(word.to_vec())))
}

/// The `PT_INTERP` path of an ELF file, whose first bytes are `head`.
fn elf_interpreter(f: &File, head: &[u8]) -> Option<PathBuf> {
    const PT_INTERP: u32 = 3;
    let wide = match head.get(4)? {
        1 => false,
        2 => true,
        _ => return None,
    };
    let little = match head.get(5)? {
        1 => true,
        2 => false,
        _ => return None,
    };
    let num = |bytes: &[u8]| -> Option<u64> {
        let mut v = 0u64;
        for i in 0..bytes.len() {
            let b = if little {
                bytes.get(bytes.len() - 1 - i)?
            } else {
                bytes.get(i)?
            };
            v = (v << 8) | u64::from(*b);
        }
        Some(v)
    };
    let field = |at: usize, len: usize| num(head.get(at..at + len)?);
    let (phoff, phentsize, phnum) = if wide {
        (field(0x20, 8)?, field(0x36, 2)?, field(0x38, 2)?)
    } else {
        (field(0x1c, 4)?, field(0x2a, 2)?, field(0x2c, 2)?)
    };
    let mut entry = [0u8; 56];
    let entry_len = if wide { 56 } else { 32 };
    if phentsize < entry_len as u64 {
        return None;
    }
    for i in 0..phnum.min(256) {
        let at = phoff.checked_add(i.checked_mul(phentsize)?)?;
        let e = entry.get_mut(..entry_len)?;
        if read_at_most(f, e, at) < entry_len {
            return None;
        }
        let e = &*e;
        if num(e.get(0..4)?)? != u64::from(PT_INTERP) {
            continue;
        }
        let (offset, size) = if wide {
            (num(e.get(8..16)?)?, num(e.get(32..40)?)?)
        } else {
            (num(e.get(4..8)?)?, num(e.get(16..20)?)?)
        };
        let mut path = vec![0u8; usize::try_from(size.min(4096)).ok()?];
        let n = read_at_most(f, &mut path, offset);
        path.truncate(n);
        if let Some(nul) = path.iter().position(|b| *b == 0) {
            path.truncate(nul);
        }
        return (!path.is_empty()).then(|| PathBuf::from(OsString::from_vec(path)));
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shebang_word() {
        assert_eq!(
            shebang_interpreter(b" /usr/bin/env  python3\nrest"),
            Some(PathBuf::from("/usr/bin/env"))
        );
        assert_eq!(
            shebang_interpreter(b"/bin/sh\n"),
            Some(PathBuf::from("/bin/sh"))
        );
        assert_eq!(shebang_interpreter(b"   \n/bin/sh"), None);
    }

    #[test]
    fn elf_interpreter_of_a_dynamic_binary_is_found() {
        // /bin/sh is dynamically linked on every distribution this runs on;
        // its loader exists, so only the parsing is checked here.
        let Ok(f) = File::open("/bin/sh") else { return };
        let mut head = [0u8; 256];
        let n = read_at_most(&f, &mut head, 0);
        if let Some(interp) = elf_interpreter(&f, &head[..n]) {
            assert!(
                interp.as_os_str().as_bytes().starts_with(b"/"),
                "{interp:?}"
            );
            assert!(interp.exists(), "{interp:?}");
        }
    }

    #[test]
    fn garbage_is_no_interpreter() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("elf");
        let mut bytes = b"\x7fELF\x02\x01\x01".to_vec();
        bytes.resize(200, 0xff);
        std::fs::write(&p, &bytes).unwrap();
        let f = File::open(&p).unwrap();
        assert_eq!(elf_interpreter(&f, &bytes), None);
    }
}

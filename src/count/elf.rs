//! Whether a program file has a symbol table (`.symtab`): a stripped one
//! has only the dynamic symbols it exports, so most of its functions
//! have no name for Valgrind to give. Only the ELF header and the section
//! headers are read, within bounds.

use std::fs::File;
use std::os::unix::fs::FileExt;
use std::path::Path;

/// `SHT_SYMTAB`.
const SYMTAB: u32 = 2;

/// The most section headers looked at (real programs have a few dozen).
const MAX_SECTIONS: u64 = 4096;

/// `Some(true)` when the 64-bit little-endian ELF file at `path` has a
/// symbol table, `Some(false)` when it has none, `None` when it cannot be
/// read or is not such a file.
pub fn has_symbol_table(path: &Path) -> Option<bool> {
    let f = File::open(path).ok()?;
    let mut head = [0u8; 64];
    f.read_exact_at(&mut head, 0).ok()?;
    // Magic, ELFCLASS64, ELFDATA2LSB.
    if head[..4] != *b"\x7fELF" || head[4] != 2 || head[5] != 1 {
        return None;
    }
    let u16_at = |b: &[u8], i: usize| Some(u16::from_le_bytes(b.get(i..i + 2)?.try_into().ok()?));
    let u32_at = |b: &[u8], i: usize| Some(u32::from_le_bytes(b.get(i..i + 4)?.try_into().ok()?));
    let u64_at = |b: &[u8], i: usize| Some(u64::from_le_bytes(b.get(i..i + 8)?.try_into().ok()?));
    let shoff = u64_at(&head, 0x28)?;
    let shentsize = u64::from(u16_at(&head, 0x3a)?);
    let shnum = u64::from(u16_at(&head, 0x3c)?);
    if shoff == 0 || shentsize < 64 || shnum > MAX_SECTIONS {
        return Some(false);
    }
    let mut entry = vec![0u8; usize::try_from(shentsize).ok()?];
    for i in 0..shnum {
        let at = shoff.checked_add(i.checked_mul(shentsize)?)?;
        f.read_exact_at(&mut entry, at).ok()?;
        if u32_at(&entry, 4)? == SYMTAB {
            return Some(true);
        }
    }
    Some(false)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn this_test_binary_has_symbols_and_text_is_not_elf() {
        let me = std::env::current_exe().expect("the test binary");
        assert_eq!(has_symbol_table(&me), Some(true));
        assert_eq!(has_symbol_table(Path::new("Cargo.toml")), None);
        assert_eq!(has_symbol_table(Path::new("/no/such/file")), None);
    }
}

//! Names of processes and files in human and CSV output: one escaping for
//! every command.
//!
//! A Linux name is bytes. Printed as they are, a name can break a line,
//! send the terminal an escape sequence, or pass for another name: a
//! program named with the four characters `a\xffb` would look like one
//! whose name holds the byte 0xff, and one user could disguise a program
//! in another user's view. [`escape_name`] writes:
//!
//! - a backslash as `\\` (first, so that no escape below can be forged);
//! - each byte of a control character (C0, DEL, C1) or of a character
//!   that reorders text on screen (the Unicode bidirectional controls,
//!   U+061C, U+200E, U+200F, U+202A–U+202E, U+2066–U+2069) as `\xNN`;
//! - each byte that is not part of valid UTF-8 as `\xNN`;
//! - everything else as it is.
//!
//! The result decodes back to the exact bytes (`\\` is a backslash, `\xNN`
//! the byte NN), so two different names never print the same
//! (a property test below checks it). JSON keeps paths losslessly its own
//! way ([`super::path`]); Prometheus label values escape the result again
//! as that format requires.

use std::fmt::Write as _;

/// Whether `c` is printed as its bytes: a control character or a
/// bidirectional control.
fn hidden(c: char) -> bool {
    c.is_control()
        || matches!(c, '\u{061c}' | '\u{200e}' | '\u{200f}' | '\u{202a}'..='\u{202e}' | '\u{2066}'..='\u{2069}')
}

/// `bytes` (a process or file name) as text safe to print on one line,
/// from which the bytes can be read back; see the module's text.
pub fn escape_name(bytes: &[u8]) -> String {
    let mut out = String::with_capacity(bytes.len());
    for chunk in bytes.utf8_chunks() {
        for c in chunk.valid().chars() {
            if c == '\\' {
                out.push_str("\\\\");
            } else if hidden(c) {
                let mut utf8 = [0u8; 4];
                for b in c.encode_utf8(&mut utf8).bytes() {
                    let _ = write!(out, "\\x{b:02x}");
                }
            } else {
                out.push(c);
            }
        }
        for b in chunk.invalid() {
            let _ = write!(out, "\\x{b:02x}");
        }
    }
    out
}

/// Text that did not come from tally (a name, a command, a string read
/// from a baseline), escaped as [`escape_name`] escapes a name: for human,
/// Markdown and CSV output and messages.
pub fn escape_text(text: &str) -> String {
    escape_name(text.as_bytes())
}

/// The net under every text writer (paragraphs, `tally:` lines, table
/// cells, CSV and Markdown cells, messages): each character that could
/// reach the terminal or reorder the line ([`escape_name`]'s controls and
/// bidirectional controls) written as its `\xNN` bytes; everything else,
/// backslashes included, as it is, and line breaks too where
/// `keep_newlines` (a writer that prefixes every line itself). Text that
/// went through [`escape_name`] has none and passes unchanged, so nothing
/// is escaped twice; text that did not cannot reach the terminal.
pub fn controls_escaped(text: &str, keep_newlines: bool) -> std::borrow::Cow<'_, str> {
    let bad = |c: char| hidden(c) && !(keep_newlines && c == '\n');
    if !text.chars().any(bad) {
        return std::borrow::Cow::Borrowed(text);
    }
    let mut out = String::with_capacity(text.len() + 8);
    for c in text.chars() {
        if bad(c) {
            let mut utf8 = [0u8; 4];
            for b in c.encode_utf8(&mut utf8).bytes() {
                let _ = write!(out, "\\x{b:02x}");
            }
        } else {
            out.push(c);
        }
    }
    std::borrow::Cow::Owned(out)
}

/// [`escape_text`] as a `Display`, for `format!` arguments.
#[derive(Debug, Clone, Copy)]
pub struct Foreign<'a>(pub &'a str);

impl std::fmt::Display for Foreign<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&escape_text(self.0))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    /// The bytes an escaped name stands for; `None` when it is not one
    /// [`escape_name`] could write.
    fn unescape(text: &str) -> Option<Vec<u8>> {
        let mut out = Vec::new();
        let mut rest = text.as_bytes();
        while let Some((&b, tail)) = rest.split_first() {
            if b != b'\\' {
                out.push(b);
                rest = tail;
                continue;
            }
            match tail {
                [b'\\', more @ ..] => {
                    out.push(b'\\');
                    rest = more;
                }
                [b'x', h, l, more @ ..] => {
                    let hex = std::str::from_utf8(&[*h, *l]).ok()?.to_string();
                    out.push(u8::from_str_radix(&hex, 16).ok()?);
                    rest = more;
                }
                _ => return None,
            }
        }
        Some(out)
    }

    #[test]
    fn a_literal_backslash_and_a_raw_byte_print_differently() {
        // The names of issue 26: the four characters `a\xffb`, and `a`,
        // the byte 0xff, `b`.
        assert_eq!(escape_name(b"a\\xffb"), "a\\\\xffb");
        assert_eq!(escape_name(b"a\xffb"), "a\\xffb");
    }

    #[test]
    fn controls_and_reordering_characters_are_written_as_bytes() {
        assert_eq!(escape_name(b"a\x1b[31mb\nc\x7f"), "a\\x1b[31mb\\x0ac\\x7f");
        assert_eq!(escape_name("x\u{85}y".as_bytes()), "x\\xc2\\x85y");
        assert_eq!(
            escape_name("evil\u{202e}txt.exe".as_bytes()),
            "evil\\xe2\\x80\\xaetxt.exe"
        );
        assert_eq!(escape_name("café ünï 名前".as_bytes()), "café ünï 名前");
    }

    #[test]
    fn the_net_escapes_controls_but_not_what_was_escaped_already() {
        let name = "a\x1b]0;t\x07b\u{202e}\\c";
        let once = escape_text(name);
        assert_eq!(controls_escaped(&once, false), once.as_str());
        assert_eq!(
            controls_escaped(name, false),
            "a\\x1b]0;t\\x07b\\xe2\\x80\\xae\\c"
        );
        assert_eq!(controls_escaped("x\ny\rz", true), "x\ny\\x0dz");
        assert_eq!(controls_escaped("x\ny", false), "x\\x0ay");
        assert_eq!(Foreign("a\nb").to_string(), "a\\x0ab");
    }

    proptest! {
        #[test]
        fn distinct_names_always_print_distinctly(
            a in proptest::collection::vec(any::<u8>(), 0..24),
            b in proptest::collection::vec(any::<u8>(), 0..24),
        ) {
            let (ea, eb) = (escape_name(&a), escape_name(&b));
            prop_assert_eq!(a == b, ea == eb);
            // And each decodes back to its bytes, with nothing that could
            // break a line or reach the terminal.
            prop_assert_eq!(unescape(&ea), Some(a));
            prop_assert!(!ea.chars().any(hidden));
        }

        #[test]
        fn names_near_escapes_print_distinctly(
            parts in proptest::collection::vec(
                prop_oneof![
                    Just(b"\\".to_vec()), Just(b"x".to_vec()), Just(b"ff".to_vec()),
                    Just(vec![0xff]), Just(vec![0x1b]), Just(b"\\x".to_vec()),
                    Just("\u{202e}".as_bytes().to_vec()), Just(vec![0xc2]),
                ],
                0..8,
            ),
        ) {
            // Names built from the pieces escapes are made of, where a
            // collision would hide.
            let name: Vec<u8> = parts.concat();
            prop_assert_eq!(unescape(&escape_name(&name)), Some(name));
        }
    }
}

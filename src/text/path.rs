//! Paths in JSON, losslessly.
//!
//! A Linux file name is bytes, not text; JSON strings are Unicode. A path
//! that is valid UTF-8 is written as a plain string. Any other path is
//! written as an object holding both a readable form and the exact bytes:
//!
//! ```json
//! {"lossy": "caf\ufffd.bin", "bytes_hex": "636166e92e62696e"}
//! ```
//!
//! `lossy` replaces each invalid sequence with U+FFFD (for people);
//! `bytes_hex` is every byte of the name as two lowercase hex digits (for
//! programs: decode it to get the path back). Use it with
//! `#[serde(serialize_with = "crate::text::path::serialize")]`, or wrap a
//! path in [`Json`] inside collections; [`deserialize`] reads either form
//! back.

use std::ffi::OsStr;
use std::fmt::Write as _;
use std::os::unix::ffi::OsStrExt;
use std::path::Path;

use serde::ser::SerializeMap;
use serde::{Deserialize, Deserializer, Serialize, Serializer};

/// Serialises `path` as a string, or as `{lossy, bytes_hex}` when it is not
/// valid UTF-8.
pub fn serialize<S: Serializer, P: AsRef<Path> + ?Sized>(
    path: &P,
    s: S,
) -> Result<S::Ok, S::Error> {
    let os: &OsStr = path.as_ref().as_os_str();
    match os.to_str() {
        Some(text) => s.serialize_str(text),
        None => {
            let bytes = os.as_bytes();
            let mut hex = String::with_capacity(bytes.len() * 2);
            for b in bytes {
                let _ = write!(hex, "{b:02x}");
            }
            let mut map = s.serialize_map(Some(2))?;
            map.serialize_entry("lossy", &String::from_utf8_lossy(bytes))?;
            map.serialize_entry("bytes_hex", &hex)?;
            map.end()
        }
    }
}

/// Reads back what [`serialize`] wrote: a string, or `{lossy, bytes_hex}`
/// whose `bytes_hex` holds the exact bytes.
pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<std::path::PathBuf, D::Error> {
    use std::os::unix::ffi::OsStringExt;
    #[derive(Deserialize)]
    #[serde(untagged)]
    enum Written {
        Text(String),
        Bytes { bytes_hex: String },
    }
    match Written::deserialize(d)? {
        Written::Text(t) => Ok(t.into()),
        Written::Bytes { bytes_hex } => {
            let hex = bytes_hex.as_bytes();
            let digit = |c: u8| (c as char).to_digit(16);
            let bytes: Option<Vec<u8>> = (hex.len() % 2 == 0)
                .then(|| {
                    hex.chunks_exact(2)
                        .map(|p| match p {
                            [h, l] => Some((digit(*h)? * 16 + digit(*l)?) as u8),
                            _ => None,
                        })
                        .collect()
                })
                .flatten();
            bytes
                .map(|b| std::ffi::OsString::from_vec(b).into())
                .ok_or_else(|| {
                    serde::de::Error::custom("bytes_hex is not a list of hex byte pairs")
                })
        }
    }
}

/// [`serialize`] for an optional path (`null` when absent).
pub fn serialize_option<S: Serializer, P: AsRef<Path>>(
    path: &Option<P>,
    s: S,
) -> Result<S::Ok, S::Error> {
    match path {
        Some(p) => serialize(p, s),
        None => s.serialize_none(),
    }
}

/// [`serialize`] for a list of paths.
pub fn serialize_vec<S: Serializer, P: AsRef<Path>>(paths: &[P], s: S) -> Result<S::Ok, S::Error> {
    s.collect_seq(paths.iter().map(|p| Json(p.as_ref())))
}

/// A path that serialises as [`serialize`] does.
#[derive(Debug, Clone, Copy)]
pub struct Json<'a>(pub &'a Path);

impl Serialize for Json<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        serialize(self.0, s)
    }
}

/// A path for a one-line message, a human table or a CSV cell: a
/// backslash, control characters and invalid UTF-8 escaped
/// ([`super::escape_name`]), so a file name can neither break a line, nor
/// send the terminal an escape sequence, nor pass for another name.
pub fn display(path: &Path) -> String {
    super::escape_name(path.as_os_str().as_bytes())
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::ffi::OsStr;

    fn json(p: &Path) -> String {
        serde_json::to_string(&Json(p)).unwrap()
    }

    #[test]
    fn utf8_paths_are_plain_strings() {
        assert_eq!(json(Path::new("/tmp/a b.txt")), r#""/tmp/a b.txt""#);
    }

    #[test]
    fn non_utf8_path_keeps_every_byte() {
        let p = Path::new(OsStr::from_bytes(b"/tmp/caf\xe9\n.bin"));
        let v: serde_json::Value = serde_json::from_str(&json(p)).unwrap();
        assert_eq!(v["lossy"], "/tmp/caf\u{fffd}\n.bin");
        let hex = v["bytes_hex"].as_str().unwrap();
        let back: Vec<u8> = (0..hex.len())
            .step_by(2)
            .map(|i| u8::from_str_radix(&hex[i..i + 2], 16).unwrap())
            .collect();
        assert_eq!(back, b"/tmp/caf\xe9\n.bin");
    }

    #[test]
    fn deserialize_reads_both_forms_back() {
        #[derive(serde::Deserialize)]
        struct P(#[serde(deserialize_with = "deserialize")] std::path::PathBuf);
        for raw in [&b"/tmp/plain"[..], b"/tmp/caf\xe9\n.bin"] {
            let p = Path::new(OsStr::from_bytes(raw));
            let P(back) = serde_json::from_str(&json(p)).unwrap();
            assert_eq!(back.as_os_str().as_bytes(), raw);
        }
        assert!(serde_json::from_str::<P>(r#"{"lossy":"x","bytes_hex":"6"}"#).is_err());
    }

    #[test]
    fn display_escapes_controls_and_invalid_bytes() {
        let p = Path::new(OsStr::from_bytes(b"a\x1b[31mb\nc\xff"));
        assert_eq!(display(p), "a\\x1b[31mb\\x0ac\\xff");
    }
}

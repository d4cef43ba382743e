//! `/proc/sys/…`: kernel settings, one value per file, named as `sysctl`
//! names them (`kernel.osrelease` is `<root>/sys/kernel/osrelease`).

use std::path::PathBuf;

use super::ProcRoot;

/// The file of the setting `name` (dots separate its parts).
pub fn path(root: &ProcRoot, name: &str) -> PathBuf {
    root.path().join("sys").join(name.replace('.', "/"))
}

/// The trimmed text of the setting; `None` when it is missing, unreadable
/// or empty.
pub fn read(root: &ProcRoot, name: &str) -> Option<String> {
    crate::input::read_proc_text(&path(root, name))
        .ok()
        .as_deref()
        .and_then(parse_text)
}

/// The setting as a whole number; `None` when missing or not a number.
pub fn read_int(root: &ProcRoot, name: &str) -> Option<i64> {
    read(root, name)?.parse().ok()
}

/// A setting's text, trimmed; `None` when empty.
pub fn parse_text(text: &str) -> Option<String> {
    Some(text.trim())
        .filter(|s| !s.is_empty())
        .map(str::to_string)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_map_to_files_under_the_root() {
        let dir = tempfile::tempdir().expect("tempdir");
        std::fs::create_dir_all(dir.path().join("sys/kernel")).expect("mkdir");
        std::fs::write(dir.path().join("sys/kernel/osrelease"), "6.8.0-test\n").expect("write");
        std::fs::write(dir.path().join("sys/kernel/perf_event_paranoid"), "2\n").expect("write");
        std::fs::write(dir.path().join("sys/kernel/empty"), "\n").expect("write");
        let root = ProcRoot::new(dir.path());
        assert_eq!(
            read(&root, "kernel.osrelease").as_deref(),
            Some("6.8.0-test")
        );
        assert_eq!(read_int(&root, "kernel.perf_event_paranoid"), Some(2));
        assert_eq!(read_int(&root, "kernel.osrelease"), None);
        assert_eq!(read(&root, "kernel.empty"), None);
        assert_eq!(read(&root, "fs.protected_symlinks"), None);
    }

    #[test]
    fn text_is_trimmed() {
        assert_eq!(parse_text(" -1\n").as_deref(), Some("-1"));
        assert_eq!(parse_text("\n"), None);
    }
}

//! User names and ids, from `/etc/passwd`.
//!
//! tally is linked statically, and glibc's name service (`getpwuid_r`,
//! which loads NSS modules at run time) is not safe in a static binary: it
//! crashes. So, like Go's pure `os/user`, tally reads `/etc/passwd` itself.
//! Users that exist only in a directory service (LDAP, sssd) show as their
//! numeric id, and `--user` accepts a numeric id for them.

use std::path::Path;

const PASSWD: &str = "/etc/passwd";

/// `(name, uid)` of each well-formed line of passwd-format `text`.
fn entries(text: &str) -> impl Iterator<Item = (&str, u32)> {
    text.lines().filter_map(|line| {
        if line.starts_with('#') {
            return None;
        }
        let mut fields = line.split(':');
        let name = fields.next().filter(|n| !n.is_empty())?;
        let uid = fields.nth(1)?.parse().ok()?;
        Some((name, uid))
    })
}

fn read(path: &Path) -> String {
    std::fs::read_to_string(path).unwrap_or_default()
}

/// The name of user `uid` in passwd-format `text` (the first line wins).
pub fn name_in(text: &str, uid: u32) -> Option<String> {
    entries(text)
        .find(|(_, u)| *u == uid)
        .map(|(n, _)| n.to_string())
}

/// The id of user `name` in passwd-format `text`.
pub fn uid_in(text: &str, name: &str) -> Option<u32> {
    entries(text).find(|(n, _)| *n == name).map(|(_, u)| u)
}

/// Looks up a user by id: its name, or `None` if /etc/passwd has none.
pub fn name_of(uid: u32) -> Option<String> {
    name_in(&read(Path::new(PASSWD)), uid)
}

/// Looks up a user by name: its id, or `None` if /etc/passwd has none.
pub fn uid_of(name: &str) -> Option<u32> {
    uid_in(&read(Path::new(PASSWD)), name)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn root_is_uid_zero() {
        assert_eq!(name_of(0).as_deref(), Some("root"));
        assert_eq!(uid_of("root"), Some(0));
        assert_eq!(uid_of("no-such-user-tally-test"), None);
        assert_eq!(uid_of("bad\0name"), None);
    }

    #[test]
    fn odd_passwd_lines() {
        let text = "# comment\nroot:x:0:0:root:/root:/bin/bash\n\nbroken\n:x:5:5::/:/bin/sh\nalice:x:notanumber:1::/:/bin/sh\nbob:x:1001:1001::/home/bob:/bin/sh\nbob2:x:1001:1001::/:/bin/sh\n+::::::\n";
        assert_eq!(name_in(text, 0).as_deref(), Some("root"));
        assert_eq!(
            name_in(text, 1001).as_deref(),
            Some("bob"),
            "first entry wins"
        );
        assert_eq!(name_in(text, 5), None, "empty name");
        assert_eq!(uid_in(text, "alice"), None, "bad uid");
        assert_eq!(uid_in(text, "bob2"), Some(1001));
        assert_eq!(uid_in(text, "+"), None);
    }

    proptest::proptest! {
        #[test]
        fn never_panics(text in ".*", uid in 0u32..5, name in "[a-z]{0,4}") {
            let _ = name_in(&text, uid);
            let _ = uid_in(&text, &name);
        }
    }
}

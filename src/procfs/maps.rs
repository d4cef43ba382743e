//! `/proc/PID/maps`: the memory mappings of a process, one per line:
//! `start-end perms offset dev inode path`.

/// The `dev` field of maps and smaps lines for a device number: major and
/// minor in hex, at least two digits each (`fd:00`).
pub fn dev_field(dev: u64) -> String {
    format!("{:02x}:{:02x}", libc::major(dev), libc::minor(dev))
}

/// Whether any mapping in the maps `text` is of the file `dev`:`ino`
/// (`dev` as [`dev_field`] writes it, `ino` in decimal).
pub fn maps_file(text: &str, dev: &str, ino: &str) -> bool {
    text.lines().any(|line| {
        let mut fields = line.split_whitespace();
        let dev_field = fields.nth(3);
        let ino_field = fields.next();
        dev_field == Some(dev) && ino_field == Some(ino)
    })
}

/// The files the maps `text` maps, as (device, inode): the `dev` field
/// (hex `major:minor`) as a device number; anonymous mappings (inode 0)
/// and unreadable lines left out.
pub fn mapped_files(text: &str) -> impl Iterator<Item = (u64, u64)> + '_ {
    text.lines().filter_map(|line| {
        let mut fields = line.split_whitespace();
        let (major, minor) = fields.nth(3)?.split_once(':')?;
        let ino: u64 = fields.next()?.parse().ok()?;
        let major = u32::from_str_radix(major, 16).ok()?;
        let minor = u32::from_str_radix(minor, 16).ok()?;
        (ino != 0).then_some((libc::makedev(major, minor), ino))
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    const MAPS: &str = "\
55d0-55d2 r--p 00000000 fd:00 4021 /usr/bin/cat
7f00-7f10 r--s 00000000 fd:00 1234 /data/model.bin
7f20-7f30 rw-p 00000000 00:00 0
7ffc-7ffd rw-p 00000000 00:00 0                          [stack]
";

    #[test]
    fn finds_a_file_by_device_and_inode() {
        assert!(maps_file(MAPS, "fd:00", "1234"));
        assert!(maps_file(MAPS, "fd:00", "4021"));
        assert!(!maps_file(MAPS, "fd:01", "1234"));
        assert!(!maps_file(MAPS, "fd:00", "123"));
        assert!(!maps_file("", "fd:00", "1234"));
        assert!(!maps_file("garbage", "fd:00", "1234"));
        let files: Vec<(u64, u64)> = mapped_files(MAPS).collect();
        assert_eq!(
            files,
            [
                (libc::makedev(0xfd, 0), 4021),
                (libc::makedev(0xfd, 0), 1234)
            ]
        );
        assert_eq!(dev_field(files[0].0), "fd:00");
    }

    #[test]
    fn device_fields_are_hex_with_two_digits() {
        assert_eq!(dev_field(libc::makedev(253, 0)), "fd:00");
        assert_eq!(dev_field(libc::makedev(8, 17)), "08:11");
        assert_eq!(dev_field(libc::makedev(259, 2)), "103:02");
    }
}

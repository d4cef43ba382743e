//! A fast streaming checksum, so every load method uses the data it loaded
//! and all methods can be checked to have loaded the same bytes.
//!
//! Four independent 64-bit lanes (xor, multiply, rotate) keep it near
//! memory speed; the result does not depend on how the input was cut into
//! pieces. It detects accidental differences, not tampering.

/// One load as a report's checks see it: its name in a warning, its
/// checksums, its mode, and how much of the file was cached before it.
pub struct Checked<'a> {
    pub label: String,
    pub checksums: &'a [String],
    pub mode: super::Mode,
    pub cached_before_bytes: Option<u64>,
}

/// Whether the checksums of a report's loads agree (`None`: none taken,
/// nothing to compare), and the warnings: the checksums that differ, and
/// cold loads that found part of the file still cached.
pub fn check(loads: &[Checked]) -> (Option<bool>, Vec<String>) {
    let mut all: Vec<&String> = loads.iter().flat_map(|l| l.checksums).collect();
    all.sort();
    all.dedup();
    let agree = (!all.is_empty()).then_some(all.len() == 1);
    let mut warnings = Vec::new();
    if agree == Some(false) {
        let list: Vec<String> = loads
            .iter()
            .map(|l| format!("{}: {}", l.label, l.checksums.join("/")))
            .collect();
        warnings.push(format!(
            "checksums differ (the file changed during the runs, or a method is broken): {}",
            list.join(", ")
        ));
    }
    for l in loads {
        if let (super::Mode::Cold, Some(left @ 1..)) = (l.mode, l.cached_before_bytes) {
            warnings.push(format!(
                "{}: {} of the file stayed cached before the cold load (mapped or locked elsewhere?)",
                l.label,
                crate::units::human_bytes(left)
            ));
        }
    }
    (agree, warnings)
}

/// What the checksums say, in a few words for people: `taken` checksums,
/// counted as `counted` ("loads", "processes, every method").
pub fn verdict(agree: Option<bool>, taken: u64, touch: super::Touch, counted: &str) -> String {
    match agree {
        Some(false) => "checksums DIFFER".into(),
        Some(true) if taken == 1 => "one checksum taken: nothing to compare it with".into(),
        Some(true) => format!(
            "checksums agree ({} {counted})",
            crate::units::thousands(taken)
        ),
        None if touch == super::Touch::None => {
            "no checksum taken (--touch none): nothing compared".into()
        }
        None => "no checksum taken: no load finished".into(),
    }
}

/// Streaming checksum state.
#[derive(Debug, Clone)]
pub struct Checksum {
    lanes: [u64; 4],
    pending: [u8; 32],
    pending_len: usize,
    len: u64,
}

const K: u64 = 0x9E37_79B9_7F4A_7C15;

impl Default for Checksum {
    fn default() -> Self {
        Checksum {
            lanes: [1, 2, 3, 4],
            pending: [0; 32],
            pending_len: 0,
            len: 0,
        }
    }
}

impl Checksum {
    #[inline]
    fn block(lanes: &mut [u64; 4], block: &[u8; 32]) {
        for (i, lane) in lanes.iter_mut().enumerate() {
            let mut w = [0u8; 8];
            w.copy_from_slice(&block[i * 8..i * 8 + 8]);
            *lane = (*lane ^ u64::from_le_bytes(w))
                .wrapping_mul(K)
                .rotate_left(31);
        }
    }

    /// Adds `data`.
    pub fn update(&mut self, mut data: &[u8]) {
        self.len = self.len.wrapping_add(data.len() as u64);
        if self.pending_len > 0 {
            let take = (32 - self.pending_len).min(data.len());
            let (head, rest) = data.split_at(take);
            self.pending[self.pending_len..self.pending_len + take].copy_from_slice(head);
            self.pending_len += take;
            data = rest;
            if self.pending_len < 32 {
                return;
            }
            let block = self.pending;
            Self::block(&mut self.lanes, &block);
            self.pending_len = 0;
        }
        let mut chunks = data.chunks_exact(32);
        for c in &mut chunks {
            let mut block = [0u8; 32];
            block.copy_from_slice(c);
            Self::block(&mut self.lanes, &block);
        }
        let rest = chunks.remainder();
        self.pending[..rest.len()].copy_from_slice(rest);
        self.pending_len = rest.len();
    }

    /// The checksum of everything added.
    pub fn finish(&self) -> u64 {
        let mut lanes = self.lanes;
        if self.pending_len > 0 {
            let mut block = [0u8; 32];
            block[..self.pending_len].copy_from_slice(&self.pending[..self.pending_len]);
            Self::block(&mut lanes, &block);
        }
        let mut h = self.len.wrapping_mul(K);
        for l in lanes {
            h = (h ^ l).wrapping_mul(K).rotate_left(27);
        }
        h
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn differs_on_order_length_and_content() {
        let sum = |d: &[u8]| {
            let mut c = Checksum::default();
            c.update(d);
            c.finish()
        };
        assert_ne!(sum(b""), sum(b"\0"));
        assert_ne!(
            sum(&[1, 2, 3, 4, 5, 6, 7, 8, 9]),
            sum(&[9, 2, 3, 4, 5, 6, 7, 8, 1])
        );
        let a = vec![0u8; 64];
        let mut b = a.clone();
        b[40] = 1;
        assert_ne!(sum(&a), sum(&b));
    }

    proptest! {
        #[test]
        fn does_not_depend_on_how_input_is_cut(data in proptest::collection::vec(any::<u8>(), 0..300), cuts in proptest::collection::vec(0usize..300, 0..6)) {
            let mut whole = Checksum::default();
            whole.update(&data);
            let mut pieces = Checksum::default();
            let mut cuts: Vec<usize> = cuts.into_iter().map(|c| c.min(data.len())).collect();
            cuts.sort_unstable();
            let mut prev = 0;
            for c in cuts {
                pieces.update(&data[prev..c]);
                prev = c;
            }
            pieces.update(&data[prev..]);
            prop_assert_eq!(whole.finish(), pieces.finish());
        }
    }
}

//! The records of the runs so far, kept out of the commands tally forks.
//!
//! A forked command starts with a copy of tally's anonymous memory, and
//! the kernel counts that copy into the command's peak memory
//! (`ru_maxrss`; see [`crate::sys::dontfork`]). Records kept in tally's
//! heap would raise the peak of a small command run after run (a static
//! `main(){}` read 548 kB on the first of 2,000 runs and 1,444 kB on the
//! last). [`Records`] keeps each record serialized in a mapping forked
//! children do not inherit, and gives them back when the runs are over.
//! The last run's record stays as it is ([`Records::push_last`]): no
//! command is forked after it, and a single `tally run` then maps,
//! serializes and parses nothing. Where no command is forked from tally
//! at all (`compare`'s runs started by its spawner), every record is kept
//! as it is ([`Records::kept`] with `held`).

use std::io;

use super::report::RunRecord;
use crate::sys::dontfork::DontForkBuf;

/// Run records, in order, outside the memory a forked command inherits.
#[derive(Default)]
pub struct Records {
    buf: DontForkBuf,
    scratch: Vec<u8>,
    /// Records kept as they are, in order (see [`Records::kept`]); `None`:
    /// serialized in `buf`.
    held: Option<Vec<RunRecord>>,
    /// The last run's record, after those in `buf`.
    last: Option<RunRecord>,
    count: usize,
}

impl Records {
    pub fn new() -> Records {
        Records::default()
    }

    /// With `held`, records kept in tally's own memory, as they are: for
    /// runs no command is forked from tally for (serializing each record
    /// and parsing it back took some 5 µs a run of `compare`'s, between
    /// runs). Else as [`Records::new`] keeps them.
    pub fn kept(held: bool) -> Records {
        Records {
            held: held.then(Vec::new),
            ..Records::default()
        }
    }

    /// Appends a record, taking it: kept as it is when the records are
    /// held (see [`Records::kept`]), else as [`Records::push`] keeps it.
    pub fn push_owned(&mut self, r: RunRecord) -> io::Result<()> {
        match self.held.as_mut() {
            Some(held) => {
                // The last record, counted when it was pushed, goes first.
                held.extend(self.last.take());
                held.push(r);
                self.count += 1;
                Ok(())
            }
            None => self.push(&r),
        }
    }

    /// Keeps the record of the last run, unserialized: no command is
    /// forked after it. A record pushed after it goes after it.
    pub fn push_last(&mut self, r: RunRecord) {
        self.last = Some(r);
        self.count += 1;
    }

    /// Appends a record (length-prefixed JSON; a copy of it when the
    /// records are held: see [`Records::kept`]).
    pub fn push(&mut self, r: &RunRecord) -> io::Result<()> {
        if self.held.is_some() {
            return self.push_owned(r.clone());
        }
        if let Some(last) = self.last.take() {
            self.count -= 1;
            self.push(&last)?;
        }
        self.scratch.clear();
        self.scratch.extend_from_slice(&[0; 4]);
        serde_json::to_writer(&mut self.scratch, r).map_err(io::Error::other)?;
        let len = u32::try_from(self.scratch.len() - 4)
            .map_err(|_| io::Error::other("a run record over 4 GiB"))?;
        self.scratch[..4].copy_from_slice(&len.to_le_bytes());
        self.buf.extend(&self.scratch)?;
        self.count += 1;
        Ok(())
    }

    /// How many records were pushed.
    pub fn len(&self) -> usize {
        self.count
    }

    /// Whether none was pushed.
    pub fn is_empty(&self) -> bool {
        self.count == 0
    }

    /// The records, in the order pushed.
    pub fn into_vec(self) -> io::Result<Vec<RunRecord>> {
        if let Some(mut held) = self.held {
            held.extend(self.last);
            return Ok(held);
        }
        let mut out = Vec::with_capacity(self.count);
        let mut rest = self.buf.as_slice();
        while let Some((len, tail)) = rest.split_first_chunk::<4>() {
            let len = u32::from_le_bytes(*len) as usize;
            let (one, tail) = tail
                .split_at_checked(len)
                .ok_or_else(|| io::Error::other("a run record cut short"))?;
            out.push(serde_json::from_slice(one).map_err(io::Error::other)?);
            rest = tail;
        }
        out.extend(self.last);
        Ok(out)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::run::report::tests::record;

    #[test]
    fn records_come_back_whole_and_in_order() {
        let mut store = Records::new();
        assert!(store.is_empty());
        let mut want = Vec::new();
        for i in 0..500u64 {
            let mut r = record(i * 1_003, 4 * i);
            r.exit.code = Some((i % 3) as i32);
            store.push(&r).expect("push");
            want.push(r);
        }
        assert_eq!(store.len(), 500);
        let last = record(9, 9);
        store.push_last(last.clone());
        want.push(last);
        assert_eq!(store.len(), 501);
        assert_eq!(store.into_vec().expect("records"), want);
    }

    #[test]
    fn a_record_pushed_after_the_last_goes_after_it() {
        for mut store in [Records::new(), Records::kept(true)] {
            let (a, b, c, d) = (record(1, 1), record(2, 2), record(3, 3), record(4, 4));
            store.push_last(a.clone());
            store.push(&b).expect("push");
            store.push_last(c.clone());
            store.push_owned(d.clone()).expect("push");
            assert_eq!(store.len(), 4);
            assert_eq!(store.into_vec().expect("records"), vec![a, b, c, d]);
        }
    }

    /// Held records come back as the serialized ones do: the same
    /// records, in the same order, counted alike.
    #[test]
    fn held_records_come_back_as_serialized_ones_do() {
        let (mut held, mut serialized) = (Records::kept(true), Records::new());
        for i in 0..300u64 {
            let mut r = record(i * 7, i);
            r.exit.code = Some((i % 4) as i32);
            held.push_owned(r.clone()).expect("push");
            serialized.push_owned(r).expect("push");
        }
        held.push_last(record(1, 2));
        serialized.push_last(record(1, 2));
        assert_eq!(held.len(), serialized.len());
        assert_eq!(
            held.into_vec().expect("held"),
            serialized.into_vec().expect("serialized")
        );
    }
}

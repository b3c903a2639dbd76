//! Which 32-bit id hashes a file of tasks (or a corpus of recorded runs) meets more than once,
//! in bounded memory: hashes are sorted in runs of [`RUN`] (a megabyte) and every full run goes
//! to an unlinked scratch file (as `sort` spills); the runs are then merged to find the hashes
//! met twice. A hash met twice is a repeated id or, now and then, two ids alike in 32 bits:
//! [`IdHashes::repeats`] compares those ids by their text, so the check stays exact.

use std::cmp::Reverse;
use std::collections::{BinaryHeap, HashSet};
use std::fs::File;
use std::hash::{DefaultHasher, Hash, Hasher};
use std::io::{self, BufReader, BufWriter, Read, Write};
use std::ops::ControlFlow;

use super::logged_entries::{LoggedEntries, ReadAt};
use crate::scratch_file::unnamed_file;

/// Hashes sorted and set aside together.
const RUN: usize = 1 << 18;

/// Every id's hash, as the check meets them.
#[derive(Default)]
pub struct IdHashes {
    current: Vec<u32>,
    /// The scratch file and how many runs it holds, once one is full.
    spilled: Option<(BufWriter<File>, usize)>,
}

/// The hash an id is checked by.
fn hash_of(id: &str) -> u32 {
    let mut hasher = DefaultHasher::new();
    id.hash(&mut hasher);
    (hasher.finish() >> 32) as u32
}

impl IdHashes {
    /// Adds an id, the next entry's.
    pub fn push_id(&mut self, id: &str) -> io::Result<()> {
        self.push(hash_of(id))
    }

    /// Every entry whose id an earlier entry has, with its position, in order (`entries`: the
    /// ids pushed, in the same order). Exact: only the ids whose hash is met twice are held, to
    /// be compared by their text.
    pub fn repeats(self, entries: &LoggedEntries) -> io::Result<Vec<(usize, String)>> {
        let twice = self.twice()?;
        let mut repeats = Vec::new();
        if twice.is_empty() {
            return Ok(repeats);
        }
        let mut seen: HashSet<String> = HashSet::new();
        entries.scan(0, |i, entry| {
            let id = entry.id.as_str();
            if twice.contains(&hash_of(id)) && !seen.insert(id.to_owned()) {
                repeats.push((i, id.to_owned()));
            }
            ControlFlow::Continue(())
        })?;
        Ok(repeats)
    }

    /// Adds an id's hash.
    fn push(&mut self, hash: u32) -> io::Result<()> {
        self.current.push(hash);
        if self.current.len() < RUN {
            return Ok(());
        }
        if self.spilled.is_none() {
            // Without a scratch file the hashes stay in memory, 4 bytes an id.
            let Ok(file) = unnamed_file() else {
                return Ok(());
            };
            self.spilled = Some((BufWriter::with_capacity(1 << 16, file), 0));
        }
        if let Some((out, runs)) = &mut self.spilled
            && self.current.len() == RUN
        {
            self.current.sort_unstable();
            for hash in &self.current {
                out.write_all(&hash.to_le_bytes())?;
            }
            *runs += 1;
            self.current.clear();
        }
        Ok(())
    }

    /// The hashes met more than once.
    fn twice(mut self) -> io::Result<HashSet<u32>> {
        self.current.sort_unstable();
        let mut twice = HashSet::new();
        let Some((out, runs)) = self.spilled else {
            for pair in self.current.windows(2) {
                if pair[0] == pair[1] {
                    twice.insert(pair[0]);
                }
            }
            return Ok(twice);
        };
        let file = out.into_inner().map_err(|err| err.into_error())?;
        let run_bytes = (RUN * 4) as u64;
        let mut readers: Vec<BufReader<ReadAt<'_>>> = (0..runs as u64)
            .map(|k| {
                let reader = ReadAt::new(&file, k * run_bytes, (k + 1) * run_bytes);
                BufReader::with_capacity(1 << 13, reader)
            })
            .collect();
        let mut memory = self.current.iter().copied();
        let mut next = |source: usize| -> io::Result<Option<u32>> {
            if source == readers.len() {
                return Ok(memory.next());
            }
            let mut bytes = [0u8; 4];
            match readers[source].read_exact(&mut bytes) {
                Ok(()) => Ok(Some(u32::from_le_bytes(bytes))),
                Err(err) if err.kind() == io::ErrorKind::UnexpectedEof => Ok(None),
                Err(err) => Err(err),
            }
        };
        let mut heap = BinaryHeap::new();
        for source in 0..=runs {
            if let Some(hash) = next(source)? {
                heap.push(Reverse((hash, source)));
            }
        }
        let mut last = None;
        while let Some(Reverse((hash, source))) = heap.pop() {
            if last == Some(hash) {
                twice.insert(hash);
            }
            last = Some(hash);
            if let Some(hash) = next(source)? {
                heap.push(Reverse((hash, source)));
            }
        }
        Ok(twice)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hashes_met_twice_are_found_across_runs_set_aside_and_in_memory() {
        for count in [10, RUN + 5, 3 * RUN + 17] {
            let mut hashes = IdHashes::default();
            // Distinct values but for a few repeated: within a run, across runs, and between a
            // run set aside and the ones still in memory.
            let repeated = [
                (3, 7),
                (RUN - 1, RUN + 2),
                (5, count - 1),
                (RUN + 1, 2 * RUN + 9),
            ];
            let mut values: Vec<u32> = (0..count as u32)
                .map(|i| i.wrapping_mul(2_654_435_761))
                .collect();
            let mut expected = HashSet::new();
            for (from, to) in repeated {
                if to < count {
                    values[to] = values[from];
                    expected.insert(values[from]);
                }
            }
            for value in values {
                hashes.push(value).unwrap();
            }
            assert_eq!(hashes.spilled.is_some(), count > RUN, "{count}");
            assert_eq!(hashes.twice().unwrap(), expected, "{count}");
        }
    }
}

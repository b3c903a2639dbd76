//! Putting blocks of output back in order with bounded memory. A replay's runs end in another
//! order than they began (runs written a few at a time interleave, and runs that never end are
//! only known at the end of the file), yet its report lists them in order of first appearance.
//! [`InOrder`] takes each run's block with its index as the run ends and gives the blocks back
//! in index order; what it holds beyond [`HELD_BYTES`] goes to an unnamed temporary file (blocks
//! already in order appended, blocks still early kept as sorted stretches merged at the end), so
//! a report of any number of runs costs a fixed amount of memory.

use std::collections::BTreeMap;
use std::fs::File;
use std::io::{self, Seek, SeekFrom, Write};
use std::os::unix::fs::FileExt;

use crate::scratch_file::unnamed_file;

/// Bytes of blocks held in memory in order, and again out of order, before they go to the
/// temporary file: a few thousand runs' parts each, small beside the reader's own buffers.
pub const HELD_BYTES: usize = 256 * 1024;

/// Blocks of output by index, given back in index order. Indices may have gaps (a selection);
/// each index is given once.
pub struct InOrder {
    next: u64,
    budget: usize,
    /// Blocks in order, not yet written out: in memory, then in `ordered_file` past the budget.
    ordered: Vec<u8>,
    ordered_file: Option<File>,
    /// Blocks that came before their turn, by index.
    early: BTreeMap<u64, Vec<u8>>,
    early_bytes: usize,
    /// Stretches of early blocks written out sorted, in `early_file`.
    stretches: Vec<Stretch>,
    early_file: Option<File>,
}

/// A sorted stretch of early blocks in the temporary file: records of the index (8 bytes), the
/// length (4 bytes) and the block, from `at` to `end`.
struct Stretch {
    at: u64,
    end: u64,
    /// The index and length of the record at `at`.
    head: Option<(u64, u32)>,
}

/// The length of a record's index and length.
const RECORD_HEAD: u64 = 12;

impl Default for InOrder {
    fn default() -> Self {
        InOrder::with_budget(HELD_BYTES)
    }
}

impl InOrder {
    /// Holds up to `budget` bytes of blocks in memory (for tests of the temporary file).
    pub fn with_budget(budget: usize) -> Self {
        InOrder {
            next: 0,
            budget,
            ordered: Vec::new(),
            ordered_file: None,
            early: BTreeMap::new(),
            early_bytes: 0,
            stretches: Vec::new(),
            early_file: None,
        }
    }

    /// Takes the block of `index`.
    pub fn push(&mut self, index: u64, block: &[u8]) -> io::Result<()> {
        if index != self.next {
            // A block's own allocation and its place in the map cost about 64 bytes more.
            self.early_bytes += block.len() + 64;
            self.early.insert(index, block.to_vec());
            if self.early_bytes > self.budget {
                self.write_stretch()?;
            }
            return Ok(());
        }
        self.put_ordered(block)?;
        self.next = index + 1;
        self.catch_up(false)
    }

    /// Writes every block to `out` in index order, after `head`.
    pub fn finish(mut self, out: &mut dyn Write) -> io::Result<()> {
        self.catch_up(true)?;
        if let Some(mut file) = self.ordered_file.take() {
            file.seek(SeekFrom::Start(0))?;
            io::copy(&mut file, out)?;
        }
        out.write_all(&self.ordered)
    }

    /// Moves the early blocks whose turn has come to the ordered ones; with `all`, every block
    /// left, skipping the indices never given.
    fn catch_up(&mut self, all: bool) -> io::Result<()> {
        loop {
            let in_memory = self.early.first_key_value().map(|(&index, _)| index);
            let stored = self
                .stretches
                .iter()
                .enumerate()
                .filter_map(|(i, s)| s.head.map(|(index, _)| (index, i)))
                .min();
            let lowest = match (in_memory, stored) {
                (Some(a), Some((b, _))) => a.min(b),
                (Some(a), None) => a,
                (None, Some((b, _))) => b,
                (None, None) => return Ok(()),
            };
            if lowest != self.next && !all {
                return Ok(());
            }
            if in_memory == Some(lowest) {
                let Some((_, block)) = self.early.pop_first() else {
                    return Ok(());
                };
                self.early_bytes -= block.len() + 64;
                self.put_ordered(&block)?;
            } else if let Some((_, i)) = stored {
                let block = self.take_stored(i)?;
                self.put_ordered(&block)?;
            }
            self.next = lowest + 1;
        }
    }

    fn put_ordered(&mut self, block: &[u8]) -> io::Result<()> {
        if self.ordered.len() + block.len() <= self.budget {
            if self.ordered.capacity() == 0 {
                // Allocated once at its full size, so it never doubles past the budget.
                self.ordered.reserve_exact(self.budget.min(HELD_BYTES));
            }
            self.ordered.extend_from_slice(block);
            return Ok(());
        }
        let file = match &mut self.ordered_file {
            Some(file) => file,
            None => self.ordered_file.insert(unnamed_file()?),
        };
        file.write_all(&self.ordered)?;
        self.ordered.clear();
        file.write_all(block)
    }

    /// Writes the early blocks held in memory to the temporary file as one sorted stretch.
    fn write_stretch(&mut self) -> io::Result<()> {
        let file = match &mut self.early_file {
            Some(file) => file,
            None => self.early_file.insert(unnamed_file()?),
        };
        let at = file.seek(SeekFrom::End(0))?;
        let mut out = io::BufWriter::with_capacity(64 * 1024, &*file);
        let mut end = at;
        let mut head = None;
        for (index, block) in std::mem::take(&mut self.early) {
            let len = u32::try_from(block.len())
                .map_err(|_| io::Error::other("a run's report is larger than 4 GiB"))?;
            head.get_or_insert((index, len));
            out.write_all(&index.to_le_bytes())?;
            out.write_all(&len.to_le_bytes())?;
            out.write_all(&block)?;
            end += RECORD_HEAD + u64::from(len);
        }
        out.flush()?;
        self.early_bytes = 0;
        self.stretches.push(Stretch { at, end, head });
        Ok(())
    }

    /// The block at the head of stretch `i`, moving its head to the next record.
    fn take_stored(&mut self, i: usize) -> io::Result<Vec<u8>> {
        let (Some(file), Some(stretch)) = (&self.early_file, self.stretches.get_mut(i)) else {
            return Ok(Vec::new());
        };
        let Some((_, len)) = stretch.head else {
            return Ok(Vec::new());
        };
        let mut block = vec![0; len as usize];
        file.read_exact_at(&mut block, stretch.at + RECORD_HEAD)?;
        stretch.at += RECORD_HEAD + u64::from(len);
        stretch.head = if stretch.at < stretch.end {
            let mut head = [0u8; RECORD_HEAD as usize];
            file.read_exact_at(&mut head, stretch.at)?;
            let (index, len) = head.split_at(8);
            Some((
                u64::from_le_bytes(index.try_into().unwrap_or_default()),
                u32::from_le_bytes(len.try_into().unwrap_or_default()),
            ))
        } else {
            None
        };
        Ok(block)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn blocks_in(order: &[u64], budget: usize) -> Vec<u8> {
        let mut in_order = InOrder::with_budget(budget);
        for &index in order {
            in_order
                .push(index, format!("<{index}>").as_bytes())
                .unwrap();
        }
        let mut out = Vec::new();
        in_order.finish(&mut out).unwrap();
        out
    }

    fn expected(indices: impl Iterator<Item = u64>) -> Vec<u8> {
        indices
            .map(|i| format!("<{i}>"))
            .collect::<String>()
            .into_bytes()
    }

    #[test]
    fn blocks_come_back_in_index_order_whatever_the_budget() {
        // Interleaved endings, and early runs that end only at the end (never-ending runs).
        let mut order: Vec<u64> = (0..2_000u64)
            .map(|i| if i % 2 == 0 { i + 1 } else { i - 1 })
            .filter(|i| i % 97 != 3)
            .collect();
        order.extend((0..2_000u64).filter(|i| i % 97 == 3));
        for budget in [0, 1, 7, 100, 1_000, usize::MAX] {
            assert_eq!(
                blocks_in(&order, budget),
                expected(0..2_000),
                "budget {budget}"
            );
        }
    }

    #[test]
    fn gaps_are_skipped_and_nothing_given_is_nothing_written() {
        assert_eq!(blocks_in(&[9, 4, 7], 0), expected([4, 7, 9].into_iter()));
        assert_eq!(
            blocks_in(&[9, 4, 7], 1 << 20),
            expected([4, 7, 9].into_iter())
        );
        assert_eq!(blocks_in(&[], 0), Vec::<u8>::new());
    }
}

//! Where each row of a plain evaluation sits in its run's row log (`rows.jsonl`), by output
//! position, so `results.json` can be written in suite order by reading the rows back. Rows
//! finish nearly in suite order (the workers take tasks in order), so a row's number is held as
//! its distance from its position in one byte; the few rows that finish far from their place (a
//! task that timed out, a retried one) are kept in a map. A million rows cost about a megabyte.

use std::collections::HashMap;

/// A position without a row (a resume's kept rows, rows not written).
const NONE: i8 = i8::MIN;
/// A position whose row is farther than a byte can say: its number is in `far`.
const FAR: i8 = i8::MIN + 1;

/// Each output position's row number in the log, or none.
#[derive(Debug, Clone)]
pub struct RowNumbers {
    near: Vec<i8>,
    far: HashMap<u32, u32>,
    rows: usize,
}

impl RowNumbers {
    /// `positions` positions, none with a row yet.
    pub fn new(positions: usize) -> Self {
        RowNumbers {
            near: vec![NONE; positions],
            far: HashMap::new(),
            rows: 0,
        }
    }

    /// Notes that the row at output `position` is number `number` in the log.
    pub fn set(&mut self, position: usize, number: u32) {
        if self.near[position] == NONE {
            self.rows += 1;
        }
        let distance = i64::from(number) - position as i64;
        self.near[position] = match i8::try_from(distance) {
            Ok(distance) if distance > FAR => distance,
            _ => {
                self.far.insert(position as u32, number);
                FAR
            }
        };
    }

    /// How many positions have a row.
    pub fn len(&self) -> usize {
        self.rows
    }

    /// Whether no position has a row.
    pub fn is_empty(&self) -> bool {
        self.rows == 0
    }

    /// The row numbers of the positions that have one, in output order.
    pub fn iter(&self) -> impl Iterator<Item = u32> + '_ {
        self.near
            .iter()
            .enumerate()
            .filter_map(|(position, &distance)| match distance {
                NONE => None,
                FAR => self.far.get(&(position as u32)).copied(),
                distance => Some((position as i64 + i64::from(distance)) as u32),
            })
    }
}

impl FromIterator<u32> for RowNumbers {
    /// Row numbers in output order, one per position.
    fn from_iter<I: IntoIterator<Item = u32>>(numbers: I) -> Self {
        let numbers: Vec<u32> = numbers.into_iter().collect();
        let mut held = RowNumbers::new(numbers.len());
        for (position, number) in numbers.into_iter().enumerate() {
            held.set(position, number);
        }
        held
    }
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    use super::RowNumbers;

    proptest! {
        /// Whatever order rows finish in, near or far from their place, each position gives
        /// back the number it was given, positions without a row are skipped, and a position
        /// set twice keeps its last number.
        #[test]
        fn positions_give_back_their_numbers(
            numbers in proptest::collection::vec(
                prop_oneof![Just(None), (0u32..300).prop_map(Some), any::<u32>().prop_map(Some)],
                0..400,
            ),
            again in proptest::collection::vec((0usize..400, any::<u32>()), 0..5),
        ) {
            let mut held = RowNumbers::new(numbers.len());
            let mut expected = numbers.clone();
            for (position, number) in numbers.iter().enumerate() {
                if let Some(number) = number {
                    held.set(position, *number);
                }
            }
            for (position, number) in again {
                if position < numbers.len() {
                    held.set(position, number);
                    expected[position] = Some(number);
                }
            }
            let expected: Vec<u32> = expected.into_iter().flatten().collect();
            prop_assert_eq!(held.len(), expected.len());
            prop_assert_eq!(held.iter().collect::<Vec<_>>(), expected);
        }
    }
}

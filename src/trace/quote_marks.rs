//! A structural classification of one line, 64 bytes at a time: where its quotes are, as a
//! bitmap, and whether it holds any byte that needs a closer look (a backslash, a control byte
//! or a byte from 0x80). A line without such bytes is plain ASCII whose strings hold no
//! escapes, so each string ends at the next quote: the fast lane of the scanner
//! ([`super::compact_line`]) finds a string's end with one bit search instead of walking its
//! bytes. On x86_64 each 16 bytes take three SSE2 comparisons (every x86_64 processor has
//! SSE2); elsewhere a byte-at-a-time loop gives the same marks.

use std::mem::MaybeUninit;

/// Blocks classified at most: a longer line takes the full scanner, where its own bytes cost
/// far more than the steps between its fields.
const BLOCKS: usize = 64;

/// The longest line classified.
pub(super) const MAX_LEN: usize = BLOCKS * 64;

/// The quotes of one line of plain ASCII without backslashes or control bytes.
pub(super) struct QuoteMarks {
    /// Bit `i` of word `b` is set when byte `64 * b + i` is `"`. Only the first `used` words
    /// are written: a line of summary capture uses four, and zeroing all 64 cost a sixth as
    /// much as reading the line.
    words: [MaybeUninit<u64>; BLOCKS],
    /// Words written.
    used: usize,
}

impl QuoteMarks {
    /// Marks of no line yet, to be filled by [`Self::mark`] where they will stay: returning
    /// 520 bytes of marks would copy them.
    #[inline]
    pub(super) fn new() -> Self {
        QuoteMarks {
            words: [const { MaybeUninit::uninit() }; BLOCKS],
            used: 0,
        }
    }

    /// Marks the quotes of `line`; `None` if it is longer than [`MAX_LEN`] or holds a byte that
    /// needs a look (a backslash, a control byte or a byte from 0x80).
    #[inline]
    pub(super) fn mark(&mut self, line: &[u8]) -> Option<()> {
        self.used = 0;
        if line.len() > MAX_LEN {
            return None;
        }
        let used = line.len().div_ceil(64);
        for (block, word) in self.words[..used].iter_mut().enumerate() {
            word.write(classify(line, block)?);
        }
        self.used = used;
        Some(())
    }

    /// The position of the first quote at or after `from`.
    #[inline]
    pub(super) fn next(&self, from: usize) -> Option<usize> {
        let mut block = from / 64;
        let mut quotes = self.word(block)? & (u64::MAX << (from % 64));
        while quotes == 0 {
            block += 1;
            quotes = self.word(block)?;
        }
        Some(block * 64 + quotes.trailing_zeros() as usize)
    }

    #[inline]
    fn word(&self, block: usize) -> Option<u64> {
        // SAFETY: `mark` wrote every word below `used`.
        (block < self.used).then(|| unsafe { self.words[block].assume_init() })
    }
}

/// The quote bits of block number `block` of `line` (64 bytes, fewer at its end), or `None`
/// if the block is past the end or one of its bytes needs a look.
#[inline]
fn classify(line: &[u8], block: usize) -> Option<u64> {
    let start = block.checked_mul(64)?;
    if let Some(bytes) = line.get(start..).and_then(|rest| rest.first_chunk::<64>()) {
        let (quotes, looks) = classify_64(bytes);
        return (looks == 0).then_some(quotes);
    }
    if start >= line.len() {
        return None;
    }
    match line.last_chunk::<64>() {
        // The last block of a longer line: its last 64 bytes, with the bits of the bytes
        // before the block shifted out.
        Some(bytes) => {
            let skip = start - (line.len() - 64);
            let (quotes, looks) = classify_64(bytes);
            (looks >> skip == 0).then_some(quotes >> skip)
        }
        None => classify_bytes(line, start),
    }
}

/// The quote bits of 64 bytes, and the bits of the bytes that need a look.
#[cfg(target_arch = "x86_64")]
#[inline]
fn classify_64(bytes: &[u8; 64]) -> (u64, u64) {
    use std::arch::x86_64::{
        _mm_cmpeq_epi8, _mm_cmplt_epi8, _mm_loadu_si128, _mm_movemask_epi8, _mm_or_si128,
        _mm_set1_epi8,
    };
    let mut quotes = 0u64;
    let mut looks = 0u64;
    // SAFETY: SSE2 is part of every x86_64 processor, and each load reads 16 of the 64 bytes
    // (no alignment needed).
    unsafe {
        let quote = _mm_set1_epi8(b'"' as i8);
        let backslash = _mm_set1_epi8(b'\\' as i8);
        let space = _mm_set1_epi8(0x20);
        for part in 0..4 {
            let piece = _mm_loadu_si128(bytes.as_ptr().add(16 * part).cast());
            let at_quote = _mm_movemask_epi8(_mm_cmpeq_epi8(piece, quote)) as u32;
            // A signed comparison: below 0x20 are the control bytes and, as negative
            // numbers, every byte from 0x80.
            let look = _mm_or_si128(
                _mm_cmpeq_epi8(piece, backslash),
                _mm_cmplt_epi8(piece, space),
            );
            quotes |= u64::from(at_quote) << (16 * part);
            looks |= u64::from(_mm_movemask_epi8(look) as u32) << (16 * part);
        }
    }
    (quotes, looks)
}

/// [`classify_64`] a byte at a time, for processors without SSE2.
#[cfg(not(target_arch = "x86_64"))]
fn classify_64(bytes: &[u8; 64]) -> (u64, u64) {
    let mut quotes = 0u64;
    let mut looks = 0u64;
    for (at, &byte) in bytes.iter().enumerate() {
        quotes |= u64::from(byte == b'"') << at;
        looks |= u64::from(byte == b'\\' || !(0x20..0x80).contains(&byte)) << at;
    }
    (quotes, looks)
}

/// [`classify`] a byte at a time, for lines shorter than a block (and as its reference in
/// tests).
fn classify_bytes(line: &[u8], start: usize) -> Option<u64> {
    let mut quotes = 0u64;
    for (at, &byte) in line.get(start..)?.iter().take(64).enumerate() {
        if byte == b'\\' || !(0x20..0x80).contains(&byte) {
            return None;
        }
        quotes |= u64::from(byte == b'"') << at;
    }
    Some(quotes)
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn needs_a_look(byte: u8) -> bool {
        byte == b'\\' || !(0x20..0x80).contains(&byte)
    }

    /// Every quote of `line`, worked out one byte at a time; `None` where the marks refuse it.
    fn reference(line: &[u8]) -> Option<Vec<usize>> {
        if line.len() > MAX_LEN || line.iter().any(|&byte| needs_a_look(byte)) {
            return None;
        }
        Some((0..line.len()).filter(|&at| line[at] == b'"').collect())
    }

    /// Asserts that the marks agree with the reference, asked from every starting point.
    fn assert_agrees(line: &[u8]) {
        let quotes = reference(line);
        let mut marks = QuoteMarks::new();
        if marks.mark(line).is_none() {
            assert_eq!(quotes, None);
            return;
        }
        let quotes = quotes.expect("marks for a line the reference refuses");
        for from in 0..=line.len() + 1 {
            let expected = quotes.iter().copied().find(|&at| at >= from);
            assert_eq!(marks.next(from), expected, "from {from}");
        }
    }

    /// Bytes biased towards the ones that matter, across several 64-byte blocks.
    fn line_bytes() -> impl Strategy<Value = Vec<u8>> {
        let byte = prop_oneof![
            8 => Just(b'a'),
            4 => Just(b'"'),
            1 => Just(b'\\'),
            1 => Just(b'\n'),
            1 => Just(0x1f_u8),
            1 => Just(0x7f_u8),
            1 => Just(0x80_u8),
            1 => Just(0xff_u8),
            1 => any::<u8>(),
        ];
        // Mostly clean lines, so that the quotes themselves are compared, not only refusals.
        let clean = prop_oneof![8 => Just(b'x'), 3 => Just(b'"'), 1 => Just(b' ')];
        prop_oneof![
            3 => proptest::collection::vec(clean, 0..300),
            1 => proptest::collection::vec(byte, 0..300),
        ]
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(1000))]

        #[test]
        fn marks_agree_with_a_byte_at_a_time_reading(line in line_bytes()) {
            assert_agrees(&line);
        }

        #[test]
        fn the_portable_classifier_agrees(line in line_bytes(), block in 0usize..5) {
            prop_assert_eq!(classify(&line, block), (block * 64 < line.len()).then(|| classify_bytes(&line, block * 64)).flatten());
        }
    }

    #[test]
    fn every_position_of_every_special_byte_is_seen() {
        for len in [0, 1, 15, 16, 17, 63, 64, 65, 79, 80, 127, 128, 200] {
            let clean = vec![b'a'; len];
            assert_agrees(&clean);
            for at in 0..len {
                for special in [b'"', b'\\', b'\n', 0x80, 0xff] {
                    let mut line = clean.clone();
                    line[at] = special;
                    assert_agrees(&line);
                    line[len - 1] = b'"';
                    assert_agrees(&line);
                }
            }
        }
        let mut marks = QuoteMarks::new();
        assert!(marks.mark(&[b'a'; MAX_LEN]).is_some());
        assert!(marks.mark(&[b'a'; MAX_LEN + 1]).is_none());
        // Refused marks find nothing, whatever an earlier line left.
        assert_eq!(marks.next(0), None);
    }
}

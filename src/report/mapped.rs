//! Reading a chunk of a regular file through a read-only memory map instead of a copy.
//!
//! On a trace in the page cache, copying it into a buffer (`read`) was a third of `report`'s
//! CPU time on a 1 GB full-capture trace: the kernel copies every byte that the scanner then
//! reads once. A map lets the scanner read the page cache itself. Each chunk maps the file anew
//! (a map costs a few microseconds; the pages it touches are the chunk's own), and its lines
//! are cut by the rules of [`super::input::read_chunk`], so both give the same lines.
//!
//! A file that shrinks while it is mapped would stop the process (`SIGBUS`) on the pages past
//! its new end; trace writers only append, and the map covers the length measured when the
//! chunk starts, so bytes appended meanwhile are not read (as with `read`). Where a map cannot
//! be made (an empty file, a file system without maps, not Unix) the caller reads instead.

use std::fs::File;

use memchr::{memchr, memrchr};

use super::input::Block;
use crate::trace::FileWindow;

/// Maps the whole of `file` read-only, or `None` where it cannot be mapped (an empty file, a
/// file system without maps, not Unix).
pub(crate) fn map_whole(file: &File) -> Option<FileWindow> {
    let len = usize::try_from(file.metadata().ok()?.len()).ok()?;
    if len == 0 {
        return None;
    }
    FileWindow::map(file, 0, len).ok()
}

/// Where the lines of chunk number `index` (chunks of `chunk_size` bytes) lie in `bytes`, the
/// whole input: the lines that start in the chunk, the last one up to its newline or
/// `max_line + 1` bytes; the cut of [`super::input::read_chunk`], as offsets into `bytes`.
pub(crate) fn chunk_block(bytes: &[u8], index: u64, chunk_size: usize, max_line: usize) -> Block {
    let len = bytes.len();
    let nominal = usize::try_from(index)
        .ok()
        .and_then(|index| index.checked_mul(chunk_size))
        .unwrap_or(usize::MAX);
    // A chunk after the first looks one byte early: a newline there means a line starts
    // exactly at the chunk's offset.
    let (from, want) = if index == 0 {
        (0, chunk_size)
    } else {
        (nominal - 1, chunk_size.saturating_add(1))
    };
    let from = from.min(len);
    let mut end = from.saturating_add(want).min(len);
    let mut at_eof = end - from < want;
    let start = if index == 0 {
        0
    } else {
        match memchr(b'\n', &bytes[from..end]) {
            Some(newline) => from + newline + 1,
            None => {
                return Block {
                    start: end,
                    end,
                    at_eof,
                };
            }
        }
    };
    if start == end || at_eof || bytes[end - 1] == b'\n' {
        return Block { start, end, at_eof };
    }
    let line_start =
        memrchr(b'\n', &bytes[start..end]).map_or(start, |newline| start + newline + 1);
    let limit = line_start.saturating_add(max_line).saturating_add(1);
    if end - line_start <= max_line {
        match memchr(b'\n', &bytes[end..limit.min(len)]) {
            Some(newline) => end += newline + 1,
            None => {
                at_eof = limit > len;
                end = limit.min(len);
            }
        }
    }
    Block { start, end, at_eof }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;

    /// Every cut of every chunk size agrees with reading the chunk from the file.
    #[test]
    fn cuts_chunks_as_reading_them_does() {
        let text = b"{\"a\":1}\n\n{\"bb\":22}\n{\"ccc\":333}\nlonger line without end";
        for ending in [&b""[..], b"\n"] {
            let mut path = std::env::temp_dir();
            path.push(format!(
                "looptrace-mapped-{}-{}",
                std::process::id(),
                ending.len()
            ));
            let mut file = File::create(&path).unwrap();
            file.write_all(text).unwrap();
            file.write_all(ending).unwrap();
            drop(file);
            let file = File::open(&path).unwrap();
            let mapped = map_whole(&file).unwrap();
            let bytes = mapped.bytes();
            for chunk_size in 1..bytes.len() + 2 {
                for max_line in [1, 3, 8, 64] {
                    let chunks = (bytes.len() as u64).div_ceil(chunk_size as u64);
                    for index in 0..chunks {
                        let mut buf = Vec::new();
                        let read = super::super::input::read_chunk(
                            &file, index, chunk_size, max_line, &mut buf,
                        )
                        .unwrap();
                        let cut = chunk_block(bytes, index, chunk_size, max_line);
                        let from = if index == 0 {
                            0
                        } else {
                            index as usize * chunk_size - 1
                        };
                        assert_eq!(
                            (&buf[read.start..read.end], read.at_eof),
                            (&bytes[cut.start..cut.end], cut.at_eof),
                            "chunk {index} of {chunk_size} bytes, lines of {max_line}"
                        );
                        assert!(cut.start >= from.min(bytes.len()));
                    }
                }
            }
            drop(mapped);
            std::fs::remove_file(&path).unwrap();
        }
    }
}

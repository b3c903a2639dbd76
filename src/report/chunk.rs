//! Scanning one line-aligned chunk of an input: split it into lines, read each as an event and
//! apply it to the chunk's runs, tolerating what the trace format allows.
//!
//! Line numbers here count from the chunk's first line; the merge adds the lines of the chunks
//! before it. A chunk ends at a newline except the last one of an input (which may hold a
//! cut-off line) and one stopped inside a line longer than the limit.

use std::fs::File;

use memchr::memchr;

use super::aggregate::{ChunkParts, ChunkState};
use super::mapped::{chunk_block, map_whole};
use super::row_fold::RowMode;
use crate::trace::{EventRefKind, LineError, ends_early, is_run_started, parse_event};

/// How to scan.
#[derive(Debug, Clone, Copy)]
pub(crate) struct ScanSettings {
    /// Skip and count malformed lines instead of failing.
    pub lenient: bool,
    /// The longest line accepted, in bytes.
    pub max_line: usize,
    /// Collect the chunk's run ids to find ids appearing in two inputs.
    pub collect_ids: bool,
    /// Whether runs keep rows (the views that name runs).
    pub rows: RowMode,
}

/// What scanning one chunk found.
#[derive(Debug, Default)]
pub(crate) struct ChunkReport {
    /// The runs and totals, for the merge.
    pub parts: ChunkParts,
    /// Lines that start in the chunk.
    pub lines: u64,
    /// Lines skipped under `--lenient`.
    pub skipped: u64,
    /// The first skipped line and what is wrong with it.
    pub first_skipped: Option<(u64, LineError)>,
    /// The cut-off last line of the input, if this chunk ends the input with one.
    pub truncated: Option<u64>,
    /// The first malformed line, if not lenient: the chunk stopped there.
    pub error: Option<(u64, LineError)>,
    /// Lines cut short by a failed write and followed by a `run_started` line: skipped.
    pub cut_off: Vec<u64>,
    /// The chunk's last line, when it ends early and the line after it (the next chunk's
    /// first) decides whether it is a cut-off write or malformed.
    pub cut_at_end: Option<(u64, LineError)>,
    /// Whether the chunk's first line is a `run_started` event.
    pub starts_with_run: bool,
}

/// Scans `data`, a line-aligned chunk of input number `file`; `at_eof` says it ends the input.
pub(crate) fn scan_chunk(
    data: &[u8],
    file: u32,
    at_eof: bool,
    settings: ScanSettings,
) -> ChunkReport {
    let mut report = ChunkReport::default();
    let mut state = ChunkState::new(file, data.len(), settings.rows);
    let mut start = 0;
    while start < data.len() {
        let (end, terminated) = match memchr(b'\n', &data[start..]) {
            Some(offset) => (start + offset, true),
            None => (data.len(), false),
        };
        let line = &data[start..end];
        start = end + usize::from(terminated);
        report.lines += 1;
        let first = report.lines == 1;
        let problem = if line.len() > settings.max_line {
            LineError::TooLong {
                limit: settings.max_line,
            }
        } else if is_blank(line) {
            continue;
        } else {
            match parse_event(line) {
                Ok(event) => {
                    report.starts_with_run |= first && event.kind == EventRefKind::RunStarted;
                    state.apply(event, line);
                    continue;
                }
                Err(problem) => problem,
            }
        };
        let cut = terminated && !matches!(problem, LineError::TooLong { .. }) && ends_early(line);
        if !terminated && at_eof && !matches!(problem, LineError::TooLong { .. }) {
            report.truncated = Some(report.lines);
        } else if cut && start < data.len() && is_run_started(next_line(data, start)) {
            // A write cut short (a full disk), after which the next run began on a new line.
            report.cut_off.push(report.lines);
        } else if cut && start == data.len() && !at_eof {
            report.cut_at_end = Some((report.lines, problem));
        } else if settings.lenient {
            report.skipped += 1;
            if report.first_skipped.is_none() {
                report.first_skipped = Some((report.lines, problem));
            }
        } else {
            report.error = Some((report.lines, problem));
            return report;
        }
    }
    report.parts = state.finish(settings.collect_ids);
    report
}

/// Scans chunk number `index` (of `chunk_size` bytes) of `file`, input number `input`, through a
/// memory map; `None` where the file cannot be mapped (the caller reads the chunk instead).
pub(crate) fn scan_mapped_chunk(
    file: &File,
    input: u32,
    index: u64,
    chunk_size: usize,
    settings: ScanSettings,
) -> Option<ChunkReport> {
    let mapped = map_whole(file)?;
    let bytes = mapped.bytes();
    let block = chunk_block(bytes, index, chunk_size, settings.max_line);
    Some(scan_chunk(
        &bytes[block.start..block.end],
        input,
        block.at_eof,
        settings,
    ))
}

/// The line starting at `start` (without its `\n`).
fn next_line(data: &[u8], start: usize) -> &[u8] {
    let rest = &data[start..];
    &rest[..memchr(b'\n', rest).unwrap_or(rest.len())]
}

/// Whether a line holds only whitespace (a `\r` of a `\r\n` line end included).
fn is_blank(line: &[u8]) -> bool {
    line.iter().all(|byte| matches!(byte, b' ' | b'\t' | b'\r'))
}

//! Producing a report: split the inputs into chunks, scan them on worker threads, merge the
//! results in input order, and turn the totals into a [`Report`].
//!
//! Workers take chunks of regular files in order from a shared counter and read them at their
//! offsets; the calling thread merges each chunk's result as soon as all chunks before it are
//! merged (results that arrive early wait in a small reorder buffer), and reads streams
//! (standard input, pipes) itself when their turn comes. Memory is a chunk buffer per worker,
//! the runs open across chunk boundaries, and the totals (tools, error kinds, step histograms);
//! with more than one input, also one fingerprint per distinct run id (about 24 bytes each)
//! to find run ids that appear in two inputs.

use std::collections::{BTreeMap, HashMap};
use std::fs::File;
use std::io;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::mpsc;

use super::aggregate::{Merger, Totals};
use super::chunk::{ChunkReport, ScanSettings, scan_chunk, scan_mapped_chunk};
use super::error::ReportError;
use super::hash::FastMap;
use super::input::{Input, Source, for_each_stream_block, read_chunk};
use super::model::{
    FileEndings, InputTotals, InvalidOutput, Report, StepStats, ToolReport, Warning,
};
use super::row_fold::RowMode;
use super::rows::RunTable;
use crate::run::RunOutcome;
use crate::trace::LineError;

/// Run ids found in more than one input that are named one by one.
const MAX_LISTED_DUPLICATES: usize = 20;

/// How to read the inputs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Options {
    /// Skip and count malformed lines instead of failing on the first.
    pub lenient: bool,
    /// Bytes per chunk of a file (each chunk is read and scanned by one thread).
    pub chunk_size: usize,
    /// The longest line accepted, in bytes.
    pub max_line: usize,
    /// Worker threads.
    pub threads: usize,
    /// Whether the fold keeps a row per run ([`analyze_runs`] returns them).
    pub rows: RowMode,
}

impl Default for Options {
    /// Strict, 8 MiB chunks, 16 MiB lines, one worker per core.
    fn default() -> Self {
        Options {
            lenient: false,
            chunk_size: 8 << 20,
            max_line: 16 << 20,
            threads: std::thread::available_parallelism().map_or(1, |cores| cores.get()),
            rows: RowMode::Off,
        }
    }
}

/// One piece of work: a chunk of a regular file, or a whole stream.
#[derive(Debug, Clone, Copy)]
enum Unit {
    Chunk { input: u32, index: u64 },
    Stream { input: u32 },
}

/// Reads every input and computes the report; `warnings` (from collecting the inputs) come first.
pub fn analyze(
    inputs: &[Input],
    options: &Options,
    warnings: Vec<Warning>,
) -> Result<Report, ReportError> {
    let options = Options {
        rows: RowMode::Off,
        ..*options
    };
    analyze_runs(inputs, &options, warnings).map(|(report, _)| report)
}

/// [`analyze`], and the row of every run the report counts, by the same fold in the same pass
/// (rows with timelines or without, as `options.rows` says; none when it is off). Rows come in
/// the order their runs first appear; each names the input it first appeared in.
pub fn analyze_runs(
    inputs: &[Input],
    options: &Options,
    warnings: Vec<Warning>,
) -> Result<(Report, RunTable), ReportError> {
    analyze_after(inputs, options, warnings, Folded::default())
}

/// Runs folded before the inputs are read (an evaluation's, as they were written,
/// [`super::LiveFold`]): the merge starts from them, and each input's line count from `lines`.
#[derive(Debug, Default)]
pub(crate) struct Folded {
    pub merger: Merger,
    pub lines: Vec<u64>,
}

/// [`analyze_runs`], the merge starting from the runs `folded` holds.
pub(crate) fn analyze_after(
    inputs: &[Input],
    options: &Options,
    warnings: Vec<Warning>,
    folded: Folded,
) -> Result<(Report, RunTable), ReportError> {
    let options = Options {
        chunk_size: options.chunk_size.max(1),
        max_line: options.max_line.max(1),
        threads: options.threads.max(1),
        ..*options
    };
    let units = plan(inputs, options.chunk_size)?;
    let settings = ScanSettings {
        lenient: options.lenient,
        max_line: options.max_line,
        collect_ids: inputs.len() > 1,
        rows: options.rows,
    };
    let mut merge = Merge::new(inputs, warnings, options.lenient);
    merge.merger = folded.merger;
    for (progress, lines) in merge.progress.iter_mut().zip(folded.lines) {
        progress.lines = lines;
    }
    let next = AtomicUsize::new(0);
    let stop = AtomicBool::new(false);
    let workers = options.threads.min(
        units
            .iter()
            .filter(|unit| matches!(unit, Unit::Chunk { .. }))
            .count(),
    );
    std::thread::scope(|scope| {
        let (sender, receiver) = mpsc::channel::<(usize, Result<ChunkReport, ReportError>)>();
        for _ in 0..workers {
            let sender = sender.clone();
            let (units, next, stop) = (&units, &next, &stop);
            scope.spawn(move || {
                let mut buf = Vec::new();
                loop {
                    if stop.load(Ordering::Relaxed) {
                        break;
                    }
                    let at = next.fetch_add(1, Ordering::Relaxed);
                    let Some(&unit) = units.get(at) else { break };
                    let Unit::Chunk { input, index } = unit else {
                        continue;
                    };
                    let result = scan_file_chunk(
                        &inputs[input as usize],
                        input,
                        index,
                        options,
                        settings,
                        &mut buf,
                    );
                    if result
                        .as_ref()
                        .map_or(true, |report| report.error.is_some())
                    {
                        stop.store(true, Ordering::Relaxed);
                    }
                    if sender.send((at, result)).is_err() {
                        break;
                    }
                }
            });
        }
        drop(sender);
        let result = merge_in_order(&units, inputs, options, settings, &receiver, &mut merge)
            .and_then(|()| merge.finish_inputs());
        if result.is_err() {
            stop.store(true, Ordering::Relaxed);
        }
        result
    })?;
    Ok(merge.into_report())
}

/// Computes the report of one trace held in memory (named `name` in warnings and errors), on
/// this thread, by the same rules as [`analyze`].
pub fn analyze_slice(data: &[u8], name: &str, lenient: bool) -> Result<Report, ReportError> {
    let inputs = [Input {
        name: name.to_owned(),
        source: Source::Stdin,
    }];
    let settings = ScanSettings {
        lenient,
        max_line: Options::default().max_line,
        collect_ids: false,
        rows: RowMode::Off,
    };
    let mut merge = Merge::new(&inputs, Vec::new(), lenient);
    merge.add(0, scan_chunk(data, 0, true, settings))?;
    merge.finish_inputs()?;
    Ok(merge.into_report().0)
}

/// The units of work, in input order.
fn plan(inputs: &[Input], chunk_size: usize) -> Result<Vec<Unit>, ReportError> {
    let mut units = Vec::new();
    for (input, item) in (0u32..).zip(inputs) {
        match &item.source {
            Source::Stdin | Source::Runs { .. } => units.push(Unit::Stream { input }),
            Source::Lines(lines) => {
                let chunks = lines.len().div_ceil(chunk_size).max(1) as u64;
                units.extend((0..chunks).map(|index| Unit::Chunk { input, index }));
            }
            Source::Path(path) => {
                let metadata = std::fs::metadata(path).map_err(|source| ReportError::Read {
                    path: item.name.clone(),
                    source,
                })?;
                if metadata.is_file() {
                    let chunks = metadata.len().div_ceil(chunk_size as u64).max(1);
                    units.extend((0..chunks).map(|index| Unit::Chunk { input, index }));
                } else {
                    units.push(Unit::Stream { input });
                }
            }
        }
    }
    Ok(units)
}

fn scan_file_chunk(
    item: &Input,
    input: u32,
    index: u64,
    options: Options,
    settings: ScanSettings,
    buf: &mut Vec<u8>,
) -> Result<ChunkReport, ReportError> {
    let read_error = |source| ReportError::Read {
        path: item.name.clone(),
        source,
    };
    let path = match &item.source {
        Source::Path(path) => path,
        Source::Lines(lines) => {
            let (chunk, at_eof) = memory_chunk(lines, index, options.chunk_size);
            return Ok(scan_chunk(chunk, input, at_eof, settings));
        }
        Source::Stdin | Source::Runs { .. } => {
            return Err(read_error(io::Error::other("not a file")));
        }
    };
    let file = File::open(path).map_err(read_error)?;
    if let Some(report) = scan_mapped_chunk(&file, input, index, options.chunk_size, settings) {
        return Ok(report);
    }
    let block =
        read_chunk(&file, index, options.chunk_size, options.max_line, buf).map_err(read_error)?;
    Ok(scan_chunk(
        &buf[block.start..block.end],
        input,
        block.at_eof,
        settings,
    ))
}

/// Chunk number `index` of lines held in memory (chunks of `chunk_size` bytes): the lines that
/// start in it, as [`read_chunk`] gives them of a file, and whether it ends the input.
fn memory_chunk(lines: &[u8], index: u64, chunk_size: usize) -> (&[u8], bool) {
    let line_start = |nominal: u64| -> usize {
        let Ok(nominal) = usize::try_from(nominal) else {
            return lines.len();
        };
        if nominal == 0 {
            return 0;
        }
        if nominal >= lines.len() {
            return lines.len();
        }
        match memchr::memchr(b'\n', &lines[nominal - 1..]) {
            Some(newline) => nominal + newline,
            None => lines.len(),
        }
    };
    let start = line_start(index * chunk_size as u64);
    let end = line_start((index + 1) * chunk_size as u64);
    (&lines[start..end.max(start)], end >= lines.len())
}

/// Merges the unit results in order, reading streams on this thread when their turn comes.
fn merge_in_order(
    units: &[Unit],
    inputs: &[Input],
    options: Options,
    settings: ScanSettings,
    receiver: &mpsc::Receiver<(usize, Result<ChunkReport, ReportError>)>,
    merge: &mut Merge,
) -> Result<(), ReportError> {
    let mut early: BTreeMap<usize, Result<ChunkReport, ReportError>> = BTreeMap::new();
    for (at, unit) in units.iter().enumerate() {
        match *unit {
            Unit::Stream { input } => {
                scan_stream(&inputs[input as usize], input, options, settings, merge)?
            }
            Unit::Chunk { input, .. } => {
                let result = loop {
                    if let Some(result) = early.remove(&at) {
                        break result;
                    }
                    match receiver.recv() {
                        Ok((done, result)) => {
                            early.insert(done, result);
                        }
                        Err(_) => {
                            let source = io::Error::other("a worker stopped early");
                            return Err(ReportError::Read {
                                path: inputs[input as usize].name.clone(),
                                source,
                            });
                        }
                    }
                };
                merge.add(input, result?)?;
            }
        }
    }
    Ok(())
}

fn scan_stream(
    item: &Input,
    input: u32,
    options: Options,
    settings: ScanSettings,
    merge: &mut Merge,
) -> Result<(), ReportError> {
    let read_error = |source| ReportError::Read {
        path: item.name.clone(),
        source,
    };
    let mut outcome = Ok(());
    let mut scan = |block: &[u8], at_eof: bool| {
        outcome = merge.add(input, scan_chunk(block, input, at_eof, settings));
        outcome.is_ok()
    };
    let reader = item.source.open().map_err(read_error)?;
    for_each_stream_block(reader, options.chunk_size, options.max_line, &mut scan)
        .map_err(read_error)?;
    outcome
}

/// Per input: lines so far, and lines skipped under `--lenient`.
#[derive(Debug, Default)]
struct InputProgress {
    lines: u64,
    skipped: u64,
    first_skipped: Option<(u64, String)>,
}

/// The merge of all chunk results so far.
struct Merge<'i> {
    inputs: &'i [Input],
    lenient: bool,
    progress: Vec<InputProgress>,
    merger: Merger,
    warnings: Vec<Warning>,
    /// The first input of each run id fingerprint seen (only with more than one input).
    first_input: FastMap<u64, u32>,
    /// Run ids found in more than one input: name and inputs, in the order found.
    duplicates: Vec<(u64, String, Vec<u32>)>,
    /// Per run id found in more than one input, its place in `duplicates` (`None` past the
    /// ones listed, which are only counted).
    duplicate_index: HashMap<u64, Option<usize>>,
    more_duplicates: u64,
    /// A chunk's last line that ended early: input, line and problem, until the next chunk
    /// shows whether a run starts right after it.
    pending_cut: Option<(u32, u64, LineError)>,
}

impl<'i> Merge<'i> {
    fn new(inputs: &'i [Input], warnings: Vec<Warning>, lenient: bool) -> Self {
        Merge {
            inputs,
            lenient,
            progress: inputs.iter().map(|_| InputProgress::default()).collect(),
            merger: Merger::default(),
            warnings,
            first_input: FastMap::default(),
            duplicates: Vec::new(),
            duplicate_index: HashMap::new(),
            more_duplicates: 0,
            pending_cut: None,
        }
    }

    /// Adds the next chunk of input number `input`.
    fn add(&mut self, input: u32, report: ChunkReport) -> Result<(), ReportError> {
        if let Some((cut_input, line, problem)) = self.pending_cut.take() {
            if cut_input == input && report.lines == 0 && report.error.is_none() {
                self.pending_cut = Some((cut_input, line, problem));
            } else if cut_input == input && report.starts_with_run {
                self.warnings.push(Warning::CutOffWrite {
                    file: self.inputs[input as usize].name.clone(),
                    line,
                });
            } else {
                self.malformed(cut_input, line, problem)?;
            }
        }
        let name = &self.inputs[input as usize].name;
        let progress = &mut self.progress[input as usize];
        let base = progress.lines;
        if let Some((line, problem)) = report.error {
            return Err(ReportError::Line {
                path: name.clone(),
                line: base + line,
                problem,
            });
        }
        progress.lines += report.lines;
        progress.skipped += report.skipped;
        if let (None, Some((line, problem))) = (&progress.first_skipped, report.first_skipped) {
            progress.first_skipped = Some((base + line, problem.to_string()));
        }
        if let Some(line) = report.truncated {
            self.warnings.push(Warning::TruncatedTail {
                file: name.clone(),
                line: base + line,
            });
        }
        for line in report.cut_off {
            self.warnings.push(Warning::CutOffWrite {
                file: name.clone(),
                line: base + line,
            });
        }
        if let Some((line, problem)) = report.cut_at_end {
            self.pending_cut = Some((input, base + line, problem));
        }
        for (fingerprint, run_id) in report.parts.run_ids.iter() {
            self.note_run_id(*fingerprint, run_id, input);
        }
        self.merger.add(report.parts);
        Ok(())
    }

    /// A malformed line found after its chunk was added: an error, or skipped if lenient.
    fn malformed(&mut self, input: u32, line: u64, problem: LineError) -> Result<(), ReportError> {
        if !self.lenient {
            return Err(ReportError::Line {
                path: self.inputs[input as usize].name.clone(),
                line,
                problem,
            });
        }
        let progress = &mut self.progress[input as usize];
        progress.skipped += 1;
        if progress
            .first_skipped
            .as_ref()
            .is_none_or(|(first, _)| *first > line)
        {
            progress.first_skipped = Some((line, problem.to_string()));
        }
        Ok(())
    }

    /// Settles a cut line left by the last chunk of the input: nothing follows it.
    fn finish_inputs(&mut self) -> Result<(), ReportError> {
        match self.pending_cut.take() {
            Some((input, line, problem)) => self.malformed(input, line, problem),
            None => Ok(()),
        }
    }

    fn note_run_id(&mut self, fingerprint: u64, run_id: &[u8], input: u32) {
        let first = *self.first_input.entry(fingerprint).or_insert(input);
        if first == input {
            return;
        }
        match self.duplicate_index.get(&fingerprint) {
            Some(&Some(at)) => {
                let files = &mut self.duplicates[at].2;
                if files.last() != Some(&input) {
                    files.push(input);
                }
            }
            // Counted once already; its later files are not listed.
            Some(None) => {}
            None if self.duplicates.len() < MAX_LISTED_DUPLICATES => {
                self.duplicate_index
                    .insert(fingerprint, Some(self.duplicates.len()));
                self.duplicates.push((
                    fingerprint,
                    String::from_utf8_lossy(run_id).into_owned(),
                    vec![first, input],
                ));
            }
            None => {
                self.duplicate_index.insert(fingerprint, None);
                self.more_duplicates += 1;
            }
        }
    }

    fn into_report(self) -> (Report, RunTable) {
        let Merge {
            inputs,
            progress,
            merger,
            mut warnings,
            duplicates,
            more_duplicates,
            ..
        } = self;
        let mut totals = merger.finish();
        let mut rows = std::mem::take(&mut totals.rows);
        rows.sort_by_key(|(first, _)| *first);
        let table = RunTable {
            files: inputs.iter().map(|item| item.name.clone()).collect(),
            rows: rows.into_iter().map(|(_, row)| row).collect(),
        };
        for (item, progress) in inputs.iter().zip(&progress) {
            if let Some((first_line, first_problem)) = &progress.first_skipped {
                warnings.push(Warning::SkippedLines {
                    file: item.name.clone(),
                    count: progress.skipped,
                    first_line: *first_line,
                    first_problem: first_problem.clone(),
                });
            }
        }
        let mut unknown: Vec<(String, u64)> = totals
            .unknown_types
            .iter()
            .map(|(name, count)| (text(name), *count))
            .collect();
        unknown.sort();
        for (event_type, count) in unknown {
            warnings.push(Warning::UnknownEventType { event_type, count });
        }
        for (_, run_id, files) in duplicates {
            let files = files
                .iter()
                .map(|&input| inputs[input as usize].name.clone())
                .collect();
            warnings.push(Warning::DuplicateRunId { run_id, files });
        }
        if more_duplicates > 0 {
            warnings.push(Warning::MoreDuplicateRunIds {
                count: more_duplicates,
            });
        }
        (build_report(inputs, &progress, totals, warnings), table)
    }
}

/// A string from a trace (checked UTF-8 when scanned) for the report.
fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

fn sorted(counter: &FastMap<std::borrow::Cow<'static, [u8]>, u64>) -> BTreeMap<String, u64> {
    counter
        .iter()
        .map(|(key, count)| (text(key), *count))
        .collect()
}

fn build_report(
    inputs: &[Input],
    progress: &[InputProgress],
    totals: Totals<'static>,
    warnings: Vec<Warning>,
) -> Report {
    let by_file = (0u32..)
        .zip(inputs)
        .map(|(input, item)| FileEndings {
            file: item.name.clone(),
            exit_reasons: totals.by_file.get(&input).copied().unwrap_or_default(),
        })
        .collect();
    let mut tools: Vec<ToolReport> = totals
        .tools
        .iter()
        .map(|(name, tool)| ToolReport {
            name: text(name),
            calls: tool.calls,
            errors: tool.errors,
            errors_by_kind: sorted(&tool.errors_by_kind),
            unrecorded: tool.unrecorded,
        })
        .collect();
    tools.sort_by(|a, b| a.name.cmp(&b.name));
    let mut steps = [StepStats::default(); 5];
    for ending in RunOutcome::ALL {
        steps[ending.index()] = totals.steps[ending.index()].stats();
    }
    Report {
        input: InputTotals {
            files: inputs.len() as u64,
            lines: progress.iter().map(|p| p.lines).sum(),
            events: totals.events,
            skipped_lines: progress.iter().map(|p| p.skipped).sum(),
        },
        exit_reasons: totals.endings,
        by_file,
        budget: totals.budget,
        invalid_output: InvalidOutput {
            feedback_by_kind: sorted(&totals.feedback_by_kind),
            endings_by_kind: sorted(&totals.invalid_by_kind),
            runs_with_feedback: totals.runs_with_feedback,
            recovered: totals.recovered,
        },
        tools,
        steps,
        internal_errors: sorted(&totals.internal_by_kind),
        verdicts: totals.verdicts,
        finish_gate: totals.finish_gate.clone(),
        spend: totals.spend,
        durations: std::array::from_fn(|index| totals.durations[index].summary()),
        warnings,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lines_in_memory_are_chunked_as_files_are() {
        let content = b"aaaa\nbb\ncccccc\nd\n\neeeee";
        for chunk_size in 1..=content.len() + 1 {
            let count = content.len().div_ceil(chunk_size) as u64;
            let chunks: Vec<(&[u8], bool)> = (0..count)
                .map(|index| memory_chunk(content, index, chunk_size))
                .collect();
            let joined: Vec<u8> = chunks
                .iter()
                .flat_map(|(bytes, _)| bytes.to_vec())
                .collect();
            assert_eq!(joined, content, "chunk size {chunk_size}");
            for (bytes, at_eof) in &chunks {
                let whole = bytes.is_empty() || bytes.ends_with(b"\n");
                assert!(whole || *at_eof, "chunk size {chunk_size}");
            }
            assert!(chunks.last().unwrap().1);
        }
    }
}

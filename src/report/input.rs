//! The report's inputs: which files to read, and reading them in line-aligned chunks.
//!
//! Paths name files, folders (searched recursively for `*.jsonl`, in sorted order, symbolic
//! links to folders not followed) or `-` for standard input. Regular files are split into
//! chunks of a fixed size read at their offsets, so several threads read one file at once; a
//! chunk owns the lines that start in it, reading on past its end to finish its last line.
//! Standard input and other streams are read front to back. Every file is opened read-only.
//!
//! Every source of events ends up as trace lines fed to the one fold: a file, standard input,
//! the lines an importer wrote into memory, or the named runs of a run store's trace file
//! (filtered as they are read, [`KeepRuns`]). Nothing is copied to a temporary file.

use std::collections::{BTreeSet, HashSet};
use std::fs::{self, File};
use std::io::{self, Read};
use std::path::{Path, PathBuf};
use std::sync::Arc;

use memchr::{memchr, memrchr};

use super::error::ReportError;
use super::keep_runs::KeepRuns;
use super::model::Warning;

/// How much a chunk reads at a time past its end to finish its last line.
const TAIL_READ: usize = 64 * 1024;

/// Where one input comes from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Source {
    /// A file (or a named pipe).
    Path(PathBuf),
    /// Standard input.
    Stdin,
    /// Trace lines held in memory: the events an importer made of another agent's file.
    Lines(Arc<[u8]>),
    /// The lines of some runs of a trace file (the runs a run store's view names): lines of
    /// other runs, and a last line a crash cut short, are left out as the file is read.
    Runs {
        /// The trace file.
        path: PathBuf,
        /// The run ids whose lines are read.
        keep: Arc<BTreeSet<String>>,
    },
}

impl Source {
    /// A reader of the source's lines, front to back (files too, without chunks).
    pub fn open(&self) -> io::Result<Box<dyn Read + '_>> {
        Ok(match self {
            Source::Path(path) => Box::new(File::open(path)?),
            Source::Stdin => Box::new(io::stdin().lock()),
            Source::Lines(lines) => Box::new(&lines[..]),
            Source::Runs { path, keep } => {
                Box::new(KeepRuns::new(io::BufReader::new(File::open(path)?), keep))
            }
        })
    }
}

/// One input of the report.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Input {
    /// The name shown in the report and in errors.
    pub name: String,
    /// Where to read it.
    pub source: Source,
}

impl Input {
    /// The input read from `path`.
    pub fn path(path: impl Into<PathBuf>) -> Self {
        let path = path.into();
        Input {
            name: path.display().to_string(),
            source: Source::Path(path),
        }
    }

    /// Standard input.
    pub fn stdin() -> Self {
        Input {
            name: "<stdin>".to_owned(),
            source: Source::Stdin,
        }
    }
}

/// The inputs named by command-line paths, and a warning per folder with no trace file.
///
/// A file reached twice (named and found in a folder, through a link, or under a second name
/// given by a hard link) is read once.
pub fn collect_inputs<P: AsRef<Path>>(
    paths: &[P],
) -> Result<(Vec<Input>, Vec<Warning>), ReportError> {
    let mut inputs = Vec::new();
    let mut warnings = Vec::new();
    let mut seen = HashSet::new();
    let mut stdin = false;
    for path in paths {
        let path = path.as_ref();
        if path == Path::new("-") {
            if stdin {
                return Err(ReportError::StdinTwice);
            }
            stdin = true;
            inputs.push(Input::stdin());
            continue;
        }
        let metadata = fs::metadata(path).map_err(|source| read_error(path, source))?;
        if metadata.is_dir() {
            let mut found = Vec::new();
            walk(path, &mut found)?;
            if found.is_empty() {
                warnings.push(Warning::NoTraceFiles {
                    folder: path.display().to_string(),
                });
            }
            for file in found {
                push_once(&mut inputs, &mut seen, file)?;
            }
        } else {
            push_once(&mut inputs, &mut seen, path.to_path_buf())?;
        }
    }
    Ok((inputs, warnings))
}

fn push_once(
    inputs: &mut Vec<Input>,
    seen: &mut HashSet<FileIdentity>,
    path: PathBuf,
) -> Result<(), ReportError> {
    if seen.insert(file_identity(&path)?) {
        inputs.push(Input::path(path));
    }
    Ok(())
}

/// What makes two names one file: its device and inode where there are inodes (hard links
/// share them), else its canonical path.
#[cfg(unix)]
type FileIdentity = (u64, u64);
#[cfg(not(unix))]
type FileIdentity = PathBuf;

#[cfg(unix)]
fn file_identity(path: &Path) -> Result<FileIdentity, ReportError> {
    use std::os::unix::fs::MetadataExt;
    let metadata = fs::metadata(path).map_err(|source| read_error(path, source))?;
    Ok((metadata.dev(), metadata.ino()))
}

#[cfg(not(unix))]
fn file_identity(path: &Path) -> Result<FileIdentity, ReportError> {
    fs::canonicalize(path).map_err(|source| read_error(path, source))
}

/// Appends the `*.jsonl` files under `folder` in sorted order.
fn walk(folder: &Path, found: &mut Vec<PathBuf>) -> Result<(), ReportError> {
    let list_error = |source| ReportError::List {
        path: folder.display().to_string(),
        source,
    };
    let mut entries = Vec::new();
    for entry in fs::read_dir(folder).map_err(list_error)? {
        let entry = entry.map_err(list_error)?;
        let file_type = entry.file_type().map_err(list_error)?;
        entries.push((entry.path(), file_type));
    }
    entries.sort_by(|a, b| a.0.cmp(&b.0));
    for (path, file_type) in entries {
        if file_type.is_dir() {
            walk(&path, found)?;
        } else if path.extension().is_some_and(|ext| ext == "jsonl") && path.is_file() {
            found.push(path);
        }
    }
    Ok(())
}

fn read_error(path: &Path, source: io::Error) -> ReportError {
    ReportError::Read {
        path: path.display().to_string(),
        source,
    }
}

/// Reads into `buf` from `offset` until it is full or the file ends; returns the bytes read.
fn read_full_at(file: &File, buf: &mut [u8], offset: u64) -> io::Result<usize> {
    let mut filled = 0;
    while filled < buf.len() {
        match read_at(file, &mut buf[filled..], offset + filled as u64) {
            Ok(0) => break,
            Ok(read) => filled += read,
            Err(err) if err.kind() == io::ErrorKind::Interrupted => {}
            Err(err) => return Err(err),
        }
    }
    Ok(filled)
}

#[cfg(unix)]
fn read_at(file: &File, buf: &mut [u8], offset: u64) -> io::Result<usize> {
    std::os::unix::fs::FileExt::read_at(file, buf, offset)
}

#[cfg(windows)]
fn read_at(file: &File, buf: &mut [u8], offset: u64) -> io::Result<usize> {
    std::os::windows::fs::FileExt::seek_read(file, buf, offset)
}

/// Where a chunk's lines lie in the buffer it was read into.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Block {
    /// The first byte of the chunk's first line.
    pub start: usize,
    /// Past its last line's newline (or the end of the input, or the length limit).
    pub end: usize,
    /// Whether the chunk ends the input.
    pub at_eof: bool,
}

/// Reads chunk number `index` of `file` (chunks of `chunk_size` bytes) into `buf`: the lines
/// that start in it, the last one read up to its newline or `max_line + 1` bytes.
pub(crate) fn read_chunk(
    file: &File,
    index: u64,
    chunk_size: usize,
    max_line: usize,
    buf: &mut Vec<u8>,
) -> io::Result<Block> {
    let nominal = index * chunk_size as u64;
    // A chunk after the first reads one byte early: if it is a newline, a line starts exactly
    // at the chunk's offset; otherwise the chunk's first line starts after its first newline.
    let (from, want) = if index == 0 {
        (0, chunk_size)
    } else {
        (nominal - 1, chunk_size + 1)
    };
    if buf.len() < want {
        // Room for the usual tail too, so that finishing the last line does not double the
        // buffer.
        buf.reserve_exact(want + TAIL_READ - buf.len());
        buf.resize(want, 0);
    }
    let mut end = read_full_at(file, &mut buf[..want], from)?;
    let mut at_eof = end < want;
    let start = if index == 0 {
        0
    } else {
        match memchr(b'\n', &buf[..end]) {
            Some(newline) => newline + 1,
            None => {
                return Ok(Block {
                    start: end,
                    end,
                    at_eof,
                });
            }
        }
    };
    if start == end || at_eof || buf[end - 1] == b'\n' {
        return Ok(Block { start, end, at_eof });
    }
    let line_start = memrchr(b'\n', &buf[start..end]).map_or(start, |newline| start + newline + 1);
    while end - line_start <= max_line {
        let step = TAIL_READ.min(max_line + 1 - (end - line_start));
        if buf.len() < end + step {
            buf.resize(end + step, 0);
        }
        let read = read_full_at(file, &mut buf[end..end + step], from + end as u64)?;
        if read == 0 {
            at_eof = true;
            break;
        }
        if let Some(newline) = memchr(b'\n', &buf[end..end + read]) {
            end += newline + 1;
            break;
        }
        end += read;
    }
    Ok(Block { start, end, at_eof })
}

/// Reads a stream in line-aligned blocks of about `chunk_size` bytes and hands each to `scan`
/// with whether it ends the stream; stops early when `scan` returns false.
///
/// A line longer than `max_line` is handed on cut at `max_line + 1` bytes (so the scan reports
/// it) and the rest of it is dropped.
pub(crate) fn for_each_stream_block(
    mut reader: impl Read,
    chunk_size: usize,
    max_line: usize,
    mut scan: impl FnMut(&[u8], bool) -> bool,
) -> io::Result<()> {
    let mut buf: Vec<u8> = vec![0; chunk_size.max(1)];
    let mut filled = 0;
    let mut dropping = false;
    loop {
        if filled == buf.len() {
            buf.resize(buf.len() * 2, 0);
        }
        let read = match reader.read(&mut buf[filled..]) {
            Ok(read) => read,
            Err(err) if err.kind() == io::ErrorKind::Interrupted => continue,
            Err(err) => return Err(err),
        };
        if read == 0 {
            if filled > 0 && !dropping {
                scan(&buf[..filled], true);
            }
            return Ok(());
        }
        let fresh = filled;
        filled += read;
        if dropping {
            match memchr(b'\n', &buf[fresh..filled]) {
                Some(newline) => {
                    buf.copy_within(fresh + newline + 1..filled, 0);
                    filled -= fresh + newline + 1;
                    dropping = false;
                }
                None => {
                    filled = 0;
                    continue;
                }
            }
        }
        if filled < chunk_size {
            continue;
        }
        match memrchr(b'\n', &buf[..filled]) {
            Some(newline) => {
                if !scan(&buf[..=newline], false) {
                    return Ok(());
                }
                buf.copy_within(newline + 1..filled, 0);
                filled -= newline + 1;
            }
            None if filled > max_line => {
                if !scan(&buf[..=max_line], false) {
                    return Ok(());
                }
                filled = 0;
                dropping = true;
            }
            None => {}
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;

    fn chunks_of(content: &[u8], chunk_size: usize, max_line: usize) -> Vec<(Vec<u8>, bool)> {
        let mut file = tempfile::tempfile().unwrap();
        file.write_all(content).unwrap();
        let count = content.len().div_ceil(chunk_size).max(1) as u64;
        let mut buf = Vec::new();
        (0..count)
            .map(|index| {
                let block = read_chunk(&file, index, chunk_size, max_line, &mut buf).unwrap();
                (buf[block.start..block.end].to_vec(), block.at_eof)
            })
            .collect()
    }

    #[test]
    fn chunks_own_the_lines_that_start_in_them() {
        let content = b"aaaa\nbb\ncccccc\nd\n\neeeee";
        for chunk_size in 1..=content.len() + 1 {
            let chunks = chunks_of(content, chunk_size, 100);
            let joined: Vec<u8> = chunks.iter().flat_map(|(bytes, _)| bytes.clone()).collect();
            assert_eq!(joined, content, "chunk size {chunk_size}");
            for (bytes, at_eof) in &chunks {
                assert!(
                    bytes.is_empty() || bytes.ends_with(b"\n") || *at_eof,
                    "chunk size {chunk_size}"
                );
            }
            let last = chunks.iter().rfind(|(bytes, _)| !bytes.is_empty()).unwrap();
            assert!(
                last.1,
                "the chunk with the cut-off line ends the input (chunk size {chunk_size})"
            );
        }
    }

    #[test]
    fn a_long_line_is_cut_after_the_limit() {
        let chunks = chunks_of(b"ab\nccccccccccccccccccccc\nd\n", 4, 5);
        assert_eq!(chunks[0].0, b"ab\ncccccc");
        let rest: Vec<u8> = chunks[1..]
            .iter()
            .flat_map(|(bytes, _)| bytes.clone())
            .collect();
        assert_eq!(rest, b"d\n");
    }

    #[test]
    fn streams_come_in_line_aligned_blocks() {
        let content: &[u8] = b"aaaa\nbb\ncccccc\nd\n\neeeee";
        for chunk_size in 1..=content.len() + 1 {
            let mut joined = Vec::new();
            for_each_stream_block(content, chunk_size, 100, |block, at_eof| {
                assert!(at_eof || block.ends_with(b"\n"));
                joined.extend_from_slice(block);
                true
            })
            .unwrap();
            assert_eq!(joined, content, "chunk size {chunk_size}");
        }
        let mut blocks = Vec::new();
        for_each_stream_block(&b"ab\nccccccccccccccccccccc\nd\n"[..], 4, 5, |block, _| {
            blocks.push(block.to_vec());
            true
        })
        .unwrap();
        assert_eq!(
            blocks.concat(),
            b"ab\ncccccc"
                .iter()
                .chain(b"d\n")
                .copied()
                .collect::<Vec<u8>>()
        );
    }
}

//! Importing one file: detection by a probe of its name and first bytes, then its importer.

use std::collections::HashSet;
use std::fs::File;
use std::io::{BufReader, Read, Seek, SeekFrom, Take, Write};
use std::path::Path;

use super::IMPORTERS;
use super::error::ImportError;
use super::importer::{Context, Imported, Importer, Sink};
use super::run::{EmitOptions, to_events};
use crate::trace::{Event, cut_short};

/// How many bytes of a file the probes see.
pub const HEAD_BYTES: usize = 64 * 1024;

/// The lowest probe confidence `auto` accepts.
const MIN_CONFIDENCE: u8 = 50;

/// What detection found.
pub struct Detected {
    /// The importer.
    pub importer: &'static dyn Importer,
    /// Its confidence.
    pub confidence: u8,
}

/// The most confident importer for a file with this name and head, if any is confident enough.
pub fn detect(name: &str, head: &[u8]) -> Option<Detected> {
    let mut best: Option<Detected> = None;
    for importer in IMPORTERS.iter().copied() {
        let confidence = importer.probe(name, head);
        if confidence >= MIN_CONFIDENCE && best.as_ref().is_none_or(|b| confidence > b.confidence) {
            best = Some(Detected {
                importer,
                confidence,
            });
        }
    }
    best
}

/// Whether a folder walk probes a file of this name.
pub fn is_probed_name(name: &str) -> bool {
    crate::trace::TRACE_FILE_EXTENSIONS
        .iter()
        .any(|ext| name.ends_with(ext))
}

/// A file opened for import: its importer, its input (without a last line cut short), its
/// context, and what was tolerated on the way.
struct Opened {
    importer: &'static dyn Importer,
    input: BufReader<Take<File>>,
    context: Context,
    warnings: Vec<String>,
}

/// Opens `path` and picks its importer: `from`, or the detected one. A `from` whose probe says
/// the file is plainly not of its format is refused, naming the format the file does read as.
/// The last line of a JSON Lines file, when a write was cut short there, is left out with a
/// warning, as the trace readers do.
fn open(path: &Path, from: Option<&'static dyn Importer>) -> Result<Opened, ImportError> {
    let shown = path.display().to_string();
    let read_error = |source| ImportError::Read {
        file: shown.clone(),
        source,
    };
    let mut file = File::open(path).map_err(read_error)?;
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_else(|| shown.clone());
    let mut head = vec![0u8; HEAD_BYTES];
    let read = read_head(&mut file, &mut head).map_err(read_error)?;
    let head = &head[..read];
    let importer = match from {
        // An empty file is no runs of any format: read as looptrace's own, which finds none,
        // rather than refused as a file of another format or of none.
        _ if read < HEAD_BYTES && head.trim_ascii().is_empty() => &super::looptrace::Looptrace,
        Some(importer) if importer.probe(&name, head) == 0 => {
            return Err(ImportError::NotFormat {
                file: shown,
                format: importer.name(),
                detected: detect(&name, head).map(|found| found.importer.name()),
            });
        }
        Some(importer) => importer,
        None => {
            detect(&name, head)
                .ok_or_else(|| ImportError::Unknown {
                    file: shown.clone(),
                })?
                .importer
        }
    };
    let mut warnings = Vec::new();
    let len = file.metadata().map_err(read_error)?.len();
    let mut keep = len;
    let lines = name.ends_with(".jsonl") || importer.name() == "looptrace";
    if lines && let Some((cut_at, line)) = cut_last_line(&mut file, len).map_err(read_error)? {
        keep = cut_at;
        warnings.push(format!(
            "`{shown}`: line {line} is cut short (a write was interrupted): left out"
        ));
    }
    file.seek(SeekFrom::Start(0)).map_err(read_error)?;
    Ok(Opened {
        importer,
        input: BufReader::with_capacity(HEAD_BYTES, file.take(keep)),
        context: Context { file: shown, name },
        warnings,
    })
}

/// Fills `head` from the start of `file` as far as it goes; returns how much was read.
fn read_head(file: &mut File, head: &mut [u8]) -> std::io::Result<usize> {
    let mut read = 0;
    while read < head.len() {
        match file.read(&mut head[read..])? {
            0 => break,
            n => read += n,
        }
    }
    Ok(read)
}

/// The longest last line looked at: a longer unterminated tail is left to the importer.
const MAX_TAIL_BYTES: u64 = 64 * 1024 * 1024;

/// Where the last line of `file` starts and its number, if it has no `\n` and reads as the
/// beginning of a JSON line cut short: the end of a file whose writer was interrupted.
fn cut_last_line(file: &mut File, len: u64) -> std::io::Result<Option<(u64, u64)>> {
    // Find the last newline, reading backwards in blocks.
    let mut end = len;
    let mut tail = Vec::new();
    let start = loop {
        if end == 0 {
            break 0;
        }
        let block = end.min(64 * 1024);
        let from = end - block;
        let mut buf = vec![0u8; block as usize];
        file.seek(SeekFrom::Start(from))?;
        file.read_exact(&mut buf)?;
        if let Some(at) = buf.iter().rposition(|b| *b == b'\n') {
            buf.drain(..=at);
            buf.extend_from_slice(&tail);
            tail = buf;
            break from + at as u64 + 1;
        }
        buf.extend_from_slice(&tail);
        tail = buf;
        end = from;
        if tail.len() as u64 > MAX_TAIL_BYTES {
            return Ok(None);
        }
    };
    if tail.trim_ascii().is_empty() || start == 0 || !ends_early(&tail) {
        return Ok(None);
    }
    // Its number: the newlines before it, plus one.
    file.seek(SeekFrom::Start(0))?;
    let mut lines = 1u64;
    let mut buf = vec![0u8; 64 * 1024];
    let mut left = start;
    while left > 0 {
        let n = file.read(&mut buf[..left.min(64 * 1024) as usize])?;
        if n == 0 {
            break;
        }
        lines += memchr::memchr_iter(b'\n', &buf[..n]).count() as u64;
        left -= n as u64;
    }
    Ok(Some((start, lines)))
}

/// Whether `line` is the beginning of a JSON value cut short: JSON's end-of-input error, or a
/// UTF-8 sequence cut at its end (the trace readers' rule, for any format's lines).
fn ends_early(line: &[u8]) -> bool {
    cut_short(line, |text| {
        serde_json::from_str::<serde::de::IgnoredAny>(text)
            .is_err_and(|err| err.classify() == serde_json::error::Category::Eof)
    })
}

/// Imports `path` with `from`, or the detected importer; returns the importer used.
pub fn import_path(
    path: &Path,
    from: Option<&'static dyn Importer>,
    out: &mut Sink<'_>,
) -> Result<&'static dyn Importer, ImportError> {
    let Opened {
        importer,
        mut input,
        context,
        ..
    } = open(path, from)?;
    importer.import(&mut input, &context, out)?;
    Ok(importer)
}

/// Keeps run ids unique across the files of one import: a repeated id gets `~2`, `~3`, ...
#[derive(Debug, Default, Clone)]
pub struct RunIds {
    seen: std::collections::HashSet<String>,
}

impl RunIds {
    /// `id`, or the first free `id~N`.
    pub fn unique(&mut self, id: &str) -> String {
        let mut candidate = id.to_owned();
        let mut n = 1;
        while self.seen.contains(&candidate) {
            n += 1;
            candidate = format!("{id}~{n}");
        }
        self.seen.insert(candidate.clone());
        candidate
    }

    /// Takes in the ids another `RunIds` gave out, if none of them was given out here: files
    /// imported apart (in parallel) then get the ids one import of them all in order would have
    /// given. On an overlap nothing changes and `other` comes back: import that file again with
    /// these ids.
    pub fn absorb(&mut self, other: RunIds) -> Result<(), RunIds> {
        if other.seen.iter().any(|id| self.seen.contains(id)) {
            return Err(other);
        }
        self.seen.extend(other.seen);
        Ok(())
    }
}

/// What [`convert`] did with one file.
pub struct Converted {
    /// The importer used.
    pub importer: &'static dyn Importer,
    /// The runs written.
    pub runs: u64,
    /// What was tolerated (a last line cut short, an id listed twice), one message each, naming
    /// the file.
    pub warnings: Vec<String>,
}

/// Imports `path` and writes its events as trace v1 JSONL to `out`.
pub fn convert(
    path: &Path,
    from: Option<&'static dyn Importer>,
    options: &EmitOptions,
    ids: &mut RunIds,
    out: &mut dyn Write,
) -> Result<Converted, ImportError> {
    convert_leaving_out(path, from, options, ids, None, out)
}

/// [`convert`], leaving out the runs whose native id is in `covered` (the instances of a batch
/// summary that a trajectory beside it covers: see [`super::BatchFolders`]).
pub fn convert_leaving_out(
    path: &Path,
    from: Option<&'static dyn Importer>,
    options: &EmitOptions,
    ids: &mut RunIds,
    covered: Option<&HashSet<String>>,
    out: &mut dyn Write,
) -> Result<Converted, ImportError> {
    let Opened {
        importer,
        mut input,
        context,
        mut warnings,
    } = open(path, from)?;
    let mut runs = 0u64;
    let mut line = Vec::with_capacity(512);
    let mut write = |event: &Event| -> Result<(), ImportError> {
        line.clear();
        serde_json::to_writer(&mut line, event)
            .map_err(|err| ImportError::Write(std::io::Error::other(err)))?;
        line.push(b'\n');
        out.write_all(&line).map_err(ImportError::Write)
    };
    importer.import(&mut input, &context, &mut |imported| match imported {
        Imported::Event(event) => {
            if event.is_run_started() {
                runs += 1;
            }
            write(&event)
        }
        Imported::Run(run)
            if covered.is_some_and(|covered| {
                run.native_id
                    .as_ref()
                    .is_some_and(|id| covered.contains(id))
            }) =>
        {
            Ok(())
        }
        Imported::Run(mut run) => {
            runs += 1;
            run.run_id = ids.unique(&run.run_id);
            for event in to_events(&run, importer.name(), &context.name, options) {
                write(&event)?;
            }
            Ok(())
        }
        Imported::Warning(message) => {
            warnings.push(format!("`{}`: {message}", context.file));
            Ok(())
        }
    })?;
    Ok(Converted {
        importer,
        runs,
        warnings,
    })
}

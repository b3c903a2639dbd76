//! Importing one file: detection by a probe of its name and first bytes, then its importer.

use std::collections::HashSet;
use std::fs::File;
use std::io::{BufRead, BufReader, Write};
use std::path::Path;

use super::IMPORTERS;
use super::error::ImportError;
use super::importer::{Context, Imported, Importer, Sink};
use super::run::{EmitOptions, to_events};
use crate::trace::{EventType, TraceEvent};

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
    [".jsonl", ".json", ".traj", ".eval", ".yaml", ".yml"]
        .iter()
        .any(|ext| name.ends_with(ext))
}

/// Opens `path` and picks its importer: `from`, or the detected one.
pub fn open(
    path: &Path,
    from: Option<&'static dyn Importer>,
) -> Result<(&'static dyn Importer, BufReader<File>, Context), ImportError> {
    let shown = path.display().to_string();
    let read_error = |source| ImportError::Read {
        file: shown.clone(),
        source,
    };
    let file = File::open(path).map_err(read_error)?;
    let mut input = BufReader::with_capacity(HEAD_BYTES, file);
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_else(|| shown.clone());
    let importer = match from {
        Some(importer) => importer,
        None => {
            let head = input.fill_buf().map_err(read_error)?;
            detect(&name, head)
                .ok_or_else(|| ImportError::Unknown {
                    file: shown.clone(),
                })?
                .importer
        }
    };
    Ok((importer, input, Context { file: shown, name }))
}

/// Imports `path` with `from`, or the detected importer; returns the importer used.
pub fn import_path(
    path: &Path,
    from: Option<&'static dyn Importer>,
    out: &mut Sink<'_>,
) -> Result<&'static dyn Importer, ImportError> {
    let (importer, mut input, context) = open(path, from)?;
    importer.import(&mut input, &context, out)?;
    Ok(importer)
}

/// Keeps run ids unique across the files of one import: a repeated id gets `~2`, `~3`, ...
#[derive(Debug, Default)]
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

/// Imports `path` and writes its events as trace v1 JSONL to `out`; returns the importer used and
/// the number of runs written. Warnings go to standard error, naming the file.
pub fn convert(
    path: &Path,
    from: Option<&'static dyn Importer>,
    options: &EmitOptions,
    ids: &mut RunIds,
    out: &mut dyn Write,
) -> Result<(&'static dyn Importer, u64), ImportError> {
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
) -> Result<(&'static dyn Importer, u64), ImportError> {
    let (importer, mut input, context) = open(path, from)?;
    let mut runs = 0u64;
    let mut line = Vec::with_capacity(512);
    let mut write = |event: &TraceEvent| -> Result<(), ImportError> {
        line.clear();
        serde_json::to_writer(&mut line, event)
            .map_err(|err| ImportError::Write(std::io::Error::other(err)))?;
        line.push(b'\n');
        out.write_all(&line).map_err(ImportError::Write)
    };
    importer.import(&mut input, &context, &mut |imported| match imported {
        Imported::Event(event) => {
            if event.event_type == EventType::RunStarted {
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
            eprintln!("warning: `{}`: {message}", context.file);
            Ok(())
        }
    })?;
    Ok((importer, runs))
}

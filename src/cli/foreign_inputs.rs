//! What `report`, `show` and `export` read when given other agents' files: each input detected
//! and its events imported into memory as trace v1 lines, with the format it came from, so that
//! every reader reads trace events only, and no file is written.

use std::fs;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use looptrace::import::{self, EmitOptions, ImportError, RunIds};
use looptrace::report::Source;
use looptrace::trace::{Capture, Summarizer};

use super::CliError;
use super::import::{import_error, skipped_warning, walk};

/// A foreign file's events, imported into memory as trace lines.
#[derive(Debug)]
pub struct ImportedTrace {
    /// The trace lines.
    pub lines: Arc<[u8]>,
    /// The format it was imported from.
    pub format: &'static str,
    /// What its import tolerated.
    pub warnings: Vec<String>,
}

/// What a file given to `report` or `show` is.
#[derive(Debug)]
pub enum Detected {
    /// A looptrace trace.
    Trace,
    /// Nothing a probe recognises and not JSON: left to the trace reader to judge.
    Unknown,
    /// A foreign trace, imported.
    Foreign(ImportedTrace),
    /// A well-formed JSON file of no known trace format (a suite, predictions); `event_like`
    /// when its first line has an `event_type` (a trace event missing a field, say).
    NotATrace {
        /// Whether the first line has an `event_type`.
        event_like: bool,
    },
}

/// Detects `path` and imports its events when it is of a foreign format.
pub fn detect_and_import(
    path: &Path,
    capture: Capture,
    ids: &mut RunIds,
    covered: Option<&std::collections::HashSet<String>>,
) -> Result<Detected, CliError> {
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    // Probing a pipe would consume what the trace reader needs: only files are probed, and a
    // stream is read as looptrace's own format.
    if fs::metadata(path).is_ok_and(|meta| !meta.is_file()) {
        return Ok(Detected::Trace);
    }
    let mut head = vec![0u8; import::HEAD_BYTES];
    // An unreadable file is left to the trace reader, whose messages say why.
    let Ok(read) = fs::File::open(path).and_then(|mut f| std::io::Read::read(&mut f, &mut head))
    else {
        return Ok(Detected::Unknown);
    };
    let head = &head[..read];
    let importer = match import::detect(&name, head) {
        Some(found) if found.importer.name() != "looptrace" => found.importer,
        Some(_) => return Ok(Detected::Trace),
        None => {
            let first = head.split(|b| *b == b'\n').next().unwrap_or_default();
            let json = serde_json::from_slice::<serde_json::Value>(first).ok();
            return Ok(match json {
                Some(value) if !first.trim_ascii().is_empty() => Detected::NotATrace {
                    event_like: value.get("event_type").is_some(),
                },
                None if is_one_json_value(path, head) => Detected::NotATrace { event_like: false },
                _ => Detected::Unknown,
            });
        }
    };
    let options = EmitOptions {
        capture,
        summarizer: Summarizer::from_env(),
    };
    let mut lines = Vec::new();
    let converted =
        import::convert_leaving_out(path, Some(importer), &options, ids, covered, &mut lines)
            .map_err(import_error)?;
    Ok(Detected::Foreign(ImportedTrace {
        lines: lines.into(),
        format: importer.name(),
        warnings: converted.warnings,
    }))
}

/// Whether the file at `path` is one JSON object or array laid out over many lines (an indented
/// suite), whose first line alone is no JSON: of no trace format, rather than a trace whose first
/// line is malformed. Read to its end without keeping anything.
fn is_one_json_value(path: &Path, head: &[u8]) -> bool {
    use serde::Deserialize;
    if !matches!(head.trim_ascii_start().first(), Some(b'{' | b'[')) {
        return false;
    }
    let Ok(file) = fs::File::open(path) else {
        return false;
    };
    let mut json = serde_json::Deserializer::from_reader(std::io::BufReader::new(file));
    serde::de::IgnoredAny::deserialize(&mut json).is_ok() && json.end().is_ok()
}

/// The paths `report` reads, and the sources standing in for some of them: foreign files'
/// imported events, and the named runs of a run store's trace files.
#[derive(Debug, Default)]
pub struct ReportInputs {
    /// What to hand to the report's input collection.
    pub paths: Vec<String>,
    /// Walked files skipped as of no known trace format.
    pub skipped: Vec<PathBuf>,
    /// What was tolerated: files skipped under `--lenient`, last lines cut short.
    pub warnings: Vec<String>,
    /// Per path shown: what to read instead, and its format.
    substitutes: Vec<(String, Source, &'static str)>,
}

impl ReportInputs {
    fn import(&mut self, shown: String, imported: ImportedTrace) {
        self.substitutes
            .push((shown, Source::Lines(imported.lines), imported.format));
    }

    /// Prints what was tolerated and skipped, as warnings on stderr.
    pub fn warn(&self) {
        for warning in self
            .warnings
            .iter()
            .chain(&skipped_warning(&self.skipped, None))
        {
            eprintln!("warning: {}", looptrace::text::escape(warning));
        }
    }

    /// Points the inputs of foreign files at their imported events (and those of a run store's
    /// files at their named runs); returns each input's format.
    pub fn substitute(&self, inputs: &mut [looptrace::report::Input]) -> Vec<&'static str> {
        inputs
            .iter_mut()
            .map(|input| {
                let Source::Path(path) = &input.source else {
                    return "looptrace";
                };
                let shown = path.display().to_string();
                match self.substitutes.iter().find(|(name, _, _)| *name == shown) {
                    Some((_, source, format)) => {
                        input.source = source.clone();
                        format
                    }
                    None => "looptrace",
                }
            })
            .collect()
    }
}

/// Walks folders for every importable file and imports the foreign ones (summary capture).
///
/// Files are detected and imported on one thread per core; run ids come out as one import of
/// all of them in order would give them (a file whose ids clash with an earlier file's is
/// imported again after it), and the first failure in order is the one reported.
///
/// A named file of no known format is an error, as it is for `import`. A file that cannot be
/// imported is an error (suggesting `--lenient` when there are other files), or under `lenient`
/// skipped with a warning naming it. An eval output folder stands for the runs its view names
/// (every run under `all_runs`).
pub fn report_inputs(
    paths: &[String],
    lenient: bool,
    all_runs: bool,
) -> Result<ReportInputs, CliError> {
    inputs_with_capture(paths, Capture::Summary, lenient, all_runs)
}

/// [`report_inputs`], importing foreign files with `capture`.
pub fn inputs_with_capture(
    paths: &[String],
    capture: Capture,
    lenient: bool,
    all_runs: bool,
) -> Result<ReportInputs, CliError> {
    // An eval output folder stands for the traces its view names.
    let (paths, view_runs) = super::run_store_inputs::expand(paths, all_runs)?;
    let paths = &paths;
    // Every file to detect: its path, the name shown, and whether a folder walk found it.
    let mut probed: Vec<(PathBuf, String, bool)> = Vec::new();
    // What `paths` becomes, with a placeholder where a probed file's verdict goes.
    let mut order: Vec<Result<String, usize>> = Vec::new();
    for arg in paths {
        let path = Path::new(arg);
        if arg == "-" || !path.exists() {
            order.push(Ok(arg.clone()));
            continue;
        }
        if !path.is_dir() {
            order.push(Err(probed.len()));
            probed.push((path.to_path_buf(), arg.clone(), false));
            continue;
        }
        let mut found = Vec::new();
        walk(path, &mut found)?;
        if found.is_empty() {
            order.push(Ok(arg.clone()));
        }
        for file in found {
            let shown = file.display().to_string();
            order.push(Err(probed.len()));
            probed.push((file, shown, true));
        }
    }
    let detected = detect_all(&probed, capture)?;
    let mut inputs = ReportInputs::default();
    let mut detected: Vec<Option<Result<Detected, CliError>>> =
        detected.into_iter().map(Some).collect();
    for entry in order {
        let index = match entry {
            Ok(arg) => {
                inputs.paths.push(arg);
                continue;
            }
            Err(index) => index,
        };
        let (path, shown, walked) = &probed[index];
        let Some(found) = detected[index].take() else {
            continue;
        };
        let found = match found {
            // A named file of no known format: the message `import` gives, unless it looks
            // like a trace event missing a field, which the trace reader names.
            Ok(Detected::NotATrace { event_like: false }) if !walked => {
                Err(CliError::input(ImportError::Unknown {
                    file: shown.clone(),
                }))
            }
            other => other,
        };
        let found = match found {
            Ok(found) => found,
            Err(CliError::Input(message)) if lenient => {
                inputs.warnings.push(format!("skipped {message}"));
                continue;
            }
            Err(CliError::Input(message)) if probed.len() > 1 => {
                return Err(CliError::Input(format!(
                    "{message}\n(--lenient skips the files that cannot be read and reads the rest)"
                )));
            }
            Err(err) => return Err(err),
        };
        if let Detected::Foreign(imported) = &found {
            inputs.warnings.extend(imported.warnings.iter().cloned());
        }
        if !walked {
            // Named: read whatever it is, as the report's own reader would.
            if let Detected::Foreign(imported) = found {
                inputs.import(shown.clone(), imported);
            }
            inputs.paths.push(shown.clone());
            continue;
        }
        let jsonl = shown.ends_with(".jsonl");
        match found {
            Detected::Trace => inputs.paths.push(shown.clone()),
            Detected::Unknown if jsonl => inputs.paths.push(shown.clone()),
            Detected::Unknown | Detected::NotATrace { .. } => inputs.skipped.push(path.clone()),
            Detected::Foreign(imported) => {
                inputs.import(shown.clone(), imported);
                inputs.paths.push(shown.clone());
            }
        }
    }
    inputs.substitutes.extend(
        view_runs
            .into_iter()
            .map(|(shown, source)| (shown, source, "looptrace")),
    );
    Ok(inputs)
}

/// Detects and imports every file, in parallel; see [`report_inputs`]. Each file's outcome comes
/// back in order; only an internal failure stops it all.
fn detect_all(
    files: &[(PathBuf, String, bool)],
    capture: Capture,
) -> Result<Vec<Result<Detected, CliError>>, CliError> {
    type Slot = Option<Result<(Detected, RunIds), CliError>>;
    let slots: Vec<std::sync::Mutex<Slot>> =
        files.iter().map(|_| std::sync::Mutex::new(None)).collect();
    let next = std::sync::atomic::AtomicUsize::new(0);
    let paths: Vec<PathBuf> = files.iter().map(|(path, _, _)| path.clone()).collect();
    let batch = import::BatchFolders::of(&paths);
    let threads = std::thread::available_parallelism()
        .map_or(1, |n| n.get())
        .min(files.len());
    std::thread::scope(|scope| {
        for _ in 0..threads {
            scope.spawn(|| {
                loop {
                    let i = next.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                    let Some((path, _, _)) = files.get(i) else {
                        break;
                    };
                    let mut ids = RunIds::default();
                    let result = detect_and_import(path, capture, &mut ids, batch.covered(path))
                        .map(|found| (found, ids));
                    if let Ok(mut slot) = slots[i].lock() {
                        *slot = Some(result);
                    }
                }
            });
        }
    });
    // One set of run ids for every imported file, as `import` of several paths has.
    let mut ids = RunIds::default();
    let mut detected = Vec::with_capacity(files.len());
    for ((path, _, _), slot) in files.iter().zip(slots) {
        let result = slot
            .into_inner()
            .ok()
            .flatten()
            .ok_or_else(|| CliError::internal("a file was not imported"))?;
        let found = match result {
            Err(CliError::Input(message)) => Err(CliError::Input(message)),
            Err(err) => return Err(err),
            Ok((found, own)) => match ids.absorb(own) {
                Ok(()) => Ok(found),
                Err(_) => {
                    drop(found);
                    detect_and_import(path, capture, &mut ids, batch.covered(path))
                }
            },
        };
        detected.push(found);
    }
    Ok(detected)
}

/// The per-input exit-reason counts regrouped per source format, in order of first appearance.
pub fn group_by_source(
    by_file: &[looptrace::report::FileEndings],
    formats: &[&'static str],
) -> Vec<looptrace::report::FileEndings> {
    let mut groups: Vec<looptrace::report::FileEndings> = Vec::new();
    for (file, format) in by_file.iter().zip(formats) {
        match groups.iter_mut().find(|group| group.file == *format) {
            Some(group) => group.exit_reasons.merge(&file.exit_reasons),
            None => groups.push(looptrace::report::FileEndings {
                file: (*format).to_owned(),
                exit_reasons: file.exit_reasons,
            }),
        }
    }
    groups
}

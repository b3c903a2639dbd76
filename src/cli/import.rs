//! `looptrace import`: other agents' trajectories to trace v1, written to a file (replaced
//! atomically) or standard output.

use std::fs;
use std::io::{BufWriter, Write};
use std::path::{Path, PathBuf};

use clap::Args;

use looptrace::import::{self, EmitOptions, ImportError, Importer, RunIds};
use looptrace::trace::{Capture, Summarizer};

use super::common::{CaptureArg, same_file};
use super::{CliError, CliResult, Outcome};

/// Arguments of `looptrace import`.
#[derive(Debug, Args)]
pub struct ImportArgs {
    /// Files or folders (folders are searched for `*.jsonl`, `*.json`, `*.traj`, `*.eval`,
    /// `*.yaml`, `*.yml` files of a known format).
    #[arg(required = true)]
    pub paths: Vec<PathBuf>,
    /// The format: `auto` (detected per file), or one of code-agent, swe-agent, mini-swe-agent,
    /// openhands, codex, claude-code, gemini-cli, inspect, otel-genai, otlp, looptrace.
    #[arg(long, value_name = "FORMAT", default_value = "auto")]
    pub from: String,
    /// Write the trace here (replaced, never appended) instead of standard output.
    #[arg(short = 'o', long, value_name = "OUT.jsonl")]
    pub output: Option<PathBuf>,
    /// `summary` (hashes and counts only) or `full` (the text as well).
    #[arg(long, value_enum, default_value_t = CaptureArg::Summary)]
    pub capture: CaptureArg,
    /// Skip files that cannot be read (each named in a warning) and import the rest.
    #[arg(long)]
    pub lenient: bool,
}

/// Runs `looptrace import`.
pub fn run(args: ImportArgs) -> CliResult {
    let from = match args.from.as_str() {
        "auto" => None,
        name => Some(import::by_name(name).ok_or_else(|| {
            let names: Vec<&str> = import::IMPORTERS.iter().map(|i| i.name()).collect();
            CliError::input(format!(
                "unknown format `{name}` (expected auto, {})",
                names.join(", ")
            ))
        })?),
    };
    let options = EmitOptions {
        capture: args.capture.into(),
        summarizer: Summarizer::from_env(),
    };
    let (files, skipped) = collect(&args.paths, from)?;
    if let Some(out) = &args.output
        && let Some(input) = files
            .iter()
            .chain(&args.paths)
            .find(|input| same_file(input, out))
    {
        return Err(CliError::input(format!(
            "-o `{}` is the input `{}`: import never writes over its input; choose another file",
            out.display(),
            input.display()
        )));
    }
    let mut warnings = Vec::new();
    let mut convert =
        |out: &mut dyn Write| convert_all(&files, from, &options, args.lenient, &mut warnings, out);
    let runs = match &args.output {
        Some(path) => write_atomically(path, convert)?,
        None => {
            let stdout = std::io::stdout();
            let mut out = BufWriter::new(stdout.lock());
            let runs = convert(&mut out)?;
            out.flush()?;
            runs
        }
    };
    for warning in warnings.iter().chain(&skipped_warning(&skipped, from)) {
        eprintln!("warning: {}", looptrace::text::escape(warning));
    }
    if runs == 0 {
        eprintln!("warning: no runs found in the input");
    }
    Ok(Outcome::Success)
}

/// "skipped N file(s) of no known trace format: `a`, `b`, `c` and N more", or `None`.
pub fn skipped_warning(skipped: &[PathBuf], from: Option<&'static dyn Importer>) -> Option<String> {
    const NAMED: usize = 3;
    if skipped.is_empty() {
        return None;
    }
    let kind = match from {
        Some(importer) => format!("that are not `{}` files", importer.name()),
        None => "of no known trace format".to_owned(),
    };
    let mut names: Vec<String> = skipped
        .iter()
        .take(NAMED)
        .map(|path| format!("`{}`", path.display()))
        .collect();
    if skipped.len() > NAMED {
        names.push(format!("and {} more", skipped.len() - NAMED));
    }
    Some(format!(
        "skipped {} file(s) {kind}: {}",
        skipped.len(),
        names.join(", ")
    ))
}

/// The files to import: named files as they are, folders walked for files a probe recognises
/// (with `--from F`, files F's probe does not rule out). Returns the files and the walked files
/// skipped.
fn collect(
    paths: &[PathBuf],
    from: Option<&'static dyn Importer>,
) -> Result<(Vec<PathBuf>, Vec<PathBuf>), CliError> {
    let mut files = Vec::new();
    let mut skipped = Vec::new();
    for path in paths {
        if path.is_dir() {
            let mut found = Vec::new();
            walk(path, &mut found)?;
            for file in found {
                if recognised(&file, from) {
                    files.push(file);
                } else {
                    skipped.push(file);
                }
            }
        } else {
            files.push(path.clone());
        }
    }
    Ok((files, skipped))
}

/// Whether `from`'s probe (or, without one, any probe) recognises `file`.
fn recognised(file: &Path, from: Option<&'static dyn Importer>) -> bool {
    let name = file
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let mut head = vec![0u8; import::HEAD_BYTES];
    let read = fs::File::open(file)
        .and_then(|mut f| std::io::Read::read(&mut f, &mut head))
        .unwrap_or(0);
    match from {
        Some(importer) => importer.probe(&name, &head[..read]) > 0,
        None => import::detect(&name, &head[..read]).is_some(),
    }
}

/// Appends the probed files under `folder`, in sorted order.
fn walk(folder: &Path, found: &mut Vec<PathBuf>) -> Result<(), CliError> {
    let list_error = |err| CliError::input(format!("failed to list `{}`: {err}", folder.display()));
    let mut entries: Vec<_> = fs::read_dir(folder)
        .map_err(list_error)?
        .collect::<Result<_, _>>()
        .map_err(list_error)?;
    entries.sort_by_key(|entry| entry.path());
    for entry in entries {
        let path = entry.path();
        let file_type = entry.file_type().map_err(list_error)?;
        if file_type.is_dir() {
            walk(&path, found)?;
        } else if file_type.is_file()
            && import::is_probed_name(&entry.file_name().to_string_lossy())
        {
            found.push(path);
        }
    }
    Ok(())
}

/// Converts every file to `out`. Under `lenient` a file that cannot be imported is left out
/// whole (its events are written only once it has been read to the end) and named in
/// `warnings`; otherwise it is the error, which suggests `--lenient` when other files were given.
fn convert_all(
    files: &[PathBuf],
    from: Option<&'static dyn Importer>,
    options: &EmitOptions,
    lenient: bool,
    warnings: &mut Vec<String>,
    out: &mut dyn Write,
) -> Result<u64, CliError> {
    let mut ids = RunIds::default();
    let mut runs = 0;
    let batch = import::BatchFolders::of(files);
    for file in files {
        let covered = batch.covered(file);
        let converted = if lenient {
            let before = ids.clone();
            let mut buffer = Vec::new();
            match import::convert_leaving_out(file, from, options, &mut ids, covered, &mut buffer) {
                Ok(converted) => {
                    out.write_all(&buffer)?;
                    converted
                }
                Err(ImportError::Write(err)) => return Err(CliError::from(err)),
                Err(err) => {
                    ids = before;
                    warnings.push(format!("skipped {err}"));
                    continue;
                }
            }
        } else {
            import::convert_leaving_out(file, from, options, &mut ids, covered, out)
                .map_err(|err| import_error_among(err, files.len()))?
        };
        warnings.extend(converted.warnings);
        runs += converted.runs;
    }
    Ok(runs)
}

/// An import error of one of `count` files: the error, suggesting `--lenient` when there are
/// others that could still be read.
fn import_error_among(err: ImportError, count: usize) -> CliError {
    match err {
        ImportError::Write(err) => CliError::from(err),
        other if count > 1 => CliError::input(format!(
            "{other}\n(--lenient skips the files that cannot be read and reads the rest)"
        )),
        other => CliError::input(other),
    }
}

fn import_error(err: ImportError) -> CliError {
    match err {
        ImportError::Write(err) => CliError::from(err),
        other => CliError::input(other),
    }
}

/// Writes `path` as a whole ([`looptrace::output::Replacement`]): the old content stays unless
/// everything succeeded; a `path` that is a symbolic link is refused.
pub fn write_atomically(
    path: &Path,
    write: impl FnOnce(&mut dyn Write) -> Result<u64, CliError>,
) -> Result<u64, CliError> {
    if path.file_name().is_none() {
        return Err(CliError::input(format!(
            "`{}` is not a file name",
            path.display()
        )));
    }
    let refuse = |err| CliError::input(format!("-o `{}`: {err}", path.display()));
    let mut replacement = looptrace::output::Replacement::begin(path).map_err(refuse)?;
    let mut out = BufWriter::new(replacement.writer());
    let runs = write(&mut out)?;
    out.flush()?;
    drop(out);
    replacement
        .commit()
        .map_err(|err| CliError::input(format!("failed to replace `{}`: {err}", path.display())))?;
    Ok(runs)
}

/// A foreign file imported to a temporary trace v1 file, removed when dropped.
#[derive(Debug)]
pub struct TempTrace {
    /// The temporary trace.
    pub path: PathBuf,
    /// The format it was imported from.
    pub format: &'static str,
    /// What its import tolerated.
    pub warnings: Vec<String>,
}

impl Drop for TempTrace {
    fn drop(&mut self) {
        let _ = fs::remove_file(&self.path);
    }
}

/// What a file given to `report` or `show` is.
#[derive(Debug)]
pub enum Detected {
    /// A looptrace trace.
    Trace,
    /// Nothing a probe recognises and not JSON: left to the trace reader to judge.
    Unknown,
    /// A foreign trace, imported.
    Foreign(TempTrace),
    /// A well-formed JSON file of no known trace format (a suite, predictions); `event_like`
    /// when its first line has an `event_type` (a trace event missing a field, say).
    NotATrace {
        /// Whether the first line has an `event_type`.
        event_like: bool,
    },
}

/// Detects `path` and imports it to a temporary trace when it is of a foreign format.
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
                _ => Detected::Unknown,
            });
        }
    };
    static COUNTER: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
    let n = COUNTER.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let temp_path =
        std::env::temp_dir().join(format!("looptrace-import-{}-{n}.jsonl", std::process::id()));
    // The temporary folder is shared: only a file this process creates is written (and later
    // removed), never one or a link that was already there.
    let file = fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .open(&temp_path)
        .map_err(|err| {
            CliError::internal(format!("failed to create `{}`: {err}", temp_path.display()))
        })?;
    let temp = TempTrace {
        path: temp_path,
        format: importer.name(),
        warnings: Vec::new(),
    };
    let mut out = BufWriter::new(file);
    let options = EmitOptions {
        capture,
        summarizer: Summarizer::from_env(),
    };
    let converted =
        import::convert_leaving_out(path, Some(importer), &options, ids, covered, &mut out)
            .map_err(import_error)?;
    out.flush()?;
    let mut temp = temp;
    temp.warnings = converted.warnings;
    Ok(Detected::Foreign(temp))
}

/// The paths `report` reads after foreign files were imported to temporary traces.
#[derive(Debug, Default)]
pub struct ReportInputs {
    /// What to hand to the report's input collection.
    pub paths: Vec<String>,
    /// Walked files skipped as of no known trace format.
    pub skipped: Vec<PathBuf>,
    /// What was tolerated: files skipped under `--lenient`, last lines cut short.
    pub warnings: Vec<String>,
    temps: Vec<(String, TempTrace)>,
}

impl ReportInputs {
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

    /// Points the inputs of foreign files at their imported traces; returns each input's format.
    pub fn substitute(&self, inputs: &mut [looptrace::report::Input]) -> Vec<&'static str> {
        use looptrace::report::Source;
        inputs
            .iter_mut()
            .map(|input| {
                let Source::Path(path) = &input.source else {
                    return "looptrace";
                };
                let shown = path.display().to_string();
                match self.temps.iter().find(|(name, _)| *name == shown) {
                    Some((_, temp)) => {
                        input.source = Source::Path(temp.path.clone());
                        temp.format
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
    let (paths, view_copies) = super::run_store_inputs::expand(paths, all_runs)?;
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
        if let Detected::Foreign(temp) = &found {
            inputs.warnings.extend(temp.warnings.iter().cloned());
        }
        if !walked {
            // Named: read whatever it is, as the report's own reader would.
            if let Detected::Foreign(temp) = found {
                inputs.temps.push((shown.clone(), temp));
            }
            inputs.paths.push(shown.clone());
            continue;
        }
        let jsonl = shown.ends_with(".jsonl");
        match found {
            Detected::Trace => inputs.paths.push(shown.clone()),
            Detected::Unknown if jsonl => inputs.paths.push(shown.clone()),
            Detected::Unknown | Detected::NotATrace { .. } => inputs.skipped.push(path.clone()),
            Detected::Foreign(temp) => {
                inputs.temps.push((shown.clone(), temp));
                inputs.paths.push(shown.clone());
            }
        }
    }
    inputs.temps.extend(view_copies);
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

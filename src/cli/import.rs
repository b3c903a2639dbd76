//! `looptrace import`: other agents' trajectories to trace v1, written to a file (replaced
//! atomically) or standard output.

use std::fs;
use std::io::{BufWriter, Write};
use std::path::{Path, PathBuf};

use clap::Args;

use looptrace::import::{self, EmitOptions, ImportError, Importer, RunIds};
use looptrace::trace::Summarizer;

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
pub(super) fn walk(folder: &Path, found: &mut Vec<PathBuf>) -> Result<(), CliError> {
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

pub(super) fn import_error(err: ImportError) -> CliError {
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

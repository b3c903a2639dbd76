//! `looptrace import`: other agents' trajectories to trace v1, written to a file (replaced
//! atomically) or standard output.

use std::fs;
use std::io::{BufWriter, Write};
use std::path::{Path, PathBuf};

use clap::{Args, ValueEnum};

use looptrace::import::{self, EmitOptions, ImportError, Importer, RunIds};
use looptrace::trace::{Capture, Summarizer};

use super::{CliError, CliResult, Outcome};

/// Arguments of `looptrace import`.
#[derive(Debug, Args)]
pub struct ImportArgs {
    /// Files or folders (folders are searched for `*.jsonl`, `*.json`, `*.traj`, `*.eval`,
    /// `*.yaml`, `*.yml` files of a known format).
    #[arg(required = true)]
    pub paths: Vec<PathBuf>,
    /// The format: `auto` (detected per file), or one of code-agent, swe-agent, mini-swe-agent,
    /// openhands, codex, claude-code, gemini-cli, inspect, otel-genai, looptrace.
    #[arg(long, value_name = "FORMAT", default_value = "auto")]
    pub from: String,
    /// Write the trace here (replaced, never appended) instead of standard output.
    #[arg(short = 'o', long, value_name = "OUT.jsonl")]
    pub output: Option<PathBuf>,
    /// `summary` (hashes and counts only) or `full` (the text as well).
    #[arg(long, value_enum, default_value_t = CaptureArg::Summary)]
    pub capture: CaptureArg,
}

/// `--capture`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum CaptureArg {
    /// Character counts and hashes only.
    Summary,
    /// The text itself as well.
    Full,
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
        capture: match args.capture {
            CaptureArg::Summary => Capture::Summary,
            CaptureArg::Full => Capture::Full,
        },
        summarizer: Summarizer::from_env(),
    };
    let (files, skipped) = collect(&args.paths, from)?;
    let runs = match &args.output {
        Some(path) => write_atomically(path, |out| convert_all(&files, from, &options, out))?,
        None => {
            let stdout = std::io::stdout();
            let mut out = BufWriter::new(stdout.lock());
            let runs = convert_all(&files, from, &options, &mut out)?;
            out.flush()?;
            runs
        }
    };
    if skipped > 0 {
        eprintln!("warning: skipped {skipped} file(s) of no known trace format");
    }
    if runs == 0 {
        eprintln!("warning: no runs found in the input");
    }
    Ok(Outcome::Success)
}

/// The files to import: named files as they are, folders walked for files a probe recognises.
/// Returns the files and how many walked files were skipped as unknown.
fn collect(
    paths: &[PathBuf],
    from: Option<&'static dyn Importer>,
) -> Result<(Vec<PathBuf>, u64), CliError> {
    let mut files = Vec::new();
    let mut skipped = 0;
    for path in paths {
        if path.is_dir() {
            let mut found = Vec::new();
            walk(path, &mut found)?;
            for file in found {
                if from.is_some() || recognised(&file) {
                    files.push(file);
                } else {
                    skipped += 1;
                }
            }
        } else {
            files.push(path.clone());
        }
    }
    Ok((files, skipped))
}

/// Whether a probe recognises `file`.
fn recognised(file: &Path) -> bool {
    let name = file
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let mut head = vec![0u8; import::HEAD_BYTES];
    let read = fs::File::open(file)
        .and_then(|mut f| std::io::Read::read(&mut f, &mut head))
        .unwrap_or(0);
    import::detect(&name, &head[..read]).is_some()
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

fn convert_all(
    files: &[PathBuf],
    from: Option<&'static dyn Importer>,
    options: &EmitOptions,
    out: &mut dyn Write,
) -> Result<u64, CliError> {
    let mut ids = RunIds::default();
    let mut runs = 0;
    for file in files {
        let (_, count) =
            import::convert(file, from, options, &mut ids, out).map_err(import_error)?;
        runs += count;
    }
    Ok(runs)
}

fn import_error(err: ImportError) -> CliError {
    match err {
        ImportError::Write(err) => CliError::from(err),
        other => CliError::input(other),
    }
}

/// Writes through a temporary file beside `path`, renamed over it only when everything succeeded.
fn write_atomically(
    path: &Path,
    write: impl FnOnce(&mut dyn Write) -> Result<u64, CliError>,
) -> Result<u64, CliError> {
    let folder = match path.parent() {
        Some(parent) if !parent.as_os_str().is_empty() => parent.to_path_buf(),
        _ => PathBuf::from("."),
    };
    let name = path
        .file_name()
        .ok_or_else(|| CliError::input(format!("`{}` is not a file name", path.display())))?;
    let temp = folder.join(format!(
        ".{}.{}.tmp",
        name.to_string_lossy(),
        std::process::id()
    ));
    let result = (|| {
        let file = fs::File::create(&temp).map_err(|err| {
            CliError::input(format!("failed to create `{}`: {err}", temp.display()))
        })?;
        let mut out = BufWriter::new(file);
        let runs = write(&mut out)?;
        out.flush()?;
        out.into_inner()
            .map_err(|err| CliError::internal(err.error()))?
            .sync_all()?;
        fs::rename(&temp, path).map_err(|err| {
            CliError::input(format!("failed to replace `{}`: {err}", path.display()))
        })?;
        Ok(runs)
    })();
    if result.is_err() {
        let _ = fs::remove_file(&temp);
    }
    result
}

//! `looptrace export --otlp`: every run of any traces `report` reads, as OpenTelemetry spans in
//! the OTLP/JSON file-exporter format, one `TracesData` line per run, streamed.

use std::collections::HashMap;
use std::io::{BufWriter, Write};
use std::path::{Path, PathBuf};

use clap::Args;

use looptrace::eval::{Verdict as Expectation, read_results};
use looptrace::export::otlp::{
    BuildOptions, ExportError, ExportStats, TraceIds, Verdict, export_stream,
};
use looptrace::report::{self, Source};
use looptrace::text::escape;
use looptrace::trace::{Capture, ReadOptions, RunStream, TraceReader};

use super::common::same_file;
use super::{CliError, CliResult, Outcome};

/// Arguments of `looptrace export`.
#[derive(Debug, Args)]
pub struct ExportArgs {
    /// Write OpenTelemetry traces as OTLP/JSON (the only export format so far).
    #[arg(long, required = true)]
    pub otlp: bool,
    /// Trace files of any importable format, folders (searched recursively as `report` does) or
    /// `-` for standard input.
    #[arg(required = true)]
    pub paths: Vec<String>,
    /// Given an eval output folder, read every run under its `runs/`, not only those its
    /// `results.json` names.
    #[arg(long)]
    pub all_runs: bool,
    /// Write here (replaced atomically, never appended) instead of standard output.
    #[arg(short = 'o', long, value_name = "FILE")]
    pub output: Option<PathBuf>,
    /// Add content attributes (messages, tool arguments and results) from full-capture traces.
    #[arg(long)]
    pub content: bool,
    /// An evaluation's results.json: each run's expectation verdict becomes a
    /// `gen_ai.evaluation.result` event.
    #[arg(long, value_name = "RESULTS")]
    pub results: Option<PathBuf>,
    /// Skip files that cannot be read (each named in a warning) and export the rest.
    #[arg(long)]
    pub lenient: bool,
}

/// Runs `looptrace export`.
pub fn run(args: ExportArgs) -> CliResult {
    let verdicts = match &args.results {
        Some(path) => verdicts(path)?,
        None => HashMap::new(),
    };
    let options = BuildOptions {
        content: args.content,
        verdicts,
    };
    // Foreign files are read as imported; with `--content` their content is kept for the export.
    let capture = if args.content {
        Capture::Full
    } else {
        Capture::Summary
    };
    let foreign =
        super::import::inputs_with_capture(&args.paths, capture, args.lenient, args.all_runs)?;
    let (mut inputs, warnings) = report::collect_inputs(&foreign.paths).map_err(CliError::input)?;
    foreign.substitute(&mut inputs);
    if let Some(out) = &args.output {
        let named = inputs.iter().map(|input| PathBuf::from(&input.name));
        let clash = named
            .chain(args.paths.iter().map(PathBuf::from))
            .chain(args.results.iter().cloned())
            .find(|input| same_file(input, out));
        if let Some(input) = clash {
            return Err(CliError::input(format!(
                "-o `{}` is the input `{}`: export never writes over its input; choose another file",
                out.display(),
                input.display()
            )));
        }
    }
    let mut stats = ExportStats::default();
    let mut notes = Vec::new();
    let mut write = |out: &mut dyn Write| -> Result<u64, CliError> {
        let mut ids = TraceIds::default();
        for input in &inputs {
            let file = Path::new(&input.name)
                .file_name()
                .map_or_else(|| input.name.clone(), |n| n.to_string_lossy().into_owned());
            let read = ReadOptions::default();
            let reader_notes = match &input.source {
                Source::Path(path) => {
                    let mut stream = RunStream::open(path, read).map_err(CliError::input)?;
                    export_stream(&mut stream, &file, &mut ids, &options, out, &mut stats)
                        .map_err(export_error)?;
                    stream.into_stats().warnings(&input.name)
                }
                Source::Stdin => {
                    let stdin = std::io::stdin().lock();
                    let reader = TraceReader::new(stdin, "<stdin>", read);
                    let mut stream = RunStream::new(reader);
                    export_stream(&mut stream, "-", &mut ids, &options, out, &mut stats)
                        .map_err(export_error)?;
                    stream.into_stats().warnings(&input.name)
                }
            };
            notes.extend(reader_notes);
        }
        Ok(stats.runs)
    };
    match &args.output {
        Some(path) => {
            super::import::write_atomically(path, &mut write)?;
        }
        None => {
            let mut out = BufWriter::with_capacity(256 * 1024, std::io::stdout().lock());
            write(&mut out)?;
            out.flush()?;
        }
    }
    for warning in &warnings {
        eprintln!("warning: {}", escape(&warning.to_string()));
    }
    for note in notes {
        eprintln!("warning: {}", escape(&note));
    }
    foreign.warn();
    if stats.without_content > 0 {
        eprintln!(
            "warning: {} run(s) exported without content: their traces are not full capture",
            stats.without_content
        );
    }
    if stats.runs == 0 {
        eprintln!("warning: no runs found in the input");
    }
    Ok(Outcome::Success)
}

/// The expectation verdicts of a results file by run id; tasks without expectations have none.
fn verdicts(path: &Path) -> Result<HashMap<String, Verdict>, CliError> {
    let results = read_results(path).map_err(CliError::input)?;
    Ok(results
        .tasks
        .into_iter()
        .filter_map(|task| {
            let label = match task.expectation {
                Expectation::Met => "met",
                Expectation::Failed => "failed",
                Expectation::None => return None,
            };
            let verdict = Verdict {
                label,
                failures: task.failures,
            };
            Some((task.run_id?, verdict))
        })
        .collect())
}

fn export_error(err: ExportError) -> CliError {
    match err {
        ExportError::Input(err) => CliError::input(err),
        ExportError::Write(err) => CliError::from(err),
    }
}

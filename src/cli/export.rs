//! `looptrace export --otlp`: every run of any traces `report` reads, as OpenTelemetry spans in
//! the OTLP/JSON file-exporter format, one `TracesData` line per run, streamed; or, with
//! `--endpoint`/`--push`, sent to a receiver over OTLP/HTTP protobuf.

use std::collections::HashMap;
use std::io::{BufWriter, Write};
use std::path::{Path, PathBuf};

use clap::Args;

use looptrace::eval::{Verdict as Expectation, read_results};
use looptrace::export::otlp::{
    BuildOptions, ExportError, ExportStats, PushConfig, Pusher, ResourceConfig, RunSink, TraceIds,
    Verdict, export_stream,
};
use looptrace::report::{self, Source};
use looptrace::text::escape;
use looptrace::trace::{Capture, ReadOptions, RunStream, TraceReader};

use super::common::same_file;
use super::{CliError, CliResult, Outcome};

/// Arguments of `looptrace export`.
#[derive(Debug, Args)]
pub struct ExportArgs {
    /// Export OpenTelemetry traces: OTLP/JSON, or OTLP/HTTP protobuf with `--endpoint`/`--push`.
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
    #[arg(short = 'o', long, value_name = "FILE", conflicts_with_all = ["endpoint", "push"])]
    pub output: Option<PathBuf>,
    /// Send the spans to this OTLP/HTTP traces URL (protobuf), used as given, such as
    /// `http://127.0.0.1:6006/v1/traces`; headers, compression and timeout come from the
    /// `OTEL_EXPORTER_OTLP_*` variables.
    #[arg(long, value_name = "URL")]
    pub endpoint: Option<String>,
    /// Send the spans to the endpoint of `OTEL_EXPORTER_OTLP_TRACES_ENDPOINT` or
    /// `OTEL_EXPORTER_OTLP_ENDPOINT` (plus `/v1/traces`).
    #[arg(long, conflicts_with = "endpoint")]
    pub push: bool,
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
    let env = |name: &str| std::env::var(name).ok();
    let resource = ResourceConfig::from_env(&env).map_err(CliError::input)?;
    let push = if args.endpoint.is_some() || args.push {
        Some(PushConfig::resolve(args.endpoint.as_deref(), &env).map_err(CliError::input)?)
    } else {
        None
    };
    let options = BuildOptions {
        content: args.content,
        verdicts,
        resource,
    };
    // Foreign files are read as imported; with `--content` their content is kept for the export.
    let capture = if args.content {
        Capture::Full
    } else {
        Capture::Summary
    };
    let foreign = super::foreign_inputs::inputs_with_capture(
        &args.paths,
        capture,
        args.lenient,
        args.all_runs,
    )?;
    let (mut inputs, warnings) = report::collect_inputs(&foreign.paths).map_err(CliError::input)?;
    foreign.substitute(&mut inputs);
    if let Some(out) = &args.output {
        let clash = (super::common::files_read(&args.paths, &inputs).into_iter())
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
    let mut write = |out: &mut dyn RunSink| -> Result<u64, CliError> {
        let files: Vec<String> = inputs.iter().map(file_name).collect();
        let mut ids = TraceIds::for_files(files.iter().map(String::as_str));
        for (input, file) in inputs.iter().zip(files) {
            let read = ReadOptions::default();
            let reader_notes = match &input.source {
                Source::Path(path) => {
                    let mut stream = RunStream::open(path, read).map_err(CliError::input)?;
                    export_stream(&mut stream, &file, &mut ids, &options, out, &mut stats)
                        .map_err(export_error)?;
                    stream.into_stats().warnings(&input.name)
                }
                // Standard input, a foreign file's imported events, a run store's named runs.
                other => {
                    let lines = other.open().map_err(|err| {
                        CliError::input(format!("failed to read `{}`: {err}", input.name))
                    })?;
                    let reader = TraceReader::new(lines, &input.name, read);
                    let mut stream = RunStream::new(reader);
                    export_stream(&mut stream, &file, &mut ids, &options, out, &mut stats)
                        .map_err(export_error)?;
                    stream.into_stats().warnings(&input.name)
                }
            };
            notes.extend(reader_notes);
        }
        Ok(stats.runs)
    };
    let mut outcome = Outcome::Success;
    match (&args.output, push) {
        (_, Some(config)) => {
            let mut pusher = Pusher::new(config);
            let sent = write(&mut pusher)
                .and_then(|_| pusher.flush().map_err(|err| export_error(err.into())));
            let pushed = pusher.stats();
            eprintln!(
                "sent {} ({}) to {} in {}{}",
                looptrace::plural(pushed.runs, "run", "runs"),
                looptrace::plural(pushed.spans, "span", "spans"),
                pusher.endpoint(),
                looptrace::plural(pushed.requests, "request", "requests"),
                if pushed.retries > 0 {
                    format!(
                        " ({} retried)",
                        looptrace::plural(pushed.retries, "attempt", "attempts")
                    )
                } else {
                    String::new()
                }
            );
            if pushed.rejected_spans > 0 {
                eprintln!(
                    "warning: the receiver rejected {}",
                    looptrace::plural(pushed.rejected_spans, "span", "spans")
                );
                outcome = Outcome::Failures;
            }
            if let Err(err) = sent {
                match err {
                    CliError::Internal(message) if pushed.failed_runs > 0 => {
                        eprintln!("error: {}", escape(&message));
                        outcome = Outcome::Failures;
                    }
                    err => return Err(err),
                }
            }
        }
        (Some(path), None) => {
            super::import::write_atomically(path, |out| write(&mut &mut *out))?;
        }
        (None, None) => {
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
    } else if let Some(results) = &args.results
        && stats.with_verdict == 0
    {
        eprintln!(
            "warning: no exported run is a run of `{}`: no verdicts were attached (give the results of the evaluation that wrote these traces)",
            escape(&results.display().to_string())
        );
    }
    Ok(outcome)
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
        // Reported by the caller, which knows what was sent before the failure.
        ExportError::Push(err) => CliError::internal(err),
    }
}

/// The file name an input's trace ids are derived from: its last path part (`-` for standard
/// input).
fn file_name(input: &report::Input) -> String {
    if input.source == Source::Stdin {
        return "-".to_owned();
    }
    Path::new(&input.name)
        .file_name()
        .map_or_else(|| input.name.clone(), |n| n.to_string_lossy().into_owned())
}

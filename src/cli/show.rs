//! `looptrace show`: the events of trace files, folders or standard input, run by run, readable or
//! as JSONL. Runs are streamed: each is printed as soon as it ends (runs that never end last), so
//! memory does not grow with the file.

use std::io::{IsTerminal, Write};

use clap::{Args, ValueEnum};

use super::{CliError, CliResult, Outcome};
use looptrace::replay::{RunIds, times};
use looptrace::report::Source;
use looptrace::text::escape;
use looptrace::trace::{ReadOptions, ReadStats, RunStream, TraceReader, render_run};

/// Arguments of `looptrace show`.
#[derive(Debug, Args)]
pub struct ShowArgs {
    /// Trace files of any importable format, folders (every trace file inside, sorted) or `-`
    /// for standard input.
    #[arg(required = true, value_name = "TRACE")]
    pub paths: Vec<String>,
    /// Given an eval output folder, read every run under its `runs/`, not only those its
    /// `results.json` names.
    #[arg(long)]
    pub all_runs: bool,
    /// Show only this run.
    #[arg(long, value_name = "ID")]
    pub run: Option<String>,
    /// With `--run`, the how-many-th run with that id (from 1), for a reused id.
    #[arg(long, value_name = "N", requires = "run", value_parser = clap::value_parser!(u32).range(1..))]
    pub occurrence: Option<u32>,
    /// `text` for people, `json` for the parsed events as JSONL.
    #[arg(short = 'f', long, value_enum, default_value_t = ShowFormat::Text)]
    pub format: ShowFormat,
    /// Skip malformed lines (counted and reported) instead of failing.
    #[arg(long)]
    pub lenient: bool,
    /// How a foreign trace is imported for showing: `summary` or `full`.
    #[arg(long, value_enum, default_value_t = super::common::CaptureArg::Summary)]
    pub capture: super::common::CaptureArg,
}

/// Output formats of `show`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum ShowFormat {
    /// One readable line per event.
    Text,
    /// The parsed events as JSONL.
    Json,
}

/// Runs `looptrace show`.
pub fn run(args: ShowArgs) -> CliResult {
    let options = ReadOptions {
        lenient: args.lenient,
        ..ReadOptions::default()
    };
    // Folders are walked and foreign trajectories imported into memory, as `report` does.
    let foreign = super::foreign_inputs::inputs_with_capture(
        &args.paths,
        args.capture.into(),
        args.lenient,
        args.all_runs,
    )?;
    foreign.warn();
    let (mut inputs, folder_warnings) =
        looptrace::report::collect_inputs(&foreign.paths).map_err(CliError::input)?;
    foreign.substitute(&mut inputs);
    let mut printer = Printer {
        args: &args,
        wanted: args.occurrence.unwrap_or(1),
        color: std::io::stdout().is_terminal() && std::env::var_os("NO_COLOR").is_none(),
        ids: RunIds::default(),
        printed: 0,
        header: None,
        out: std::io::stdout().lock(),
    };
    let mut warnings: Vec<String> = folder_warnings.iter().map(ToString::to_string).collect();
    for input in &inputs {
        // Line numbers are per file: with several, each file's runs are headed by its name.
        printer.header = (inputs.len() > 1).then(|| format!("== {} ==", escape(&input.name)));
        let stats = match &input.source {
            Source::Path(path) => {
                printer.print(RunStream::open(path, options).map_err(CliError::input)?)?
            }
            // Standard input, a foreign file's imported events, a run store's named runs.
            other => {
                let lines = other.open().map_err(|err| {
                    CliError::input(format!("failed to read `{}`: {err}", input.name))
                })?;
                let reader = TraceReader::new(lines, &input.name, options);
                printer.print(RunStream::new(reader))?
            }
        };
        warnings.extend(stats.warnings(&input.name));
    }
    let shown = args.paths.join("`, `");
    if let Some(id) = &args.run {
        let found = printer.ids.selected();
        if printer.printed == 0 {
            return Err(CliError::input(printer.ids.not_found(
                id,
                printer.wanted,
                &shown,
            )));
        }
        if found > 1 && args.occurrence.is_none() {
            eprintln!(
                "note: run {:?} occurs {} in `{shown}`; showing the 1st (choose with --occurrence N)",
                escape(id),
                times(found)
            );
        }
    }
    for warning in warnings {
        eprintln!("warning: {}", escape(&warning));
    }
    Ok(Outcome::Success)
}

/// Prints the selected runs of one input after another, counting runs across all of them.
struct Printer<'a> {
    args: &'a ShowArgs,
    wanted: u32,
    color: bool,
    ids: RunIds,
    printed: usize,
    /// Printed before the next run shown in text, then cleared.
    header: Option<String>,
    out: std::io::StdoutLock<'static>,
}

impl Printer<'_> {
    /// Prints the selected runs of `stream` as each ends; returns what the reader tolerated.
    fn print<R: std::io::Read>(&mut self, mut stream: RunStream<R>) -> Result<ReadStats, CliError> {
        for run in stream.by_ref() {
            let streamed = run.map_err(CliError::input)?;
            self.ids
                .note(&streamed.run.run_id, self.args.run.as_deref());
            if let Some(id) = &self.args.run
                && (streamed.run.run_id != *id || streamed.occurrence != self.wanted)
            {
                continue;
            }
            match self.args.format {
                ShowFormat::Text => {
                    if self.printed > 0 {
                        writeln!(self.out)?;
                    }
                    if let Some(header) = self.header.take() {
                        writeln!(self.out, "{header}")?;
                    }
                    let text = render_run(&streamed.run, streamed.occurrence, self.color);
                    self.out.write_all(text.as_bytes())?;
                }
                ShowFormat::Json => {
                    for (_, event) in &streamed.run.events {
                        let line = serde_json::to_string(event).map_err(CliError::internal)?;
                        writeln!(self.out, "{line}")?;
                    }
                }
            }
            // Each run reaches the reader as soon as it ends, also through a pipe.
            self.out.flush()?;
            self.printed += 1;
        }
        Ok(stream.into_stats())
    }
}

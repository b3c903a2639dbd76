//! `looptrace show`: a trace's events in file order, readable or as JSONL.

use std::io::{IsTerminal, Write};
use std::path::PathBuf;

use clap::{Args, ValueEnum};

use super::{CliError, CliResult, Outcome};
use looptrace::trace::{ReadOptions, read_trace, render_runs};

/// Arguments of `looptrace show`.
#[derive(Debug, Args)]
pub struct ShowArgs {
    /// The trace file.
    pub trace: PathBuf,
    /// Show only this run.
    #[arg(long, value_name = "ID")]
    pub run: Option<String>,
    /// `text` for people, `json` for the parsed events as JSONL.
    #[arg(long, value_enum, default_value_t = ShowFormat::Text)]
    pub format: ShowFormat,
    /// Skip malformed lines (counted and reported) instead of failing.
    #[arg(long)]
    pub lenient: bool,
    /// How a foreign trace is imported for showing: `summary` or `full`.
    #[arg(long, value_enum, default_value_t = super::import::CaptureArg::Summary)]
    pub capture: super::import::CaptureArg,
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
    let imported = super::import::detect_and_import(
        &args.trace,
        args.capture.into(),
        &mut Default::default(),
    )?;
    let trace = match &imported {
        super::import::Detected::Foreign(temp) => temp.path.clone(),
        _ => args.trace.clone(),
    };
    let contents = read_trace(&trace, options).map_err(CliError::input)?;
    let runs: Vec<_> = match &args.run {
        Some(id) => match contents.run(id) {
            Some(run) => vec![run],
            None => {
                return Err(CliError::input(format!(
                    "no run {id:?} in `{}` (it has {})",
                    args.trace.display(),
                    list_ids(
                        &contents
                            .runs
                            .iter()
                            .map(|r| r.run_id.as_str())
                            .collect::<Vec<_>>()
                    )
                )));
            }
        },
        None => contents.runs.iter().collect(),
    };
    let mut out = std::io::stdout().lock();
    match args.format {
        ShowFormat::Text => {
            let color = std::io::stdout().is_terminal() && std::env::var_os("NO_COLOR").is_none();
            out.write_all(render_runs(&runs, color).as_bytes())?;
        }
        ShowFormat::Json => {
            for run in &runs {
                for (_, event) in &run.events {
                    let line = serde_json::to_string(event).map_err(CliError::internal)?;
                    writeln!(out, "{line}")?;
                }
            }
        }
    }
    out.flush()?;
    for warning in contents.stats.warnings(&args.trace.display().to_string()) {
        eprintln!("warning: {warning}");
    }
    Ok(Outcome::Success)
}

/// A short list of run ids for messages.
pub fn list_ids(ids: &[&str]) -> String {
    match ids.len() {
        0 => "no runs".to_owned(),
        n if n <= 5 => ids
            .iter()
            .map(|id| format!("{id:?}"))
            .collect::<Vec<_>>()
            .join(", "),
        n => format!(
            "{} and {} more",
            ids[..5]
                .iter()
                .map(|id| format!("{id:?}"))
                .collect::<Vec<_>>()
                .join(", "),
            n - 5
        ),
    }
}

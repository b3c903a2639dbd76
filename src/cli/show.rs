//! `looptrace show`: a trace's events run by run, readable or as JSONL. Runs are streamed: each is
//! printed as soon as it ends (runs that never end last), so memory does not grow with the file.

use std::io::{IsTerminal, Write};
use std::path::PathBuf;

use clap::{Args, ValueEnum};

use super::{CliError, CliResult, Outcome};
use looptrace::text::escape;
use looptrace::trace::{ReadOptions, RunStream, render_run};

/// Arguments of `looptrace show`.
#[derive(Debug, Args)]
pub struct ShowArgs {
    /// The trace file.
    pub trace: PathBuf,
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
    let imported = super::import::detect_and_import(
        &args.trace,
        args.capture.into(),
        &mut Default::default(),
    )?;
    // A foreign trajectory is shown as imported (a temporary trace v1 file).
    let trace = match &imported {
        super::import::Detected::Foreign(temp) => temp.path.clone(),
        _ => args.trace.clone(),
    };
    let shown = args.trace.display().to_string();
    let mut stream = RunStream::open(&trace, options).map_err(CliError::input)?;
    let color = std::io::stdout().is_terminal() && std::env::var_os("NO_COLOR").is_none();
    let wanted = args.occurrence.unwrap_or(1);
    let mut ids = RunIds::default();
    let mut printed = 0usize;
    let mut out = std::io::stdout().lock();
    for run in stream.by_ref() {
        let streamed = run.map_err(CliError::input)?;
        ids.note(&streamed.run.run_id, args.run.as_deref());
        if let Some(id) = &args.run
            && (streamed.run.run_id != *id || streamed.occurrence != wanted)
        {
            continue;
        }
        match args.format {
            ShowFormat::Text => {
                if printed > 0 {
                    writeln!(out)?;
                }
                out.write_all(render_run(&streamed.run, streamed.occurrence, color).as_bytes())?;
            }
            ShowFormat::Json => {
                for (_, event) in &streamed.run.events {
                    let line = serde_json::to_string(event).map_err(CliError::internal)?;
                    writeln!(out, "{line}")?;
                }
            }
        }
        // Each run reaches the reader as soon as it ends, also through a pipe.
        out.flush()?;
        printed += 1;
    }
    let stats = stream.into_stats();
    if let Some(id) = &args.run {
        let found = ids.selected();
        if printed == 0 {
            return Err(ids.not_found(id, wanted, &shown));
        }
        if found > 1 && args.occurrence.is_none() {
            eprintln!(
                "note: run {:?} occurs {} in `{shown}`; showing the 1st (choose with --occurrence N)",
                escape(id),
                times(found)
            );
        }
    }
    for warning in stats.warnings(&shown) {
        eprintln!("warning: {}", escape(&warning));
    }
    Ok(Outcome::Success)
}

/// `once`, `twice`, `3 times`.
pub fn times(n: u32) -> String {
    match n {
        1 => "once".to_owned(),
        2 => "twice".to_owned(),
        n => format!("{n} times"),
    }
}

/// What a streamed trace held, for messages: the first few run ids, how many runs in all, and how
/// many runs had the selected id.
#[derive(Debug, Default)]
pub struct RunIds {
    first: Vec<String>,
    total: usize,
    selected: u32,
}

impl RunIds {
    /// Notes one run; `selected` is the id asked for, if any.
    pub fn note(&mut self, id: &str, selected: Option<&str>) {
        self.total += 1;
        if self.first.len() < 5 && !self.first.iter().any(|f| f == id) {
            self.first.push(id.to_owned());
        }
        if selected == Some(id) {
            self.selected += 1;
        }
    }

    /// How many runs had the selected id.
    pub fn selected(&self) -> u32 {
        self.selected
    }

    /// The error for a `--run ID --occurrence N` that matched no run.
    pub fn not_found(&self, id: &str, wanted: u32, shown: &str) -> CliError {
        CliError::input(match self.selected {
            0 => format!(
                "no run {:?} in `{shown}` (it has {})",
                escape(id),
                self.describe()
            ),
            n => format!(
                "run {:?} occurs {} in `{shown}`: --occurrence {wanted} is past the last",
                escape(id),
                times(n)
            ),
        })
    }

    /// `"a", "b" and 3 more runs`, or `no runs`.
    pub fn describe(&self) -> String {
        let ids: Vec<&str> = self.first.iter().map(String::as_str).collect();
        let text = list_ids(&ids);
        match self.total.saturating_sub(ids.len()) {
            0 => text,
            1 => format!("{text} and 1 more run"),
            more => format!("{text} and {more} more runs"),
        }
    }
}

/// A short list of run ids for messages.
pub fn list_ids(ids: &[&str]) -> String {
    match ids.len() {
        0 => "no runs".to_owned(),
        n if n <= 5 => ids
            .iter()
            .map(|id| escape(&format!("{id:?}")).into_owned())
            .collect::<Vec<_>>()
            .join(", "),
        n => format!(
            "{} and {} more",
            ids[..5]
                .iter()
                .map(|id| escape(&format!("{id:?}")).into_owned())
                .collect::<Vec<_>>()
                .join(", "),
            n - 5
        ),
    }
}

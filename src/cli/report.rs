//! `looptrace report`: exit-reason and failure analysis over trace files.
//!
//! The report is analysis: runs that failed are data, so it exits 0 whenever it was produced,
//! and 2 on bad input (a missing file, a malformed line without `--lenient`).

use std::io::Write;

use clap::{Args, ValueEnum};

use looptrace::report::{self, Format, Options, RenderOptions};

use super::{CliError, CliResult, Outcome};

/// Arguments of `looptrace report`.
#[derive(Debug, Args)]
pub struct ReportArgs {
    /// Trace files of any importable format, folders (searched recursively for `*.jsonl`, `*.json`,
    /// `*.traj`, `*.eval`, `*.yaml`, `*.yml`) or `-` for standard input.
    #[arg(required = true)]
    pub paths: Vec<String>,
    /// Output format.
    #[arg(short = 'f', long, value_enum, default_value_t = FormatArg::Table)]
    pub format: FormatArg,
    /// Print only errors and a one-line summary.
    #[arg(short = 'q', long)]
    pub quiet: bool,
    /// Also break the exit reasons down per input file.
    #[arg(long, value_enum)]
    pub by: Option<ByArg>,
    /// Skip malformed lines (counted in the warnings) instead of failing on the first.
    #[arg(long)]
    pub lenient: bool,
}

/// `--format`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum FormatArg {
    /// Text tables.
    Table,
    /// One JSON document.
    Json,
    /// Markdown tables.
    Markdown,
    /// Long-form CSV: section,key,subkey,metric,value.
    Csv,
}

/// `--by`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum ByArg {
    /// One exit-reason table per input file.
    File,
    /// One exit-reason table per source format (looptrace, codex, swe-agent, ...).
    Source,
}

/// Runs `looptrace report`.
pub fn run(args: ReportArgs) -> CliResult {
    let foreign = super::import::report_inputs(&args.paths)?;
    let (mut inputs, warnings) = report::collect_inputs(&foreign.paths).map_err(CliError::input)?;
    let formats = foreign.substitute(&mut inputs);
    let options = Options {
        lenient: args.lenient,
        ..Options::default()
    };
    let mut report = report::analyze(&inputs, &options, warnings).map_err(CliError::input)?;
    if args.by == Some(ByArg::Source) {
        report.by_file = super::import::group_by_source(&report.by_file, &formats);
    }
    if foreign.skipped > 0 {
        eprintln!(
            "warning: skipped {} file(s) of no known trace format",
            foreign.skipped
        );
    }
    let format = match args.format {
        FormatArg::Table => Format::Table,
        FormatArg::Json => Format::Json,
        FormatArg::Markdown => Format::Markdown,
        FormatArg::Csv => Format::Csv,
    };
    let bytes = if args.quiet {
        report::summary_line(&report).into_bytes()
    } else {
        report::render(
            &report,
            format,
            RenderOptions {
                by_file: args.by.is_some(),
                by_source: args.by == Some(ByArg::Source),
                style: super::common::stdout_style(),
            },
        )
    };
    let mut stdout = std::io::stdout().lock();
    stdout.write_all(&bytes)?;
    stdout.flush()?;
    Ok(Outcome::Success)
}

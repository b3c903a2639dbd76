//! `looptrace report`: exit-reason and failure analysis over trace files.
//!
//! The report is analysis: runs that failed are data, so it exits 0 whenever it was produced,
//! and 2 on bad input (a missing file, a malformed line without `--lenient`).

use std::path::{Path, PathBuf};

use clap::{Args, ValueEnum};

use looptrace::html::Page;
use looptrace::report::{self, Format, Options, RenderOptions, RowMode, Selector};

use super::{CliError, CliResult};

/// Arguments of `looptrace report`.
#[derive(Debug, Args)]
pub struct ReportArgs {
    /// Trace files of any importable format, folders (searched recursively for `*.jsonl`, `*.json`,
    /// `*.traj`, `*.eval`, `*.yaml`, `*.yml`) or `-` for standard input.
    #[arg(required = true)]
    pub paths: Vec<String>,
    /// Given an eval output folder, read every run under its `runs/`, not only those its
    /// `results.json` names.
    #[arg(long)]
    pub all_runs: bool,
    /// Output format.
    #[arg(short = 'f', long, value_enum, default_value_t = FormatArg::Table)]
    pub format: FormatArg,
    /// Print only errors and a one-line summary.
    #[arg(short = 'q', long)]
    pub quiet: bool,
    /// Also break the exit reasons down by input file (`file`) or by source format (`source`).
    #[arg(long, value_enum)]
    pub by: Option<ByArg>,
    /// Skip malformed lines (counted in the warnings) instead of failing on the first.
    #[arg(long)]
    pub lenient: bool,
    /// Write the report to FILE (replaced as a whole, only once complete) instead of standard
    /// output.
    #[arg(short = 'o', long, value_name = "FILE")]
    pub output: Option<PathBuf>,
    /// List the runs that match instead: an exit reason (`finished`, ..., `incomplete`),
    /// `error_kind=K`, `tool=T` or `source=F`; one row per run (table or `--format json`).
    #[arg(long, value_name = "SELECTOR", conflicts_with = "by")]
    pub list: Option<String>,
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
    /// One self-contained HTML page: charts, a filterable table of runs, their timelines.
    Html,
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
    let selector = args
        .list
        .as_deref()
        .map(Selector::parse)
        .transpose()
        .map_err(CliError::Input)?;
    if selector.is_some() && !matches!(args.format, FormatArg::Table | FormatArg::Json) {
        return Err(CliError::input(
            "--list prints a table or JSON (--format table or --format json)",
        ));
    }
    let foreign = super::foreign_inputs::report_inputs(&args.paths, args.lenient, args.all_runs)?;
    let (mut inputs, warnings) = report::collect_inputs(&foreign.paths).map_err(CliError::input)?;
    // A folder with nothing to read is said on stderr too, as `show` says it: a report of 0 runs
    // must not look like a folder of runs that all went missing.
    for warning in &warnings {
        if matches!(warning, report::Warning::NoTraceFiles { .. }) {
            eprintln!("warning: {}", looptrace::text::escape(&warning.to_string()));
        }
    }
    let formats = foreign.substitute(&mut inputs);
    // The views that name runs take their rows from the report's own fold, in the same pass.
    let rows = if args.format == FormatArg::Html {
        RowMode::Timelines
    } else if selector.is_some() {
        RowMode::Rows
    } else {
        RowMode::Off
    };
    let options = Options {
        lenient: args.lenient,
        rows,
        ..Options::default()
    };
    let (mut report, runs) =
        report::analyze_runs(&inputs, &options, warnings).map_err(CliError::input)?;
    let runs = super::html::with_formats(runs, &formats);
    if args.by == Some(ByArg::Source) {
        report.by_file = super::foreign_inputs::group_by_source(&report.by_file, &formats);
    }
    foreign.warn();
    let read = super::common::files_read(&args.paths, &inputs);
    let named: Vec<&Path> = read.iter().map(PathBuf::as_path).collect();
    if let Some(selector) = &selector {
        let bytes = match args.format {
            FormatArg::Json => report::render_list_json(&runs, selector),
            _ => report::render_list_text(&runs, selector),
        };
        return super::html::write_output(args.output.as_deref(), &bytes, &named);
    }
    let format = match args.format {
        FormatArg::Table => Format::Table,
        FormatArg::Json => Format::Json,
        FormatArg::Markdown => Format::Markdown,
        FormatArg::Csv => Format::Csv,
        FormatArg::Html => {
            let context = vec![format!("report of {}", args.paths.join(" "))];
            let page = Page {
                models: None,
                scores: &[],
                title: "looptrace report",
                context: &context,
                report: &report,
                runs: &runs,
                verdict: "gate",
                baseline: None,
                statistics: None,
            };
            let bytes = looptrace::html::render(&page);
            return super::html::write_output(args.output.as_deref(), &bytes, &named);
        }
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
                style: super::common::output_style(args.output.as_deref()),
            },
        )
    };
    super::html::write_output(args.output.as_deref(), &bytes, &named)
}

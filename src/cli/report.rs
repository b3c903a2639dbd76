//! `looptrace report`: exit-reason and failure analysis over trace files.

use clap::Args;

use super::{CliError, CliResult};

/// Arguments of `looptrace report`.
#[derive(Debug, Args)]
pub struct ReportArgs {
    /// Trace files, folders (searched recursively for `*.jsonl`) or `-` for standard input.
    #[arg(required = true)]
    pub paths: Vec<String>,
}

/// Runs `looptrace report`.
pub fn run(_args: ReportArgs) -> CliResult {
    Err(CliError::internal("report is not built yet"))
}

//! `looptrace tools`: the registered tool specs, as a model would be shown them.

use std::io::Write;

use clap::Args;

use super::{CliError, CliResult, Outcome};
use looptrace::tools::ToolRegistry;

/// Arguments of `looptrace tools`.
#[derive(Debug, Args)]
pub struct ToolsArgs {}

/// Prints the specs as a JSON array.
pub fn run(_args: ToolsArgs) -> CliResult {
    let registry = ToolRegistry::builtin();
    let json = serde_json::to_string_pretty(&registry.specs()).map_err(CliError::internal)?;
    let mut out = std::io::stdout().lock();
    writeln!(out, "{json}")?;
    out.flush()?;
    Ok(Outcome::Success)
}

//! `looptrace tools`: every tool's spec, as a model would be shown them: the calculator and,
//! with `--tools-file`, the file's command tools, bash and the tools of its MCP servers (started
//! to ask them).

use std::io::Write;

use clap::Args;

use super::common::ToolsFileArgs;
use super::{CliError, CliResult, Outcome};
use looptrace::tools::ToolRegistry;

/// Arguments of `looptrace tools`.
#[derive(Debug, Args)]
pub struct ToolsArgs {
    #[command(flatten)]
    pub tools_file: ToolsFileArgs,
}

/// Prints the specs as a JSON array.
pub fn run(args: ToolsArgs) -> CliResult {
    let one_task = args.tools_file.one_task(&[])?;
    let builtin;
    let registry = match &one_task {
        Some((_, set, _)) => &set.registry,
        None => {
            builtin = ToolRegistry::builtin();
            &builtin
        }
    };
    let json = serde_json::to_string_pretty(&registry.specs()).map_err(CliError::internal);
    if let Some((_, _, Some(temp))) = &one_task {
        let _ = std::fs::remove_dir_all(temp);
    }
    let mut out = std::io::stdout().lock();
    writeln!(out, "{}", json?)?;
    out.flush()?;
    Ok(Outcome::Success)
}

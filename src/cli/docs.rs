//! `looptrace completions SHELL` and `looptrace man [COMMAND]`: shell completion scripts and roff
//! manual pages, both generated from the same clap definition as the parser, so they cannot drift.

use std::io::Write;

use clap::Args;
use clap_complete::Shell;

use super::{CliError, CliResult, Outcome};

/// Arguments of `looptrace completions`.
#[derive(Debug, Args)]
pub struct CompletionsArgs {
    /// The shell to complete for.
    #[arg(value_enum)]
    pub shell: Shell,
}

/// Arguments of `looptrace man`.
#[derive(Debug, Args)]
pub struct ManArgs {
    /// A subcommand's page (`looptrace-eval(1)`) instead of the top-level `looptrace(1)`.
    #[arg(value_name = "COMMAND")]
    pub command: Option<String>,
}

/// Prints the completion script for `args.shell` to stdout.
pub fn completions(args: CompletionsArgs, mut command: clap::Command) -> CliResult {
    let mut out = Vec::new();
    clap_complete::generate(args.shell, &mut command, "looptrace", &mut out);
    write_stdout(&out)
}

/// Prints a manual page in roff to stdout.
pub fn man(args: ManArgs, mut command: clap::Command) -> CliResult {
    // Building the top command names each subcommand `looptrace-NAME` for its page.
    command.build();
    let page = match &args.command {
        None => command,
        Some(name) => match command.find_subcommand(name) {
            Some(sub) => sub.clone(),
            None => {
                let names: Vec<&str> = command.get_subcommands().map(|c| c.get_name()).collect();
                return Err(CliError::input(format!(
                    "no command {name:?} (commands: {})",
                    names.join(", ")
                )));
            }
        },
    };
    let mut out = Vec::new();
    clap_mangen::Man::new(page)
        .source(format!("looptrace {}", env!("CARGO_PKG_VERSION")))
        .render(&mut out)
        .map_err(CliError::internal)?;
    write_stdout(&out)
}

fn write_stdout(bytes: &[u8]) -> CliResult {
    let mut stdout = std::io::stdout().lock();
    stdout.write_all(bytes)?;
    stdout.flush()?;
    Ok(Outcome::Success)
}

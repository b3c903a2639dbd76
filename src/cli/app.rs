//! The top-level command line: the clap parser, start-up checks, panic containment and dispatch
//! to one subcommand.

use clap::{CommandFactory, Parser, Subcommand};

use super::error::{self, CliError, CliResult};
use super::{docs, eval, export, gc, help, import, merge, proxy, replay, report, run, show, tools};

/// A small, strict agent loop with JSONL traces, replay, evaluation and reports.
#[derive(Debug, Parser)]
#[command(name = "looptrace", version, about, max_term_width = 100, after_help = help::EXIT_CODES)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Run one task against a file of raw model responses or a live model server.
    #[command(after_help = help::RUN)]
    Run(run::RunArgs),
    /// Print every tool's spec as JSON: the calculator and a tools file's tools.
    #[command(after_help = help::TOOLS)]
    Tools(tools::ToolsArgs),
    /// Print a trace's events, run by run.
    #[command(after_help = help::SHOW)]
    Show(show::ShowArgs),
    /// Run a suite of tasks (or replay a corpus of traces) and report how they ended.
    #[command(after_help = help::EVAL)]
    Eval(Box<eval::EvalArgs>),
    /// Combine shard results into one results file and report.
    #[command(after_help = help::MERGE)]
    Merge(merge::MergeArgs),
    /// Remove the runs of an eval output folder that its results no longer name.
    #[command(after_help = help::GC)]
    Gc(gc::GcArgs),
    /// Summarize how the runs in trace files ended and why.
    #[command(after_help = help::REPORT)]
    Report(report::ReportArgs),
    /// Rerun recorded runs and report the first divergence from each recording.
    #[command(after_help = help::REPLAY)]
    Replay(replay::ReplayArgs),
    /// Record any agent's model calls through a local endpoint, or answer them from a recording.
    #[command(after_help = help::PROXY)]
    Proxy(proxy::ProxyArgs),
    /// Convert other agents' trajectories to looptrace traces.
    #[command(after_help = help::IMPORT)]
    Import(import::ImportArgs),
    /// Export runs as OpenTelemetry spans: OTLP/JSON, or sent to a receiver over OTLP/HTTP.
    #[command(after_help = help::EXPORT)]
    Export(export::ExportArgs),
    /// Print a shell completion script (bash, elvish, fish, powershell, zsh).
    #[command(after_help = help::COMPLETIONS)]
    Completions(docs::CompletionsArgs),
    /// Print a manual page (roff) for looptrace or one of its commands.
    #[command(after_help = help::MAN)]
    Man(docs::ManArgs),
}

/// Runs the command line and returns the process exit code.
pub fn main() -> i32 {
    let cli = match Cli::try_parse() {
        Ok(cli) => cli,
        Err(err) => {
            let code = if err.use_stderr() { 2 } else { 0 };
            let _ = err.print();
            return code;
        }
    };
    if let Err(message) = looptrace::fault::configured() {
        return error::finish(Err(CliError::Input(message)));
    }
    // Panics are caught where they happen (tool handlers, eval tasks) or below, and reported once
    // as internal errors; the default hook would also print their messages, which may quote content.
    std::panic::set_hook(Box::new(|_| {}));
    let outcome = std::panic::catch_unwind(|| dispatch(cli.command));
    let result = outcome.unwrap_or_else(|payload| {
        Err(CliError::Internal(format!(
            "looptrace panicked: {} (this is a bug)",
            looptrace::tools::panic_text(payload.as_ref())
        )))
    });
    error::finish(result)
}

/// Runs one subcommand.
fn dispatch(command: Command) -> CliResult {
    match command {
        Command::Run(args) => run::run(args),
        Command::Tools(args) => tools::run(args),
        Command::Show(args) => show::run(args),
        Command::Eval(args) => eval::run(*args),
        Command::Merge(args) => merge::merge(args),
        Command::Gc(args) => gc::run(args),
        Command::Report(args) => report::run(args),
        Command::Replay(args) => replay::run(args),
        Command::Proxy(args) => proxy::run(args),
        Command::Import(args) => import::run(args),
        Command::Export(args) => export::run(args),
        Command::Completions(args) => docs::completions(args, Cli::command()),
        Command::Man(args) => docs::man(args, Cli::command()),
    }
}

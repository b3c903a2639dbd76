//! The command-line interface: clap types and the glue from each subcommand to the library.
//!
//! Exit codes are the same for every command: 0 success, 1 the work ran and found failures,
//! 2 bad input or usage, 3 internal error.

mod app;
mod common;
mod docs;
mod error;
mod eval;
mod eval_args;
mod export;
mod foreign_inputs;
mod gc;
mod help;
mod html;
mod import;
mod merge;
mod otlp_push;
mod progress;
mod proxy;
mod replay;
mod report;
mod run;
mod run_store_inputs;
mod show;
mod stats_args;
mod tools;

pub use app::main;
pub use error::{CliError, CliResult, Outcome};

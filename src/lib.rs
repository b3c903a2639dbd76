//! looptrace: a small, strict agent loop that records every run as a JSONL trace, replays
//! recorded runs, evaluates suites of tasks and reports how runs ended.
//!
//! The model only proposes ([`run::Action`]); the [`tools`] runtime decides what runs; the
//! [`agent`] loop keeps the history and the budget and returns a [`run::RunResult`]; [`trace`]
//! records every run as JSONL.

pub mod agent;
pub mod digest;
pub mod eval;
pub mod export;
pub mod fault;
pub mod gate;
pub mod html;
pub mod import;
pub mod json_error;
pub mod model;
pub mod output;
mod plural;
pub mod process;
pub mod proxy;
pub mod replay;
pub mod report;
pub mod run;
mod scratch_file;
pub mod secrets;
pub mod stats;
pub mod terminal;
pub mod text;
pub mod time;
pub mod tools;
pub mod trace;

pub use plural::{human_bytes, plural};

//! looptrace as a library: your own model and tools in the loop, every run written to a trace,
//! and a report made from the trace.
//!
//! `cargo run --example library` (writes `library-example.jsonl` in a temporary folder).

use looptrace::agent::{RunOptions, run_agent_result};
use looptrace::model::{Model, ModelError};
use looptrace::report::{self, Format, RenderOptions};
use looptrace::run::{
    Action, ExitReason, Finish, HistoryItem, Observation, RunOutcome, Task, ToolCall,
};
use looptrace::tools::{ToolOutcome, ToolPanic, ToolRuntime};
use looptrace::trace::{RecorderOptions, TraceRecorder, TraceWriter};

/// A model that looks the word up once, then answers with what the tool said.
struct Lookup;

impl Model for Lookup {
    fn next_action(&mut self, task: &Task, history: &[HistoryItem]) -> Result<Action, ModelError> {
        let seen = history.iter().find_map(|item| match item {
            HistoryItem::Observation(observation) => Some(observation.content.clone()),
            _ => None,
        });
        Ok(match seen {
            None => {
                let word = task.prompt.rsplit(' ').next().unwrap_or_default();
                let mut arguments = serde_json::Map::new();
                arguments.insert("word".into(), word.into());
                Action::ToolCall(ToolCall {
                    tool_name: "length".into(),
                    arguments,
                })
            }
            Some(length) => Action::Finish(Finish {
                answer: format!("{length} letters"),
            }),
        })
    }
}

/// One tool, `length`: the number of characters of `word`.
struct Length;

impl ToolRuntime for Length {
    fn execute(&self, call: &ToolCall) -> Result<ToolOutcome, ToolPanic> {
        let word = call.arguments.get("word").and_then(|w| w.as_str());
        let (content, is_error) = match (call.tool_name.as_str(), word) {
            ("length", Some(word)) => (word.chars().count().to_string(), false),
            _ => (
                "expected the tool `length` with a string `word`".to_owned(),
                true,
            ),
        };
        Ok(ToolOutcome {
            observation: Observation {
                tool_name: call.tool_name.clone(),
                content,
                is_error,
            },
            error_kind: is_error.then(|| "invalid_arguments".to_owned()),
            exit_status: None,
            lossy: false,
        })
    }
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let dir = std::env::temp_dir().join(format!("looptrace-example-{}", std::process::id()));
    std::fs::create_dir_all(&dir)?;
    let path = dir.join("library-example.jsonl");

    // Two runs, each recorded as it happens.
    let mut writer = TraceWriter::append(&path, false)?;
    for (run_id, prompt) in [("r1", "how long is looptrace"), ("r2", "how long is agent")] {
        let mut recorder = TraceRecorder::new(run_id, RecorderOptions::default(), &mut writer);
        let task = Task::new(prompt);
        let result = run_agent_result(
            &task,
            &mut Lookup,
            &Length,
            RunOptions::default(),
            &mut recorder,
        )?;
        println!("{run_id}: {} ({:?})", result.exit_reason, result.answer);
    }
    drop(writer);

    // The report of the trace, as `looptrace report` makes it.
    let bytes = std::fs::read(&path)?;
    let report = report::analyze_slice(&bytes, "library-example.jsonl", false)?;
    let finished = RunOutcome::Ended(ExitReason::Finished);
    assert_eq!(report.exit_reasons.get(finished), 2);
    let table = report::render(&report, Format::Table, RenderOptions::default());
    print!("{}", String::from_utf8_lossy(&table));
    std::fs::remove_dir_all(&dir)?;
    Ok(())
}

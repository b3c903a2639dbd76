//! Fuzzes the strict JSON adapter: any text gives an action or a typed invalid-output error,
//! never a panic, and an accepted action survives being written back as the shape it came from.

#![no_main]

use libfuzzer_sys::fuzz_target;
use looptrace::model::parse_json_action;
use looptrace::run::Action;
use serde_json::json;

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    match parse_json_action(text) {
        Ok(action) => {
            let again = parse_json_action(&to_json(&action)).expect("a written action parses");
            assert_eq!(same_shape(&action), same_shape(&again));
        }
        Err(err) => {
            assert!(
                !err.message.is_empty(),
                "an invalid-output error explains itself"
            );
            let _ = err.kind.as_str();
        }
    }
});

/// The accepted shape of an action, as a model would write it.
fn to_json(action: &Action) -> String {
    match action {
        Action::ToolCall(call) => json!({
            "type": "tool_call",
            "tool_name": call.tool_name,
            "arguments": call.arguments,
        }),
        Action::Finish(finish) => json!({"type": "finish", "answer": finish.answer}),
    }
    .to_string()
}

/// What must survive a round trip exactly: numbers in arguments may be re-rounded by the parser.
fn same_shape(action: &Action) -> (String, String, Vec<String>) {
    match action {
        Action::ToolCall(call) => (
            "tool_call".to_owned(),
            call.tool_name.clone(),
            call.arguments.keys().cloned().collect(),
        ),
        Action::Finish(finish) => ("finish".to_owned(), finish.answer.clone(), Vec::new()),
    }
}

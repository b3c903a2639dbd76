//! The strict JSON adapter: the two accepted shapes and every kind of rejection.

use looptrace::model::{InvalidOutputKind, parse_json_action};
use looptrace::run::{Action, Finish};

#[test]
fn accepts_the_two_shapes() {
    let call = parse_json_action(
        r#"{"type":"tool_call","tool_name":"calculator","arguments":{"left":12,"operation":"multiply","right":7}}"#,
    )
    .unwrap();
    let Action::ToolCall(call) = call else {
        panic!("expected a tool call")
    };
    assert_eq!(call.tool_name, "calculator");
    assert_eq!(call.arguments.len(), 3);
    assert_eq!(
        parse_json_action(r#"{"type":"finish","answer":"84"}"#).unwrap(),
        Action::Finish(Finish {
            answer: "84".to_owned()
        })
    );
}

#[test]
fn rejects_everything_else_with_a_stable_kind_and_a_precise_message() {
    let cases: &[(&str, InvalidOutputKind, &str)] = &[
        (
            "not json",
            InvalidOutputKind::InvalidJson,
            "model output is not valid JSON",
        ),
        (
            "",
            InvalidOutputKind::InvalidJson,
            "model output is not valid JSON",
        ),
        (
            "[1,2]",
            InvalidOutputKind::NotAnObject,
            "model output must be a JSON object, got an array",
        ),
        (
            "\"finish\"",
            InvalidOutputKind::NotAnObject,
            "model output must be a JSON object, got a string",
        ),
        (
            r#"{"type":"dance"}"#,
            InvalidOutputKind::UnknownActionType,
            "unknown action type \"dance\"",
        ),
        (
            r#"{"answer":"x"}"#,
            InvalidOutputKind::MissingField,
            "missing field \"type\"",
        ),
        (
            r#"{"type":"finish"}"#,
            InvalidOutputKind::MissingField,
            "missing field \"answer\"",
        ),
        (
            r#"{"type":"tool_call","arguments":{}}"#,
            InvalidOutputKind::MissingField,
            "missing field \"tool_name\"",
        ),
        (
            r#"{"type":"tool_call","tool_name":"calculator"}"#,
            InvalidOutputKind::MissingField,
            "missing field \"arguments\"",
        ),
        (
            r#"{"type":"finish","answer":"x","confidence":1}"#,
            InvalidOutputKind::UnexpectedField,
            "unexpected field \"confidence\" in a finish action",
        ),
        (
            r#"{"type":"tool_call","tool_name":"c","arguments":{},"answer":"x"}"#,
            InvalidOutputKind::UnexpectedField,
            "unexpected field \"answer\" in a tool_call action",
        ),
        (
            r#"{"type":7}"#,
            InvalidOutputKind::WrongFieldType,
            "field \"type\" must be a string, got a number",
        ),
        (
            r#"{"type":"finish","answer":42}"#,
            InvalidOutputKind::WrongFieldType,
            "field \"answer\" must be a string, got a number",
        ),
        (
            r#"{"type":"tool_call","tool_name":null,"arguments":{}}"#,
            InvalidOutputKind::WrongFieldType,
            "field \"tool_name\" must be a string, got null",
        ),
        (
            r#"{"type":"tool_call","tool_name":"c","arguments":[1]}"#,
            InvalidOutputKind::WrongFieldType,
            "field \"arguments\" must be an object, got an array",
        ),
    ];
    for (raw, kind, message) in cases {
        let err = parse_json_action(raw).unwrap_err();
        assert_eq!(err.kind, *kind, "{raw}");
        assert!(
            err.message.starts_with(message),
            "{raw}: {:?} does not start with {message:?}",
            err.message
        );
    }
}

#[test]
fn kinds_have_snake_case_names() {
    let names: Vec<&str> = InvalidOutputKind::ALL.iter().map(|k| k.as_str()).collect();
    assert_eq!(
        names,
        [
            "invalid_json",
            "not_an_object",
            "unknown_action_type",
            "missing_field",
            "unexpected_field",
            "wrong_field_type"
        ]
    );
    for kind in InvalidOutputKind::ALL {
        assert_eq!(InvalidOutputKind::parse(kind.as_str()), Some(kind));
    }
}

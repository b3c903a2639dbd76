//! The tool runtime: registry rules, schema checks with pointers, and the calculator's results.

use looptrace::run::ToolCall;
use looptrace::tools::{ToolDefinition, ToolRegistry, ToolRuntime, calculator_spec};
use serde_json::{Value, json};

fn call(arguments: Value) -> ToolCall {
    let Value::Object(arguments) = arguments else {
        panic!("arguments must be an object")
    };
    ToolCall::new("calculator", arguments)
}

fn calculate(arguments: Value) -> (String, bool, Option<String>) {
    let outcome = ToolRegistry::builtin().execute(&call(arguments)).unwrap();
    (
        outcome.observation.content,
        outcome.observation.is_error,
        outcome.error_kind,
    )
}

fn ok(left: Value, operation: &str, right: Value) -> String {
    let (content, is_error, _) =
        calculate(json!({"left": left, "operation": operation, "right": right}));
    assert!(!is_error, "{left} {operation} {right}: {content}");
    content
}

#[test]
fn calculator_formats_results_as_python_str_does() {
    let cases = [
        (json!(12), "multiply", json!(7), "84"),
        (json!(12), "multiply", json!(7.0), "84.0"),
        (json!(10), "divide", json!(2), "5.0"),
        (json!(1), "divide", json!(4), "0.25"),
        (json!(1e16), "multiply", json!(1), "1e+16"),
        (json!(0.0001), "divide", json!(10), "1e-05"),
        (json!(0.1), "add", json!(0.2), "0.30000000000000004"),
        (json!(5), "subtract", json!(8), "-3"),
        (json!(2.5), "subtract", json!(2.5), "0.0"),
        (json!(1), "divide", json!(3), "0.3333333333333333"),
        (
            json!(i64::MAX),
            "multiply",
            json!(i64::MAX),
            "85070591730234615847396907784232501249",
        ),
        (
            json!(u64::MAX),
            "multiply",
            json!(u64::MAX),
            "340282366920938463426481119284349108225",
        ),
        (
            json!(i64::MIN),
            "multiply",
            json!(2),
            "-18446744073709551616",
        ),
        (json!(u64::MAX), "add", json!(1), "18446744073709551616"),
        (json!(u64::MAX), "divide", json!(3), "6.148914691236517e+18"),
        (
            json!(123456789),
            "multiply",
            json!(1000000000),
            "123456789000000000",
        ),
        (json!(1.5), "multiply", json!(1e20), "1.5e+20"),
        (json!(-7), "divide", json!(2), "-3.5"),
    ];
    for (left, operation, right, expected) in cases {
        assert_eq!(
            ok(left.clone(), operation, right.clone()),
            expected,
            "{left} {operation} {right}"
        );
    }
}

#[test]
fn division_by_zero_and_overflow_are_tool_errors() {
    for zero in [json!(0), json!(0.0), json!(-0.0)] {
        let (content, is_error, kind) =
            calculate(json!({"left": 1, "operation": "divide", "right": zero}));
        assert_eq!(
            (content.as_str(), is_error, kind.as_deref()),
            ("division by zero", true, Some("division_by_zero"))
        );
    }
    let (content, is_error, kind) =
        calculate(json!({"left": 1e308, "operation": "multiply", "right": 10}));
    assert!(is_error);
    assert_eq!(kind.as_deref(), Some("non_finite_result"));
    assert_eq!(content, "result is not a finite number");
}

#[test]
fn schema_violations_name_the_pointer_and_never_reach_the_handler() {
    let cases = [
        (
            json!({"left": "12", "operation": "multiply", "right": 7}),
            "/left",
        ),
        (
            json!({"left": true, "operation": "add", "right": 7}),
            "/left",
        ),
        (
            json!({"left": 1, "operation": "power", "right": 7}),
            "/operation",
        ),
        (json!({"left": 1, "operation": "add"}), "(root)"),
        (
            json!({"left": 1, "operation": "add", "right": 2, "precision": 3}),
            "(root)",
        ),
    ];
    for (arguments, pointer) in cases {
        let (content, is_error, kind) = calculate(arguments.clone());
        assert!(is_error, "{arguments}");
        assert_eq!(kind.as_deref(), Some("invalid_arguments"));
        assert!(
            content.starts_with("invalid arguments for calculator: "),
            "{content}"
        );
        assert!(
            content.contains(&format!("{pointer}: ")),
            "{arguments}: {content}"
        );
    }
    let (content, _, _) =
        calculate(json!({"left": 1, "operation": "add", "right": 2, "precision": 3}));
    assert!(content.contains("precision"), "{content}");
    let (content, _, _) = calculate(json!({"operation": "add"}));
    assert!(
        content.contains("\"left\"") && content.contains("\"right\""),
        "every violation is listed: {content}"
    );
}

#[test]
fn unknown_tools_get_an_exact_message() {
    let outcome = ToolRegistry::builtin()
        .execute(&ToolCall::new("shell", serde_json::Map::new()))
        .unwrap();
    assert_eq!(outcome.observation.content, "unknown tool: shell");
    assert!(outcome.observation.is_error);
    assert_eq!(outcome.error_kind.as_deref(), Some("unknown_tool"));
}

#[test]
fn every_operation_in_the_schema_is_implemented() {
    let spec = calculator_spec();
    let operations = spec.input_schema["properties"]["operation"]["enum"]
        .as_array()
        .unwrap()
        .clone();
    assert_eq!(operations.len(), 4);
    for operation in operations {
        let (content, is_error, _) =
            calculate(json!({"left": 6, "operation": operation, "right": 3}));
        assert!(!is_error, "{operation}: {content}");
    }
}

#[test]
fn the_registry_refuses_duplicates_and_hands_out_specs_only() {
    let mut registry = ToolRegistry::builtin();
    let err = registry
        .register(looptrace::tools::calculator())
        .unwrap_err();
    assert_eq!(
        err.to_string(),
        "a tool named \"calculator\" is already registered"
    );
    let mut bad = calculator_spec();
    bad.name = "bad".to_owned();
    bad.input_schema = json!({"type": 12});
    let err = registry
        .register(ToolDefinition::new(bad, |_| Ok(String::new())))
        .unwrap_err();
    assert!(
        err.to_string()
            .starts_with("the input schema of tool \"bad\" is invalid"),
        "{err}"
    );
    let specs = registry.specs();
    assert_eq!(specs.len(), 1);
    assert_eq!(specs[0], &calculator_spec());
}

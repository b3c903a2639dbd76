//! The built-in `calculator` tool: one binary arithmetic operation, with the results Python would
//! print for the same JSON arguments.

use serde_json::{Map, Value, json};

use super::python_number::{self, NonFinite, PyNumber};
use super::spec::{ToolDefinition, ToolError, ToolSpec};

/// The operations the calculator implements, in schema order.
pub const OPERATIONS: [&str; 4] = ["add", "subtract", "multiply", "divide"];

/// The calculator's contract, as the write-up defines it.
pub fn calculator_spec() -> ToolSpec {
    ToolSpec {
        name: "calculator".to_owned(),
        description: "Perform one binary arithmetic operation. Supports add, subtract, multiply, \
                      and divide."
            .to_owned(),
        input_schema: json!({
            "type": "object",
            "properties": {
                "left": {"type": "number"},
                "operation": {"type": "string", "enum": OPERATIONS},
                "right": {"type": "number"},
            },
            "required": ["left", "operation", "right"],
            "additionalProperties": false,
        }),
        output_description: "The arithmetic result encoded as a string.".to_owned(),
        error_description: "Rejects missing or extra arguments, invalid types, unsupported \
                            operations, and division by zero."
            .to_owned(),
    }
}

/// The calculator bound to its handler.
pub fn calculator() -> ToolDefinition {
    ToolDefinition::new(calculator_spec(), run_calculator)
}

/// Runs one calculation. The registry has checked the schema already; the handler checks again so
/// it stays safe when called on its own.
fn run_calculator(arguments: &Map<String, Value>) -> Result<String, ToolError> {
    if let Some(extra) = arguments
        .keys()
        .find(|k| !["left", "operation", "right"].contains(&k.as_str()))
    {
        return Err(ToolError::new(
            "invalid_arguments",
            format!("unexpected argument {extra:?}"),
        ));
    }
    let left = number_argument(arguments, "left")?;
    let right = number_argument(arguments, "right")?;
    let operation = match arguments.get("operation") {
        Some(Value::String(op)) => op.as_str(),
        Some(_) => {
            return Err(ToolError::new(
                "invalid_arguments",
                "argument \"operation\" must be a string",
            ));
        }
        None => {
            return Err(ToolError::new(
                "invalid_arguments",
                "missing argument \"operation\"",
            ));
        }
    };
    let result = match operation {
        "add" => python_number::add(left, right),
        "subtract" => python_number::subtract(left, right),
        "multiply" => python_number::multiply(left, right),
        "divide" => python_number::divide(left, right)
            .ok_or_else(|| ToolError::new("division_by_zero", "division by zero"))?,
        other => {
            return Err(ToolError::new(
                "unsupported_operation",
                format!("unsupported operation: {other}"),
            ));
        }
    };
    result.map_err(|NonFinite| ToolError::new("non_finite_result", "result is not a finite number"))
}

fn number_argument(arguments: &Map<String, Value>, name: &str) -> Result<PyNumber, ToolError> {
    match arguments.get(name) {
        // Booleans are not numbers, even though Python's bool is an int.
        Some(Value::Number(n)) => Ok(PyNumber::from_json(n)),
        Some(_) => Err(ToolError::new(
            "invalid_arguments",
            format!("argument {name:?} must be a number"),
        )),
        None => Err(ToolError::new(
            "invalid_arguments",
            format!("missing argument {name:?}"),
        )),
    }
}

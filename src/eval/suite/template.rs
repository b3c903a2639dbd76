//! Field templates of a dataset: in every string of a dataset's task template, `{name}` stands
//! for the row's field `name` (`{row}` for the row's number, from 1, when the row has no field of
//! that name) and `{{`, `}}` for a brace. A template that names a field the row lacks is the
//! row's problem, so a typo is an error, not an empty prompt.

use serde_json::Value;

/// A row's fields, by name: text as it goes into a template.
pub trait Fields {
    /// The text of field `name`, if the row has one.
    fn field(&self, name: &str) -> Option<String>;
}

/// `template` with every `{name}` replaced by its field (`row` is the row's number).
pub fn fill(template: &str, fields: &dyn Fields, row: u64) -> Result<String, String> {
    let mut out = String::with_capacity(template.len());
    let mut rest = template;
    while let Some(at) = rest.find(['{', '}']) {
        out.push_str(&rest[..at]);
        let tail = &rest[at..];
        if let Some(after) = tail.strip_prefix("{{") {
            out.push('{');
            rest = after;
        } else if let Some(after) = tail.strip_prefix("}}") {
            out.push('}');
            rest = after;
        } else if let Some(after) = tail.strip_prefix('{') {
            let Some(end) = after.find('}') else {
                return Err(format!(
                    "{template:?} opens `{{` without closing it (write `{{{{` for a brace)"
                ));
            };
            let name = &after[..end];
            match fields.field(name) {
                Some(text) => out.push_str(&text),
                None if name == "row" => out.push_str(&row.to_string()),
                None => return Err(format!("the row has no field `{name}` (in {template:?})")),
            }
            rest = &after[end + 1..];
        } else {
            return Err(format!(
                "{template:?} closes `}}` without opening it (write `}}}}` for a brace)"
            ));
        }
    }
    out.push_str(rest);
    Ok(out)
}

/// `template` with every string in it filled; problems carry the JSON path under `path`.
pub fn fill_value(
    template: &Value,
    fields: &dyn Fields,
    row: u64,
    path: &str,
) -> Result<Value, (String, String)> {
    Ok(match template {
        Value::String(text) => {
            Value::String(fill(text, fields, row).map_err(|m| (path.to_owned(), m))?)
        }
        Value::Array(items) => Value::Array(
            items
                .iter()
                .enumerate()
                .map(|(i, item)| fill_value(item, fields, row, &format!("{path}[{i}]")))
                .collect::<Result<_, _>>()?,
        ),
        Value::Object(map) => Value::Object(
            map.iter()
                .map(|(key, item)| {
                    fill_value(item, fields, row, &format!("{path}.{key}"))
                        .map(|filled| (key.clone(), filled))
                })
                .collect::<Result<_, _>>()?,
        ),
        other => other.clone(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashMap;

    impl Fields for HashMap<&str, &str> {
        fn field(&self, name: &str) -> Option<String> {
            self.get(name).map(|s| (*s).to_owned())
        }
    }

    #[test]
    fn fields_braces_and_the_row_number_fill_a_template() {
        let row = HashMap::from([("question", "2 + 2?"), ("answer", "4")]);
        assert_eq!(
            fill("Q{row}: {question} {{not a field}} -> {answer}", &row, 7).unwrap(),
            "Q7: 2 + 2? {not a field} -> 4"
        );
        assert_eq!(fill("no fields", &row, 1).unwrap(), "no fields");
        // A field named `row` wins over the row number.
        let named = HashMap::from([("row", "r-9")]);
        assert_eq!(fill("{row}", &named, 1).unwrap(), "r-9");
    }

    #[test]
    fn a_missing_field_or_a_lone_brace_is_the_rows_problem() {
        let row = HashMap::from([("question", "q")]);
        assert_eq!(
            fill("{qustion}", &row, 1).unwrap_err(),
            "the row has no field `qustion` (in \"{qustion}\")"
        );
        assert!(
            fill("{question", &row, 1)
                .unwrap_err()
                .contains("without closing")
        );
        assert!(
            fill("a } b", &row, 1)
                .unwrap_err()
                .contains("without opening")
        );
    }

    #[test]
    fn every_string_of_a_value_is_filled_with_its_path_on_error() {
        let row = HashMap::from([("a", "x")]);
        let template = serde_json::json!({"prompt": "{a}", "expect": {"answer": "{a}!", "max_steps_used": 3}, "list": ["{a}", "{b}"]});
        let err = fill_value(&template, &row, 1, "$").unwrap_err();
        assert_eq!(err.0, "$.list[1]");
        let ok =
            serde_json::json!({"prompt": "{a}", "expect": {"answer": "{a}!", "max_steps_used": 3}});
        assert_eq!(
            fill_value(&ok, &row, 1, "$").unwrap(),
            serde_json::json!({"prompt": "x", "expect": {"answer": "x!", "max_steps_used": 3}})
        );
    }
}

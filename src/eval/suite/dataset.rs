//! Datasets: a suite's `dataset` names a JSONL or CSV file and a task template; each row fills the
//! template's strings (`{question}`, see `template.rs`) and the task made is read exactly as a
//! written one (the task schema, the typed struct, the hand-written checks). The file is read by
//! the tasks-file reader, so a dataset of any size is checked once and then read row by row as
//! the tasks run.

use std::path::Path;

use serde_json::{Map, Value};

use super::read::check_task;
use super::resolve::{Context, Problem};
use super::spec::{DatasetFormat, DatasetSpec};
use super::task::SuiteTask;
use super::template::{Fields, fill_value};
use crate::eval::strict_json::parse_noting_repeats;

/// The id a row's task gets when the dataset names none: its row number.
pub const DEFAULT_ID: &str = "row-{row}";

/// A dataset's format and task template.
#[derive(Clone, Debug)]
pub struct Dataset {
    /// How rows are written.
    pub format: DatasetFormat,
    template: Value,
}

impl Dataset {
    /// The dataset of `spec`, whose file is `path`.
    pub fn new(spec: DatasetSpec, path: &Path) -> Dataset {
        let format = spec.format.unwrap_or_else(|| {
            if path
                .extension()
                .is_some_and(|e| e.eq_ignore_ascii_case("csv"))
            {
                DatasetFormat::Csv
            } else {
                DatasetFormat::Jsonl
            }
        });
        let mut template = Map::new();
        template.insert(
            "id".to_owned(),
            Value::String(spec.id.unwrap_or_else(|| DEFAULT_ID.to_owned())),
        );
        template.insert("prompt".to_owned(), Value::String(spec.prompt));
        let numbers = [
            ("model", spec.model),
            ("scorers", spec.scorers),
            ("max_steps", spec.max_steps.map(Value::from)),
            ("max_total_tokens", spec.max_total_tokens.map(Value::from)),
            ("max_seconds", spec.max_seconds.map(Value::from)),
            ("finish_gate", spec.finish_gate),
            ("expect", spec.expect),
        ];
        for (key, value) in numbers {
            if let Some(value) = value {
                template.insert(key.to_owned(), value);
            }
        }
        Dataset {
            format,
            template: Value::Object(template),
        }
    }

    /// The task row `row` (from 1) makes from its `fields`.
    pub fn task(
        &self,
        fields: &dyn Fields,
        row: u64,
        context: &Context,
    ) -> Result<SuiteTask, Vec<Problem>> {
        let value = fill_value(&self.template, fields, row, "$").map_err(|p| vec![p])?;
        check_task(value, "$", context)
    }

    /// The task of a JSONL row: one JSON object, its members the fields.
    pub fn json_task(
        &self,
        line: &str,
        row: u64,
        context: &Context,
    ) -> Result<SuiteTask, Vec<Problem>> {
        let (value, repeated) = parse_noting_repeats(line, "$").map_err(|err| {
            vec![(
                format!("$ (column {})", err.column()),
                format!(
                    "invalid JSON: {}",
                    crate::trace::describe_json_error_plain(&err)
                ),
            )]
        })?;
        if let Some(path) = repeated.into_iter().next() {
            return Err(vec![(path, super::read::REPEATED_KEY.to_owned())]);
        }
        let Value::Object(fields) = value else {
            return Err(vec![(
                "$".to_owned(),
                format!(
                    "expected an object (the row's fields), got {}",
                    crate::model::json_type_name(&value)
                ),
            )]);
        };
        self.task(&JsonRow(fields), row, context)
    }

    /// The task of a CSV record under `header`.
    pub fn csv_task(
        &self,
        header: &[String],
        record: &csv::StringRecord,
        row: u64,
        context: &Context,
    ) -> Result<SuiteTask, Vec<Problem>> {
        self.task(&CsvRow { header, record }, row, context)
    }
}

/// A JSONL row: a string field is its text, any other its JSON.
struct JsonRow(Map<String, Value>);

impl Fields for JsonRow {
    fn field(&self, name: &str) -> Option<String> {
        self.0.get(name).map(|value| match value {
            Value::String(text) => text.clone(),
            other => other.to_string(),
        })
    }
}

/// A CSV record, its fields named by the header row.
struct CsvRow<'a> {
    header: &'a [String],
    record: &'a csv::StringRecord,
}

impl Fields for CsvRow<'_> {
    fn field(&self, name: &str) -> Option<String> {
        let column = self.header.iter().position(|h| h == name)?;
        self.record.get(column).map(str::to_owned)
    }
}

//! Datasets: a suite's `dataset` names a JSONL or CSV file whose rows fill a task template; the
//! rows are checked before any task runs and read again as the tasks run.

use std::path::PathBuf;

use looptrace::eval::{ResultsFile, load_suite};

use crate::support::{fixture, stderr};

use crate::support::{eval_into as eval, results_in as read_results};

fn dataset(name: &str) -> PathBuf {
    fixture(&format!("eval/dataset/{name}"))
}

fn ids_and_failing(results: &ResultsFile) -> (Vec<&str>, Vec<&str>) {
    let ids = results.tasks.iter().map(|t| t.id.as_str()).collect();
    let failing = results
        .tasks
        .iter()
        .filter(|t| t.fails())
        .map(|t| t.id.as_str())
        .collect();
    (ids, failing)
}

#[test]
fn jsonl_rows_fill_the_template_with_ids_from_their_row_numbers() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("out");
    let output = eval(&[dataset("jsonl_suite.json").to_str().unwrap()], &out);
    assert_eq!(output.status.code(), Some(1), "{}", stderr(&output));
    let results = read_results(&out);
    // The blank line is not a row.
    assert_eq!(
        ids_and_failing(&results),
        (vec!["row-1", "row-2", "row-3"], vec!["row-2"])
    );
    let suite = load_suite(&dataset("jsonl_suite.json")).unwrap();
    let third = suite.tasks.get(2).unwrap();
    assert_eq!(third.prompt, "Answer briefly: How many legs has a spider?");
    // A field that is not a string goes in as its JSON.
    assert_eq!(third.expect.answer.as_deref(), Some("8"));
}

#[test]
fn csv_rows_keep_quoted_commas_quotes_newlines_and_utf8() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("out");
    let suite_path = dataset("csv_suite.json");
    let output = eval(&[suite_path.to_str().unwrap()], &out);
    assert_eq!(output.status.code(), Some(1), "{}", stderr(&output));
    let results = read_results(&out);
    assert_eq!(
        ids_and_failing(&results),
        (vec!["q1", "q2", "q3", "q4"], vec!["q4"])
    );
    // Full capture (the suite's defaults reach dataset tasks): answers are kept as they were.
    let answers: Vec<Option<&str>> = results.tasks.iter().map(|t| t.answer.as_deref()).collect();
    assert_eq!(answers, [Some("4"), Some("hi"), Some("café"), Some("y")]);
    let suite = load_suite(&suite_path).unwrap();
    let prompts: Vec<String> = (0..4)
        .map(|i| suite.tasks.get(i).unwrap().prompt.clone())
        .collect();
    assert_eq!(
        prompts,
        [
            "What is 2 + 2, exactly?",
            "Say \"hi\"",
            "Ünïcødé: naïve café?",
            "two\nlines"
        ]
    );
    // Selection reads ids only: one row runs.
    let only = dir.path().join("only");
    let output = eval(&[suite_path.to_str().unwrap(), "--only", "q3"], &only);
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    assert_eq!(ids_and_failing(&read_results(&only)).0, ["q3"]);
}

#[test]
fn bad_jsonl_rows_name_the_file_and_line_and_nothing_runs() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("out");
    let suite = dataset("bad_suite.json");
    let output = eval(&[suite.to_str().unwrap()], &out);
    assert_eq!(output.status.code(), Some(2), "{}", stderr(&output));
    assert_eq!(
        stderr(&output),
        format!(
            "error: suite `{}` has 3 problems:
  $.dataset `bad_rows.jsonl` line 2: $: expected an object (the row's fields), got an array
  $.dataset `bad_rows.jsonl` line 3: $.model.actions[0].answer: the row has no field `answer` (in \"{{answer}}\")
  $.dataset `bad_rows.jsonl` line 4: $ (column 17): invalid JSON: EOF while parsing a string
",
            suite.display()
        )
    );
    assert!(!out.exists(), "nothing is written for a bad dataset");
}

#[test]
fn bad_csv_rows_name_the_file_and_line_and_nothing_runs() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("out");
    let suite = dataset("bad_csv_suite.json");
    let output = eval(&[suite.to_str().unwrap()], &out);
    assert_eq!(output.status.code(), Some(2), "{}", stderr(&output));
    assert_eq!(
        stderr(&output),
        format!(
            "error: suite `{}` has 2 problems:
  $.dataset `bad.csv` line 3: $: the row has 4 fields, the header 3
  $.dataset `bad.csv` line 4: $.id: \"bad id!\" does not match the pattern `^[A-Za-z0-9._-]+$`
",
            suite.display()
        )
    );
    assert!(!out.exists());
}

#[test]
fn bad_csv_rows_name_their_own_line_with_crlf_or_lf_endings() {
    // A quoted field that spans two lines, a blank line, then two bad rows: with `\r\n` the CSV
    // reader stops between `\r` and `\n`, which must not pull a row's line back by one.
    let rows = [
        "id,question,answer",
        "q1,\"two",
        "lines\",yes",
        "",
        "q2,fine,yes",
        "bad id!,q,a",
        "q4,too,many,fields",
    ];
    for ending in ["\r\n", "\n"] {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("rows.csv"), rows.join(ending) + ending).unwrap();
        let suite = dir.path().join("suite.json");
        std::fs::write(
            &suite,
            r#"{"name": "endings", "dataset": {"path": "rows.csv", "id": "{id}",
                "prompt": "{question}", "model": {"actions": [{"type": "finish", "answer": "{answer}"}]}}}"#,
        )
        .unwrap();
        let out = dir.path().join("out");
        let output = eval(&[suite.to_str().unwrap()], &out);
        assert_eq!(output.status.code(), Some(2), "{}", stderr(&output));
        assert_eq!(
            stderr(&output),
            format!(
                "error: suite `{}` has 2 problems:
  $.dataset `rows.csv` line 6: $.id: \"bad id!\" does not match the pattern `^[A-Za-z0-9._-]+$`
  $.dataset `rows.csv` line 7: $: the row has 4 fields, the header 3
",
                suite.display()
            ),
            "ending {ending:?}"
        );
        assert!(!out.exists());
    }
}

#[test]
fn a_dataset_outside_the_suite_folder_or_with_a_repeated_header_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let inner = dir.path().join("suite");
    std::fs::create_dir(&inner).unwrap();
    std::fs::write(dir.path().join("rows.csv"), "q,a\nx,y\n").unwrap();
    std::fs::write(inner.join("twice.csv"), "q,q\nx,y\n").unwrap();
    let suite = inner.join("suite.json");
    let out = dir.path().join("out");
    for (path, expected) in [
        (
            "../rows.csv",
            "$.dataset.path: \"../rows.csv\" leads outside the suite's folder",
        ),
        (
            "twice.csv",
            "$.dataset `twice.csv` $: line 1: the header names the field \"q\" twice",
        ),
    ] {
        let text = serde_json::json!({"name": "s", "dataset": {"path": path, "prompt": "{q}", "model": {"responses": ["x"]}}});
        std::fs::write(&suite, text.to_string()).unwrap();
        let output = eval(&[suite.to_str().unwrap()], &out);
        assert_eq!(output.status.code(), Some(2), "{}", stderr(&output));
        assert!(stderr(&output).contains(expected), "{}", stderr(&output));
        assert!(!out.exists());
    }
}

#[test]
fn a_dataset_without_a_model_anywhere_is_told_once() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("rows.jsonl"), "{\"q\": \"a\"}\n".repeat(3)).unwrap();
    let suite = dir.path().join("suite.json");
    let out = dir.path().join("out");
    let text = serde_json::json!({"name": "s", "dataset": {"path": "rows.jsonl", "id": "r{row}", "prompt": "{q}"}});
    std::fs::write(&suite, text.to_string()).unwrap();
    let output = eval(&[suite.to_str().unwrap()], &out);
    assert_eq!(output.status.code(), Some(2), "{}", stderr(&output));
    let err = stderr(&output);
    assert!(
        err.contains("has 1 problem:\n  $.dataset: missing key `model`"),
        "{err}"
    );
    assert!(!out.exists());
}

//! A dataset's task ids are not held while it evaluates: they are read back where they are
//! needed (selection, the fingerprint, the run header, a resume's and a rerun's comparisons).
//! These tests run a crashed evaluation, its resume and a rerun of its failures over JSONL and
//! CSV datasets with ids from a column and from the row number, one of them with enough long
//! ids that they are set aside in a file rather than kept in memory.

use std::path::Path;
use std::process::Output;

use looptrace::eval::ResultsFile;

use crate::support::{looptrace, stderr};

/// Every `FAILING`th row's scripted reply is wrong.
const FAILING: usize = 7;

/// Writes a dataset of `rows` rows in `format` and a suite over it; returns the suite and the
/// ids its tasks should have, in order.
fn write_suite(dir: &Path, format: &str, rows: usize, id_column: Option<usize>) -> Vec<String> {
    let mut ids = Vec::new();
    let mut text = String::new();
    if format == "csv" {
        text.push_str("key,question,answer,reply\r\n");
    }
    for row in 1..=rows {
        // Ids from a column can be long (to be set aside past a megabyte); the question's
        // quotes and commas are CSV's to keep.
        let key = match id_column {
            Some(width) => format!("{}.{row:06}", "k".repeat(width)),
            None => format!("unused-{row}"),
        };
        let answer = (row * 3).to_string();
        let reply = if row % FAILING == 0 {
            format!("{}", row * 3 + 1)
        } else {
            answer.clone()
        };
        let question = format!("What is \"{row}\", times 3?");
        match format {
            "csv" => text.push_str(&format!(
                "{key},\"{}\",{answer},{reply}\r\n",
                question.replace('"', "\"\"")
            )),
            _ => text.push_str(
                &(serde_json::json!({
                    "key": key, "question": question, "answer": answer, "reply": reply
                })
                .to_string()
                    + "\n"),
            ),
        }
        ids.push(match id_column {
            Some(_) => key,
            None => format!("row-{row}"),
        });
    }
    let data = format!("rows.{format}");
    std::fs::write(dir.join(&data), text).unwrap();
    let mut dataset = serde_json::json!({
        "path": data, "prompt": "{question}",
        "model": {"actions": [{"type": "finish", "answer": "{reply}"}]},
        "expect": {"answer": "{answer}"}
    });
    if id_column.is_some() {
        dataset["id"] = "{key}".into();
    }
    let suite = serde_json::json!({"name": "ids", "dataset": dataset});
    std::fs::write(dir.join("suite.json"), suite.to_string()).unwrap();
    ids
}

fn eval(dir: &Path, extra: &[&str], fault: Option<&str>) -> Output {
    let mut command = looptrace();
    command
        .arg("eval")
        .arg(dir.join("suite.json"))
        .arg("--out")
        .arg(dir.join("out"))
        .args(["--jobs", "1", "-q"])
        .args(extra)
        .env_remove("LOOPTRACE_FAULT");
    if let Some(fault) = fault {
        command.env("LOOPTRACE_FAULT", fault);
    }
    command.output().unwrap()
}

fn results(dir: &Path) -> ResultsFile {
    let text = std::fs::read_to_string(dir.join("out/results.json")).unwrap();
    serde_json::from_str(&text).unwrap()
}

fn ids_of(results: &ResultsFile, keep: impl Fn(&looptrace::eval::TaskResult) -> bool) -> Vec<&str> {
    (results.tasks.iter().filter(|t| keep(t)))
        .map(|t| t.id.as_str())
        .collect()
}

/// A crash after two rows, a resume, a rerun of the failures and an `--only` selection, each
/// checked against the ids the rows should have.
fn crash_resume_rerun(format: &str, rows: usize, id_column: Option<usize>) {
    let context = format!("{format}, {rows} rows, ids from {id_column:?}");
    let dir = tempfile::tempdir().unwrap();
    let ids = write_suite(dir.path(), format, rows, id_column);
    let failing: Vec<&str> = (ids.iter().enumerate())
        .filter(|(i, _)| (i + 1) % FAILING == 0)
        .map(|(_, id)| id.as_str())
        .collect();

    let crashed = eval(dir.path(), &[], Some("abort_before_row:3"));
    assert!(crashed.status.code() != Some(0), "{context}");
    assert!(!dir.path().join("out/results.json").exists(), "{context}");

    let resumed = eval(dir.path(), &["--resume"], None);
    assert_eq!(
        resumed.status.code(),
        Some(1),
        "{context}: {}",
        stderr(&resumed)
    );
    assert!(
        stderr(&resumed).contains("resumed: kept 2 rows from"),
        "{context}: {}",
        stderr(&resumed)
    );
    let after_resume = results(dir.path());
    assert_eq!(ids_of(&after_resume, |_| true), ids, "{context}");
    assert_eq!(ids_of(&after_resume, |t| t.fails()), failing, "{context}");

    let rerun = eval(
        dir.path(),
        &[
            "--rerun-failed",
            dir.path().join("out/results.json").to_str().unwrap(),
        ],
        None,
    );
    assert_eq!(
        rerun.status.code(),
        Some(1),
        "{context}: {}",
        stderr(&rerun)
    );
    let after_rerun = results(dir.path());
    assert_eq!(ids_of(&after_rerun, |_| true), ids, "{context}");
    assert_eq!(
        ids_of(&after_rerun, |t| !t.carried_over),
        failing,
        "{context}"
    );
    assert_eq!(
        after_rerun.suite.fingerprint,
        after_resume.suite.fingerprint
    );

    // `--only` picks its rows by id in one pass over the ids read back; the selection records
    // them.
    let last = ids.last().unwrap().as_str();
    std::fs::remove_dir_all(dir.path().join("out")).unwrap();
    let only = eval(dir.path(), &["--only", &ids[1], "--only", last], None);
    assert!(
        only.status.code().is_some_and(|c| c <= 1),
        "{context}: {}",
        stderr(&only)
    );
    let chosen = results(dir.path());
    let expected = [ids[1].as_str(), last];
    assert_eq!(ids_of(&chosen, |_| true), expected, "{context}");
    let selection = chosen.selection.as_ref().expect("a selection is recorded");
    assert_eq!(selection.tasks, expected, "{context}");
}

#[test]
fn jsonl_ids_from_a_column_set_aside_in_a_file_are_read_back_for_resume_and_rerun() {
    // 6,000 ids of about 190 bytes: over a megabyte, so they are read back from a file.
    crash_resume_rerun("jsonl", 6_000, Some(180));
}

#[test]
fn jsonl_ids_from_the_row_number_are_read_back_for_resume_and_rerun() {
    crash_resume_rerun("jsonl", 40, None);
}

#[test]
fn csv_ids_from_a_column_are_read_back_for_resume_and_rerun() {
    crash_resume_rerun("csv", 40, Some(3));
}

#[test]
fn csv_ids_from_the_row_number_are_read_back_for_resume_and_rerun() {
    crash_resume_rerun("csv", 40, None);
}

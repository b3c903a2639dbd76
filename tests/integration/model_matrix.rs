//! Models from the command line: `eval --model SPEC` gives every task a live model, several make
//! a matrix (every task against each model), and the report, results, JUnit and HTML compare the
//! models side by side.

use std::path::Path;

use serde_json::{Value, json};

use crate::live_model_server::{Reply, Server, openai};
use crate::support::{looptrace, stderr, stdout};

const KEY_VAR: &str = "LOOPTRACE_TEST_MATRIX_KEY";
const KEY: &str = "sk-matrix-test-key";

/// A server that answers every one of `n` requests with `answer`.
fn answering(answer: &str, n: usize) -> Server {
    Server::start(vec![Reply::ok(openai::answer(answer, "stop")); n])
}

fn write_suite(dir: &Path, suite: &Value) -> std::path::PathBuf {
    let path = dir.join("suite.json");
    std::fs::write(&path, suite.to_string()).unwrap();
    path
}

#[test]
fn a_matrix_runs_every_task_against_each_model_and_compares_them_side_by_side() {
    // Two tasks × three repeats per model.
    let alpha = answering("84", 6);
    let beta = answering("85", 6);
    let dir = tempfile::tempdir().unwrap();
    let suite = json!({
        "name": "matrix",
        "tasks": [
            {"id": "multiply", "prompt": "compute 12 × 7", "expect": {"answer": "84"}},
            {"id": "number", "prompt": "compute 12 × 7, digits only",
             "expect": {"answer_number": {"value": 84}}}
        ]
    });
    let path = write_suite(dir.path(), &suite);
    let a = format!("openai-chat:alpha@{}/v1", alpha.url);
    let b = format!("openai-chat:beta@{}/v1", beta.url);
    let out = dir.path().join("out");
    let output = looptrace()
        .arg("eval")
        .arg(&path)
        .args([
            "--api-key-env",
            KEY_VAR,
            "--model",
            &a,
            "--model",
            &b,
            "--repeat",
            "3",
        ])
        .arg("--out")
        .arg(&out)
        .arg("--junit")
        .arg(dir.path().join("junit.xml"))
        .arg("--html")
        .arg(dir.path().join("report.html"))
        .env(KEY_VAR, KEY)
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(1), "{}", stderr(&output));
    for server in [alpha, beta] {
        let requests = server.finish();
        assert_eq!(requests.len(), 6);
        assert!(
            requests
                .iter()
                .all(|r| r.headers["authorization"] == format!("Bearer {KEY}"))
        );
    }
    let report = stdout(&output);
    assert!(report.contains("Models side by side"), "{report}");
    let line = |task: &str| {
        report
            .lines()
            .find(|l| l.split_whitespace().any(|w| w == task))
            .map(|l| {
                l.split_whitespace()
                    .filter(|w| w.contains('/') && !w.contains(':'))
                    .collect::<Vec<_>>()
            })
            .unwrap_or_else(|| panic!("no row {task} in\n{report}"))
    };
    assert_eq!(line("multiply"), ["3/3", "0/3"], "{report}");
    assert_eq!(line("number"), ["3/3", "0/3"], "{report}");
    assert!(
        report.contains("6/6 (100%)") && report.contains("0/6 (0%)"),
        "{report}"
    );
    let header = report
        .lines()
        .find(|l| l.contains("task") && l.contains("alpha"))
        .unwrap_or_else(|| panic!("no header naming the models in\n{report}"));
    assert!(header.find("alpha") < header.find("beta"), "{header}");

    let text = std::fs::read_to_string(out.join("results.json")).unwrap();
    assert!(!text.contains(KEY));
    let results: Value = serde_json::from_str(&text).unwrap();
    let rows = results["tasks"].as_array().unwrap();
    assert_eq!(rows.len(), 12);
    let identity: std::collections::HashSet<(String, String, u64)> = rows
        .iter()
        .map(|r| {
            (
                r["id"].as_str().unwrap().to_owned(),
                r["model"].as_str().unwrap().to_owned(),
                r["repeat"].as_u64().unwrap(),
            )
        })
        .collect();
    assert_eq!(identity.len(), 12, "each (task, model, repeat) once");
    let beta_row = rows
        .iter()
        .find(|r| r["model"] == b.as_str() && r["id"] == "multiply")
        .unwrap();
    assert_eq!(beta_row["model_kind"], "chat");
    assert_eq!(beta_row["chat"]["model"], "beta");
    assert_eq!(beta_row["expectation"], "failed");
    assert!(
        beta_row["trace"]
            .as_str()
            .unwrap()
            .contains("multiply@openai-chat_beta_http"),
        "{beta_row}"
    );
    let validator =
        jsonschema::validator_for(&crate::support::schema("results.schema.json")).unwrap();
    assert!(validator.is_valid(&results));

    let junit = std::fs::read_to_string(dir.path().join("junit.xml")).unwrap();
    let doc = roxmltree::Document::parse(&junit).unwrap();
    let names: Vec<&str> = doc
        .descendants()
        .filter(|n| n.has_tag_name("testcase"))
        .filter_map(|n| n.attribute("name"))
        .collect();
    assert!(
        names.contains(&format!("multiply[{b}] (repeat 2)").as_str()),
        "{names:?}"
    );
    let case = doc
        .descendants()
        .find(|n| {
            n.has_tag_name("testcase")
                && n.attribute("name") == Some(&format!("number[{a}] (repeat 1)"))
        })
        .unwrap();
    let properties: Vec<(&str, &str)> = case
        .descendants()
        .filter(|n| n.has_tag_name("property"))
        .map(|n| (n.attribute("name").unwrap(), n.attribute("value").unwrap()))
        .collect();
    let host = a.split("//").nth(1).unwrap().trim_end_matches("/v1");
    assert_eq!(
        properties,
        [
            ("model", a.as_str()),
            ("model_kind", "chat"),
            ("api", "openai-chat"),
            ("model_name", "alpha"),
            ("provider", host)
        ]
    );

    let html = std::fs::read_to_string(dir.path().join("report.html")).unwrap();
    let section = &html[html
        .find("<section id=\"models\">")
        .expect("a models section")..];
    let section = &section[..section.find("</section>").unwrap()];
    assert!(
        section.contains(&format!("<th class=\"num\">{a}</th>")),
        "{section}"
    );
    assert!(
        section.contains("<td class=\"num\">0/6 (0%)</td>"),
        "{section}"
    );
    assert!(!html.contains(KEY));
}

#[test]
fn one_model_from_the_command_line_replaces_each_tasks_own_and_defaults_model_serves_the_rest() {
    let server = answering("84", 3);
    let dir = tempfile::tempdir().unwrap();
    let suite = json!({
        "name": "one",
        "models": {"local": {"api": "openai-chat", "base_url": format!("{}/v1", server.url), "model": "m1"}},
        "defaults": {"model": "local"},
        "tasks": [
            {"id": "a", "prompt": "compute 12 × 7", "expect": {"answer": "84"}},
            {"id": "b", "prompt": "compute 12 × 7", "expect": {"answer": "84"},
             "model": {"actions": [{"type": "finish", "answer": "85"}]}}
        ]
    });
    let path = write_suite(dir.path(), &suite);
    let run = |extra: &[&str], out: &str| {
        looptrace()
            .arg("eval")
            .arg(&path)
            .arg("--out")
            .arg(dir.path().join(out))
            .args(extra)
            .output()
            .unwrap()
    };
    let own = run(&[], "own");
    assert_eq!(own.status.code(), Some(1), "{}", stderr(&own));
    let results: Value = serde_json::from_str(
        &std::fs::read_to_string(dir.path().join("own/results.json")).unwrap(),
    )
    .unwrap();
    assert_eq!(results["tasks"][0]["model"], "local");
    assert_eq!(results["tasks"][0]["model_kind"], "chat");
    assert_eq!(
        results["tasks"][1]["model"], "actions",
        "a task's own model stays as it was"
    );
    let replaced = run(&["--model", "local"], "replaced");
    assert_eq!(replaced.status.code(), Some(0), "{}", stderr(&replaced));
    assert_eq!(server.finish().len(), 3);
}

#[test]
fn a_task_without_a_model_or_an_unknown_model_is_refused_before_anything_runs() {
    let dir = tempfile::tempdir().unwrap();
    let suite = json!({"name": "none", "tasks": [{"id": "a", "prompt": "p"}]});
    let path = write_suite(dir.path(), &suite);
    let eval = |extra: &[&str]| {
        looptrace()
            .arg("eval")
            .arg(&path)
            .arg("--out")
            .arg(dir.path().join("out"))
            .args(extra)
            .output()
            .unwrap()
    };
    let missing = eval(&[]);
    assert_eq!(missing.status.code(), Some(2));
    assert!(
        stderr(&missing).contains("$.tasks[0]: missing key `model` (give the task a `model`, the suite a `defaults.model`, or eval --model SPEC)"),
        "{}",
        stderr(&missing)
    );
    let unknown = eval(&["--model", "gpt-4.1"]);
    assert_eq!(unknown.status.code(), Some(2));
    assert!(
        stderr(&unknown).contains("--model gpt-4.1: unknown model \"gpt-4.1\""),
        "{}",
        stderr(&unknown)
    );
    let unset = eval(&[
        "--model",
        "openai-chat:m@http://127.0.0.1:9/v1",
        "--api-key-env",
        "LOOPTRACE_TEST_NEVER_SET",
    ]);
    assert_eq!(unset.status.code(), Some(2));
    assert!(
        stderr(&unset).contains("`LOOPTRACE_TEST_NEVER_SET` is not set"),
        "{}",
        stderr(&unset)
    );
    let twice = eval(&[
        "--model",
        "openai-chat:m@http://h/v1",
        "--model",
        "openai-chat:m@http://h/v1",
    ]);
    assert_eq!(twice.status.code(), Some(2));
    assert!(!dir.path().join("out").exists());
}

#[test]
fn a_dataset_takes_its_model_from_the_suite_not_from_the_command_line() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join("q.csv"),
        "question,answer\n\"2+2, please\",4\n",
    )
    .unwrap();
    let suite = json!({"name": "ds", "dataset": {"path": "q.csv", "prompt": "{question}",
        "expect": {"answer": "{answer}"}}});
    let path = write_suite(dir.path(), &suite);
    let output = looptrace()
        .arg("eval")
        .arg(&path)
        .args(["--model", "openai-chat:m@http://127.0.0.1:9/v1"])
        .arg("--out")
        .arg(dir.path().join("out"))
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(2), "{}", stderr(&output));
    assert!(
        stderr(&output).contains(
            "a suite with a tasks file or a dataset takes its model from `defaults.model`"
        ),
        "{}",
        stderr(&output)
    );
    assert!(!dir.path().join("out").exists());
}

#[test]
fn a_baseline_is_compared_per_model_under_a_matrix() {
    let dir = tempfile::tempdir().unwrap();
    let run = |alpha_says: &str, beta_says: &str, out: &str, baseline: Option<&str>| {
        let alpha = answering(alpha_says, 1);
        let beta = answering(beta_says, 1);
        let suite = json!({
            "name": "compared",
            "models": {
                "alpha": {"api": "openai-chat", "base_url": format!("{}/v1", alpha.url), "model": "a"},
                "beta": {"api": "openai-chat", "base_url": format!("{}/v1", beta.url), "model": "b"}
            },
            "tasks": [{"id": "multiply", "prompt": "compute 12 × 7", "expect": {"answer": "84"}}]
        });
        let path = write_suite(dir.path(), &suite);
        let mut command = looptrace();
        command
            .arg("eval")
            .arg(&path)
            .args(["--model", "alpha", "--model", "beta", "--format", "json"])
            .arg("--out")
            .arg(dir.path().join(out));
        if let Some(baseline) = baseline {
            command
                .arg("--baseline")
                .arg(dir.path().join(baseline).join("results.json"));
        }
        let output = command.output().unwrap();
        alpha.finish();
        beta.finish();
        output
    };
    let before = run("84", "84", "before", None);
    assert_eq!(before.status.code(), Some(0), "{}", stderr(&before));
    let after = run("84", "85", "after", Some("before"));
    let report: Value = serde_json::from_str(&stdout(&after)).unwrap();
    assert_eq!(
        report["baseline"]["regressions"][0]["id"], "multiply[beta]",
        "{report}"
    );
    assert_eq!(
        report["baseline"]["regressions"].as_array().unwrap().len(),
        1
    );
    assert_eq!(report["models"][0]["model"], "alpha");
    assert_eq!(report["models"][1]["pass_rate"], 0.0);
}

/// A suite of two tasks whose expected answer is 84.
fn two_tasks(dir: &Path) -> std::path::PathBuf {
    write_suite(
        dir,
        &json!({
            "name": "matrix",
            "tasks": [
                {"id": "multiply", "prompt": "compute 12 × 7", "expect": {"answer": "84"}},
                {"id": "number", "prompt": "12 × 7?", "expect": {"answer": "84"}}
            ]
        }),
    )
}

/// Runs `eval SUITE` with the test key, into `out`, with `args`.
fn eval_matrix(suite: &Path, out: &Path, args: &[&str]) -> std::process::Output {
    looptrace()
        .arg("eval")
        .arg(suite)
        .args(["--api-key-env", KEY_VAR, "-q"])
        .args(args)
        .arg("--out")
        .arg(out)
        .env(KEY_VAR, KEY)
        .output()
        .unwrap()
}

/// The rows of `results.json` in `out` as (task, model, repeat, expectation, carried over).
fn matrix_rows(path: &Path) -> Vec<(String, String, u64, String, bool)> {
    let results: Value = serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap();
    results["tasks"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| {
            (
                r["id"].as_str().unwrap().to_owned(),
                r["model"].as_str().unwrap().to_owned(),
                r["repeat"].as_u64().unwrap_or(1),
                r["expectation"].as_str().unwrap().to_owned(),
                r["carried_over"].as_bool().unwrap_or(false),
            )
        })
        .collect()
}

#[test]
fn a_matrix_resumes_with_the_models_it_recorded_and_refuses_others() {
    // Both models on one server: 4 rows, then the 2 a crash lost.
    let server = answering("84", 6);
    let dir = tempfile::tempdir().unwrap();
    let suite = two_tasks(dir.path());
    let a = format!("openai-chat:alpha@{}/v1", server.url);
    let b = format!("openai-chat:beta@{}/v1", server.url);
    let out = dir.path().join("out");
    let output = eval_matrix(&suite, &out, &["--model", &a, "--model", &b]);
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    let whole = matrix_rows(&out.join("results.json"));
    assert_eq!(whole.len(), 4);

    // A crash after two rows: the run ends without its seal.
    let run = std::fs::read_dir(out.join("runs"))
        .unwrap()
        .next()
        .unwrap()
        .unwrap()
        .path();
    let rows = std::fs::read_to_string(run.join("rows.jsonl")).unwrap();
    let kept: String = rows.lines().take(2).map(|l| format!("{l}\n")).collect();
    std::fs::write(run.join("rows.jsonl"), kept).unwrap();

    // Other models than the run's are refused, naming both.
    let c = format!("openai-chat:gamma@{}/v1", server.url);
    let refused = eval_matrix(&suite, &out, &["--resume", "--model", &a, "--model", &c]);
    assert_eq!(refused.status.code(), Some(2), "{}", stderr(&refused));
    let message = stderr(&refused);
    assert!(
        message.contains(&format!("--model {a} --model {b}"))
            && message.contains(&format!("--model {a} --model {c}")),
        "{message}"
    );

    // Without --model, the resume runs the recorded models' two missing rows.
    let resumed = eval_matrix(&suite, &out, &["--resume"]);
    assert_eq!(resumed.status.code(), Some(0), "{}", stderr(&resumed));
    assert_eq!(server.finish().len(), 6, "only the lost rows ran again");
    assert_eq!(matrix_rows(&out.join("results.json")), whole);
}

#[test]
fn a_rerun_of_a_matrix_runs_only_its_failing_task_model_rows() {
    let alpha = answering("84", 2);
    // beta fails both tasks, then answers right when run again.
    let beta = Server::start(vec![
        Reply::ok(openai::answer("85", "stop")),
        Reply::ok(openai::answer("85", "stop")),
        Reply::ok(openai::answer("84", "stop")),
        Reply::ok(openai::answer("84", "stop")),
    ]);
    let dir = tempfile::tempdir().unwrap();
    let suite = two_tasks(dir.path());
    let a = format!("openai-chat:alpha@{}/v1", alpha.url);
    let b = format!("openai-chat:beta@{}/v1", beta.url);
    let out = dir.path().join("out");
    let output = eval_matrix(&suite, &out, &["--model", &a, "--model", &b]);
    assert_eq!(output.status.code(), Some(1), "{}", stderr(&output));
    let results = out.join("results.json");
    let failing: Vec<(String, String)> = matrix_rows(&results)
        .into_iter()
        .filter(|r| r.3 == "failed")
        .map(|r| (r.0, r.1))
        .collect();
    assert_eq!(
        failing,
        [
            ("multiply".to_owned(), b.clone()),
            ("number".to_owned(), b.clone())
        ]
    );

    // The models come from the results; alpha's rows are carried over, not run.
    let rerun = looptrace()
        .arg("eval")
        .arg(&suite)
        .args(["--api-key-env", KEY_VAR, "-q", "--rerun-failed"])
        .arg(&results)
        .env(KEY_VAR, KEY)
        .output()
        .unwrap();
    assert_eq!(rerun.status.code(), Some(0), "{}", stderr(&rerun));
    assert_eq!(alpha.finish().len(), 2);
    assert_eq!(beta.finish().len(), 4);
    let rows = matrix_rows(&results);
    let seen: Vec<(&str, &str, &str, bool)> = rows
        .iter()
        .map(|r| (r.0.as_str(), r.1.as_str(), r.3.as_str(), r.4))
        .collect();
    assert_eq!(
        seen,
        [
            ("multiply", a.as_str(), "met", true),
            ("multiply", b.as_str(), "met", false),
            ("number", a.as_str(), "met", true),
            ("number", b.as_str(), "met", false),
        ]
    );
}

#[test]
fn shards_of_a_matrix_merge_into_the_unsharded_results() {
    // Each model: two rows unsharded, two across the shards (shard 1/2 holds alpha's rows).
    let alpha = answering("84", 4);
    let beta = Server::start(vec![
        Reply::ok(openai::answer("85", "stop")),
        Reply::ok(openai::answer("84", "stop")),
        Reply::ok(openai::answer("85", "stop")),
        Reply::ok(openai::answer("84", "stop")),
    ]);
    let dir = tempfile::tempdir().unwrap();
    let suite = two_tasks(dir.path());
    let a = format!("openai-chat:alpha@{}/v1", alpha.url);
    let b = format!("openai-chat:beta@{}/v1", beta.url);
    let models = ["--model", a.as_str(), "--model", b.as_str(), "--jobs", "1"];
    let whole = dir.path().join("whole");
    let output = eval_matrix(&suite, &whole, &models);
    assert_eq!(output.status.code(), Some(1), "{}", stderr(&output));
    let mut shards = Vec::new();
    for k in 1..=2 {
        let out = dir.path().join(format!("shard{k}"));
        let shard = format!("{k}/2");
        let mut args = models.to_vec();
        args.extend(["--shard", shard.as_str()]);
        let output = eval_matrix(&suite, &out, &args);
        let code = output.status.code();
        assert!(code == Some(0) || code == Some(1), "{}", stderr(&output));
        let rows = matrix_rows(&out.join("results.json"));
        let model = if k == 1 { &a } else { &b };
        assert!(rows.iter().all(|r| &r.1 == model), "shard {k}: {rows:?}");
        shards.push(out.join("results.json"));
    }
    assert_eq!(alpha.finish().len(), 4);
    assert_eq!(beta.finish().len(), 4);

    let merged = dir.path().join("merged.json");
    let output = merge(&shards, &merged);
    assert_eq!(output.status.code(), Some(1), "{}", stderr(&output));
    let text = std::fs::read_to_string(&merged).unwrap();
    assert!(!text.contains("\"partial\""), "{text}");
    assert_eq!(
        matrix_rows(&merged),
        matrix_rows(&whole.join("results.json"))
    );

    // One shard alone is refused as incomplete, naming what it lacks.
    let output = merge(&shards[..1], &dir.path().join("half.json"));
    assert_eq!(output.status.code(), Some(2), "{}", stderr(&output));
}

/// `looptrace merge RESULTS... --out OUT -q`.
fn merge(results: &[std::path::PathBuf], out: &Path) -> std::process::Output {
    let mut command = looptrace();
    command
        .arg("merge")
        .args(results)
        .arg("--out")
        .arg(out)
        .arg("-q");
    command.output().unwrap()
}

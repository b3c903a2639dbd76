//! The evaluation engine through the library alone (no binary): a request planned and executed
//! with an observer gives the same rows, totals and verdict as `looptrace eval` on the same suite,
//! and refusals are typed errors naming what the user must change; a replay likewise.

use std::path::Path;
use std::sync::Mutex;

use looptrace::eval::engine::{EvalError, EvalObserver, EvalPlan, EvalRequest, EvalVerdict, Quiet};
use looptrace::eval::{ResultsFile, TaskResult};

use crate::support::{looptrace, sample, stable, stderr};

fn read_results(out: &Path) -> ResultsFile {
    serde_json::from_str(&std::fs::read_to_string(out.join("results.json")).unwrap()).unwrap()
}

/// Counts the runs it is told of, and whether it was told the end.
#[derive(Default)]
struct Counting {
    seen: Mutex<Vec<(usize, String)>>,
    finished: Mutex<bool>,
}

impl EvalObserver for Counting {
    fn run_finished(&self, done: usize, row: &TaskResult) {
        self.seen.lock().unwrap().push((done, row.id.to_string()));
    }

    fn finished(&self) {
        *self.finished.lock().unwrap() = true;
    }
}

#[test]
fn an_evaluation_through_the_library_matches_the_command_line() {
    let dir = tempfile::tempdir().unwrap();
    let (by_cli, by_lib) = (dir.path().join("cli"), dir.path().join("lib"));
    let output = looptrace()
        .args(["eval", "-j", "2"])
        .arg(sample("suite.json"))
        .arg("--out")
        .arg(&by_cli)
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));

    let mut request = EvalRequest::suite(sample("suite.json"));
    request.out = Some(by_lib.clone());
    request.jobs = Some(2);
    let plan = EvalPlan::new(request).unwrap();
    assert_eq!(plan.runs_planned(), 10);
    assert_eq!(plan.out(), by_lib);
    let observer = Counting::default();
    let outcome = plan.execute(&observer).unwrap();

    assert_eq!(outcome.verdict, EvalVerdict::Passed);
    assert!(!outcome.interrupted);
    assert_eq!(outcome.ran, 10);
    // Every run was told once, counted 1..=10, and then the end.
    let mut done: Vec<usize> = observer
        .seen
        .lock()
        .unwrap()
        .iter()
        .map(|(n, _)| *n)
        .collect();
    done.sort_unstable();
    assert_eq!(done, (1..=10).collect::<Vec<_>>());
    assert!(*observer.finished.lock().unwrap());
    // The same rows and totals as the binary wrote, and the outcome is what the library wrote.
    let (cli, lib) = (read_results(&by_cli), read_results(&by_lib));
    assert_eq!(stable(&cli.tasks), stable(&lib.tasks));
    assert_eq!(cli.totals, lib.totals);
    assert_eq!(cli.suite, lib.suite);
    assert_eq!(outcome.results.totals, lib.totals);
    assert_eq!(outcome.results_path, by_lib.join("results.json"));
    assert!(outcome.traces.as_ref().unwrap().is_dir());
}

#[test]
fn a_failing_run_is_a_failed_verdict_not_an_error() {
    let dir = tempfile::tempdir().unwrap();
    let suite = dir.path().join("suite.json");
    std::fs::write(
        &suite,
        r#"{"name": "one", "tasks": [{"id": "t", "prompt": "p",
            "model": {"actions": [{"type": "finish", "answer": "3"}]},
            "expect": {"answer_contains": "4"}}]}"#,
    )
    .unwrap();
    let mut request = EvalRequest::suite(&suite);
    request.out = Some(dir.path().join("out"));
    let outcome = EvalPlan::new(request).unwrap().execute(&Quiet).unwrap();
    assert_eq!(outcome.verdict, EvalVerdict::Failed);
    assert_eq!(outcome.results.tasks.len(), 1, "the failing row is kept");
    assert_eq!(outcome.results.tasks[0].id.as_str(), "t");
}

#[test]
fn refusals_are_typed_and_name_the_flag_or_file() {
    let dir = tempfile::tempdir().unwrap();
    let mut request = EvalRequest::suite(sample("suite.json"));
    request.repeat = 0;
    match EvalPlan::new(request) {
        Err(EvalError::Usage { flag, message }) => {
            assert_eq!(flag.as_deref(), Some("--repeat"));
            assert_eq!(message, "--repeat must be at least 1");
        }
        other => panic!("{:?}", other.err()),
    }
    let missing = dir.path().join("missing.json");
    let mut request = EvalRequest::suite(&missing);
    request.out = Some(dir.path().join("out"));
    match EvalPlan::new(request) {
        Err(err @ EvalError::Input { .. }) => {
            assert!(!err.is_internal());
            let EvalError::Input { path, message } = err else {
                unreachable!()
            };
            assert_eq!(path.as_deref(), Some(missing.as_path()));
            assert!(message.contains("missing.json"), "{message}");
        }
        other => panic!("{:?}", other.err()),
    }
    // An output may not be an input: eval refuses to write its JUnit over the suite.
    let out = dir.path().join("out");
    let mut request = EvalRequest::suite(sample("suite.json"));
    request.out = Some(out.clone());
    request.junit = Some(sample("suite.json"));
    match EvalPlan::new(request) {
        Err(EvalError::Output { flag, path, .. }) => {
            assert_eq!(flag, "--junit");
            assert_eq!(path, sample("suite.json"));
        }
        other => panic!("{:?}", other.err()),
    }
    assert!(!out.join("runs").exists(), "nothing was written");
}

#[test]
fn a_replay_through_the_library_is_faithful_and_its_refusals_are_typed() {
    use looptrace::replay::{ReplayPlan, ReplayPlanError, ReplayRequest, ToolMode};

    let mut request = ReplayRequest::new(sample("finished.full.jsonl"));
    request.tools = ToolMode::Recorded;
    let outcome = ReplayPlan::new(request).unwrap().execute(&mut ()).unwrap();
    assert!(!outcome.replays.is_empty());
    assert!(outcome.faithful());
    assert_eq!(outcome.mode, ToolMode::Recorded);

    let mut request = ReplayRequest::new(sample("finished.full.jsonl"));
    request.options.max_steps = Some(0);
    match ReplayPlan::new(request) {
        Err(ReplayPlanError::Usage { flag, message }) => {
            assert_eq!(flag, "--max-steps");
            assert_eq!(message, "--max-steps must be at least 1");
        }
        other => panic!("{:?}", other.err()),
    }
    let mut request = ReplayRequest::new(sample("finished.full.jsonl"));
    request.run = Some(("no-such-run".to_owned(), None));
    match ReplayPlan::new(request).unwrap().execute(&mut ()) {
        Err(err @ ReplayPlanError::Input { .. }) => {
            assert!(!err.is_internal());
            assert!(
                err.to_string().starts_with("no run \"no-such-run\""),
                "{err}"
            );
        }
        other => panic!("{:?}", other.err()),
    }
}

#[test]
fn a_summary_only_evaluation_keeps_no_rows_but_the_same_totals_view_and_verdict() {
    let dir = tempfile::tempdir().unwrap();
    let suite = crate::support::fixture("eval/expectations.json");
    let outcomes: Vec<_> = [false, true]
        .into_iter()
        .map(|summary_only| {
            let mut request = EvalRequest::suite(&suite);
            request.out = Some(dir.path().join(format!("summary-{summary_only}")));
            request.summary_only = summary_only;
            EvalPlan::new(request).unwrap().execute(&Quiet).unwrap()
        })
        .collect();
    let (listed, summed) = (&outcomes[0], &outcomes[1]);
    // Four expectations fail: the report lists their rows; a summary holds none.
    assert_eq!(listed.results.tasks.len(), 4);
    assert!(summed.results.tasks.is_empty());
    assert!(summed.pass_counts.is_none());
    assert_eq!(summed.verdict, EvalVerdict::Failed);
    assert_eq!(listed.verdict, summed.verdict);
    assert_eq!(listed.results.totals, summed.results.totals);
    // What was written does not depend on what the caller keeps.
    let (a, b) = (read_results(&listed.out), read_results(&summed.out));
    assert_eq!(stable(&a.tasks), stable(&b.tasks));
    assert_eq!(a.totals, b.totals);
}

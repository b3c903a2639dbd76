//! Spreading a suite across machines: `--shard auto` on each engine's variables, then `merge`.

use std::path::{Path, PathBuf};
use std::process::Output;

use looptrace::eval::{ResultsFile, SHARD_ENV_VARS, TaskResult};

use crate::support::{looptrace, sample, stable, stderr};

/// `eval ARGS --out OUT` with exactly `vars` of the shard variables set.
fn eval_with(args: &[&str], out: &Path, vars: &[(&str, String)]) -> Output {
    let mut command = looptrace();
    command.arg("eval").args(args).arg("--out").arg(out);
    for name in SHARD_ENV_VARS {
        command.env_remove(name);
    }
    command.envs(vars.iter().map(|(k, v)| (k, v)));
    command.output().unwrap()
}

fn read_results(path: &Path) -> ResultsFile {
    serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap()
}

/// The variables each engine sets for shard `k` (0-based) of `n`.
fn engine_vars(engine: &str, k: usize, n: usize) -> Vec<(&'static str, String)> {
    match engine {
        "looptrace" => vec![
            ("LOOPTRACE_SHARD", (k + 1).to_string()),
            ("LOOPTRACE_SHARDS", n.to_string()),
        ],
        "kubernetes" => vec![
            ("JOB_COMPLETION_INDEX", k.to_string()),
            ("LOOPTRACE_SHARDS", n.to_string()),
        ],
        "gitlab" => vec![
            ("CI_NODE_INDEX", (k + 1).to_string()),
            ("CI_NODE_TOTAL", n.to_string()),
        ],
        "buildkite" => vec![
            ("BUILDKITE_PARALLEL_JOB", k.to_string()),
            ("BUILDKITE_PARALLEL_JOB_COUNT", n.to_string()),
        ],
        "circleci" => vec![
            ("CIRCLE_NODE_INDEX", k.to_string()),
            ("CIRCLE_NODE_TOTAL", n.to_string()),
        ],
        other => panic!("no engine {other}"),
    }
}

#[test]
fn shard_auto_on_every_engine_merges_back_to_the_unsharded_run() {
    let dir = tempfile::tempdir().unwrap();
    let suite = sample("suite.json");
    let suite = suite.to_str().unwrap();
    let full = dir.path().join("full");
    let output = eval_with(&[suite], &full, &[]);
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    let full = read_results(&full.join("results.json"));
    let n = 3;
    for engine in ["looptrace", "kubernetes", "gitlab", "buildkite", "circleci"] {
        let mut files: Vec<PathBuf> = Vec::new();
        for k in 0..n {
            let out = dir.path().join(format!("{engine}-{k}"));
            let output = eval_with(
                &[suite, "--shard", "auto"],
                &out,
                &engine_vars(engine, k, n),
            );
            assert_eq!(
                output.status.code(),
                Some(0),
                "{engine}: {}",
                stderr(&output)
            );
            assert!(
                stderr(&output).contains(&format!("shard {}/{n} from", k + 1)),
                "{engine}: {}",
                stderr(&output)
            );
            files.push(out.join("results.json"));
        }
        let merged = dir.path().join(format!("{engine}.json"));
        let output = looptrace()
            .arg("merge")
            .args(&files)
            .arg("--out")
            .arg(&merged)
            .output()
            .unwrap();
        assert_eq!(
            output.status.code(),
            Some(0),
            "{engine}: {}",
            stderr(&output)
        );
        let merged = read_results(&merged);
        assert_eq!(stable(&merged.tasks), stable(&full.tasks), "{engine}");
        assert_eq!(merged.totals, full.totals, "{engine}");
        assert_eq!(merged.shard, None);
    }
}

#[test]
fn shard_auto_without_usable_variables_is_a_usage_error() {
    let dir = tempfile::tempdir().unwrap();
    let suite = sample("suite.json");
    let suite = suite.to_str().unwrap();
    let cases: [(Vec<(&str, String)>, &str); 4] = [
        (vec![], "none of LOOPTRACE_SHARD, JOB_COMPLETION_INDEX"),
        (
            vec![("JOB_COMPLETION_INDEX", "0".to_owned())],
            "LOOPTRACE_SHARDS is not",
        ),
        (
            engine_vars("circleci", 3, 3),
            "CIRCLE_NODE_INDEX=\"3\" must be from 0 to 2",
        ),
        (
            vec![
                ("CI_NODE_INDEX", "1".to_owned()),
                ("CI_NODE_TOTAL", "many".to_owned()),
            ],
            "CI_NODE_TOTAL=\"many\" is not a whole number",
        ),
    ];
    for (vars, expected) in cases {
        let out = dir.path().join("out");
        let output = eval_with(&[suite, "--shard", "auto"], &out, &vars);
        assert_eq!(output.status.code(), Some(2), "{vars:?}");
        assert!(stderr(&output).contains(expected), "{}", stderr(&output));
        assert!(!out.exists(), "{vars:?}: nothing is written");
    }
}

#[test]
fn only_and_skip_select_tasks_and_results_record_the_selection() {
    let dir = tempfile::tempdir().unwrap();
    let suite = sample("suite.json");
    let suite = suite.to_str().unwrap();
    let full = dir.path().join("full");
    eval_with(&[suite], &full, &[]);
    let full = read_results(&full.join("results.json"));
    let out = dir.path().join("some");
    let output = eval_with(
        &[
            suite,
            "--only",
            "replay-*",
            "--only",
            "*-scripted",
            "--only",
            "never-valid",
            "--skip",
            "*invalid*",
        ],
        &out,
        &[],
    );
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    let results = read_results(&out.join("results.json"));
    let expected = ["divide-scripted", "never-valid", "replay-finished"];
    let ids: Vec<&str> = results.tasks.iter().map(|t| t.id.as_str()).collect();
    assert_eq!(ids, expected);
    let selection = results.selection.clone().unwrap();
    assert_eq!(selection.tasks, expected);
    assert_eq!(selection.only, ["replay-*", "*-scripted", "never-valid"]);
    assert_eq!(selection.skip, ["*invalid*"]);
    let by_id = |id: &str| full.tasks.iter().find(|t| t.id == id).unwrap().clone();
    let wanted: Vec<TaskResult> = expected.iter().map(|id| by_id(id)).collect();
    assert_eq!(stable(&results.tasks), stable(&wanted));
    let traces: Vec<String> = std::fs::read_dir(out.join("traces"))
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    assert_eq!(traces.len(), 3, "{traces:?}");

    // The file matches the results schema.
    let schema: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(
            Path::new(env!("CARGO_MANIFEST_DIR")).join("schemas/results.schema.json"),
        )
        .unwrap(),
    )
    .unwrap();
    let value: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(out.join("results.json")).unwrap()).unwrap();
    let validator = jsonschema::validator_for(&schema).unwrap();
    let errors: Vec<String> = validator
        .iter_errors(&value)
        .map(|e| e.to_string())
        .collect();
    assert!(errors.is_empty(), "{errors:?}");
    assert_eq!(value["selection"]["tasks"], serde_json::json!(expected));

    // A selection split into shards merges back to the selection; different selections do not merge.
    let mut files = Vec::new();
    for k in 1..=2 {
        let shard_out = dir.path().join(format!("sel{k}"));
        let output = eval_with(
            &[suite, "--skip", "replay-*", "--shard", &format!("{k}/2")],
            &shard_out,
            &[],
        );
        assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
        files.push(shard_out.join("results.json"));
    }
    let merged = dir.path().join("merged.json");
    let output = looptrace()
        .arg("merge")
        .args(&files)
        .arg("--out")
        .arg(&merged)
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    let merged = read_results(&merged);
    let not_replays: Vec<TaskResult> = full
        .tasks
        .iter()
        .filter(|t| !t.id.starts_with("replay-"))
        .cloned()
        .collect();
    assert_eq!(stable(&merged.tasks), stable(&not_replays));
    let other = dir.path().join("other");
    eval_with(&[suite, "--shard", "2/2"], &other, &[]);
    let output = looptrace()
        .args(["merge", files[0].to_str().unwrap()])
        .arg(other.join("results.json"))
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(2));
    assert!(
        stderr(&output).contains("refusing to merge shards of different selections"),
        "{}",
        stderr(&output)
    );
}

#[test]
fn a_pattern_that_matches_nothing_is_a_usage_error() {
    let dir = tempfile::tempdir().unwrap();
    let suite = sample("suite.json");
    let suite = suite.to_str().unwrap();
    let cases: [(&[&str], &str); 3] = [
        (
            &["--only", "multiply-*", "--only", "typo*"],
            "--only \"typo*\" matches no task",
        ),
        (&["--skip", "nope"], "--skip \"nope\" matches no task"),
        (&["--skip", "*"], "select no task"),
    ];
    for (flags, expected) in cases {
        let out = dir.path().join("out");
        let mut args = vec![suite];
        args.extend_from_slice(flags);
        let output = eval_with(&args, &out, &[]);
        assert_eq!(output.status.code(), Some(2), "{flags:?}");
        assert!(stderr(&output).contains(expected), "{}", stderr(&output));
        assert!(!out.exists(), "{flags:?}: nothing is written");
    }
}


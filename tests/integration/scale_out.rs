//! Spreading a suite across machines: `--shard auto` on each engine's variables, then `merge`.

use std::path::{Path, PathBuf};
use std::process::Output;

use looptrace::eval::{ResultsFile, SHARD_ENV_VARS, TaskResult, glob_match};

use crate::support::{cli, doc_blocks, files_under, leftovers, looptrace, sample, stable, stderr};

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
    let traces: Vec<String> = std::fs::read_dir(crate::support::traces_of(&out))
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
    let output = cli!("merge", &files[0], other.join("results.json"));
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

/// The ```yaml blocks of `docs/scale-out.md`, parsed.
fn scale_out_yaml() -> Vec<serde_json::Value> {
    doc_blocks("scale-out.md", "yaml")
        .iter()
        .enumerate()
        .map(|(i, block)| {
            serde_yaml_ng::from_str(block).unwrap_or_else(|err| panic!("block {}: {err}", i + 1))
        })
        .collect()
}

/// `PATH` with the built binary's folder first, so documented command lines run it.
fn path_with_binary() -> std::ffi::OsString {
    let bin = Path::new(env!("CARGO_BIN_EXE_looptrace")).parent().unwrap();
    std::env::join_paths(
        std::iter::once(bin.to_path_buf()).chain(std::env::split_paths(
            &std::env::var_os("PATH").unwrap_or_default(),
        )),
    )
    .unwrap()
}

/// Runs a documented shell line in `cwd` with the built binary first on `PATH` and exactly `vars`
/// of the shard variables set.
fn shell(line: &str, cwd: &Path, vars: &[(&str, String)]) -> Output {
    let mut command = std::process::Command::new("sh");
    command
        .arg("-c")
        .arg(line)
        .current_dir(cwd)
        .env("PATH", path_with_binary());
    for name in SHARD_ENV_VARS {
        command.env_remove(name);
    }
    command.envs(vars.iter().map(|(k, v)| (k, v)));
    command.output().unwrap()
}

/// The stable rows of an unsharded run of the sample suite.
fn unsharded(dir: &Path) -> Vec<TaskResult> {
    let out = dir.join("unsharded");
    let output = eval_with(&[sample("suite.json").to_str().unwrap()], &out, &[]);
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    stable(&read_results(&out.join("results.json")).tasks)
}

#[test]
fn the_documented_kubernetes_jobs_shard_with_auto_and_merge_every_shard() {
    let dir = tempfile::tempdir().unwrap();
    let blocks = scale_out_yaml();
    assert_eq!(blocks.len(), 3, "an Indexed Job, a merge Job, a workflow");
    let (job, merge) = (&blocks[0], &blocks[1]);
    assert_eq!(job["kind"], "Job");
    assert_eq!(job["spec"]["completionMode"], "Indexed");
    let completions = job["spec"]["completions"].as_u64().unwrap() as usize;
    let container = &job["spec"]["template"]["spec"]["containers"][0];
    let shards = container["env"]
        .as_array()
        .unwrap()
        .iter()
        .find(|var| var["name"] == "LOOPTRACE_SHARDS")
        .expect("the Job sets LOOPTRACE_SHARDS")["value"]
        .as_str()
        .unwrap()
        .to_owned();
    assert_eq!(
        shards,
        completions.to_string(),
        "completions = LOOPTRACE_SHARDS"
    );
    let eval_line = container["command"][2].as_str().unwrap();
    assert_eq!(container["command"][0], "sh");
    assert_eq!(container["command"][1], "-c");
    assert!(eval_line.contains("looptrace eval ") && eval_line.contains("--shard auto"));
    let merge_line = merge["spec"]["template"]["spec"]["containers"][0]["command"][2]
        .as_str()
        .unwrap();
    assert!(merge_line.starts_with("looptrace merge "), "{merge_line}");

    // Each pod's command, with the volume and the suite swapped for local paths.
    let results = dir.path().join("results");
    std::fs::create_dir(&results).unwrap();
    let local = |line: &str| {
        line.replace("/suite/suite.json", sample("suite.json").to_str().unwrap())
            .replace(" /results/", &format!(" {}/", results.display()))
    };
    for index in 0..completions {
        let vars = [
            ("JOB_COMPLETION_INDEX", index.to_string()),
            ("LOOPTRACE_SHARDS", shards.clone()),
        ];
        let output = shell(&local(eval_line), dir.path(), &vars);
        assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
        assert!(
            stderr(&output).contains(&format!(
                "shard {}/{completions} from Kubernetes",
                index + 1
            )),
            "{}",
            stderr(&output)
        );
    }
    let output = shell(&local(merge_line), dir.path(), &[]);
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    let merged = read_results(&results.join("results.json"));
    assert_eq!(stable(&merged.tasks), unsharded(dir.path()));

    // One pod missing: the merge names it.
    std::fs::remove_dir_all(results.join("shard-1")).unwrap();
    std::fs::remove_file(results.join("results.json")).unwrap();
    let output = shell(&local(merge_line), dir.path(), &[]);
    assert_eq!(output.status.code(), Some(2));
    assert!(
        stderr(&output).contains(&format!("shard 2 of {completions} is missing")),
        "{}",
        stderr(&output)
    );
}

#[test]
fn the_documented_workflow_shards_a_matrix_with_auto_and_merges_its_artifacts() {
    let dir = tempfile::tempdir().unwrap();
    let workflow = &scale_out_yaml()[2];
    let eval_job = &workflow["jobs"]["eval"];
    let matrix: Vec<u64> = eval_job["strategy"]["matrix"]["shard"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v.as_u64().unwrap())
        .collect();
    assert_eq!(eval_job["strategy"]["fail-fast"], false);
    assert_eq!(eval_job["env"]["LOOPTRACE_SHARD"], "${{ matrix.shard }}");
    assert_eq!(
        eval_job["env"]["LOOPTRACE_SHARDS"].as_u64(),
        Some(matrix.len() as u64),
        "LOOPTRACE_SHARDS = the matrix's length"
    );
    assert_eq!(matrix, (1..=matrix.len() as u64).collect::<Vec<_>>());
    let steps = |job: &serde_json::Value| job["steps"].as_array().unwrap().clone();
    let run_with = |job: &serde_json::Value, start: &str| {
        steps(job)
            .iter()
            .filter_map(|s| s["run"].as_str())
            .find(|run| run.starts_with(start))
            .unwrap_or_else(|| panic!("no step runs {start}"))
            .to_owned()
    };
    let using = |job: &serde_json::Value, action: &str| {
        steps(job)
            .into_iter()
            .find(|s| s["uses"].as_str().is_some_and(|u| u.starts_with(action)))
            .unwrap_or_else(|| panic!("no step uses {action}"))
    };
    let eval_line = run_with(eval_job, "looptrace eval ");
    assert!(
        eval_line.contains("--shard auto --out shard"),
        "{eval_line}"
    );
    let upload = using(eval_job, "actions/upload-artifact");
    assert_eq!(upload["if"], "always()");
    assert_eq!(upload["with"]["path"], "shard/");
    let merge_job = &workflow["jobs"]["merge"];
    assert_eq!(merge_job["needs"], "eval");
    assert_eq!(merge_job["if"], "always()");
    let download = using(merge_job, "actions/download-artifact");
    let pattern = download["with"]["pattern"].as_str().unwrap();
    let downloads = download["with"]["path"].as_str().unwrap();
    let merge_line = run_with(merge_job, "looptrace merge ");
    assert!(
        merge_line.contains("--suite evals/suite.json"),
        "{merge_line}"
    );
    let merge_line = merge_line.replace("evals/suite.json", sample("suite.json").to_str().unwrap());

    // Every matrix job in its own checkout; its artifact lands where download-artifact puts it.
    let shards = dir.path().join("merge-job").join(downloads);
    std::fs::create_dir_all(&shards).unwrap();
    let name = upload["with"]["name"].as_str().unwrap();
    for shard in &matrix {
        let checkout = dir.path().join(format!("job-{shard}"));
        std::fs::create_dir(&checkout).unwrap();
        let line = eval_line.replace("evals/suite.json", sample("suite.json").to_str().unwrap());
        let vars = [
            ("LOOPTRACE_SHARD", shard.to_string()),
            ("LOOPTRACE_SHARDS", matrix.len().to_string()),
        ];
        let output = shell(&line, &checkout, &vars);
        assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
        let artifact = name.replace("${{ matrix.shard }}", &shard.to_string());
        assert!(glob_match(pattern, &artifact), "{pattern} vs {artifact}");
        std::fs::rename(checkout.join("shard"), shards.join(artifact)).unwrap();
    }
    let summary = dir.path().join("summary.md");
    let output = std::process::Command::new("sh")
        .arg("-c")
        .arg(format!(
            "export GITHUB_STEP_SUMMARY='{}'; {merge_line}",
            summary.display()
        ))
        .current_dir(dir.path().join("merge-job"))
        .env("PATH", path_with_binary())
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    assert!(std::fs::read_to_string(&summary).unwrap().contains('|'));
    let merged = read_results(&dir.path().join("merge-job/results.json"));
    assert_eq!(stable(&merged.tasks), unsharded(dir.path()));
}

/// A suite of four tasks: `ok-1` and `ok-2` meet their expectations, `bad-1` and
/// `bad-2` fail them as long as `fail` is true; with `fail` false every task meets them.
fn rerun_suite(dir: &Path, fail: bool) -> PathBuf {
    let finish = r#"{"type":"finish","answer":"done"}"#;
    let task = |id: &str, expect_answer: &str| {
        serde_json::json!({
            "id": id,
            "prompt": "say done",
            "model": {"responses": [finish]},
            "expect": {"exit_reason": "finished", "answer_contains": expect_answer}
        })
    };
    let bad_answer = if fail { "never" } else { "done" };
    let suite = serde_json::json!({
        "name": "rerun",
        "tasks": [task("ok-1", "done"), task("bad-1", bad_answer), task("ok-2", "done"), task("bad-2", bad_answer)]
    });
    let path = dir.join(if fail { "failing.json" } else { "fixed.json" });
    std::fs::write(&path, suite.to_string()).unwrap();
    path
}

#[test]
fn rerun_failed_runs_only_the_failed_tasks_and_updates_the_results_in_place() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("out");
    let failing = rerun_suite(dir.path(), true);
    let output = eval_with(&[failing.to_str().unwrap()], &out, &[]);
    assert_eq!(output.status.code(), Some(1), "{}", stderr(&output));
    let before = read_results(&out.join("results.json"));
    let ok_trace = std::fs::read_to_string(crate::support::trace_for(&out, "ok-1")).unwrap();
    let bad_trace = std::fs::read_to_string(crate::support::trace_for(&out, "bad-1")).unwrap();

    // The suite is fixed; rerun the failures, but skip `bad-2`.
    let fixed = rerun_suite(dir.path(), false);
    let results = out.join("results.json");
    let output = cli!(
        "eval",
        &fixed,
        "--rerun-failed",
        &results,
        "--skip",
        "bad-2"
    );
    assert_eq!(
        output.status.code(),
        Some(1),
        "bad-2 still fails: {}",
        stderr(&output)
    );
    let after = read_results(&results);
    let ids: Vec<&str> = after.tasks.iter().map(|t| t.id.as_str()).collect();
    assert_eq!(ids, ["ok-1", "bad-1", "ok-2", "bad-2"]);
    let carried: Vec<bool> = after.tasks.iter().map(|t| t.carried_over).collect();
    assert_eq!(carried, [true, false, true, true]);
    let selection = after.selection.clone().unwrap();
    assert_eq!(selection.tasks, ["bad-1"]);
    assert_eq!(selection.skip, ["bad-2"]);
    assert_eq!(selection.rerun_failed.as_deref(), results.to_str());
    // Carried rows are the earlier rows, marked; the rerun row is new.
    for (old, new) in before.tasks.iter().zip(&after.tasks) {
        if new.carried_over {
            assert_eq!(
                TaskResult {
                    carried_over: true,
                    ..old.clone()
                },
                *new
            );
        }
    }
    assert_eq!(after.tasks[1].expectation, looptrace::eval::Verdict::Met);
    assert_ne!(after.tasks[1].run_id, before.tasks[1].run_id);
    assert_eq!(after.totals.expectations.failed, 1);
    assert_eq!(
        std::fs::read_to_string(crate::support::trace_for(&out, "ok-1")).unwrap(),
        ok_trace
    );
    assert_ne!(
        std::fs::read_to_string(crate::support::trace_for(&out, "bad-1")).unwrap(),
        bad_trace
    );
    assert!(
        crate::support::trace_for(&out, "bad-2").is_file(),
        "a carried row keeps its trace"
    );
    let value: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&results).unwrap()).unwrap();
    assert_eq!(value["tasks"][0]["carried_over"], true);
    assert!(value["tasks"][1].get("carried_over").is_none());

    // Again, into another folder: only bad-2 runs, every trace is there.
    let elsewhere = dir.path().join("elsewhere");
    let output = eval_with(
        &[
            fixed.to_str().unwrap(),
            "--rerun-failed",
            results.to_str().unwrap(),
        ],
        &elsewhere,
        &[],
    );
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    let last = read_results(&elsewhere.join("results.json"));
    assert_eq!(last.selection.unwrap().tasks, ["bad-2"]);
    assert_eq!(last.totals.expectations.met, 4);
    for id in ["ok-1", "bad-1", "ok-2", "bad-2"] {
        assert!(crate::support::trace_for(&elsewhere, id).is_file(), "{id}");
    }

    // Nothing left to rerun: the file is left as it was.
    let unchanged = std::fs::read_to_string(elsewhere.join("results.json")).unwrap();
    let output = cli!(
        "eval",
        &fixed,
        "--rerun-failed",
        elsewhere.join("results.json")
    );
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    assert!(
        stderr(&output).contains("nothing to rerun"),
        "{}",
        stderr(&output)
    );
    assert_eq!(
        std::fs::read_to_string(elsewhere.join("results.json")).unwrap(),
        unchanged
    );

    // After an interruption, the tasks it did not reach run too.
    let cut = dir.path().join("cut");
    // With the runs beside them, which the rows carried over keep.
    std::fs::create_dir_all(&cut).unwrap();
    let copied = std::process::Command::new("cp")
        .arg("-r")
        .arg(out.join("runs"))
        .arg(&cut)
        .status()
        .unwrap();
    assert!(copied.success());
    let mut interrupted = serde_json::to_value(&before).unwrap();
    interrupted["interrupted"] = true.into();
    interrupted["tasks"]
        .as_array_mut()
        .unwrap()
        .retain(|t| t["id"] != "ok-2");
    std::fs::write(cut.join("results.json"), interrupted.to_string()).unwrap();
    let output = cli!("eval", &fixed, "--rerun-failed", cut.join("results.json"));
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    let resumed = read_results(&cut.join("results.json"));
    assert_eq!(resumed.selection.unwrap().tasks, ["bad-1", "ok-2", "bad-2"]);
    let carried: Vec<bool> = resumed.tasks.iter().map(|t| t.carried_over).collect();
    assert_eq!(carried, [true, false, false, false]);
    assert!(!resumed.interrupted);

    // A shard's results or another suite's are refused.
    let shard = dir.path().join("shard");
    eval_with(&[failing.to_str().unwrap(), "--shard", "1/2"], &shard, &[]);
    let sample_suite = sample("suite.json");
    for (suite, previous, expected) in [
        (
            &failing,
            shard.join("results.json"),
            "covers only shard 1/2",
        ),
        (&sample_suite, results.clone(), "is from suite \"rerun\""),
    ] {
        let output = cli!("eval", &suite, "--rerun-failed", &previous);
        assert_eq!(output.status.code(), Some(2));
        assert!(stderr(&output).contains(expected), "{}", stderr(&output));
    }
}

#[test]
fn a_rerun_compared_with_a_baseline_counts_its_carried_over_tasks_as_known() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("out");
    let failing = rerun_suite(dir.path(), true);
    let output = eval_with(&[failing.to_str().unwrap()], &out, &[]);
    assert_eq!(output.status.code(), Some(1), "{}", stderr(&output));
    let baseline = dir.path().join("baseline.json");
    std::fs::copy(out.join("results.json"), &baseline).unwrap();

    let fixed = rerun_suite(dir.path(), false);
    let output = cli!(
        "eval",
        &fixed,
        "--format",
        "json",
        "--rerun-failed",
        out.join("results.json"),
        "--baseline",
        &baseline
    );
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    let report: serde_json::Value = serde_json::from_slice(&output.stdout).unwrap();
    let compared = &report["baseline"];
    assert_eq!(compared["added"], serde_json::json!([]), "{compared}");
    assert_eq!(compared["removed"], serde_json::json!([]), "{compared}");
    assert_eq!(compared["regressions"], serde_json::json!([]), "{compared}");
    let tasks: u64 = compared["transitions"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["tasks"].as_u64().unwrap())
        .sum();
    assert_eq!(
        tasks, 4,
        "every task, carried over or rerun, is compared: {compared}"
    );
}

/// `eval SUITE --jobs 1 --rerun-failed RESULTS`, crashing at `fault` when given.
fn rerun(suite: &Path, results: &Path, fault: Option<&str>) -> Output {
    let mut command = looptrace();
    command
        .arg("eval")
        .arg(suite)
        .args(["--jobs", "1", "--rerun-failed"])
        .arg(results)
        .env_remove("LOOPTRACE_FAULT");
    if let Some(fault) = fault {
        command.env("LOOPTRACE_FAULT", fault);
    }
    command.output().unwrap()
}

#[test]
fn resume_refuses_what_an_interrupted_rerun_left_and_the_rerun_again_completes_it() {
    let dir = tempfile::tempdir().unwrap();
    let failing = rerun_suite(dir.path(), true);
    let fixed = rerun_suite(dir.path(), false);
    for layout in ["per-task", "single"] {
        let out = dir.path().join(layout);
        let output = eval_with(
            &[failing.to_str().unwrap(), "--trace-layout", layout],
            &out,
            &[],
        );
        assert_eq!(output.status.code(), Some(1), "{}", stderr(&output));
        let results = out.join("results.json");
        let crashed = rerun(&fixed, &results, Some("abort_before_row:2"));
        assert_eq!(
            std::os::unix::process::ExitStatusExt::signal(&crashed.status),
            Some(6),
            "{layout}: {}",
            stderr(&crashed)
        );
        // The crashed run's header names the rerun, as its schema allows.
        let run = crate::support::newest_run(&out);
        let header: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(run.join("header.json")).unwrap())
                .unwrap();
        assert_eq!(header["kind"], "rerun", "{header}");
        assert_eq!(
            header["selection"]["rerun_failed"],
            results.to_str().unwrap(),
            "{header}"
        );
        let schema: serde_json::Value = serde_json::from_str(
            &std::fs::read_to_string(
                Path::new(env!("CARGO_MANIFEST_DIR")).join("schemas/run-header.schema.json"),
            )
            .unwrap(),
        )
        .unwrap();
        assert!(jsonschema::is_valid(&schema, &header), "{header}");
        let before = files_under(&out);
        let output = eval_with(
            &[
                fixed.to_str().unwrap(),
                "--trace-layout",
                layout,
                "--resume",
            ],
            &out,
            &[],
        );
        assert_eq!(
            output.status.code(),
            Some(2),
            "{layout}: {}",
            stderr(&output)
        );
        assert_eq!(
            stderr(&output),
            format!(
                "error: --resume: the run `{}` was an interrupted `--rerun-failed {}`, whose rows --resume cannot continue: run that rerun again\n",
                run.display(),
                results.display()
            ),
            "{layout}"
        );
        assert_eq!(files_under(&out), before, "{layout}: nothing written");

        let output = rerun(&fixed, &results, None);
        assert_eq!(
            output.status.code(),
            Some(0),
            "{layout}: {}",
            stderr(&output)
        );
        let after = read_results(&results);
        let carried: Vec<bool> = after.tasks.iter().map(|t| t.carried_over).collect();
        assert_eq!(carried, [true, false, true, false], "{layout}");
        assert!(
            leftovers(&out).is_empty(),
            "{layout}: {:?}",
            leftovers(&out)
        );
    }
}

/// A baseline for the sample suite that its runs today move away from in every way: one task
/// regresses (it finished before), one improves, one is new, and one is no longer in the suite.
fn drifted_baseline(dir: &Path, unsharded: &ResultsFile) -> PathBuf {
    use looptrace::run::ExitReason;
    let mut baseline = unsharded.clone();
    let row = |b: &mut ResultsFile, id: &str| b.tasks.iter().position(|t| t.id == id).unwrap();
    let i = row(&mut baseline, "budget-exhausted");
    baseline.tasks[i].exit_reason = ExitReason::Finished;
    let i = row(&mut baseline, "multiply-raw");
    baseline.tasks[i].exit_reason = ExitReason::InvalidModelOutput;
    let i = row(&mut baseline, "divide-scripted");
    baseline.tasks.remove(i);
    let mut gone = baseline.tasks[0].clone();
    gone.id = "gone".to_owned();
    baseline.tasks.push(gone);
    baseline.totals = looptrace::eval::Totals::of(&baseline.tasks);
    let path = dir.join("baseline.json");
    std::fs::write(&path, serde_json::to_string(&baseline).unwrap()).unwrap();
    path
}

/// A JUnit document without its timings: the values of `time` and `timestamp` attributes are
/// emptied (every `"` in a JUnit document delimits an attribute value).
fn without_timings(xml: &str) -> String {
    let pieces: Vec<&str> = xml.split('"').collect();
    let kept: Vec<&str> = pieces
        .iter()
        .enumerate()
        .map(|(i, piece)| {
            let timing = i % 2 == 1
                && [" time=", " timestamp="]
                    .iter()
                    .any(|name| pieces[i - 1].ends_with(name));
            if timing { "" } else { piece }
        })
        .collect();
    kept.join("\"")
}

#[test]
fn merge_with_a_baseline_and_junit_says_what_the_unsharded_eval_says() {
    let dir = tempfile::tempdir().unwrap();
    let suite = sample("suite.json");
    let suite = suite.to_str().unwrap();
    let first = dir.path().join("first");
    eval_with(&[suite], &first, &[]);
    let baseline = drifted_baseline(dir.path(), &read_results(&first.join("results.json")));
    let baseline = baseline.to_str().unwrap();
    let n = 3;
    let shards: Vec<PathBuf> = (1..=n)
        .map(|k| {
            let out = dir.path().join(format!("shard-{k}"));
            let output = eval_with(&[suite, "--shard", &format!("{k}/{n}")], &out, &[]);
            assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
            out.join("results.json")
        })
        .collect();
    for format in ["table", "json", "markdown", "csv"] {
        let junit_eval = dir.path().join(format!("eval-{format}.xml"));
        // The scale's rule decides the exit code here (`--regression-test none`).
        let unsharded = eval_with(
            &[
                suite,
                "--regression-test",
                "none",
                "--baseline",
                baseline,
                "--format",
                format,
                "--junit",
                junit_eval.to_str().unwrap(),
            ],
            &dir.path().join(format!("unsharded-{format}")),
            &[],
        );
        let junit_merge = dir.path().join(format!("merge-{format}.xml"));
        let merged = looptrace()
            .arg("merge")
            .args(&shards)
            .args(["--regression-test", "none"])
            .args(["--baseline", baseline, "--format", format, "--junit"])
            .arg(&junit_merge)
            .output()
            .unwrap();
        assert_eq!(
            unsharded.status.code(),
            Some(1),
            "a regression: {}",
            stderr(&unsharded)
        );
        assert_eq!(merged.status.code(), Some(1), "{}", stderr(&merged));
        let shown = crate::support::stdout(&merged);
        assert_eq!(shown, crate::support::stdout(&unsharded), "{format}");
        for id in [
            "budget-exhausted",
            "multiply-raw",
            "divide-scripted",
            "gone",
        ] {
            assert!(shown.contains(id), "{format} names {id}: {shown}");
        }
        let junit = std::fs::read_to_string(&junit_merge).unwrap();
        assert_eq!(
            without_timings(&junit),
            without_timings(&std::fs::read_to_string(&junit_eval).unwrap()),
            "{format}"
        );
        assert!(
            junit.contains("<testcase name=\"budget-exhausted\""),
            "{junit}"
        );
    }

    // The JSON report's comparison, as numbers: the transitions of the tasks in both files.
    let report = |args: &[&str]| -> serde_json::Value {
        let output = looptrace()
            .arg("merge")
            .args(&shards)
            .args(args)
            .output()
            .unwrap();
        serde_json::from_str(&crate::support::stdout(&output)).unwrap()
    };
    let json = report(&["--baseline", baseline, "--format", "json"]);
    let moved: Vec<(String, String, u64)> = json["baseline"]["transitions"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| {
            (
                t["from"].as_str().unwrap().to_owned(),
                t["to"].as_str().unwrap().to_owned(),
                t["tasks"].as_u64().unwrap(),
            )
        })
        .filter(|(from, to, _)| from != to)
        .collect();
    assert_eq!(
        moved,
        [
            ("finished".into(), "max_steps_exceeded".into(), 1),
            ("invalid_model_output".into(), "finished".into(), 1)
        ]
    );
    assert_eq!(
        json["baseline"]["added"],
        serde_json::json!(["divide-scripted"])
    );
    assert_eq!(json["baseline"]["removed"], serde_json::json!(["gone"]));

    // The merged results as their own baseline: nothing moved, exit 0.
    let merged = dir.path().join("merged.json");
    let output = looptrace()
        .arg("merge")
        .args(&shards)
        .arg("--out")
        .arg(&merged)
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    let output = looptrace()
        .arg("merge")
        .args(&shards)
        .arg("--baseline")
        .arg(&merged)
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    assert!(crate::support::stdout(&output).contains("Regressions: none"));
}

#[test]
fn merge_compares_a_selection_and_a_partial_merge_only_with_what_they_ran() {
    let dir = tempfile::tempdir().unwrap();
    let suite = sample("suite.json");
    let suite = suite.to_str().unwrap();
    let first = dir.path().join("first");
    eval_with(&[suite], &first, &[]);
    let mut drifted = read_results(&first.join("results.json"));
    let baseline = drifted_baseline(dir.path(), &drifted);
    // Without the task no longer in the suite: merge cannot tell it from an unselected task.
    drifted = read_results(&baseline);
    drifted.tasks.retain(|t| t.id != "gone");
    std::fs::write(&baseline, serde_json::to_string(&drifted).unwrap()).unwrap();
    let baseline = baseline.to_str().unwrap();
    let selection = ["--skip", "multiply-*", "--skip", "replay-*"];
    let shards: Vec<PathBuf> = (1..=2)
        .map(|k| {
            let out = dir.path().join(format!("shard-{k}"));
            let mut args = vec![suite, "--shard"];
            let shard = format!("{k}/2");
            args.push(&shard);
            args.extend(selection);
            let output = eval_with(&args, &out, &[]);
            assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
            out.join("results.json")
        })
        .collect();
    // The scale's rule decides the exit code here (`--regression-test none`).
    let mut args = vec![
        suite,
        "--regression-test",
        "none",
        "--baseline",
        baseline,
        "--format",
        "json",
    ];
    args.extend(selection);
    let unsharded = eval_with(&args, &dir.path().join("unsharded"), &[]);
    let merged = looptrace()
        .arg("merge")
        .args(&shards)
        .args(["--regression-test", "none"])
        .args(["--baseline", baseline, "--format", "json"])
        .output()
        .unwrap();
    assert_eq!(merged.status.code(), unsharded.status.code());
    assert_eq!(merged.status.code(), Some(1), "{}", stderr(&merged));
    let merged: serde_json::Value = serde_json::from_str(&crate::support::stdout(&merged)).unwrap();
    let unsharded: serde_json::Value =
        serde_json::from_str(&crate::support::stdout(&unsharded)).unwrap();
    assert_eq!(merged, unsharded);
    assert_eq!(merged["baseline"]["removed"], serde_json::json!([]));
    assert_eq!(merged["baseline"]["improvements"], serde_json::json!([]));

    // Half the shards: only the tasks the merge holds are compared, none is "removed".
    let output = cli!(
        "merge",
        "--allow-partial",
        "--format",
        "json",
        "--baseline",
        baseline,
        &shards[0]
    );
    assert_eq!(output.status.code(), Some(1), "{}", stderr(&output));
    let partial: serde_json::Value =
        serde_json::from_str(&crate::support::stdout(&output)).unwrap();
    assert_eq!(partial["partial"], true);
    assert_eq!(
        partial["missing_shards"],
        serde_json::json!([{"index": 2, "count": 2}])
    );
    assert_eq!(partial["baseline"]["removed"], serde_json::json!([]));
    let compared: u64 = partial["baseline"]["transitions"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["tasks"].as_u64().unwrap())
        .sum();
    let added = partial["baseline"]["added"].as_array().unwrap().len() as u64;
    assert_eq!(compared + added, partial["tasks"].as_u64().unwrap());
}

#[test]
fn merge_refuses_a_bad_baseline_or_junit_path_before_writing_anything() {
    let dir = tempfile::tempdir().unwrap();
    let suite = sample("suite.json");
    let one = dir.path().join("one");
    eval_with(&[suite.to_str().unwrap()], &one, &[]);
    let results = one.join("results.json");
    let mut other = read_results(&results);
    other.suite.name = "other".to_owned();
    let other_path = dir.path().join("other.json");
    std::fs::write(&other_path, serde_json::to_string(&other).unwrap()).unwrap();
    let out = dir.path().join("merged.json");
    let junit = dir.path().join("junit.xml");
    let (r, o, j, op) = (
        results.to_str().unwrap(),
        out.to_str().unwrap(),
        junit.to_str().unwrap(),
        other_path.to_str().unwrap(),
    );
    let missing = dir.path().join("no/such/junit.xml");
    let cases: [(Vec<&str>, &str); 5] = [
        (
            vec![r, "--out", o, "--junit", j, "--baseline", op],
            "is from suite \"other\", this is suite \"sample\" (--baseline-any-suite",
        ),
        (
            vec![r, "--out", o, "--junit", r],
            "--junit would overwrite the input",
        ),
        (
            vec![r, "--junit", j, "--baseline", j],
            "--junit would overwrite the input",
        ),
        (vec![r, "--out", o, "--junit", o], "is the --out file"),
        (
            vec![r, "--out", o, "--junit", missing.to_str().unwrap()],
            "--junit: cannot write in",
        ),
    ];
    for (args, expected) in cases {
        let before = std::fs::read_to_string(&results).unwrap();
        let output = looptrace().arg("merge").args(&args).output().unwrap();
        crate::eval_guards::assert_refused(&output, expected);
        assert!(
            !out.exists() && !junit.exists(),
            "{args:?}: nothing is written"
        );
        assert_eq!(std::fs::read_to_string(&results).unwrap(), before);
    }
    let output = cli!(
        "merge",
        r,
        "--baseline",
        op,
        "--baseline-any-suite",
        "--junit",
        j
    );
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    assert!(junit.is_file());
}

#[test]
fn rerun_failed_runs_again_a_task_an_interrupted_repeat_run_left_short() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("out");
    let fixed = rerun_suite(dir.path(), false);
    let first = eval_with(&[fixed.to_str().unwrap(), "--repeat", "3"], &out, &[]);
    assert_eq!(first.status.code(), Some(0), "{}", stderr(&first));
    // As an interruption leaves it: `ok-2` has only its first repeat.
    let results = out.join("results.json");
    let mut value: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&results).unwrap()).unwrap();
    value["interrupted"] = serde_json::json!(true);
    value["tasks"]
        .as_array_mut()
        .unwrap()
        .retain(|row| row["id"] != "ok-2" || row["repeat"] == 1);
    std::fs::write(&results, value.to_string()).unwrap();

    let output = looptrace()
        .arg("eval")
        .arg(&fixed)
        .args(["--jobs", "1", "--repeat", "3", "--rerun-failed"])
        .arg(&results)
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    let after = read_results(&results);
    let ok_2: Vec<(Option<u32>, bool)> = after
        .tasks
        .iter()
        .filter(|t| t.id == "ok-2")
        .map(|t| (t.repeat, t.carried_over))
        .collect();
    assert_eq!(ok_2, [(Some(1), false), (Some(2), false), (Some(3), false)]);
    assert_eq!(after.tasks.len(), 12, "every task three times");
    assert!(!after.interrupted);
}

/// Evaluates the fixed rerun suite with `extra` into `DIR/out`, crashing it before its second
/// row, and writes the view of the run the crash left; returns `--rerun-failed` of it, with its
/// arguments.
fn interrupted_after_the_first_task(dir: &Path, extra: &[&str]) -> impl Fn(&[&str]) -> Output {
    let out = dir.join("out");
    let fixed = rerun_suite(dir, false);
    let mut args = vec![fixed.to_str().unwrap(), "--jobs", "1"];
    args.extend_from_slice(extra);
    // A real crash before the second row, then the view of the run it left.
    let fault = [("LOOPTRACE_FAULT", "abort_before_row:2".to_owned())];
    let first = eval_with(&args, &out, &fault);
    assert_eq!(first.status.code(), None, "{}", stderr(&first));
    let view = cli!("eval", "--rebuild-view", &out);
    assert_eq!(view.status.code(), Some(0), "{}", stderr(&view));
    let results = out.join("results.json");
    let rows = read_results(&results);
    assert!(rows.interrupted);
    assert_eq!(rows.tasks.len(), 1);
    rerun_failed(fixed, results)
}

/// `eval SUITE --rerun-failed RESULTS -q`, with the arguments it is given.
fn rerun_failed(suite: PathBuf, results: PathBuf) -> impl Fn(&[&str]) -> Output {
    move |extra: &[&str]| {
        looptrace()
            .arg("eval")
            .arg(&suite)
            .arg("--rerun-failed")
            .arg(&results)
            .args(extra)
            .arg("-q")
            .output()
            .unwrap()
    }
}

#[test]
fn a_narrowed_rerun_of_interrupted_results_keeps_them_interrupted_until_every_task_ran() {
    let dir = tempfile::tempdir().unwrap();
    let rerun = interrupted_after_the_first_task(dir.path(), &[]);
    let results = dir.path().join("out/results.json");
    for narrowed in [&["--only", "bad-2"][..], &["--skip", "ok-2"]] {
        let output = rerun(narrowed);
        assert_eq!(
            output.status.code(),
            Some(1),
            "{narrowed:?}: {}",
            stderr(&output)
        );
        assert!(
            stderr(&output).contains("the results do not cover"),
            "{}",
            stderr(&output)
        );
        let after = read_results(&results);
        assert!(after.interrupted, "{narrowed:?}: tasks are still to run");
    }
    assert_eq!(read_results(&results).not_reached, ["ok-2"]);
    let after = read_results(&results);
    let ids: Vec<&str> = after.tasks.iter().map(|t| t.id.as_str()).collect();
    assert_eq!(ids, ["ok-1", "bad-1", "bad-2"]);
    // Not reached, so not `nothing to rerun`: the plain rerun runs the task left.
    let output = rerun(&[]);
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    let after = read_results(&results);
    assert!(!after.interrupted);
    let ran: Vec<(&str, bool)> = after
        .tasks
        .iter()
        .map(|t| (t.id.as_str(), t.carried_over))
        .collect();
    assert_eq!(
        ran,
        [
            ("ok-1", true),
            ("bad-1", true),
            ("ok-2", false),
            ("bad-2", true)
        ]
    );
}

#[test]
fn reruns_of_an_interrupted_selection_keep_to_its_tasks() {
    let dir = tempfile::tempdir().unwrap();
    let rerun = interrupted_after_the_first_task(dir.path(), &["--skip", "bad-2"]);
    let results = dir.path().join("out/results.json");
    let output = rerun(&["--only", "bad-1"]);
    assert_eq!(output.status.code(), Some(1), "{}", stderr(&output));
    // `bad-2` was never in the evaluation's scope.
    assert_eq!(read_results(&results).not_reached, ["ok-2"]);
    let output = rerun(&[]);
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    let after = read_results(&results);
    let ids: Vec<&str> = after.tasks.iter().map(|t| t.id.as_str()).collect();
    assert_eq!(ids, ["ok-1", "bad-1", "ok-2"]);
    assert!(!after.interrupted && after.not_reached.is_empty());
}

#[test]
fn a_narrowed_rerun_of_whole_results_still_runs_tasks_added_to_the_suite() {
    let dir = tempfile::tempdir().unwrap();
    let rerun = interrupted_after_the_first_task(dir.path(), &[]);
    let results = dir.path().join("out/results.json");
    let output = rerun(&["--only", "bad-1"]);
    assert_eq!(output.status.code(), Some(1), "{}", stderr(&output));
    // The suite gains a task: the results, whole but for what they list as not reached, run it.
    let fixed = dir.path().join("fixed.json");
    let mut suite: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&fixed).unwrap()).unwrap();
    let mut added = suite["tasks"][0].clone();
    added["id"] = serde_json::json!("new-1");
    suite["tasks"].as_array_mut().unwrap().push(added);
    std::fs::write(&fixed, suite.to_string()).unwrap();
    let output = rerun(&[]);
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    let after = read_results(&results);
    let ids: Vec<&str> = after.tasks.iter().map(|t| t.id.as_str()).collect();
    assert_eq!(ids, ["ok-1", "bad-1", "ok-2", "bad-2", "new-1"]);
    assert!(!after.interrupted);
}

#[test]
fn interrupted_results_owe_nothing_to_tasks_that_left_the_suite() {
    let dir = tempfile::tempdir().unwrap();
    let rerun = interrupted_after_the_first_task(dir.path(), &[]);
    let results = dir.path().join("out/results.json");
    // Some tasks not reached are still in the suite: they are owed, and `--only` leaves them.
    let fixed = dir.path().join("fixed.json");
    let keep_tasks = |ids: &[&str]| {
        let mut suite: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(&fixed).unwrap()).unwrap();
        suite["tasks"]
            .as_array_mut()
            .unwrap()
            .retain(|task| ids.contains(&task["id"].as_str().unwrap()));
        std::fs::write(&fixed, suite.to_string()).unwrap();
    };
    keep_tasks(&["ok-1", "bad-1"]);
    let output = rerun(&["--only", "ok-1"]);
    assert_eq!(output.status.code(), Some(1), "{}", stderr(&output));
    assert!(
        stderr(&output).contains("nothing to rerun"),
        "{}",
        stderr(&output)
    );
    // Every task not reached has left the suite: nothing is owed, whatever the selection.
    keep_tasks(&["ok-1"]);
    let before = std::fs::read(&results).unwrap();
    for narrowed in [&[][..], &["--only", "ok-1"]] {
        let output = rerun(narrowed);
        assert_eq!(
            output.status.code(),
            Some(0),
            "{narrowed:?}: {}",
            stderr(&output)
        );
        assert!(
            stderr(&output).contains("are no longer in the suite"),
            "{}",
            stderr(&output)
        );
        assert_eq!(std::fs::read(&results).unwrap(), before, "left as it was");
    }
}

#[test]
fn merge_never_writes_over_a_recording_the_suite_replays() {
    let dir = tempfile::tempdir().unwrap();
    let source = dir.path().join("source");
    let fixed = rerun_suite(dir.path(), false);
    let output = eval_with(
        &[
            fixed.to_str().unwrap(),
            "--only",
            "ok-1",
            "--capture",
            "full",
        ],
        &source,
        &[],
    );
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    let recording = dir.path().join("rec.jsonl");
    std::fs::copy(crate::support::trace_for(&source, "ok-1"), &recording).unwrap();
    let suite = dir.path().join("replay.json");
    let replay = serde_json::json!({"replay": "rec.jsonl"});
    std::fs::write(
        &suite,
        serde_json::json!({"name": "replay", "tasks": [
            {"id": "a", "model": replay}, {"id": "b", "model": replay}
        ]})
        .to_string(),
    )
    .unwrap();
    let shards: Vec<PathBuf> = [1, 2]
        .map(|k| {
            let out = dir.path().join(format!("s{k}"));
            let split = format!("{k}/2");
            let output = eval_with(&[suite.to_str().unwrap(), "--shard", &split], &out, &[]);
            assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
            out.join("results.json")
        })
        .into();
    let before = std::fs::read(&recording).unwrap();
    for flag in ["--out", "--junit", "--html"] {
        let output = cli!(
            "merge", &shards[0], &shards[1], "--suite", &suite, flag, &recording, "-q"
        );
        assert_eq!(output.status.code(), Some(2), "{flag}: {}", stderr(&output));
        assert!(
            stderr(&output).contains("would overwrite the input"),
            "{}",
            stderr(&output)
        );
        assert_eq!(std::fs::read(&recording).unwrap(), before);
    }
}

#[test]
fn a_narrowed_rerun_of_complete_results_leaves_added_tasks_for_the_next() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("out");
    let failing = rerun_suite(dir.path(), true);
    let first = eval_with(&[failing.to_str().unwrap()], &out, &[]);
    assert_eq!(first.status.code(), Some(1), "{}", stderr(&first));
    // The suite gains a task, and a rerun narrowed to one failed task leaves it out.
    let mut suite: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&failing).unwrap()).unwrap();
    let mut added = suite["tasks"][1].clone();
    added["id"] = serde_json::json!("new-1");
    suite["tasks"].as_array_mut().unwrap().push(added);
    std::fs::write(&failing, suite.to_string()).unwrap();
    let results = out.join("results.json");
    let rerun = rerun_failed(failing.clone(), results.clone());
    let output = rerun(&["--only", "bad-1"]);
    assert!(
        stderr(&output).contains("not run yet: 1 task"),
        "{}",
        stderr(&output)
    );
    let after = read_results(&results);
    assert_eq!(after.not_reached, ["new-1"]);
    assert!(!after.interrupted, "nothing was interrupted");
    // The next rerun runs it (and the failed tasks again): it fails, and says so.
    let output = rerun(&[]);
    assert_eq!(output.status.code(), Some(1), "{}", stderr(&output));
    let after = read_results(&results);
    assert!(
        after
            .tasks
            .iter()
            .any(|t| t.id == "new-1" && !t.carried_over)
    );
    assert!(after.not_reached.is_empty());
}

#[test]
fn merge_with_the_suite_places_a_shards_rows_by_task_id() {
    let dir = tempfile::tempdir().unwrap();
    let suite = rerun_suite(dir.path(), false);
    let shard = |k: usize| {
        let out = dir.path().join(format!("s{k}"));
        let split = format!("{k}/2");
        let output = eval_with(&[suite.to_str().unwrap(), "--shard", &split], &out, &[]);
        assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
        out.join("results.json")
    };
    let (one, two) = (shard(1), shard(2));
    // Shard 2/2 holds bad-1 and bad-2: without its first row, the second is the one it holds first.
    edit_results(&two, |value| {
        rows_of(value).retain(|row| row["id"] != "bad-1")
    });
    let merged = dir.path().join("merged.json");
    let merge = |extra: &[&str]| {
        looptrace()
            .arg("merge")
            .arg(&one)
            .arg(&two)
            .args(["--allow-partial", "-q", "--out"])
            .arg(&merged)
            .args(extra)
            .output()
            .unwrap()
    };
    let ids = || -> Vec<String> {
        read_results(&merged)
            .tasks
            .iter()
            .map(|t| t.id.clone())
            .collect()
    };
    let output = merge(&["--suite", suite.to_str().unwrap()]);
    assert_eq!(output.status.code(), Some(1), "{}", stderr(&output));
    assert!(
        stderr(&output).contains("lacks 1 of its 2 rows: bad-1"),
        "{}",
        stderr(&output)
    );
    assert_eq!(ids(), ["ok-1", "ok-2", "bad-2"]);
    // Without the suite the rows stay in the order the shard holds them, and merge says so.
    let output = merge(&[]);
    assert_eq!(output.status.code(), Some(1), "{}", stderr(&output));
    assert!(
        stderr(&output).contains("without --suite merge cannot tell which"),
        "{}",
        stderr(&output)
    );

    // With the suite, a row that is not of the shard's share is refused.
    edit_results(&two, |value| {
        rows_of(value)[0]["id"] = serde_json::json!("ok-1")
    });
    let output = merge(&["--suite", suite.to_str().unwrap()]);
    assert_eq!(output.status.code(), Some(2), "{}", stderr(&output));
    assert!(
        stderr(&output).contains("which belongs to shard 1/2 of the suite, not 2/2"),
        "{}",
        stderr(&output)
    );
}

/// Shards 1/2 and 2/2 of the sample suite, run with `extra` into `DIR/NAME-K`: their results.
fn two_shards(dir: &Path, name: &str, extra: &[&str]) -> [PathBuf; 2] {
    let suite = sample("suite.json");
    [1, 2].map(|k| {
        let out = dir.join(format!("{name}-{k}"));
        let shard = format!("{k}/2");
        let mut args = vec![suite.to_str().unwrap(), "--shard", &shard];
        args.extend(extra);
        let output = eval_with(&args, &out, &[]);
        assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
        out.join("results.json")
    })
}

/// Changes the results file at `path` as `edit` changes its JSON.
fn edit_results(path: &Path, edit: impl FnOnce(&mut serde_json::Value)) {
    let mut value: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap();
    edit(&mut value);
    std::fs::write(path, value.to_string()).unwrap();
}

/// The rows of a results file as JSON.
fn rows_of(value: &mut serde_json::Value) -> &mut Vec<serde_json::Value> {
    value["tasks"].as_array_mut().unwrap()
}

#[test]
fn merge_refuses_a_shard_that_lacks_rows_and_names_what_it_lacks() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("merged.json");
    let junit = dir.path().join("junit.xml");
    let html = dir.path().join("merged.html");
    let merge = |shards: &[PathBuf], extra: &[&str]| {
        looptrace()
            .arg("merge")
            .args(shards)
            .arg("--out")
            .arg(&out)
            .arg("--junit")
            .arg(&junit)
            .arg("--html")
            .arg(&html)
            .args(extra)
            .output()
            .unwrap()
    };
    let refused = |output: Output, expected: &str| {
        assert_eq!(output.status.code(), Some(2), "{}", stderr(&output));
        assert!(stderr(&output).contains(expected), "{}", stderr(&output));
        assert!(!out.exists() && !junit.exists() && !html.exists());
    };

    // A selection lists the tasks: shard 2/2 of the 8 selected is gated-answer,
    // recovers-after-feedback, never-valid and no-expectations. One row deleted by hand:
    let listed = two_shards(dir.path(), "listed", &["--skip", "replay-*"]);
    edit_results(&listed[1], |v| {
        rows_of(v).retain(|row| row["id"] != "never-valid");
    });
    let output = merge(&listed, &[]);
    let shard2 = format!("shard 2/2 (`{}`)", listed[1].display());
    refused(
        output,
        &format!("{shard2} lacks 1 of its 4 rows: never-valid (give every shard whole"),
    );
    let output = merge(&listed, &["--allow-partial"]);
    assert_eq!(output.status.code(), Some(1), "{}", stderr(&output));
    assert!(
        stderr(&output).contains(&format!(
            "partial: {shard2} lacks 1 of its 4 rows: never-valid"
        )),
        "{}",
        stderr(&output)
    );
    let merged = read_results(&out);
    assert!(merged.partial && !merged.interrupted);
    let value: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&out).unwrap()).unwrap();
    assert_eq!(
        value["missing_shards"],
        serde_json::json!([{"index": 2, "count": 2, "missing_rows": 1}])
    );
    let mut expected = merged.selection.clone().unwrap().tasks;
    expected.retain(|id| id != "never-valid");
    let ids: Vec<String> = merged.tasks.iter().map(|t| t.id.clone()).collect();
    assert_eq!(ids, expected, "suite order");
    for path in [&out, &junit, &html] {
        std::fs::remove_file(path).unwrap();
    }

    // A row of another shard, or a row twice, cannot belong: refused even with --allow-partial.
    let stray = serde_json::to_value(&read_results(&listed[0]).tasks[0]).unwrap();
    edit_results(&listed[1], |v| rows_of(v).push(stray));
    refused(
        merge(&listed, &["--allow-partial"]),
        "holds task \"multiply-raw\", which belongs to shard 1/2 of its selection, not 2/2",
    );

    // Without a selection only the count of a shard's tasks is known: shard 2/2 of the 10 has 5.
    // Interrupted after two of them:
    let whole = two_shards(dir.path(), "whole", &[]);
    edit_results(&whole[1], |v| {
        v["interrupted"] = serde_json::json!(true);
        rows_of(v).truncate(2);
    });
    let shard2 = format!("shard 2/2 (`{}`)", whole[1].display());
    refused(
        merge(&whole, &[]),
        &format!(
            "{shard2} lacks 3 of its 5 rows (it was interrupted): 3 tasks of its share have no row"
        ),
    );
    let output = merge(&whole, &["--allow-partial"]);
    assert_eq!(output.status.code(), Some(1), "{}", stderr(&output));
    let merged = read_results(&out);
    assert!(merged.partial && merged.interrupted);
    assert_eq!(merged.tasks.len(), 7);
    for path in [&out, &junit, &html] {
        std::fs::remove_file(path).unwrap();
    }
    edit_results(&whole[1], |v| {
        let again = rows_of(v)[0].clone();
        rows_of(v).push(again);
    });
    refused(merge(&whole, &["--allow-partial"]), "twice");

    // An edited shard 1/2 of the whole suite, not interrupted, is caught by its count.
    let whole = two_shards(dir.path(), "edited", &[]);
    edit_results(&whole[0], |v| {
        rows_of(v).remove(2);
    });
    refused(
        merge(&whole, &[]),
        &format!(
            "shard 1/2 (`{}`) lacks 1 of its 5 rows: 1 task of its share has no row",
            whole[0].display()
        ),
    );
}

#[test]
fn merge_checks_html_like_its_other_outputs_before_writing_anything() {
    let dir = tempfile::tempdir().unwrap();
    let shards = two_shards(dir.path(), "shard", &[]);
    let baseline = dir.path().join("baseline.json");
    std::fs::copy(&shards[0], &baseline).unwrap();
    let target = dir.path().join("target.txt");
    std::fs::write(&target, "kept\n").unwrap();
    let link = dir.path().join("link.html");
    std::os::unix::fs::symlink(&target, &link).unwrap();
    let folder = dir.path().join("folder");
    std::fs::create_dir(&folder).unwrap();
    let out = dir.path().join("merged.json");
    let junit = dir.path().join("junit.xml");
    let p = |path: &Path| path.to_str().unwrap().to_owned();
    let missing = dir.path().join("no/such/page.html");
    let cases: [(Vec<String>, String); 6] = [
        (
            vec!["--html".into(), p(&link)],
            format!("--html: `{}`: it is a symbolic link", link.display()),
        ),
        (
            vec!["--html".into(), p(&folder)],
            format!("--html: `{}` is a folder", folder.display()),
        ),
        (
            vec!["--html".into(), p(&missing)],
            "--html: cannot write in".to_owned(),
        ),
        (
            vec!["--html".into(), p(&junit)],
            format!("--html `{}` is the --junit file too", junit.display()),
        ),
        (
            vec!["--html".into(), p(&out)],
            format!("--html `{}` is the --out file too", out.display()),
        ),
        (
            vec![
                "--baseline".into(),
                p(&baseline),
                "--html".into(),
                p(&baseline),
            ],
            format!("--html would overwrite the input `{}`", baseline.display()),
        ),
    ];
    let before = std::fs::read(&baseline).unwrap();
    for (args, expected) in cases {
        let output = looptrace()
            .arg("merge")
            .args(&shards)
            .arg("--out")
            .arg(&out)
            .arg("--junit")
            .arg(&junit)
            .args(&args)
            .output()
            .unwrap();
        assert_eq!(
            output.status.code(),
            Some(2),
            "{args:?}: {}",
            stderr(&output)
        );
        assert!(
            stderr(&output).contains(&expected),
            "{args:?}: {}",
            stderr(&output)
        );
        assert!(
            !out.exists() && !junit.exists(),
            "{args:?}: nothing is written"
        );
        assert_eq!(std::fs::read(&baseline).unwrap(), before);
        assert_eq!(std::fs::read_to_string(&target).unwrap(), "kept\n");
        assert!(folder.read_dir().unwrap().next().is_none());
    }
}

#[test]
fn merge_refuses_a_shards_trace_as_output_and_a_row_that_hides_its_repeat() {
    let dir = tempfile::tempdir().unwrap();
    let failing = rerun_suite(dir.path(), true);
    let shard = |k: &str, extra: &[&str]| {
        let out = dir.path().join(format!("s{}{}", &k[..1], extra.len()));
        let mut args = vec![failing.to_str().unwrap(), "--shard", k];
        args.extend_from_slice(extra);
        let output = eval_with(&args, &out, &[]);
        assert!(
            matches!(output.status.code(), Some(0 | 1)),
            "{}",
            stderr(&output)
        );
        out.join("results.json")
    };
    let (one, two) = (shard("1/2", &[]), shard("2/2", &[]));
    let trace = crate::support::trace_for(&dir.path().join("s10"), "ok-1");
    let before = std::fs::read(&trace).unwrap();
    for flag in ["--junit", "--out"] {
        let output = cli!("merge", &one, &two, flag, &trace, "-q");
        assert_eq!(output.status.code(), Some(2), "{}", stderr(&output));
        assert!(
            stderr(&output).contains(&format!("would overwrite the input `{}`", trace.display())),
            "{}",
            stderr(&output)
        );
        assert_eq!(std::fs::read(&trace).unwrap(), before);
    }
    // Nor may an output be a trace the baseline's rows name.
    let baseline_dir = dir.path().join("baseline");
    eval_with(&[failing.to_str().unwrap()], &baseline_dir, &[]);
    let baseline_trace = crate::support::trace_for(&baseline_dir, "ok-1");
    let before = std::fs::read(&baseline_trace).unwrap();
    for flag in ["--junit", "--out", "--html"] {
        let output = cli!(
            "merge",
            &one,
            &two,
            "--baseline",
            baseline_dir.join("results.json"),
            flag,
            &baseline_trace,
            "-q"
        );
        assert_eq!(output.status.code(), Some(2), "{}", stderr(&output));
        assert!(
            stderr(&output).contains(&format!(
                "would overwrite the input `{}`",
                baseline_trace.display()
            )),
            "{}",
            stderr(&output)
        );
        assert_eq!(std::fs::read(&baseline_trace).unwrap(), before);
    }
    // A shard's trace the page cannot read is named with its shard's folder.
    let bad_trace = crate::support::trace_for(&dir.path().join("s20"), "bad-1");
    std::fs::write(&bad_trace, "not json\n").unwrap();
    let page = dir.path().join("page.html");
    let output = cli!("merge", &one, &two, "--html", &page, "-q");
    assert_eq!(output.status.code(), Some(2), "{}", stderr(&output));
    assert!(
        stderr(&output).contains(&format!("{}:1", bad_trace.display())),
        "{}",
        stderr(&output)
    );
    assert!(!page.exists());

    let (one, two) = (
        shard("1/2", &["--repeat", "2"]),
        shard("2/2", &["--repeat", "2"]),
    );
    let mut edited: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&two).unwrap()).unwrap();
    edited["tasks"][0].as_object_mut().unwrap().remove("repeat");
    std::fs::write(&two, edited.to_string()).unwrap();
    let merged = dir.path().join("merged.json");
    let output = cli!("merge", &one, &two, "--out", &merged, "--allow-partial");
    assert_eq!(output.status.code(), Some(2), "{}", stderr(&output));
    assert!(
        stderr(&output).contains(") without `repeat`, but its evaluation ran each task 2 times"),
        "{}",
        stderr(&output)
    );
    assert!(!merged.exists());
}

#[test]
fn merge_with_the_suite_shows_expected_values_in_full_as_eval_does() {
    let dir = tempfile::tempdir().unwrap();
    // A copy: one case below tries to write over it.
    let suite = dir.path().join("expectations.json");
    std::fs::copy(crate::support::fixture("eval/expectations.json"), &suite).unwrap();
    let suite = suite.to_str().unwrap();
    let unsharded = eval_with(&[suite], &dir.path().join("whole"), &[]);
    assert_eq!(unsharded.status.code(), Some(1), "{}", stderr(&unsharded));
    let shards: Vec<PathBuf> = [1, 2]
        .map(|k| {
            let out = dir.path().join(format!("shard-{k}"));
            eval_with(&[suite, "--shard", &format!("{k}/2")], &out, &[]);
            out.join("results.json")
        })
        .into();
    let merge = |extra: &[&str]| {
        looptrace()
            .arg("merge")
            .args(&shards)
            .args(extra)
            .output()
            .unwrap()
    };

    // Without the suite, merge has only the summaries the results hold.
    let summaries = merge(&[]);
    assert_eq!(summaries.status.code(), Some(1), "{}", stderr(&summaries));
    let shown = crate::support::stdout(&summaries);
    assert!(shown.contains("expected answer chars=2;sha256="), "{shown}");

    // With it, the report is the unsharded evaluation's, expected values in full.
    let merged = dir.path().join("merged.json");
    let full = merge(&["--suite", suite, "--out", merged.to_str().unwrap()]);
    assert_eq!(full.status.code(), Some(1), "{}", stderr(&full));
    let shown = crate::support::stdout(&full);
    assert_eq!(shown, crate::support::stdout(&unsharded));
    assert!(shown.contains("expected answer \"84\""), "{shown}");
    assert!(
        shown.contains("expected the answer to contain \"84\""),
        "{shown}"
    );
    // Summaries of another kind of hash (a key set here, none for the shards) cannot match.
    let keyed = looptrace()
        .arg("merge")
        .args(&shards)
        .args(["--suite", suite])
        .env("LOOPTRACE_HASH_KEY", "k")
        .output()
        .unwrap();
    assert_eq!(keyed.status.code(), Some(1), "{}", stderr(&keyed));
    assert!(
        stderr(&keyed).contains("warning: --suite: the results' summaries are plain SHA-256"),
        "{}",
        stderr(&keyed)
    );
    assert!(crate::support::stdout(&keyed).contains("expected answer chars=2;sha256="));
    // The file keeps the summaries.
    let written = std::fs::read_to_string(&merged).unwrap();
    assert!(written.contains("expected answer chars=2;sha256="));
    assert!(!written.contains("expected answer \\\"84\\\""));

    // Another suite, one that does not load, or the suite as the output: exit 2, nothing written.
    let out = dir.path().join("other.json");
    let broken = dir.path().join("broken.json");
    std::fs::write(&broken, "{\"name\": \"expectations\", \"tasks\": [").unwrap();
    let cases = [
        (
            sample("suite.json"),
            out.clone(),
            "is not the suite the results ran",
        ),
        (broken.clone(), out.clone(), "broken.json"),
        (suite.into(), suite.into(), "would overwrite the input"),
    ];
    // A fingerprint edited into characters of more than one byte is named, not a panic.
    let edited = dir.path().join("edited.json");
    std::fs::copy(&shards[0], &edited).unwrap();
    edit_results(&edited, |results| {
        results["suite"]["fingerprint"] = "aééééééééééééé".into();
    });
    let refused = looptrace()
        .args([
            "merge",
            edited.to_str().unwrap(),
            "--allow-partial",
            "--suite",
            suite,
        ])
        .output()
        .unwrap();
    assert_eq!(refused.status.code(), Some(2), "{}", stderr(&refused));
    assert!(
        stderr(&refused).contains("(fingerprint aééééééééééé)"),
        "{}",
        stderr(&refused)
    );
    for (given, written, message) in cases {
        let before = std::fs::read(&written).ok();
        let refused = merge(&[
            "--suite",
            given.to_str().unwrap(),
            "--out",
            written.to_str().unwrap(),
        ]);
        assert_eq!(refused.status.code(), Some(2), "{}", stderr(&refused));
        assert!(stderr(&refused).contains(message), "{}", stderr(&refused));
        assert_eq!(std::fs::read(&written).ok(), before, "{message}");
    }
}

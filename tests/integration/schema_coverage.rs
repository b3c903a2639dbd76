//! Every key looptrace writes is declared by its schema under `schemas/`. The schemas let readers
//! ignore unknown keys, so validating against them as published would pass a key that was added
//! without its documentation; here each schema is made closed (no key beyond those it lists) and
//! the files the CLI writes in every mode are held to it.

use std::path::{Path, PathBuf};

use serde_json::{Value, json};

use super::support::{
    closed, closed_validator, fixture, looptrace, sample, schema, schema_problems, stderr,
};

/// Every whole line of a JSON Lines file (a last line cut off by a crash has no newline).
fn lines(path: &Path) -> Vec<(String, Value)> {
    std::fs::read_to_string(path)
        .unwrap()
        .split_inclusive('\n')
        .enumerate()
        .filter(|(_, line)| line.ends_with('\n') && !line.trim().is_empty())
        .map(|(i, line)| {
            let place = format!("{}:{}", path.display(), i + 1);
            (place, serde_json::from_str(line).unwrap())
        })
        .collect()
}

/// Every file under `dir` that `wanted` takes, in order.
fn files_under(dir: &Path, wanted: &dyn Fn(&Path) -> bool) -> Vec<PathBuf> {
    let mut found = Vec::new();
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            found.extend(files_under(&path, wanted));
        } else if wanted(&path) {
            found.push(path);
        }
    }
    found.sort();
    found
}

/// A suite of three tasks, the second of which fails its expectation.
fn suite(dir: &Path) -> PathBuf {
    let task = |id: &str, expected: &str| {
        json!({
            "id": id,
            "prompt": "add 2 and 3, then say done",
            "model": {"actions": [
                {"type": "tool_call", "tool_name": "calculator",
                 "arguments": {"operation": "add", "left": 2, "right": 3}},
                {"type": "finish", "answer": "done"}
            ]},
            "expect": {"exit_reason": "finished", "answer_contains": expected}
        })
    };
    let path = dir.join("suite.json");
    let suite = json!({"name": "closed", "tasks": [task("ok-1", "done"), task("bad-1", "never"), task("ok-2", "done")]});
    std::fs::write(&path, suite.to_string()).unwrap();
    path
}

/// Runs the binary; the work must have run (exit 0, or 1 for the failing task), whatever it found.
fn looptrace_ran(args: &[&str]) {
    let output = looptrace().args(args).output().unwrap();
    let code = output.status.code();
    assert!(
        matches!(code, Some(0 | 1)),
        "{args:?}: exit {code:?}: {}",
        stderr(&output)
    );
}

#[test]
fn every_key_eval_and_merge_write_is_declared_by_their_schemas() {
    let dir = tempfile::tempdir().unwrap();
    let suite = suite(dir.path());
    let suite = suite.to_str().unwrap();
    let at = |name: &str| dir.path().join(name).to_str().unwrap().to_owned();
    let evals: [(&str, &[&str]); 6] = [
        ("plain", &[]),
        ("cut", &[]),
        ("full", &["--capture", "full", "--repeat", "2"]),
        (
            "single",
            &["--trace-layout", "single", "--trace-flush", "run"],
        ),
        ("shard1", &["--shard", "1/2", "--only", "*-1"]),
        ("shard2", &["--shard", "2/2", "--only", "*-1"]),
    ];
    for (out, extra) in evals {
        let out = at(out);
        let mut args = vec!["eval", suite, "--out", &out, "-q"];
        args.extend_from_slice(extra);
        looptrace_ran(&args);
    }
    // A rerun in place carries rows over and records its selection.
    looptrace_ran(&[
        "eval",
        suite,
        "--rerun-failed",
        &at("plain/results.json"),
        "-q",
    ]);
    // A narrowed rerun of interrupted results lists the tasks still not reached.
    let cut = dir.path().join("cut/results.json");
    let mut value: Value = serde_json::from_str(&std::fs::read_to_string(&cut).unwrap()).unwrap();
    value["interrupted"] = json!(true);
    value["tasks"]
        .as_array_mut()
        .unwrap()
        .retain(|row| row["id"] == "ok-1");
    std::fs::write(&cut, value.to_string()).unwrap();
    let cut = at("cut/results.json");
    looptrace_ran(&[
        "eval",
        suite,
        "--rerun-failed",
        &cut,
        "--only",
        "bad-1",
        "-q",
    ]);
    // An evaluation killed after its first row leaves the partial file for `--resume`.
    let killed = at("killed");
    let output = looptrace()
        .args(["eval", suite, "--out", &killed, "--jobs", "1", "-q"])
        .env("LOOPTRACE_FAULT", "abort_before_row:2")
        .output()
        .unwrap();
    assert_eq!(output.status.code(), None, "{}", stderr(&output));
    // Merges, whole and partial, with a baseline.
    let (shard1, shard2, merged) = (
        at("shard1/results.json"),
        at("shard2/results.json"),
        at("merged.json"),
    );
    let baseline = at("single/results.json");
    looptrace_ran(&[
        "merge",
        &shard1,
        &shard2,
        "--out",
        &merged,
        "--suite",
        suite,
        "--baseline",
        &baseline,
        "-q",
    ]);
    looptrace_ran(&[
        "merge",
        &shard1,
        "--allow-partial",
        "--out",
        &at("partial.json"),
        "-q",
    ]);

    let results = closed_validator("results.schema.json");
    // A row of the partial file is a row of `tasks`.
    let row = json!({"$defs": schema("results.schema.json")["$defs"], "$ref": "#/$defs/task"});
    let row = jsonschema::validator_for(&closed(&row)).unwrap();
    let header = closed_validator("run-header.schema.json");
    let seal = json!({"$defs": schema("run-header.schema.json")["$defs"], "$ref": "#/$defs/seal"});
    let seal = jsonschema::validator_for(&closed(&seal)).unwrap();
    let event = closed_validator("trace-event.schema.json");
    let mut found = Vec::new();
    let mut seen = std::collections::BTreeSet::new();
    for path in files_under(dir.path(), &|p| {
        p.extension().is_some_and(|e| e == "json" || e == "jsonl")
    }) {
        let name = path.file_name().unwrap().to_string_lossy().into_owned();
        if name == "suite.json" {
            continue;
        }
        if name == "rows.jsonl" {
            for (place, value) in lines(&path) {
                let validator = if value.get("sealed").is_some() {
                    &seal
                } else {
                    &row
                };
                found.extend(schema_problems(validator, &value, &place));
            }
            seen.insert("run rows");
        } else if name == "header.json" {
            let value: Value =
                serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
            found.extend(schema_problems(
                &header,
                &value,
                &path.display().to_string(),
            ));
            seen.insert("run header");
        } else if name.ends_with(".jsonl") {
            for (place, value) in lines(&path) {
                found.extend(schema_problems(&event, &value, &place));
            }
            seen.insert("trace");
        } else {
            let value: Value =
                serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
            for key in [
                "selection",
                "not_reached",
                "shard",
                "partial",
                "missing_shards",
                "repeats",
            ] {
                // Written only when it says something: `partial: false` and `[]` are not.
                let says = |v: &Value| !(v.is_null() || v == &json!(false) || v == &json!([]));
                if value.get(key).is_some_and(says) {
                    seen.insert(key);
                }
            }
            if value["tasks"]
                .as_array()
                .unwrap()
                .iter()
                .any(|r| r.get("carried_over").is_some())
            {
                seen.insert("carried_over");
            }
            found.extend(schema_problems(
                &results,
                &value,
                &path.display().to_string(),
            ));
        }
    }
    assert!(
        found.is_empty(),
        "keys the schemas do not declare:\n{}",
        found.join("\n")
    );
    // The modes above wrote what they are meant to, so the schemas were held to it.
    let wanted = [
        "carried_over",
        "missing_shards",
        "not_reached",
        "partial",
        "run header",
        "run rows",
        "repeats",
        "selection",
        "shard",
        "trace",
    ];
    for key in wanted {
        assert!(seen.contains(key), "no file held {key}: {seen:?}");
    }
}

#[test]
fn every_key_of_the_traces_looptrace_writes_and_imports_is_declared_by_the_event_schema() {
    let event = closed_validator("trace-event.schema.json");
    let dir = tempfile::tempdir().unwrap();
    let mut traces: Vec<PathBuf> = files_under(&sample(""), &|p| {
        p.extension().is_some_and(|e| e == "jsonl")
    });
    for source in std::fs::read_dir(fixture("import")).unwrap() {
        let source = source.unwrap().path();
        for capture in ["summary", "full"] {
            let out = dir.path().join(format!(
                "{}-{capture}.jsonl",
                source.file_name().unwrap().to_string_lossy()
            ));
            looptrace_ran(&[
                "import",
                source.to_str().unwrap(),
                "--capture",
                capture,
                "-o",
                out.to_str().unwrap(),
            ]);
            traces.push(out);
        }
    }
    let mut found = Vec::new();
    for trace in &traces {
        for (place, value) in lines(trace) {
            found.extend(schema_problems(&event, &value, &place));
        }
    }
    assert!(traces.len() > 20, "{traces:?}");
    assert!(
        found.is_empty(),
        "keys the event schema does not declare:\n{}",
        found.join("\n")
    );
}

#[test]
fn a_closed_schema_refuses_a_key_it_does_not_list() {
    let event = closed_validator("trace-event.schema.json");
    let mut line = lines(&sample("finished.full.jsonl")).remove(0).1;
    assert!(schema_problems(&event, &line, "line").is_empty());
    line["undeclared"] = json!(1);
    assert_eq!(schema_problems(&event, &line, "line").len(), 1);
    line.as_object_mut().unwrap().remove("undeclared");
    // Nested objects the schema lists the keys of are closed too.
    line["model"] = json!({"name": "m", "provider": "p", "version": "v1"});
    let found = schema_problems(&event, &line, "line");
    assert!(found.iter().any(|p| p.contains("version")), "{found:?}");
}

#[test]
fn every_key_of_the_traces_imported_from_real_trajectories_is_declared_by_the_event_schema() {
    let Some(sources) = crate::support::real_trace_sources("real-traces schema check") else {
        return;
    };
    let event = closed_validator("trace-event.schema.json");
    let dir = tempfile::tempdir().unwrap();
    let mut found = Vec::new();
    for source in &sources {
        let out = dir.path().join("imported.jsonl");
        looptrace_ran(&[
            "import",
            source.to_str().unwrap(),
            "--capture",
            "full",
            "-o",
            out.to_str().unwrap(),
        ]);
        for (place, value) in lines(&out) {
            found.extend(schema_problems(&event, &value, &place));
        }
    }
    assert!(sources.len() >= 9, "{} sources", sources.len());
    assert!(
        found.is_empty(),
        "keys the event schema does not declare:\n{}",
        found.join("\n")
    );
}

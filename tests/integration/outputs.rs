//! Output files: no command writes through a symbolic link placed where it writes, and none
//! writes an output over one of its inputs or over another of its outputs. Each refusal is exit 2,
//! before anything runs, with the file named, and the file the link points at is left as it was.
//! A reused output folder holds only the traces its `results.json` lists.

use std::os::unix::fs::symlink;
use std::path::PathBuf;

use serde_json::json;

use crate::support::{looptrace, sample, stderr};

/// A folder with a one-task suite (`suite.json`, task `t1`), two inputs (`responses.txt`,
/// `finished.full.jsonl`) and a file no command may touch (`victim.txt`).
struct Setup {
    dir: tempfile::TempDir,
}

impl Setup {
    fn new() -> Setup {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(
            dir.path().join("suite.json"),
            json!({"name": "s", "tasks": [{"id": "t1", "prompt": "p", "model": {"actions": [{"type": "finish", "answer": "a"}]}}]})
                .to_string(),
        )
        .unwrap();
        std::fs::write(dir.path().join("victim.txt"), "precious\n").unwrap();
        for name in ["responses.txt", "finished.full.jsonl"] {
            std::fs::copy(sample(name), dir.path().join(name)).unwrap();
        }
        Setup { dir }
    }

    fn path(&self, name: &str) -> PathBuf {
        self.dir.path().join(name)
    }

    /// A symbolic link at `name` to the victim.
    fn link_to_victim(&self, name: &str) -> PathBuf {
        let link = self.path(name);
        std::fs::create_dir_all(link.parent().unwrap()).unwrap();
        symlink(self.path("victim.txt"), &link).unwrap();
        link
    }

    /// Runs `command` (split at spaces) in the folder.
    fn run(&self, command: &str) -> std::process::Output {
        looptrace()
            .args(command.split(' '))
            .current_dir(self.dir.path())
            .output()
            .unwrap()
    }

    /// Runs `command`; asserts exit 2 with `message` on stderr, the victim unchanged, and the
    /// files named in `kept` as they were.
    fn refused(&self, command: &str, message: &str, kept: &[&str]) {
        let before: Vec<Option<Vec<u8>>> = kept
            .iter()
            .map(|f| std::fs::read(self.path(f)).ok())
            .collect();
        let output = self.run(command);
        assert_eq!(
            output.status.code(),
            Some(2),
            "{command}: {}",
            stderr(&output)
        );
        assert!(
            stderr(&output).contains(message),
            "expected {message:?} in: {}",
            stderr(&output)
        );
        assert_eq!(
            std::fs::read_to_string(self.path("victim.txt")).unwrap(),
            "precious\n"
        );
        let after: Vec<Option<Vec<u8>>> = kept
            .iter()
            .map(|f| std::fs::read(self.path(f)).ok())
            .collect();
        assert_eq!(before, after, "{command} changed one of {kept:?}");
    }

    /// Runs `command` and asserts it succeeds.
    fn ok(&self, command: &str) {
        let output = self.run(command);
        assert_eq!(
            output.status.code(),
            Some(0),
            "{command}: {}",
            stderr(&output)
        );
    }
}

#[test]
fn eval_never_replaces_results_or_junit_through_a_link() {
    let setup = Setup::new();
    setup.link_to_victim("out/results.json");
    setup.refused(
        "eval suite.json --out out",
        "`out/results.json`: it is a symbolic link",
        &[],
    );
    std::fs::remove_file(setup.path("out/results.json")).unwrap();
    setup.link_to_victim("junit.xml");
    setup.refused(
        "eval suite.json --out out --junit junit.xml",
        "--junit: `junit.xml`: it is a symbolic link",
        &["out/traces/t1.jsonl", "out/results.json"],
    );
}

#[test]
fn eval_refuses_junit_over_its_own_results_or_traces() {
    let setup = Setup::new();
    for junit in ["out/results.json", "./out/../out/results.json"] {
        setup.refused(
            &format!("eval suite.json --out out --junit {junit}"),
            "is the output `out/results.json` of this eval",
            &["out/results.json"],
        );
    }
    // An earlier eval's results are not replaced by XML either, nor its runs.
    setup.ok("eval suite.json --out out");
    setup.refused(
        "eval suite.json --out out --junit out/runs/junit.xml",
        "where eval writes its runs",
        &["out/results.json"],
    );
    setup.refused(
        "eval suite.json --out out --junit out/results.json",
        "is the output",
        &["out/results.json"],
    );
}

#[test]
fn eval_refuses_a_report_named_as_its_output_folder_before_that_folder_exists() {
    let setup = Setup::new();
    for report in [
        "--junit out",
        "--junit out/runs",
        "--junit out/",
        "--html out",
    ] {
        setup.refused(
            &format!("eval suite.json --out out {report}"),
            "that this eval writes, not a file: choose a file",
            &["suite.json"],
        );
        assert!(!setup.path("out").exists(), "{report}: the run went ahead");
    }
}

#[test]
fn eval_refuses_junit_over_its_suite() {
    Setup::new().refused(
        "eval suite.json --out out --junit ./suite.json",
        "--junit would overwrite the input",
        &["suite.json"],
    );
}

#[test]
fn run_and_replay_never_append_through_a_link() {
    let setup = Setup::new();
    setup.link_to_victim("run.jsonl");
    setup.refused(
        "run --task t --responses responses.txt --trace run.jsonl",
        "`run.jsonl` for appending: it is a symbolic link, and looptrace never writes through one",
        &[],
    );
    setup.refused(
        "replay finished.full.jsonl --trace run.jsonl",
        "it is a symbolic link",
        &["finished.full.jsonl"],
    );
}

#[test]
fn run_refuses_a_trace_that_is_its_responses_file() {
    Setup::new().refused(
        "run --task t --responses responses.txt --trace ./responses.txt",
        "--trace would overwrite the input",
        &["responses.txt"],
    );
}

#[test]
fn run_and_replay_never_write_over_their_tools_file_or_finish_gate() {
    let setup = Setup::new();
    let tools = r#"{"tools":[{"name":"x","input_schema":{"type":"object"},"command":["cat"]}]}"#;
    std::fs::write(setup.path("tools.json"), tools).unwrap();
    std::fs::write(setup.path("gate.sh"), "#!/bin/sh\nexit 0\n").unwrap();
    let kept = ["tools.json", "gate.sh", "finished.full.jsonl"];
    for (command, message) in [
        (
            "run --task t --responses responses.txt --tools-file tools.json --trace tools.json",
            "--trace would overwrite the input `tools.json`",
        ),
        (
            "run --task t --responses responses.txt --finish-gate ./gate.sh --trace gate.sh",
            "--trace would overwrite the input `./gate.sh`",
        ),
        (
            "replay finished.full.jsonl --tools-file tools.json --trace ./tools.json",
            "--trace would overwrite the input `tools.json`",
        ),
        (
            "replay finished.full.jsonl --tools-file tools.json -o tools.json",
            "-o would overwrite the input `tools.json`",
        ),
        (
            "replay finished.full.jsonl --finish-gate ./gate.sh -o gate.sh",
            "-o would overwrite the input `./gate.sh`",
        ),
    ] {
        setup.refused(command, message, &kept);
    }
}

#[test]
fn report_and_export_never_write_over_a_file_read_through_a_folder_or_stdin() {
    let setup = Setup::new();
    std::fs::create_dir(setup.path("d")).unwrap();
    std::fs::copy(setup.path("finished.full.jsonl"), setup.path("d/a.jsonl")).unwrap();
    setup.ok("eval suite.json --out st -q");
    let trace = std::fs::read_dir(setup.path("st/runs"))
        .unwrap()
        .next()
        .unwrap()
        .unwrap();
    let trace = format!(
        "st/runs/{}/traces/t1.jsonl",
        trace.file_name().to_string_lossy()
    );
    let kept = ["d/a.jsonl", "st/results.json", trace.as_str()];
    setup.refused(
        "report d -o d/a.jsonl",
        "-o would overwrite the input `d/a.jsonl`",
        &kept,
    );
    setup.refused(
        "report st -o st/results.json",
        "would overwrite the input",
        &kept,
    );
    setup.refused(
        &format!("report st -o {trace}"),
        "would overwrite the input",
        &kept,
    );
    setup.refused("export --otlp st -o st/results.json", "is the input", &kept);
    // Standard input that is a file: the file it is.
    for command in [&["report", "-"][..], &["export", "--otlp", "-"]] {
        let output = looptrace()
            .args(command)
            .args(["-o", "a.jsonl"])
            .current_dir(setup.path("d"))
            .stdin(std::fs::File::open(setup.path("d/a.jsonl")).unwrap())
            .output()
            .unwrap();
        assert_eq!(
            output.status.code(),
            Some(2),
            "{command:?}: {}",
            stderr(&output)
        );
        assert!(
            stderr(&output).contains("/dev/stdin"),
            "{}",
            stderr(&output)
        );
    }
    let original = std::fs::read(setup.path("finished.full.jsonl")).unwrap();
    assert_eq!(std::fs::read(setup.path("d/a.jsonl")).unwrap(), original);
    setup.ok("report d -o d/report.txt");
}

#[test]
fn import_and_merge_never_replace_a_link_or_their_input() {
    let setup = Setup::new();
    setup.link_to_victim("imported.jsonl");
    let input = ["finished.full.jsonl"];
    setup.refused(
        "import finished.full.jsonl -o imported.jsonl",
        "-o `imported.jsonl`: it is a symbolic link",
        &input,
    );
    setup.refused(
        "import finished.full.jsonl -o ./finished.full.jsonl",
        "is the input `finished.full.jsonl`",
        &input,
    );
    setup.refused("import . -o finished.full.jsonl", "is the input", &input);

    setup.ok("eval suite.json --out out");
    setup.link_to_victim("merged.json");
    setup.refused(
        "merge out/results.json --out merged.json",
        "it is a symbolic link",
        &["out/results.json"],
    );
    assert!(setup.path("merged.json").is_symlink());
}

/// Writes a suite of tasks `ids` (each finishes at once) as `name` in the setup's folder.
fn write_suite(setup: &Setup, name: &str, ids: &[&str]) {
    let tasks: Vec<serde_json::Value> = ids
        .iter()
        .map(|id| json!({"id": id, "prompt": "p", "model": {"actions": [{"type": "finish", "answer": "a"}]}}))
        .collect();
    std::fs::write(
        setup.path(name),
        json!({"name": "s", "tasks": tasks}).to_string(),
    )
    .unwrap();
}

/// The task ids `DIR/results.json` lists, and the runs `report DIR` counts.
fn results_and_report(setup: &Setup, dir: &str) -> (Vec<String>, u64) {
    let results: serde_json::Value =
        serde_json::from_slice(&std::fs::read(setup.path(&format!("{dir}/results.json"))).unwrap())
            .unwrap();
    let ids = results["tasks"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["id"].as_str().unwrap().to_owned())
        .collect();
    let report = setup.run(&format!("report {dir} --format json"));
    assert_eq!(report.status.code(), Some(0), "{}", stderr(&report));
    let report: serde_json::Value = serde_json::from_slice(&report.stdout).unwrap();
    (ids, report["input"]["runs"].as_u64().unwrap())
}

#[test]
fn a_reused_output_folder_holds_only_the_runs_its_results_list() {
    let setup = Setup::new();
    write_suite(&setup, "big.json", &["t1", "t2", "t3"]);
    write_suite(&setup, "small.json", &["t1", "t2"]);
    setup.ok("eval big.json --out out");
    let output = setup.run("eval small.json --out out");
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    // Both runs stay under `out/runs`; `report out` reads those its results name.
    let (ids, runs) = results_and_report(&setup, "out");
    assert_eq!(ids, ["t1", "t2"]);
    assert_eq!(runs, ids.len() as u64);
    let all = setup.run("report out --all-runs --format json");
    let all: serde_json::Value = serde_json::from_slice(&all.stdout).unwrap();
    assert_eq!(all["input"]["runs"], 5);
}

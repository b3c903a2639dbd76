//! Folders of foreign files as users have them: one unreadable file does not stop the others
//! under `--lenient` and is named without it; skipped files are named; `--from` on a file of
//! another format, and a named file of no known format, get one clear message; a last line cut
//! short by a crash is left out with a warning, as the trace readers do.

use std::path::{Path, PathBuf};

use serde_json::Value;

use crate::support::{fixture, run, sample, stderr, stdout};

/// A folder holding copies of `files` (each `(name, source)`).
fn folder(files: &[(&str, PathBuf)]) -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    for (name, source) in files {
        std::fs::copy(source, dir.path().join(name)).unwrap();
    }
    dir
}

fn text(path: &Path) -> &str {
    path.to_str().unwrap()
}

/// The run ids of the `run_started` lines of a JSONL output.
fn run_ids(jsonl: &str) -> Vec<String> {
    jsonl
        .lines()
        .map(|line| serde_json::from_str::<Value>(line).unwrap())
        .filter(|event| event["event_type"] == "run_started")
        .map(|event| event["run_id"].as_str().unwrap().to_owned())
        .collect()
}

#[test]
fn one_unreadable_file_is_named_and_lenient_reads_the_rest() {
    let dir = folder(&[
        ("a-good.json", fixture("import/inspect/limits.json")),
        ("b-bomb.eval", fixture("archives/overlapping.eval")),
    ]);
    for command in ["report", "import", "export"] {
        let mut args = vec![command, text(dir.path())];
        if command == "export" {
            args.insert(1, "--otlp");
        }
        let output = run(&args);
        assert_eq!(
            output.status.code(),
            Some(2),
            "{command}: {}",
            stderr(&output)
        );
        let message = stderr(&output);
        assert!(message.contains("b-bomb.eval`"), "{command}: {message}");
        assert!(message.contains("overlap"), "{command}: {message}");
        assert!(message.contains("--lenient"), "{command}: {message}");

        args.push("--lenient");
        let output = run(&args);
        assert_eq!(
            output.status.code(),
            Some(0),
            "{command}: {}",
            stderr(&output)
        );
        let warning = stderr(&output);
        assert!(
            warning.contains("warning: skipped `") && warning.contains("b-bomb.eval`"),
            "{command}: {warning}"
        );
        assert!(!stdout(&output).is_empty(), "{command}");
    }
    let output = run(&["report", "--format", "json", "--lenient", text(dir.path())]);
    let report: Value = serde_json::from_str(&stdout(&output)).unwrap();
    assert_eq!(report["input"]["runs"], 4, "{report}");
}

#[test]
fn a_file_that_fails_half_way_is_left_out_whole_under_lenient() {
    let dir = folder(&[("a.jsonl", sample("finished.full.jsonl"))]);
    let good = std::fs::read_to_string(sample("multi_run.jsonl")).unwrap();
    let mut lines: Vec<&str> = good.lines().collect();
    let middle = lines.len() - 2;
    lines.insert(middle, "{\"run_id\": oops}");
    std::fs::write(dir.path().join("b.jsonl"), lines.join("\n") + "\n").unwrap();
    let out = dir.path().join("out.txt");
    let output = run(&["import", "--lenient", text(dir.path()), "-o", text(&out)]);
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    assert!(
        stderr(&output).contains("b.jsonl`: line"),
        "{}",
        stderr(&output)
    );
    let alone = run(&["import", text(&sample("finished.full.jsonl"))]);
    assert_eq!(
        run_ids(&std::fs::read_to_string(&out).unwrap()),
        run_ids(&stdout(&alone))
    );
}

#[test]
fn skipped_files_are_named_the_first_few() {
    let dir = tempfile::tempdir().unwrap();
    for name in ["a", "b", "c", "d", "e"] {
        std::fs::write(dir.path().join(format!("{name}.json")), "{\"x\": 1}\n").unwrap();
    }
    std::fs::copy(sample("finished.full.jsonl"), dir.path().join("t.jsonl")).unwrap();
    for command in ["import", "report"] {
        let output = run(&[command, text(dir.path())]);
        assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
        let shown = |name: &str| format!("`{}`", dir.path().join(name).display());
        let expected = format!(
            "warning: skipped 5 file(s) of no known trace format: {}, {}, {}, and 2 more\n",
            shown("a.json"),
            shown("b.json"),
            shown("c.json")
        );
        assert!(
            stderr(&output).contains(&expected),
            "{command}: {}",
            stderr(&output)
        );
    }
}

#[test]
fn a_named_file_of_no_known_format_gets_the_same_message_everywhere() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("notes.json");
    std::fs::write(&file, "{\"x\": 1}\n").unwrap();
    // JSON laid out over many lines, as suites are: its first line alone is no JSON.
    let indented = dir.path().join("suite.json");
    std::fs::write(
        &indented,
        "{\n  \"tasks\": [\n    {\"id\": \"a\"}\n  ]\n}\n",
    )
    .unwrap();
    for file in [&file, &indented] {
        let expected = format!(
            "error: `{}`: not a trace of any known format (`looptrace import --from FORMAT`",
            file.display()
        );
        for command in [
            &["import"][..],
            &["report"],
            &["show"],
            &["export", "--otlp"],
        ] {
            let output = run(&[command, &[text(file)]].concat());
            assert_eq!(output.status.code(), Some(2), "{command:?} {file:?}");
            assert!(
                stderr(&output).starts_with(&expected),
                "{command:?}: {}",
                stderr(&output)
            );
            assert!(stdout(&output).is_empty(), "{command:?}");
        }
    }
}

#[test]
fn from_a_format_the_file_plainly_is_not_is_refused_naming_both() {
    let trace = sample("finished.full.jsonl");
    let output = run(&["import", "--from", "inspect", text(&trace)]);
    assert_eq!(output.status.code(), Some(2));
    assert_eq!(
        stderr(&output),
        format!(
            "error: `{}`: not in the `inspect` format (it reads as `looptrace`: use `--from \
             looptrace`, or leave `--from` out)\n",
            trace.display()
        )
    );
    assert!(stdout(&output).is_empty());
    let inspect = fixture("import/inspect/limits.json");
    let output = run(&["import", "--from", "codex", text(&inspect)]);
    assert_eq!(output.status.code(), Some(2));
    assert!(
        stderr(&output).contains("not in the `codex` format (it reads as `inspect`"),
        "{}",
        stderr(&output)
    );
    let dir = tempfile::tempdir().unwrap();
    let prose = dir.path().join("notes.txt");
    std::fs::write(&prose, "just some notes\n").unwrap();
    let output = run(&["import", "--from", "codex", text(&prose)]);
    assert_eq!(output.status.code(), Some(2));
    assert!(
        stderr(&output).contains("not in the `codex` format (nor of any other known format)"),
        "{}",
        stderr(&output)
    );
}

#[test]
fn a_last_line_cut_by_a_crash_is_left_out_with_a_warning_as_the_readers_do() {
    let out = tempfile::tempdir().unwrap();
    let target = out.path().join("all.jsonl");
    let output = run(&["import", text(&sample("")), "-o", text(&target)]);
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    assert!(
        stderr(&output).contains("incomplete.jsonl`: line 4 is cut short"),
        "{}",
        stderr(&output)
    );
    // The same runs, and the same endings, as `report` reads from the folder.
    let imported = run(&["report", "--format", "json", text(&target)]);
    let direct = run(&["report", "--format", "json", text(&sample(""))]);
    let counts = |output: &std::process::Output| {
        let report: Value = serde_json::from_str(&stdout(output)).unwrap();
        report["exit_reasons"].clone()
    };
    assert_eq!(counts(&imported), counts(&direct));

    // A foreign JSON Lines file cut the same way.
    let dir = folder(&[("session.jsonl", fixture("import/claude-code/session.jsonl"))]);
    let session = dir.path().join("session.jsonl");
    let whole = std::fs::read_to_string(&session).unwrap();
    let whole_runs = run_ids(&stdout(&run(&["import", text(&session)])));
    let cut = format!("{whole}{{\"type\": \"assistant\", \"message\": {{\"content\": [");
    std::fs::write(&session, cut).unwrap();
    let output = run(&["import", text(&session)]);
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    assert!(
        stderr(&output).contains("is cut short"),
        "{}",
        stderr(&output)
    );
    assert_eq!(run_ids(&stdout(&output)), whole_runs);
}

//! What a person at a terminal sees: short flags, `--quiet`, help text, completions and man
//! pages, `show` on folders and standard input, widths, borders and colour.

use std::process::Output;

use crate::support::{looptrace, sample, stderr, stdout};

fn run_in_crate(args: &[&str]) -> Output {
    looptrace()
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .args(args)
        .output()
        .expect("failed to start looptrace")
}

#[test]
fn short_flags_mean_their_long_names() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("runs");
    let suite = sample("suite.json");
    let short = looptrace()
        .arg("eval")
        .arg(&suite)
        .args(["-j", "1", "-f", "json", "-o"])
        .arg(&out)
        .output()
        .unwrap();
    assert_eq!(short.status.code(), Some(0), "{}", stderr(&short));
    let report: serde_json::Value = serde_json::from_str(&stdout(&short)).unwrap();
    assert_eq!(report["tasks"], 10);
    assert!(out.join("results.json").is_file());

    let merged = dir.path().join("merged.json");
    let merge = looptrace()
        .arg("merge")
        .arg(out.join("results.json"))
        .args(["-f", "csv", "-o"])
        .arg(&merged)
        .output()
        .unwrap();
    assert_eq!(merge.status.code(), Some(0), "{}", stderr(&merge));
    assert!(stdout(&merge).starts_with("section,key,count,share,detail\n"));
    assert!(merged.is_file());
    let long = dir.path().join("long.json");
    let merge = looptrace()
        .arg("merge")
        .arg(out.join("results.json"))
        .arg("--output")
        .arg(&long)
        .output()
        .unwrap();
    assert_eq!(merge.status.code(), Some(0), "{}", stderr(&merge));
    assert!(long.is_file());

    let show = run_in_crate(&["show", "sample_traces/multi_run.jsonl", "-f", "json"]);
    assert_eq!(show.status.code(), Some(0), "{}", stderr(&show));
    assert!(stdout(&show).lines().all(|line| line.starts_with('{')));
    let report = run_in_crate(&["report", "sample_traces/multi_run.jsonl", "-f", "markdown"]);
    assert!(stdout(&report).starts_with("# looptrace report\n"));
    let replay = run_in_crate(&["replay", "sample_traces/multi_run.jsonl", "-f", "json"]);
    let replay: serde_json::Value = serde_json::from_str(&stdout(&replay)).unwrap();
    assert!(replay.is_object());
}

#[test]
fn quiet_prints_one_summary_line() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("runs");
    let eval = looptrace()
        .arg("eval")
        .arg(sample("suite.json"))
        .arg("--out")
        .arg(&out)
        .arg("--quiet")
        .output()
        .unwrap();
    assert_eq!(eval.status.code(), Some(0), "{}", stderr(&eval));
    assert_eq!(
        stdout(&eval),
        "Suite \"sample\": 10 tasks: 6 finished, 1 max_steps_exceeded, 2 invalid_model_output, \
         1 internal_error; expectations 9 met, 0 failed, 1 without\n"
    );
    assert_eq!(stderr(&eval), "");

    let merge = looptrace()
        .arg("merge")
        .arg(out.join("results.json"))
        .arg("-q")
        .output()
        .unwrap();
    assert_eq!(stdout(&merge), stdout(&eval));

    let report = run_in_crate(&["report", "sample_traces/multi_run.jsonl", "-q"]);
    assert_eq!(report.status.code(), Some(0));
    assert_eq!(
        stdout(&report),
        "3 runs in 1 file: 1 finished, 1 max_steps_exceeded, 1 invalid_model_output, \
         0 internal_error, 0 incomplete\n"
    );

    let replay = run_in_crate(&["replay", "sample_traces/multi_run.jsonl", "-q"]);
    assert_eq!(replay.status.code(), Some(0));
    assert_eq!(
        stdout(&replay),
        "3 runs of multi_run.jsonl replayed with live tools: 3 faithful, 0 diverged\n"
    );
}

#[test]
fn quiet_still_prints_errors() {
    let report = run_in_crate(&["report", "no/such/file.jsonl", "-q"]);
    assert_eq!(report.status.code(), Some(2));
    assert!(
        stderr(&report).contains("no/such/file.jsonl"),
        "{}",
        stderr(&report)
    );
    assert_eq!(stdout(&report), "");
}

#[test]
fn help_has_examples_and_exit_codes() {
    let top = run_in_crate(&["--help"]);
    assert_eq!(top.status.code(), Some(0));
    let text = stdout(&top);
    for line in [
        "Exit codes:",
        "  0  success",
        "  2  bad input or usage",
        "  3  internal error",
    ] {
        assert!(text.contains(line), "{line:?} missing from:\n{text}");
    }
    for command in [
        "run", "tools", "show", "eval", "merge", "report", "replay", "import", "export",
    ] {
        let help = run_in_crate(&[command, "--help"]);
        assert_eq!(help.status.code(), Some(0));
        let text = stdout(&help);
        let examples = text
            .split("Examples:\n")
            .nth(1)
            .unwrap_or_else(|| panic!("`{command} --help` has no examples:\n{text}"));
        assert!(
            examples
                .lines()
                .all(|l| l.starts_with(&format!("  looptrace {command}"))
                    || l.starts_with("  cat ")
                    || l.is_empty()),
            "`{command} --help` examples:\n{examples}"
        );
    }
}

#[test]
fn completions_cover_every_command_and_flag() {
    for shell in ["bash", "elvish", "fish", "powershell", "zsh"] {
        let output = run_in_crate(&["completions", shell]);
        assert_eq!(
            output.status.code(),
            Some(0),
            "{shell}: {}",
            stderr(&output)
        );
        let script = stdout(&output);
        for word in ["replay", "completions", "quiet", "baseline-any-suite"] {
            assert!(script.contains(word), "{shell} completion lacks {word}");
        }
    }
    let bash = stdout(&run_in_crate(&["completions", "bash"]));
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("looptrace.bash");
    std::fs::write(&file, bash).unwrap();
    let syntax = std::process::Command::new("bash")
        .arg("-n")
        .arg(&file)
        .output()
        .unwrap();
    assert!(syntax.status.success(), "{}", stderr(&syntax));

    let unknown = run_in_crate(&["completions", "tcsh"]);
    assert_eq!(unknown.status.code(), Some(2));
}

#[test]
fn man_prints_roff_pages() {
    let output = run_in_crate(&["man"]);
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    let page = stdout(&output);
    assert!(page.contains(".TH looptrace 1"), "{page}");
    assert!(page.contains(".SH SUBCOMMANDS"));
    assert!(page.contains("looptrace\\-replay(1)"));
    assert!(
        page.contains("internal error"),
        "exit codes missing:\n{page}"
    );

    let eval = stdout(&run_in_crate(&["man", "eval"]));
    assert!(eval.contains(".TH looptrace-eval 1"), "{eval}");
    assert!(eval.contains("\\fB\\-q\\fR, \\fB\\-\\-quiet\\fR"), "{eval}");

    let unknown = run_in_crate(&["man", "evaluate"]);
    assert_eq!(unknown.status.code(), Some(2));
    assert!(stderr(&unknown).contains("no command \"evaluate\""));
    assert_eq!(stdout(&unknown), "");
}

#[test]
fn show_reads_folders_in_sorted_order_and_standard_input() {
    let dir = tempfile::tempdir().unwrap();
    let nested = dir.path().join("b");
    std::fs::create_dir(&nested).unwrap();
    std::fs::copy(sample("multi_run.jsonl"), nested.join("z.jsonl")).unwrap();
    std::fs::copy(sample("finished.full.jsonl"), dir.path().join("a.jsonl")).unwrap();
    let folder = looptrace().arg("show").arg(dir.path()).output().unwrap();
    assert_eq!(folder.status.code(), Some(0), "{}", stderr(&folder));
    let text = stdout(&folder);
    let heads: Vec<&str> = text
        .lines()
        .filter(|l| l.starts_with("== ") || l.starts_with("run "))
        .collect();
    let a = format!("== {} ==", dir.path().join("a.jsonl").display());
    let z = format!("== {} ==", nested.join("z.jsonl").display());
    assert_eq!(
        heads,
        [
            a.as_str(),
            "run finished-full (5 events)",
            z.as_str(),
            "run multi-a (5 events)",
            "run multi-b (8 events)",
            "run multi-c (4 events)",
        ]
    );

    // One file keeps today's output: no header.
    let one = run_in_crate(&["show", "sample_traces/multi_run.jsonl"]);
    let piped = looptrace()
        .args(["show", "-"])
        .stdin(std::fs::File::open(sample("multi_run.jsonl")).unwrap())
        .output()
        .unwrap();
    assert_eq!(piped.status.code(), Some(0), "{}", stderr(&piped));
    assert_eq!(stdout(&piped), stdout(&one));
    assert!(!stdout(&one).contains("=="));

    // `--run` counts occurrences across every file.
    let selected = looptrace()
        .arg("show")
        .arg(dir.path())
        .args(["--run", "multi-b", "-f", "json"])
        .output()
        .unwrap();
    assert_eq!(selected.status.code(), Some(0), "{}", stderr(&selected));
    assert_eq!(stdout(&selected).lines().count(), 8);
}

#[test]
fn show_and_report_of_an_empty_folder_warn_naming_what_they_looked_for() {
    let dir = tempfile::tempdir().unwrap();
    for (command, quiet) in [("show", None), ("report", Some("-q"))] {
        let output = looptrace()
            .arg(command)
            .arg(dir.path())
            .args(quiet)
            .output()
            .unwrap();
        assert_eq!(output.status.code(), Some(0), "{command}");
        if command == "show" {
            assert_eq!(stdout(&output), "");
        }
        let warning = stderr(&output);
        assert!(warning.starts_with("warning: "), "{command}: {warning}");
        assert!(
            warning.contains("no trace files found (looked for `*.jsonl`, `*.json`, `*.traj`, `*.eval`, `*.yaml`, `*.yml`)"),
            "{command}: {warning}"
        );
    }
}

/// The display columns of a line (box drawing and `…` take one each; none are wide).
fn columns(line: &str) -> usize {
    looptrace::terminal::display_width(line)
}

#[test]
fn eval_fits_80_columns_and_wraps_long_failure_reasons() {
    let dir = tempfile::tempdir().unwrap();
    let suite = crate::support::fixture("terminal/wide_suite.json");
    let fitted = looptrace()
        .arg("eval")
        .arg(&suite)
        .arg("-o")
        .arg(dir.path())
        .env("COLUMNS", "80")
        .output()
        .unwrap();
    assert_eq!(fitted.status.code(), Some(1), "{}", stderr(&fitted));
    let text = stdout(&fitted);
    for line in text.lines() {
        assert!(columns(line) <= 80, "{} columns: {line}", columns(line));
    }
    assert!(text.contains("│ task-00-with-a-rather-long-id"), "{text}");
    // The reason wraps inside its column: every word of it is shown.
    assert!(text.contains("┆ go past eighty columns of a "), "{text}");
    let rows = text.lines().filter(|l| l.starts_with("│ task-")).count();
    assert_eq!(rows, looptrace::eval::FAILED_SHOWN);
    assert!(text.contains("\nand 5 more (see results.json)\n"), "{text}");
    assert!(!text.contains('\u{1b}'), "no colour through a pipe");

    // Piped without COLUMNS: every failure, however wide.
    let piped = looptrace()
        .arg("eval")
        .arg(&suite)
        .arg("-o")
        .arg(dir.path())
        .output()
        .unwrap();
    let text = stdout(&piped);
    assert_eq!(
        text.lines().filter(|l| l.starts_with("│ task-")).count(),
        25
    );
    assert!(text.lines().any(|line| columns(line) > 80));
}

#[test]
fn report_and_replay_fit_80_columns() {
    for args in [
        &[
            "report",
            "tests/fixtures/report/spend.jsonl",
            "tests/fixtures/report/mixed.jsonl",
            "--by",
            "file",
        ][..],
        &["report", "sample_traces/"][..],
        &["replay", "sample_traces/multi_run.jsonl"][..],
    ] {
        let output = looptrace()
            .current_dir(env!("CARGO_MANIFEST_DIR"))
            .args(args)
            .env("COLUMNS", "80")
            .output()
            .unwrap();
        assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
        let text = stdout(&output);
        for line in text.lines() {
            assert!(
                columns(line) <= 80,
                "{args:?}: {} columns: {line}",
                columns(line)
            );
        }
    }
    // A table too wide for 80 columns splits, repeating its row names, rather than breaking
    // header words; a column empty in every row is left out.
    let dir = tempfile::tempdir().unwrap();
    let trace = dir.path().join("tokens.jsonl");
    std::fs::write(
        &trace,
        concat!(
            r#"{"run_id":"r","step":0,"event_type":"run_started"}"#, "\n",
            r#"{"run_id":"r","step":1,"event_type":"model_action","action_type":"finish","usage":{"input_tokens":10,"output_tokens":2}}"#, "\n",
            r#"{"run_id":"r","step":1,"event_type":"run_finished","exit_reason":"finished","steps_used":1}"#, "\n",
        ),
    )
    .unwrap();
    for (file, whole, gone) in [
        (
            "tests/fixtures/report/spend.jsonl",
            &["output tokens", "mean duration (s)", "cost (USD)"][..],
            &[][..],
        ),
        (
            trace.to_str().unwrap(),
            &["input tokens", "output tokens"][..],
            &["cost (USD)", "duration (s)"][..],
        ),
    ] {
        let output = looptrace()
            .current_dir(env!("CARGO_MANIFEST_DIR"))
            .args(["report", file])
            .env("COLUMNS", "80")
            .output()
            .unwrap();
        let text = stdout(&output);
        for line in text.lines() {
            assert!(columns(line) <= 80, "{} columns: {line}", columns(line));
        }
        for header in whole {
            assert!(text.contains(&format!("┆ {header} ")), "{header}: {text}");
        }
        for header in gone {
            assert!(!text.contains(header), "{header}: {text}");
        }
    }

    // Numbers are never cut, only text.
    let output = looptrace()
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .args(["report", "tests/fixtures/report/spend.jsonl"])
        .env("COLUMNS", "80")
        .output()
        .unwrap();
    assert!(stdout(&output).contains(" 0.3750 ┆"), "{}", stdout(&output));
}

#[test]
fn a_non_utf8_locale_gets_ascii_borders() {
    for (name, value) in [
        ("LANG", "C"),
        ("LC_ALL", "en_US.ISO-8859-1"),
        ("LC_CTYPE", "POSIX"),
    ] {
        let output = looptrace()
            .current_dir(env!("CARGO_MANIFEST_DIR"))
            .args(["report", "sample_traces/multi_run.jsonl"])
            .env(name, value)
            .output()
            .unwrap();
        let text = stdout(&output);
        assert!(text.is_ascii(), "{name}={value}:\n{text}");
        assert!(text.contains("+----"), "{text}");
        assert!(text.contains("| finished "), "{text}");
    }
    let utf8 = looptrace()
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .args(["report", "sample_traces/multi_run.jsonl"])
        .env("LC_ALL", "")
        .env("LANG", "en_US.UTF-8")
        .output()
        .unwrap();
    assert!(stdout(&utf8).contains("│ finished "));
}

#[test]
fn the_readme_shows_the_library_example() {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR"));
    let readme = std::fs::read_to_string(root.join("README.md")).unwrap();
    let example = std::fs::read_to_string(root.join("examples/library.rs")).unwrap();
    let code = &example[example.find("use looptrace::agent").unwrap()..];
    assert!(
        readme.contains(&format!("```rust\n{code}```\n")),
        "the README's library example differs from examples/library.rs"
    );
}

#[test]
fn the_console_shows_expected_values_in_full_and_the_files_keep_summaries() {
    let dir = tempfile::tempdir().unwrap();
    let junit = dir.path().join("junit.xml");
    let output = looptrace()
        .arg("eval")
        .arg(crate::support::fixture("terminal/wide_suite.json"))
        .args(["--only", "task-00-*", "-o"])
        .arg(dir.path())
        .arg("--junit")
        .arg(&junit)
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(1), "{}", stderr(&output));
    let text = stdout(&output);
    let expected = "expected answer \"84, and an expected value long enough to go past eighty \
                    columns of a terminal\", got chars=2;sha256=";
    assert!(text.contains(expected), "{text}");
    assert_eq!(
        text.matches("run with --capture full to see them").count(),
        1,
        "{text}"
    );
    let results = std::fs::read_to_string(dir.path().join("results.json")).unwrap();
    assert!(
        results.contains("expected answer chars=77;sha256="),
        "{results}"
    );
    assert!(!results.contains("eighty columns"));
    let junit = std::fs::read_to_string(&junit).unwrap();
    assert!(!junit.contains("eighty columns"), "{junit}");

    // Full capture: both texts are shown, and no note.
    let full = looptrace()
        .arg("eval")
        .arg(crate::support::fixture("terminal/wide_suite.json"))
        .args(["--only", "task-00-*", "--capture", "full", "-o"])
        .arg(dir.path())
        .output()
        .unwrap();
    let text = stdout(&full);
    assert!(text.contains("got \"85\""), "{text}");
    assert!(!text.contains("--capture full"), "{text}");
}

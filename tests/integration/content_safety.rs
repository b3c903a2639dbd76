//! Content safety: with summary capture (the default), no task text, argument value, answer, tool
//! output, feedback message, raw model output or hash key reaches anything looptrace writes. A
//! distinctive secret is planted in each, every command that exists is run over them, and every
//! byte of stdout, stderr and every file written is searched.
//!
//! The one exception is `looptrace run`'s stdout: it is the run's result (its answer and error)
//! printed for the person who asked for it, not a record; its stderr and its trace are searched.

use std::path::{Path, PathBuf};
use std::process::Output;

use crate::bad_inputs::has_command;
use crate::support::{files_under, looptrace, stderr};

/// The planted secrets, each where its name says.
const TASK: &str = "TASKSECRET-q7v2";
const ARGUMENT: &str = "ARGSECRET-k9d4";
const ANSWER: &str = "ANSWERSECRET-m3x8";
/// `31337 × 1000001`: the calculator's output, which neither argument contains.
const TOOL_OUTPUT: &str = "31337031337";
const FEEDBACK: &str = "FEEDBACKSECRET-p5w1";
const RAW_OUTPUT: &str = "RAWSECRET-z8c6";
const SCHEMA_ECHO: &str = "SCHEMASECRET-h2j7";
const HASH_KEY: &str = "KEYSECRET-t4n9";

const SECRETS: [&str; 8] = [
    TASK,
    ARGUMENT,
    ANSWER,
    TOOL_OUTPUT,
    FEEDBACK,
    RAW_OUTPUT,
    SCHEMA_ECHO,
    HASH_KEY,
];

/// Raw responses that carry every secret: an unknown tool called with a secret argument, a
/// calculator call whose output is secret, a secret argument the schema rejects (its error
/// echoes the value), an unknown action type (its feedback echoes the type), text that is not
/// JSON, and a secret answer.
fn responses() -> Vec<String> {
    vec![
        format!(r#"{{"type":"tool_call","tool_name":"search","arguments":{{"q":"{ARGUMENT}"}}}}"#),
        r#"{"type":"tool_call","tool_name":"calculator","arguments":{"left":31337,"operation":"multiply","right":1000001}}"#.to_owned(),
        format!(r#"{{"type":"tool_call","tool_name":"calculator","arguments":{{"left":"{SCHEMA_ECHO}","operation":"add","right":1}}}}"#),
        format!(r#"{{"type":"{FEEDBACK}"}}"#),
        format!("{RAW_OUTPUT} is not JSON"),
        format!(r#"{{"type":"finish","answer":"{ANSWER}"}}"#),
    ]
}

/// Where each secret was found, as `secret in place`.
fn leaks(place: &str, bytes: &[u8], secrets: &[&str]) -> Vec<String> {
    secrets
        .iter()
        .filter(|secret| {
            bytes
                .windows(secret.len())
                .any(|window| window == secret.as_bytes())
        })
        .map(|secret| format!("{secret} in {place}"))
        .collect()
}

/// Collects what every command printed and wrote.
struct Audit {
    out: PathBuf,
    found: Vec<String>,
    ran: Vec<String>,
}

impl Audit {
    /// Runs looptrace with the hash key set and checks its exit code; searches its stderr
    /// always and its stdout unless it is a result printed for the user.
    fn run(&mut self, args: &[&str], search_stdout: bool, code: i32) -> Output {
        let name = args.join(" ");
        let output = looptrace()
            .args(args)
            .env("LOOPTRACE_HASH_KEY", HASH_KEY)
            .env_remove("LOOPTRACE_FAULT")
            .current_dir(&self.out)
            .output()
            .expect("failed to start looptrace");
        let err = stderr(&output);
        assert!(!err.contains("panicked"), "{name}: {err}");
        assert_eq!(output.status.code(), Some(code), "{name}: {err}");
        self.found
            .extend(leaks(&format!("`{name}` stderr"), &output.stderr, &SECRETS));
        if search_stdout {
            self.found
                .extend(leaks(&format!("`{name}` stdout"), &output.stdout, &SECRETS));
        }
        self.ran.push(name);
        output
    }

    /// Runs an eval of [`suite`]: its console shows the suite's own expected values in full
    /// (the user wrote them), so stdout is searched with those left out, however the format
    /// quotes them; everything else is searched as by [`Audit::run`].
    fn run_eval(&mut self, args: &[&str], code: i32) -> Output {
        let output = self.run(args, false, code);
        let mut shown = String::from_utf8_lossy(&output.stdout).into_owned();
        let expected = format!("{ANSWER}-other");
        for quote in ["\"", "\\\"", "\"\""] {
            shown = shown
                .replace(
                    &format!("answer {quote}{expected}{quote}"),
                    "answer EXPECTED",
                )
                .replace(
                    &format!("contain {quote}{TOOL_OUTPUT}{quote}"),
                    "contain EXPECTED",
                );
        }
        self.found.extend(leaks(
            &format!("`{}` stdout", args.join(" ")),
            shown.as_bytes(),
            &SECRETS,
        ));
        output
    }

    /// Searches every file written so far, except the inputs the test wrote itself.
    fn search_files(&mut self, inputs: &[&Path]) {
        for (path, bytes) in files_under(&self.out) {
            if inputs.contains(&path.as_path()) {
                continue;
            }
            self.found
                .extend(leaks(&path.display().to_string(), &bytes, &SECRETS));
        }
    }
}

/// A suite with the same secrets in prompts, responses, scripted actions and expectations
/// that fail (so failure reasons are printed and written).
fn suite() -> String {
    let responses = serde_json::to_value(responses()).unwrap();
    serde_json::json!({
        "name": "secrets",
        "defaults": {"capture": "summary", "max_steps": 8},
        "tasks": [
            {
                "id": "raw",
                "prompt": format!("please {TASK}"),
                "model": {"responses": responses},
                "expect": {"answer": format!("{ANSWER}-other"), "answer_contains": TOOL_OUTPUT}
            },
            {
                "id": "scripted",
                "prompt": TASK,
                "model": {"actions": [
                    {"type": "tool_call", "tool_name": "calculator",
                     "arguments": {"left": 31337, "operation": "multiply", "right": 1000001}},
                    {"type": "tool_call", "tool_name": "search", "arguments": {"q": ARGUMENT}},
                    {"type": "finish", "answer": ANSWER}
                ]},
                "expect": {"exit_reason": "max_steps_exceeded"}
            },
            {
                "id": "exhausted",
                "prompt": TASK,
                "model": {"responses": [format!(r#"{{"type":"{FEEDBACK}"}}"#)]},
                "expect": {"exit_reason": "finished"}
            },
            {
                "id": "invalid-at-the-end",
                "prompt": TASK,
                "max_steps": 1,
                "model": {"responses": [format!("{RAW_OUTPUT} {FEEDBACK}")]}
            }
        ]
    })
    .to_string()
}

#[test]
fn summary_capture_writes_no_planted_content_anywhere() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().to_path_buf();
    let mut audit = Audit {
        out: out.clone(),
        found: Vec::new(),
        ran: Vec::new(),
    };
    let input = |name: &str, text: String| {
        let path = out.join(name);
        std::fs::write(&path, text).unwrap();
        path
    };
    let inputs = [
        input("responses.txt", responses().join("\n") + "\n"),
        input(
            "invalid.txt",
            format!("{RAW_OUTPUT}\n{{\"type\":\"{FEEDBACK}\"}}\n"),
        ),
        input("exhausted.txt", format!("{{\"type\":\"{FEEDBACK}\"}}\n")),
        input("suite.json", suite()),
    ];
    let [responses, invalid, exhausted, suite] = inputs.each_ref().map(|p| p.to_str().unwrap());
    let full_trace = out.join("full.jsonl");
    let full = full_trace.to_str().unwrap();
    let task = format!("please {TASK}");

    // Runs reaching every event type and every ending with content in it: finished, invalid
    // output on the last step (its error is the feedback text), an exhausted script.
    for (file, steps, code) in [(responses, "8", 0), (invalid, "2", 1), (exhausted, "8", 3)] {
        audit.run(
            &[
                "run",
                "--task",
                &task,
                "--responses",
                file,
                "--max-steps",
                steps,
                "--trace",
                "run.jsonl",
            ],
            false,
            code,
        );
    }
    // The planted content really reached the loop: the result printed for the user has it.
    let output = audit.run(
        &[
            "run",
            "--task",
            TASK,
            "--responses",
            responses,
            "--json",
            "--max-steps",
            "8",
        ],
        false,
        0,
    );
    assert!(String::from_utf8_lossy(&output.stdout).contains(ANSWER));

    for format in ["text", "json"] {
        audit.run(&["show", "run.jsonl", "--format", format], true, 0);
    }
    if has_command("report") {
        for format in ["table", "json", "markdown", "csv"] {
            audit.run(&["report", "run.jsonl", "--format", format], true, 0);
        }
    }
    if has_command("replay") {
        // A summary trace cannot be replayed: the refusal must not quote the run either.
        for extra in [None, Some("--check"), Some("--raw")] {
            let mut args = vec!["replay", "run.jsonl"];
            args.extend(extra);
            audit.run(&args, true, 2);
        }
    }
    if has_command("eval") {
        for format in ["table", "json", "markdown", "csv"] {
            let results = format!("eval-{format}");
            let junit = format!("junit-{format}.xml");
            let args = [
                "eval", suite, "--jobs", "2", "--format", format, "--out", &results, "--junit",
                &junit,
            ];
            audit.run_eval(&args, 1);
            assert!(out.join(&junit).exists() && out.join(results).join("results.json").exists());
        }
        let baseline = "eval-table/results.json";
        audit.run_eval(
            &[
                "eval",
                suite,
                "--out",
                "eval-baseline",
                "--baseline",
                baseline,
            ],
            1,
        );
        if has_command("merge") {
            let args = [
                "merge",
                baseline,
                "--out",
                "merged.json",
                "--junit",
                "merged.xml",
                "--baseline",
                baseline,
            ];
            audit.run(&args, true, 1);
        }
        // A summary trace cannot be replayed as a corpus either.
        audit.run(
            &["eval", "--traces", "run.jsonl", "--out", "eval-traces"],
            true,
            2,
        );
        // A full recording replayed by `eval` with the default capture: the content is in the
        // input the user recorded, and must not spread to the new traces, results or JUnit.
        let args = [
            "run",
            "--task",
            TASK,
            "--responses",
            responses,
            "--max-steps",
            "8",
            "--capture",
            "full",
            "--trace",
            full,
        ];
        audit.run(&args, false, 0);
        audit.run(
            &[
                "eval",
                "--traces",
                full,
                "--out",
                "eval-full",
                "--junit",
                "junit-full.xml",
            ],
            true,
            0,
        );
    }
    let mut ignored: Vec<&Path> = inputs.iter().map(PathBuf::as_path).collect();
    ignored.push(&full_trace);
    audit.search_files(&ignored);
    assert!(!std::fs::read(out.join("run.jsonl")).unwrap().is_empty());
    eprintln!("searched the output of: {}", audit.ran.join("; "));
    assert!(
        audit.found.is_empty(),
        "planted content leaked:\n{}",
        audit.found.join("\n")
    );
}

#[test]
fn the_planted_content_reaches_a_full_capture_trace() {
    // The same run with `--capture full` keeps every secret but the key: proof that the search
    // above looks in the right places.
    let dir = tempfile::tempdir().unwrap();
    let responses_file = dir.path().join("responses.txt");
    std::fs::write(&responses_file, responses().join("\n") + "\n").unwrap();
    let trace = dir.path().join("full.jsonl");
    let output = looptrace()
        .args([
            "run",
            "--task",
            TASK,
            "--max-steps",
            "8",
            "--capture",
            "full",
        ])
        .arg("--responses")
        .arg(&responses_file)
        .arg("--trace")
        .arg(&trace)
        .env("LOOPTRACE_HASH_KEY", HASH_KEY)
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    let bytes = std::fs::read(&trace).unwrap();
    let found = leaks("trace", &bytes, &SECRETS);
    let expected: Vec<String> = SECRETS[..7]
        .iter()
        .map(|secret| format!("{secret} in trace"))
        .collect();
    assert_eq!(found, expected);
}

//! Helpers shared by the integration tests.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use serde_json::Value;

/// The built `looptrace` binary, with no locale or width from the environment the tests run in,
/// so tables come out as they do through a pipe on any machine.
pub fn looptrace() -> Command {
    let mut command = Command::new(env!("CARGO_BIN_EXE_looptrace"));
    for name in ["LC_ALL", "LC_CTYPE", "LANG", "COLUMNS"] {
        command.env_remove(name);
    }
    command
}

/// A file under `tests/fixtures/`.
pub fn fixture(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures")
        .join(name)
}

/// A file under `sample_traces/`.
pub fn sample(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("sample_traces")
        .join(name)
}

/// Runs the binary with `args` and returns its output.
pub fn run(args: &[&str]) -> Output {
    looptrace()
        .args(args)
        .output()
        .expect("failed to start looptrace")
}

/// The bodies of the fenced code blocks of `lang` (```` ```yaml ````, ...) in `docs/NAME`, in order.
pub fn doc_blocks(name: &str, lang: &str) -> Vec<String> {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("docs")
        .join(name);
    let text = std::fs::read_to_string(path).unwrap();
    let fence = format!("```{lang}\n");
    let mut blocks = Vec::new();
    let mut rest = text.as_str();
    while let Some(start) = rest.find(&fence) {
        let body = &rest[start + fence.len()..];
        let end = body.find("```").unwrap();
        blocks.push(body[..end].to_owned());
        rest = &body[end + 3..];
    }
    blocks
}

/// Standard output as text.
pub fn stdout(output: &Output) -> String {
    String::from_utf8_lossy(&output.stdout).into_owned()
}

/// Standard error as text.
pub fn stderr(output: &Output) -> String {
    String::from_utf8_lossy(&output.stderr).into_owned()
}

/// The events of a JSONL trace, one JSON value per line, each checked to hold only keys the
/// trace format declares.
pub fn read_events(path: &Path) -> Vec<Value> {
    let events: Vec<Value> = std::fs::read_to_string(path)
        .unwrap()
        .lines()
        .map(|line| serde_json::from_str(line).unwrap())
        .collect();
    assert_declared_events(&events, path);
    events
}

/// Every key of `events` is one `schemas/trace-event.schema.json` declares: a key added to the
/// format without its schema fails the first test that writes it.
pub fn assert_declared_events(events: &[Value], trace: &Path) {
    static CLOSED: std::sync::OnceLock<jsonschema::Validator> = std::sync::OnceLock::new();
    let validator = CLOSED.get_or_init(|| closed_validator("trace-event.schema.json"));
    let problems: Vec<String> = events
        .iter()
        .enumerate()
        .flat_map(|(i, event)| {
            schema_problems(validator, event, &format!("{}:{}", trace.display(), i + 1))
        })
        .collect();
    assert!(
        problems.is_empty(),
        "events the trace schema does not allow:\n{}",
        problems.join("\n")
    );
}

/// The schema under `schemas/` called `name`, closed ([`closed`]), ready to validate with.
pub fn closed_validator(name: &str) -> jsonschema::Validator {
    jsonschema::validator_for(&closed(&schema(name))).unwrap()
}

/// The problems of `value` against a schema, each with `place` and the JSON path where found.
pub fn schema_problems(
    validator: &jsonschema::Validator,
    value: &Value,
    place: &str,
) -> Vec<String> {
    validator
        .iter_errors(value)
        .map(|e| format!("{place}: {}: {e}", e.instance_path()))
        .collect()
}

/// A schema under `schemas/`.
pub fn schema(name: &str) -> Value {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("schemas")
        .join(name);
    serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap()
}

/// `schema` with `"additionalProperties": false` added wherever it lists `properties` and says
/// nothing of other keys; subschemas of `if`/`then`/`else`/`not` only narrow an object the
/// enclosing schema describes, so they are left open.
pub fn closed(schema: &Value) -> Value {
    fn close(value: &Value, conditional: bool) -> Value {
        match value {
            Value::Object(map) => {
                let mut out: serde_json::Map<String, Value> = map
                    .iter()
                    .map(|(key, inner)| {
                        let inside = conditional || ["if", "then", "else", "not"].contains(&&**key);
                        (key.clone(), close(inner, inside))
                    })
                    .collect();
                if !conditional
                    && map.contains_key("properties")
                    && !map.contains_key("additionalProperties")
                {
                    out.insert("additionalProperties".into(), Value::Bool(false));
                }
                Value::Object(out)
            }
            Value::Array(items) => {
                Value::Array(items.iter().map(|v| close(v, conditional)).collect())
            }
            other => other.clone(),
        }
    }
    close(schema, false)
}

/// Result rows without the fields that change from run to run (timings, run ids, and the run
/// folder a trace is in: `runs/<eval-id>/traces/a.jsonl` becomes `traces/a.jsonl`).
pub fn stable(tasks: &[looptrace::eval::TaskResult]) -> Vec<looptrace::eval::TaskResult> {
    tasks
        .iter()
        .map(|t| looptrace::eval::TaskResult {
            duration_ms: 0.0,
            run_id: None,
            trace: t.trace.as_deref().map(in_run),
            ..t.clone()
        })
        .collect()
}

/// A row's `trace` relative to its run's folder: `runs/<eval-id>/traces/a.jsonl` is
/// `traces/a.jsonl`.
pub fn in_run(trace: &str) -> String {
    match trace
        .strip_prefix("runs/")
        .and_then(|rest| rest.split_once('/'))
    {
        Some((_, inside)) => inside.to_owned(),
        None => trace.to_owned(),
    }
}

/// The folder of the newest run an evaluation wrote into `out` (`out/runs/<eval-id>`).
pub fn newest_run(out: &Path) -> PathBuf {
    let mut runs: Vec<PathBuf> = std::fs::read_dir(out.join("runs"))
        .unwrap()
        .map(|entry| entry.unwrap().path())
        .collect();
    runs.sort();
    runs.pop().expect("no run in the output folder")
}

/// The trace of task `id`'s (first) row in `out/results.json`.
pub fn trace_for(out: &Path, id: &str) -> PathBuf {
    let results: Value =
        serde_json::from_str(&std::fs::read_to_string(out.join("results.json")).unwrap()).unwrap();
    let row = results["tasks"]
        .as_array()
        .unwrap()
        .iter()
        .find(|row| row["id"] == id)
        .unwrap_or_else(|| panic!("no row of {id}"));
    out.join(row["trace"].as_str().unwrap())
}

/// The per-task traces folder of the newest run in `out`.
pub fn traces_of(out: &Path) -> PathBuf {
    newest_run(out).join("traces")
}

/// The single trace file of the newest run in `out`.
pub fn single_trace_of(out: &Path) -> PathBuf {
    newest_run(out).join("traces.jsonl")
}

/// Replays `trace` with live tools from `tools_file` and checks that every run is faithful,
/// with nothing on stderr.
pub fn assert_replays_live_faithfully(trace: &Path, tools_file: &Path) {
    let output = run(&[
        "replay",
        trace.to_str().unwrap(),
        "--tools",
        "live",
        "--tools-file",
        tools_file.to_str().unwrap(),
    ]);
    let shown = format!(
        "{}: {}{}",
        trace.display(),
        stdout(&output),
        stderr(&output)
    );
    assert_eq!(output.status.code(), Some(0), "{shown}");
    assert!(stdout(&output).contains(": faithful"), "{shown}");
    assert_eq!(stderr(&output), "", "{shown}");
}

/// The sources of `../shared/real-traces` (each a folder with its `EXPECTED.json`), sorted; or
/// `None`, after a SKIP line naming `check`, where that folder is not there.
pub fn real_trace_sources(check: &str) -> Option<Vec<PathBuf>> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../shared/real-traces");
    if !root.is_dir() {
        println!("SKIP {check}: {} not found", root.display());
        return None;
    }
    let mut sources: Vec<PathBuf> = std::fs::read_dir(&root)
        .expect("list real-traces")
        .map(|entry| entry.expect("list real-traces").path())
        .filter(|path| path.join("EXPECTED.json").is_file())
        .collect();
    sources.sort();
    Some(sources)
}

/// Every file under `dir` with its bytes, sorted by path.
pub fn files_under(dir: &Path) -> Vec<(PathBuf, Vec<u8>)> {
    let mut files = Vec::new();
    let mut pending = vec![dir.to_path_buf()];
    while let Some(dir) = pending.pop() {
        for entry in std::fs::read_dir(&dir).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                pending.push(path);
            } else {
                let bytes = std::fs::read(&path).unwrap();
                files.push((path, bytes));
            }
        }
    }
    files.sort();
    files
}

/// The hidden files in `dir`: what an atomic write would leave behind if it were cut short.
pub fn leftovers(dir: &Path) -> Vec<String> {
    std::fs::read_dir(dir)
        .unwrap()
        .map(|entry| entry.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|name| name.starts_with('.'))
        .collect()
}

/// Runs the binary with the arguments given, words and paths alike, and returns its output:
/// `cli!("report", &trace, "-f", "json")`.
macro_rules! cli {
    ($($arg:expr),+ $(,)?) => {
        $crate::support::looptrace()
            $(.arg($arg))+
            .output()
            .expect("failed to start looptrace")
    };
}
pub(crate) use cli;

/// Takes the lock an evaluation takes on `folder`, as a command racing this test would. A lock
/// this process just released can still be held for a moment by a child another test was
/// starting (it holds a copy of every descriptor until it executes its program), so a refusal is
/// tried again for up to five seconds before the test fails.
pub fn hold_folder_lock(folder: &Path) -> looptrace::eval::FolderLock {
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(5);
    loop {
        if let Some(lock) = looptrace::eval::lock_folder(folder).unwrap() {
            return lock;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "{} stays locked",
            folder.display()
        );
        std::thread::sleep(std::time::Duration::from_millis(10));
    }
}

/// `looptrace eval ARGS --out OUT`.
pub fn eval_into(args: &[&str], out: &Path) -> Output {
    looptrace()
        .arg("eval")
        .args(args)
        .arg("--out")
        .arg(out)
        .output()
        .unwrap()
}

/// The `results.json` in `out`.
pub fn results_in(out: &Path) -> looptrace::eval::ResultsFile {
    serde_json::from_str(&std::fs::read_to_string(out.join("results.json")).unwrap()).unwrap()
}

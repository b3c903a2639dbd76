//! The bad-input corpus: every file in `tests/bad_inputs/` is one case, and its name decides the
//! command (see that folder's README), so adding a case is adding a file. Cases too big to check
//! in, or that need a missing file, a directory or a symlink, are made here in a temporary
//! folder. Each case must exit 2 with one `error:` message naming the file, never panic, print
//! nothing on stdout, and leave every file as it was.

use std::collections::BTreeMap;
use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::process::Output;

use crate::support::{looptrace, sample, stderr, stdout};

/// Name prefixes and extensions of the corpus, and what each is fed to.
const KINDS: [(&str, &str); 5] = [
    ("trace_", ".jsonl"),
    ("responses_", ".txt"),
    ("suite_", ".json"),
    ("results_", ".json"),
    ("tools_", ".json"),
];

/// The corpus folder.
fn corpus() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/bad_inputs")
}

/// Checks this build has the subcommand (`looptrace help NAME` exits 0); every command the
/// corpus exercises must exist, so a missing one fails instead of skipping its checks.
pub fn has_command(name: &str) -> bool {
    let present = looptrace()
        .args(["help", name])
        .output()
        .is_ok_and(|output| output.status.success());
    assert!(present, "looptrace has no `{name}` command");
    present
}

/// Which optional commands exist.
struct Commands {
    report: bool,
    eval: bool,
}

impl Commands {
    fn detect() -> Commands {
        Commands {
            report: has_command("report"),
            eval: has_command("eval"),
        }
    }
}

/// Every file under `dir` (symlinks not followed) with its bytes, or its target for a symlink.
fn snapshot(dir: &Path) -> BTreeMap<PathBuf, (Vec<u8>, Option<std::time::SystemTime>)> {
    let mut files = BTreeMap::new();
    let mut pending = vec![dir.to_path_buf()];
    while let Some(dir) = pending.pop() {
        for entry in std::fs::read_dir(&dir).unwrap() {
            let path = entry.unwrap().path();
            let meta = std::fs::symlink_metadata(&path).unwrap();
            if meta.is_symlink() {
                let target = std::fs::read_link(&path).unwrap();
                files.insert(path, (target.into_os_string().into_encoded_bytes(), None));
            } else if meta.is_dir() {
                files.insert(path.clone(), (Vec::new(), None));
                pending.push(path);
            } else {
                let bytes = std::fs::read(&path).unwrap();
                files.insert(path, (bytes, meta.modified().ok()));
            }
        }
    }
    files
}

/// Runs one command line in `cwd` and returns what went wrong, if anything.
fn check(args: &[OsString], named: &str, cwd: &Path, watched: &[&Path]) -> Option<String> {
    let before: Vec<_> = watched.iter().map(|dir| snapshot(dir)).collect();
    let output: Output = looptrace()
        .args(args)
        .current_dir(cwd)
        .env_remove("LOOPTRACE_FAULT")
        .output()
        .expect("failed to start looptrace");
    let after: Vec<_> = watched.iter().map(|dir| snapshot(dir)).collect();
    let err = stderr(&output);
    let error_lines = err.lines().filter(|l| l.starts_with("error:")).count();
    let problem = if output.status.code() != Some(2) {
        Some(format!("exit code {:?}, expected 2", output.status.code()))
    } else if err.contains("panicked") {
        Some("panicked".to_owned())
    } else if !err.starts_with("error: ") || error_lines != 1 {
        Some(format!(
            "{error_lines} `error:` lines, expected exactly one, first"
        ))
    } else if !err.contains(named) {
        Some(format!("the message does not name {named:?}"))
    } else if !stdout(&output).is_empty() {
        Some("something was printed on stdout".to_owned())
    } else if before != after {
        Some("a file was written or changed".to_owned())
    } else {
        None
    };
    problem.map(|problem| {
        let args: Vec<_> = args.iter().map(|a| a.to_string_lossy()).collect();
        format!("looptrace {}: {problem}\n{err}", args.join(" "))
    })
}

/// The corpus files with this prefix, sorted.
fn cases(prefix: &str) -> Vec<PathBuf> {
    let mut files: Vec<PathBuf> = std::fs::read_dir(corpus())
        .unwrap()
        .map(|entry| entry.unwrap().path())
        .filter(|path| {
            path.is_file()
                && path
                    .file_name()
                    .is_some_and(|name| name.to_string_lossy().starts_with(prefix))
        })
        .collect();
    files.sort();
    files
}

/// Feeds every case with `prefix` to the command `args_for` builds (given the case and a fresh
/// folder the command may be told to write in) and fails listing every case that misbehaved.
fn walk(prefix: &str, args_for: impl Fn(&Path, &Path) -> Vec<OsString>) {
    let corpus = corpus();
    let files = cases(prefix);
    assert!(!files.is_empty(), "no {prefix}* cases");
    let failures: Vec<String> = files
        .iter()
        .filter_map(|file| {
            let work = tempfile::tempdir().unwrap();
            let name = file.file_name().unwrap().to_string_lossy();
            let args = args_for(file, work.path());
            check(&args, &name, work.path(), &[&corpus, work.path()])
        })
        .collect();
    assert!(
        failures.is_empty(),
        "{} of {} cases failed:\n{}",
        failures.len(),
        files.len(),
        failures.join("\n")
    );
}

fn os(args: &[&str]) -> Vec<OsString> {
    args.iter().map(OsString::from).collect()
}

#[test]
fn the_corpus_holds_only_case_files_and_at_least_40() {
    let mut counts: BTreeMap<&str, usize> = BTreeMap::new();
    for entry in std::fs::read_dir(corpus()).unwrap() {
        let path = entry.unwrap().path();
        let name = path.file_name().unwrap().to_string_lossy().into_owned();
        if path.is_dir() || name == "README.md" {
            continue;
        }
        let kind = KINDS
            .iter()
            .find(|(prefix, ext)| name.starts_with(prefix) && name.ends_with(ext));
        let Some((prefix, _)) = kind else {
            panic!(
                "{name}: not a case name (trace_*.jsonl, responses_*.txt, suite_*.json, results_*.json, tools_*.json)"
            );
        };
        *counts.entry(prefix).or_default() += 1;
    }
    assert!(counts.values().sum::<usize>() >= 40, "{counts:?}");
    assert!(counts["suite_"] >= 12, "{counts:?}");
}

#[test]
fn show_refuses_every_bad_trace() {
    walk("trace_", |file, _| {
        let mut args = os(&["show"]);
        args.push(file.into());
        args
    });
}

#[test]
fn report_refuses_every_bad_trace() {
    if !Commands::detect().report {
        eprintln!("skipped every trace_* case for `report`: this build has no `report`");
        return;
    }
    walk("trace_", |file, _| {
        let mut args = os(&["report"]);
        args.push(file.into());
        args
    });
}

#[test]
fn replay_refuses_every_bad_trace() {
    walk("trace_", |file, _| {
        let mut args = os(&["replay"]);
        args.push(file.into());
        args
    });
}

#[test]
fn eval_refuses_every_bad_trace_as_a_corpus() {
    walk("trace_", |file, out| {
        let mut args = os(&["eval", "--traces"]);
        args.extend([file.into(), "--out".into(), out.join("out").into()]);
        args
    });
}

#[test]
fn merge_and_baselines_refuse_every_bad_results_file() {
    walk("results_", |file, out| {
        let mut args = os(&["merge"]);
        args.extend([file.into(), "--out".into(), out.join("merged.json").into()]);
        args
    });
    walk("results_", |file, out| {
        let mut args = os(&["eval"]);
        args.extend([
            sample("suite.json").into(),
            "--baseline".into(),
            file.into(),
            "--out".into(),
            out.join("out").into(),
        ]);
        args
    });
}

#[test]
fn run_refuses_every_bad_responses_file() {
    walk("responses_", |file, out| {
        let mut args = os(&["run", "--task", "t", "--responses"]);
        args.extend([
            file.into(),
            "--trace".into(),
            out.join("trace.jsonl").into(),
        ]);
        args
    });
}

#[test]
fn run_and_tools_refuse_every_bad_tools_file() {
    walk("tools_", |file, _| {
        let mut args = os(&["tools", "--tools-file"]);
        args.push(file.into());
        args
    });
    walk("tools_", |file, out| {
        let mut args = os(&["run", "--task", "t", "--responses"]);
        args.extend([
            sample("responses.txt").into(),
            "--tools-file".into(),
            file.into(),
            "--trace".into(),
            out.join("trace.jsonl").into(),
        ]);
        args
    });
}

#[test]
fn eval_refuses_every_bad_suite() {
    if !Commands::detect().eval {
        let names: Vec<_> = cases("suite_")
            .iter()
            .map(|f| f.file_name().unwrap().to_string_lossy().into_owned())
            .collect();
        eprintln!(
            "skipped {} suite case(s), this build has no `eval`: {}",
            names.len(),
            names.join(", ")
        );
        return;
    }
    walk("suite_", |file, out| {
        let mut args = os(&["eval"]);
        args.extend([
            file.into(),
            "--out".into(),
            out.join("out").into(),
            "--junit".into(),
            out.join("junit.xml").into(),
        ]);
        args
    });
}

/// A valid one-task suite, for cases where only the command line is wrong.
const GOOD_SUITE: &str = r#"{"name": "good", "tasks": [{"id": "t1", "prompt": "say 84",
  "model": {"responses": ["{\"type\":\"finish\",\"answer\":\"84\"}"]}}]}"#;

#[test]
fn generated_cases_are_refused_cleanly() {
    let commands = Commands::detect();
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    let work = root.join("work");
    std::fs::create_dir(&work).unwrap();

    // A line over the 16 MiB limit between two good ones.
    let huge = root.join("trace_20_mib_line.jsonl");
    let good = r#"{"run_id":"r","step":0,"event_type":"run_started"}"#;
    let mut bytes = format!("{good}\n").into_bytes();
    bytes.extend_from_slice(br#"{"run_id":"r","step":1,"event_type":"observation","content":""#);
    bytes.resize(bytes.len() + 20 * 1024 * 1024, b'x');
    bytes.extend_from_slice(format!("\"}}\n{good}\n").as_bytes());
    std::fs::write(&huge, bytes).unwrap();

    // A folder where a file belongs, and names of files that do not exist.
    let folder = root.join("a_folder.jsonl");
    std::fs::create_dir(&folder).unwrap();
    let missing = |name: &str| root.join(name);

    let mut cases: Vec<(Vec<OsString>, String)> = Vec::new();
    let trace_commands = |path: &Path| {
        let mut lines = vec![vec![OsString::from("show"), path.into()]];
        if commands.report {
            lines.push(vec!["report".into(), path.into()]);
        }
        lines
    };
    for args in trace_commands(&huge) {
        cases.push((args, "trace_20_mib_line.jsonl".into()));
    }
    for args in trace_commands(&missing("no_such_trace.jsonl")) {
        cases.push((args, "no_such_trace.jsonl".into()));
    }
    // `show` and `report` search folders for traces, so a folder is no trace to refuse.
    // `/dev/null`: no responses at all.
    for responses in [
        missing("no_such_responses.txt"),
        folder.clone(),
        PathBuf::from("/dev/null"),
    ] {
        let name = responses
            .file_name()
            .unwrap()
            .to_string_lossy()
            .into_owned();
        let args = vec!["run", "--task", "t", "--responses"]
            .into_iter()
            .map(OsString::from)
            .chain([responses.into_os_string()])
            .collect();
        cases.push((args, name));
    }

    if commands.eval {
        for suite in [missing("no_such_suite.json"), folder.clone()] {
            let name = suite.file_name().unwrap().to_string_lossy().into_owned();
            let args = vec![
                "eval".into(),
                suite.into_os_string(),
                "--out".into(),
                work.join("out").into_os_string(),
            ];
            cases.push((args, name));
        }

        // A replay path that leaves the suite's folder through a symlink, to a file or a folder.
        let suites = root.join("suites");
        std::fs::create_dir(&suites).unwrap();
        std::os::unix::fs::symlink(sample("finished.full.jsonl"), suites.join("link.jsonl"))
            .unwrap();
        std::os::unix::fs::symlink(sample(""), suites.join("linked_dir")).unwrap();
        for (name, replay) in [
            ("suite_symlink_to_file.json", "link.jsonl"),
            (
                "suite_symlink_to_folder.json",
                "linked_dir/finished.full.jsonl",
            ),
        ] {
            let suite = suites.join(name);
            std::fs::write(
                &suite,
                format!(r#"{{"name": "bad", "tasks": [{{"id": "t1", "model": {{"replay": "{replay}"}}}}]}}"#),
            )
            .unwrap();
            let args = vec![
                "eval".into(),
                suite.into_os_string(),
                "--out".into(),
                work.join("out").into_os_string(),
            ];
            cases.push((args, name.to_owned()));
        }

        // Output paths equal to the input: JUnit over the suite, results.json over the suite.
        let suite = root.join("suite_good.json");
        std::fs::write(&suite, GOOD_SUITE).unwrap();
        let args = vec![
            "eval".into(),
            suite.clone().into_os_string(),
            "--out".into(),
            work.join("out").into_os_string(),
            "--junit".into(),
            suite.into_os_string(),
        ];
        cases.push((args, "suite_good.json".into()));
        let results_dir = root.join("results_dir");
        std::fs::create_dir(&results_dir).unwrap();
        let suite = results_dir.join("results.json");
        std::fs::write(&suite, GOOD_SUITE).unwrap();
        let args = vec![
            "eval".into(),
            suite.into_os_string(),
            "--out".into(),
            results_dir.into_os_string(),
        ];
        cases.push((args, "results.json".into()));
    } else {
        eprintln!("skipped the generated suite cases: this build has no `eval`");
    }

    let failures: Vec<String> = cases
        .iter()
        .filter_map(|(args, named)| check(args, named, &work, &[root]))
        .collect();
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

#[test]
fn a_trace_output_equal_to_the_responses_input_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let responses = dir.path().join("responses.txt");
    std::fs::write(&responses, "{\"type\":\"finish\",\"answer\":\"84\"}\n").unwrap();
    let args: Vec<OsString> = vec![
        "run".into(),
        "--task".into(),
        "t".into(),
        "--responses".into(),
        responses.clone().into_os_string(),
        "--trace".into(),
        responses.into_os_string(),
    ];
    assert_eq!(
        check(&args, "responses.txt", dir.path(), &[dir.path()]),
        None
    );
}

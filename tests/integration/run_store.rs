//! The run store's own commands: `gc` removes exactly the runs no view names (and says what it
//! frees), `eval --rebuild-view` converts a folder of results format 1 into a run store that
//! `--rerun-failed` then builds on, and `--resume` or `--rerun-failed` refuse a format 1 folder
//! naming that conversion.

use std::path::Path;

use looptrace::eval::ResultsFile;

use crate::eval_guards::{assert_refused, evaluated, rerun_in_place};
use crate::support::{cli, stderr, stdout};

fn results(out: &Path) -> ResultsFile {
    serde_json::from_str(&std::fs::read_to_string(out.join("results.json")).unwrap()).unwrap()
}

fn runs(out: &Path) -> Vec<String> {
    let mut ids: Vec<String> = std::fs::read_dir(out.join("runs"))
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    ids.sort();
    ids
}

#[test]
fn gc_removes_the_runs_no_view_names_and_keeps_what_it_is_told() {
    let dir = tempfile::tempdir().unwrap();
    let (suite, out) = evaluated(dir.path(), "out", &["a", "b"], &["b"]);
    // A second evaluation replaces every row of the first; a rerun then builds on the second.
    assert_eq!(
        cli!("eval", &suite, "--out", &out, "-q").status.code(),
        Some(1)
    );
    assert_eq!(rerun_in_place(&suite, &out).status.code(), Some(1));
    let all = runs(&out);
    assert_eq!(all.len(), 3);
    let named = results(&out).runs;
    assert_eq!(
        named,
        all[1..],
        "the view names the second run and the rerun"
    );

    let dry = cli!("gc", &out, "--dry-run");
    assert_eq!(dry.status.code(), Some(0), "{}", stderr(&dry));
    assert!(stderr(&dry).contains(&format!(
        "would remove `{}",
        out.join("runs").join(&all[0]).display()
    )));
    assert!(
        stdout(&dry).starts_with("would remove 1 run, "),
        "{}",
        stdout(&dry)
    );
    assert_eq!(runs(&out), all, "a dry run removes nothing");

    let kept = cli!("gc", &out, "--keep", "1");
    assert_eq!(kept.status.code(), Some(0), "{}", stderr(&kept));
    assert_eq!(
        runs(&out),
        all,
        "--keep 1 keeps the newest run the view does not name"
    );

    let before = std::fs::read(out.join("results.json")).unwrap();
    let output = cli!("gc", &out);
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    assert!(
        stdout(&output).starts_with("removed 1 run, "),
        "{}",
        stdout(&output)
    );
    assert_eq!(runs(&out), all[1..]);
    assert_eq!(std::fs::read(out.join("results.json")).unwrap(), before);
    // The view still reads whole, and rebuilds from what is left.
    let report = cli!("report", &out, "-q");
    assert!(
        stdout(&report).starts_with("2 runs in 2 files"),
        "{}",
        stdout(&report)
    );
    let rebuilt = cli!("eval", "--rebuild-view", &out);
    assert_eq!(rebuilt.status.code(), Some(0), "{}", stderr(&rebuilt));
    assert_eq!(std::fs::read(out.join("results.json")).unwrap(), before);

    // Not an output folder of eval: bad input.
    let output = cli!("gc", dir.path());
    assert_refused(&output, "holds no `runs/` folder");
}

#[test]
fn a_folder_of_results_format_1_is_converted_and_then_rerun() {
    let dir = tempfile::tempdir().unwrap();
    let (suite, out) = evaluated(dir.path(), "out", &["a", "b"], &["b"]);
    // The same folder as looptrace wrote it before the run store: traces beside results.json.
    let mut v1: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(out.join("results.json")).unwrap()).unwrap();
    let old = dir.path().join("old");
    std::fs::create_dir_all(old.join("traces")).unwrap();
    for row in v1["tasks"].as_array_mut().unwrap() {
        let trace = row["trace"].as_str().unwrap().to_owned();
        let name = Path::new(&trace).file_name().unwrap().to_owned();
        std::fs::copy(out.join(&trace), old.join("traces").join(&name)).unwrap();
        row["trace"] = format!("traces/{}", name.to_string_lossy()).into();
    }
    v1["format"] = "looptrace.results/1".into();
    v1.as_object_mut().unwrap().remove("runs");
    std::fs::write(old.join("results.json"), v1.to_string()).unwrap();

    for refused in [
        cli!("eval", &suite, "--out", &old, "--resume", "-q"),
        rerun_in_place(&suite, &old),
        // A plain eval would replace the only view of those rows.
        cli!("eval", &suite, "--out", &old, "-q"),
    ] {
        assert_refused(
            &refused,
            &format!("looptrace eval --rebuild-view {}", old.display()),
        );
    }
    assert!(!old.join("runs").exists(), "nothing written");

    let converted = cli!("eval", "--rebuild-view", &old);
    assert_eq!(converted.status.code(), Some(0), "{}", stderr(&converted));
    assert!(
        stderr(&converted).contains("converted"),
        "{}",
        stderr(&converted)
    );
    let view = results(&old);
    assert_eq!(view.format, "looptrace.results/2");
    assert_eq!(view.runs.len(), 1);
    for row in &view.tasks {
        assert!(
            old.join(row.trace.as_deref().unwrap()).is_file(),
            "{}",
            row.id
        );
    }
    let fixed = crate::eval_guards::suite(dir.path(), "fixed.json", &["a", "b"], &[]);
    let rerun = rerun_in_place(&fixed, &old);
    assert_eq!(rerun.status.code(), Some(0), "{}", stderr(&rerun));
    let after = results(&old);
    let carried: Vec<bool> = after.tasks.iter().map(|t| t.carried_over).collect();
    assert_eq!(carried, [true, false]);
}

#[test]
fn eval_never_replaces_a_results_json_that_is_no_looptrace_results() {
    let dir = tempfile::tempdir().unwrap();
    let suite = crate::eval_guards::suite(dir.path(), "suite.json", &["a"], &[]);
    let out = dir.path().join("theirs");
    std::fs::create_dir(&out).unwrap();
    std::fs::write(out.join("results.json"), "{\"accuracy\": 0.9}\n").unwrap();
    let output = cli!("eval", &suite, "--out", &out, "-q");
    assert_refused(
        &output,
        "holds a `results.json` that is no looptrace results",
    );
    assert_eq!(
        std::fs::read_to_string(out.join("results.json")).unwrap(),
        "{\"accuracy\": 0.9}\n"
    );
    assert!(!out.join("runs").exists());
}

#[test]
fn report_on_a_folder_leaves_out_a_line_a_crash_cut_in_a_single_trace_file() {
    let dir = tempfile::tempdir().unwrap();
    let suite = crate::eval_guards::evaluated(dir.path(), "first", &["a", "b"], &[]).0;
    let out = dir.path().join("out");
    let output = cli!(
        "eval",
        &suite,
        "--out",
        &out,
        "--trace-layout",
        "single",
        "-q"
    );
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    // A run killed while writing its first event into the shared file leaves a line without its
    // newline; its row was never written, so the view does not name it.
    let trace = crate::support::single_trace_of(&out);
    let mut file = std::fs::OpenOptions::new()
        .append(true)
        .open(&trace)
        .unwrap();
    std::io::Write::write_all(&mut file, br#"{"run_id":"c.killed","type":"run_sta"#).unwrap();
    let report = cli!("report", &out, "-f", "json");
    assert_eq!(report.status.code(), Some(0), "{}", stderr(&report));
    assert!(!stderr(&report).contains("cut-off"), "{}", stderr(&report));
    let json: serde_json::Value = serde_json::from_str(&stdout(&report)).unwrap();
    assert_eq!(json["input"]["runs"], 2, "{json}");
    assert_eq!(json["warnings"], serde_json::json!([]), "{json}");
}

#[test]
fn rebuild_view_checks_the_view_as_eval_checks_its_outputs() {
    let dir = tempfile::tempdir().unwrap();
    let (_, out) = evaluated(dir.path(), "out", &["a"], &[]);
    // A folder where the view goes is bad input, named before anything is written.
    std::fs::remove_file(out.join("results.json")).unwrap();
    std::fs::create_dir(out.join("results.json")).unwrap();
    let output = cli!("eval", "--rebuild-view", &out);
    assert_refused(&output, "is a folder, not a file");
    assert!(out.join("results.json").is_dir());
    std::fs::remove_dir(out.join("results.json")).unwrap();
    let output = cli!("eval", "--rebuild-view", &out);
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    assert_eq!(results(&out).tasks.len(), 1);
}

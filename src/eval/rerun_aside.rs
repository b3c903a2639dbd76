//! How a rerun that updates its folder in place replaces per-task traces without ever leaving
//! `results.json` naming a run its trace no longer holds.
//!
//! Each rerun task's new run is written beside its trace (`traces/.<task-id>.jsonl.rerun`), so
//! while tasks run the folder is as the results it updates describe it. When they have run, each
//! trace is made to hold its earlier run and its new one ([`join_aside`]); then `results.json` is
//! replaced; then each trace becomes its new run alone ([`swap_in_aside`]). A crash at any point
//! leaves a `results.json` every run of which is in its trace, at worst beside the run the other
//! results name, and what it left is tidied by the next command ([`tidy_asides`]).

use std::collections::HashSet;
use std::io;
use std::path::{Path, PathBuf};

use super::layout::{combine_runs, is_repeat_folder, keep_runs};

/// What an aside's name adds to its trace's.
const ASIDE_SUFFIX: &str = ".rerun";

/// Where a rerun in place writes the new run of the trace at `trace`: beside it, hidden, and not
/// named as a trace is (`.jsonl`), so no reader takes it for one.
pub fn aside_of(trace: &Path) -> PathBuf {
    let name = trace.file_name().unwrap_or_default().to_string_lossy();
    trace.with_file_name(format!(".{name}{ASIDE_SUFFIX}"))
}

/// The trace file name an aside's file name stands beside, if it is one.
fn trace_of_aside(name: &str) -> Option<&str> {
    name.strip_prefix('.')?
        .strip_suffix(ASIDE_SUFFIX)
        .filter(|trace| trace.ends_with(".jsonl"))
}

/// Makes `trace` hold the runs in `keep` of its own and of its aside, its own first; `false`
/// when it has no aside (the task's run wrote no trace). Atomic: a crash leaves it as it was.
pub fn join_aside(trace: &Path, keep: &HashSet<String>) -> io::Result<bool> {
    let aside = aside_of(trace);
    if !aside.is_file() {
        return Ok(false);
    }
    combine_runs(trace, &[trace, &aside], keep)?;
    Ok(true)
}

/// Makes `trace` its aside's run alone: the aside is renamed over it.
pub fn swap_in_aside(trace: &Path) -> io::Result<()> {
    let aside = aside_of(trace);
    if !aside.is_file() {
        return Ok(());
    }
    crate::fault::traces_partly_written();
    std::fs::rename(aside, trace)
}

/// Removes the asides a crashed rerun left in `traces` and its repeat folders. With `keep` (the
/// runs of the folder's `results.json`, for a rerun that updates it in place), each trace beside
/// one first keeps only those runs: a crash between [`join_aside`] and [`swap_in_aside`] left it
/// holding a run its results do not name. Returns how many runs were removed from traces.
pub fn tidy_asides(traces: &Path, keep: Option<&HashSet<String>>) -> io::Result<usize> {
    let mut folders = vec![traces.to_path_buf()];
    for entry in std::fs::read_dir(traces).into_iter().flatten().flatten() {
        let name = entry.file_name();
        if entry.file_type().is_ok_and(|t| t.is_dir()) && is_repeat_folder(&name.to_string_lossy())
        {
            folders.push(entry.path());
        }
    }
    let mut removed = 0;
    for folder in folders {
        for entry in std::fs::read_dir(&folder).into_iter().flatten().flatten() {
            let name = entry.file_name().to_string_lossy().into_owned();
            let Some(trace) = trace_of_aside(&name) else {
                continue;
            };
            if !entry.file_type().is_ok_and(|t| t.is_file()) {
                continue;
            }
            let trace = folder.join(trace);
            if let Some(keep) = keep
                && trace.is_file()
            {
                let before = super::layout::runs_in(&trace)?;
                let dropped = before.iter().filter(|run| !keep.contains(*run)).count();
                if dropped > 0 {
                    keep_runs(&trace, keep)?;
                    removed += dropped;
                }
            }
            std::fs::remove_file(entry.path())?;
        }
    }
    Ok(removed)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run(id: &str) -> String {
        format!(
            "{{\"run_id\":\"{id}\",\"step\":0,\"event_type\":\"run_started\"}}\n{{\"run_id\":\"{id}\",\"step\":1,\"event_type\":\"run_finished\"}}\n"
        )
    }

    #[test]
    fn an_aside_is_named_so_no_reader_takes_it_for_a_trace() {
        let aside = aside_of(Path::new("out/traces/r2/t-1.jsonl"));
        assert_eq!(aside, Path::new("out/traces/r2/.t-1.jsonl.rerun"));
        let name = aside.file_name().unwrap().to_str().unwrap();
        assert_eq!(trace_of_aside(name), Some("t-1.jsonl"));
        assert_eq!(trace_of_aside(".results.json.rerun"), None);
        assert_eq!(trace_of_aside("t-1.jsonl"), None);
    }

    #[test]
    fn a_trace_holds_its_old_run_then_both_then_its_new_one() {
        let dir = tempfile::tempdir().unwrap();
        let trace = dir.path().join("t.jsonl");
        std::fs::write(&trace, run("old")).unwrap();
        std::fs::write(aside_of(&trace), run("new")).unwrap();
        let both: HashSet<String> = ["old", "new"].map(String::from).into();
        assert!(join_aside(&trace, &both).unwrap());
        assert_eq!(
            std::fs::read_to_string(&trace).unwrap(),
            run("old") + &run("new")
        );
        swap_in_aside(&trace).unwrap();
        assert_eq!(std::fs::read_to_string(&trace).unwrap(), run("new"));
        assert!(!aside_of(&trace).exists());
        assert!(!join_aside(&trace, &both).unwrap());
    }

    #[test]
    fn tidying_keeps_the_runs_the_results_name() {
        let dir = tempfile::tempdir().unwrap();
        let traces = dir.path().join("traces");
        std::fs::create_dir_all(traces.join("r1")).unwrap();
        for folder in [traces.clone(), traces.join("r1")] {
            let trace = folder.join("t.jsonl");
            std::fs::write(&trace, run("old") + &run("new")).unwrap();
            std::fs::write(aside_of(&trace), run("new")).unwrap();
        }
        let named: HashSet<String> = ["old".to_owned()].into();
        assert_eq!(tidy_asides(&traces, Some(&named)).unwrap(), 2);
        for folder in [traces.clone(), traces.join("r1")] {
            let trace = folder.join("t.jsonl");
            assert_eq!(std::fs::read_to_string(&trace).unwrap(), run("old"));
            assert!(!aside_of(&trace).exists());
        }
        // Without results to keep by, only the asides go.
        let trace = traces.join("t.jsonl");
        std::fs::write(aside_of(&trace), run("new")).unwrap();
        assert_eq!(tidy_asides(&traces, None).unwrap(), 0);
        assert_eq!(std::fs::read_to_string(&trace).unwrap(), run("old"));
        assert!(!aside_of(&trace).exists());
    }
}

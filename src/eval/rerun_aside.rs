//! How a rerun that updates its folder in place replaces per-task traces without ever leaving
//! `results.json` naming a run its trace no longer holds.
//!
//! Each rerun task's new run is written beside its trace (`traces/.<task-id>.jsonl.rerun`), so
//! while tasks run the folder is as the results it updates describe it. When they have run, each
//! trace is made to hold its earlier run and then its new one ([`join_aside`]); then `results.json` is
//! replaced; then each trace becomes its new run alone ([`swap_in_aside`]). A crash at any point
//! leaves a `results.json` every run of which is in its trace, at worst beside the run the other
//! results name, and what it left is tidied by the next command ([`find_rerun_leftovers`]).

use std::collections::HashSet;
use std::fs::{File, OpenOptions};
use std::io::{self, Write};
use std::os::unix::fs::{FileExt, MetadataExt, OpenOptionsExt};
use std::path::{Path, PathBuf};

use super::layout::{combine_runs_synced, is_repeat_folder, keep_runs, runs_in};

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

/// Whether `name` is a temporary file a crash left while a trace was being joined
/// (`.<task-id>.jsonl.tmp-PID-N`, as [`crate::output::Replacement`] names them).
fn is_join_leftover(name: &str) -> bool {
    name.strip_prefix('.')
        .and_then(|rest| rest.split_once(".jsonl.tmp-"))
        .is_some()
}

/// Makes `trace` hold its own runs and then its aside's; `false` when it has no aside (the
/// task's run wrote no trace). A crash leaves its own runs whole: the aside's run is appended
/// after them (at worst cut short, as a crash leaves any run), or, where appending is not safe,
/// the runs in `keep` of both are written to a new file renamed over it.
pub fn join_aside(trace: &Path, keep: &HashSet<String>) -> io::Result<bool> {
    let aside = aside_of(trace);
    if !is_regular(&aside) {
        return Ok(false);
    }
    match appendable(trace)? {
        Some(mut file) => {
            let run = std::fs::read(&aside)?;
            let (first, rest) = run.split_at(run.len() / 2);
            file.write_all(first)?;
            crate::fault::traces_partly_written();
            file.write_all(rest)?;
        }
        None => combine_runs_synced(trace, &[trace, &aside], keep, false)?,
    }
    Ok(true)
}

/// `trace` opened for appending, when a run appended to it changes nothing else: it is a regular
/// file of its own (another hard link would see the run too, in a snapshot of the folder) that
/// ends with a whole line (after a line cut short, the run's first line would join it).
fn appendable(trace: &Path) -> io::Result<Option<File>> {
    let file = match OpenOptions::new()
        .read(true)
        .append(true)
        .custom_flags(libc::O_NOFOLLOW)
        .open(trace)
    {
        Ok(file) => file,
        Err(err) if err.kind() == io::ErrorKind::NotFound => return Ok(None),
        Err(err) => return Err(err),
    };
    let meta = file.metadata()?;
    if !meta.is_file() || meta.nlink() > 1 {
        return Ok(None);
    }
    if meta.len() > 0 {
        let mut last = [0u8];
        file.read_exact_at(&mut last, meta.len() - 1)?;
        if last[0] != b'\n' {
            return Ok(None);
        }
    }
    Ok(Some(file))
}

/// Makes `trace` its aside's run alone: the aside is renamed over it.
pub fn swap_in_aside(trace: &Path) -> io::Result<()> {
    let aside = aside_of(trace);
    if !is_regular(&aside) {
        return Ok(());
    }
    crate::fault::traces_partly_written();
    std::fs::rename(aside, trace)
}

/// Whether a regular file (not a link to one) is at `path`.
fn is_regular(path: &Path) -> bool {
    std::fs::symlink_metadata(path).is_ok_and(|meta| meta.is_file())
}

/// `traces` and its repeat folders (links to folders are not followed).
fn trace_folders(traces: &Path) -> Vec<PathBuf> {
    let mut folders = vec![traces.to_path_buf()];
    for entry in std::fs::read_dir(traces).into_iter().flatten().flatten() {
        let name = entry.file_name();
        if entry.file_type().is_ok_and(|t| t.is_dir()) && is_repeat_folder(&name.to_string_lossy())
        {
            folders.push(entry.path());
        }
    }
    folders
}

/// What a crashed rerun in place left in a traces folder and its repeat folders, found in one
/// listing: asked first whether anything blocks a rerun ([`RerunLeftovers::blocked`]), then
/// tidied ([`RerunLeftovers::tidy`]) once the command has decided to run.
#[derive(Debug, Default)]
pub struct RerunLeftovers {
    /// Each regular file written aside, with the trace it stands beside.
    asides: Vec<(PathBuf, PathBuf)>,
    /// Temporary files of joins a crash cut short.
    joins: Vec<PathBuf>,
    /// The first place holding something other than a regular file where a rerun writes a run
    /// aside, or beside such a run where its trace goes.
    blocked: Option<PathBuf>,
}

/// Lists what a crashed rerun left under `traces` (see [`RerunLeftovers`]).
pub fn find_rerun_leftovers(traces: &Path) -> RerunLeftovers {
    let mut found = RerunLeftovers::default();
    for folder in trace_folders(traces) {
        for entry in std::fs::read_dir(&folder).into_iter().flatten().flatten() {
            let name = entry.file_name().to_string_lossy().into_owned();
            let regular = entry.file_type().is_ok_and(|t| t.is_file());
            if regular && is_join_leftover(&name) {
                found.joins.push(entry.path());
                continue;
            }
            let Some(trace) = trace_of_aside(&name) else {
                continue;
            };
            let trace = folder.join(trace);
            let blocked = if !regular {
                Some(entry.path())
            } else if std::fs::symlink_metadata(&trace).is_ok_and(|meta| !meta.is_file()) {
                Some(trace.clone())
            } else {
                None
            };
            match blocked {
                Some(place) => {
                    found.blocked.get_or_insert(place);
                }
                None => found.asides.push((entry.path(), trace)),
            }
        }
    }
    found
}

impl RerunLeftovers {
    /// Where a folder, named pipe, socket, device or link would block or misdirect a rerun in
    /// place: refused before any task runs.
    pub fn blocked(&self) -> Option<&Path> {
        self.blocked.as_deref()
    }

    /// Removes the asides and the temporary files of joins. With `keep` (the runs of the results
    /// a rerun in this folder carries rows of), each trace beside an aside first keeps only those
    /// runs: a crash between [`join_aside`] and [`swap_in_aside`] left it holding a run its
    /// results do not name. Returns how many runs were removed from traces.
    pub fn tidy(&self, keep: Option<&HashSet<String>>) -> io::Result<usize> {
        for join in &self.joins {
            std::fs::remove_file(join)?;
        }
        let mut removed = 0;
        for (aside, trace) in &self.asides {
            if let Some(keep) = keep
                && is_regular(trace)
            {
                let dropped = runs_in(trace)?
                    .iter()
                    .filter(|run| !keep.contains(*run))
                    .count();
                if dropped > 0 {
                    keep_runs(trace, keep)?;
                    removed += dropped;
                }
            }
            std::fs::remove_file(aside)?;
        }
        Ok(removed)
    }
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
        assert!(is_join_leftover(".t-1.jsonl.tmp-123-4"));
        assert!(!is_join_leftover("t-1.jsonl"));
        assert!(!is_join_leftover(".t-1.jsonl.rerun"));
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
    fn a_trace_with_another_link_or_a_cut_line_is_joined_into_a_new_file() {
        let dir = tempfile::tempdir().unwrap();
        let both: HashSet<String> = ["old", "new"].map(String::from).into();
        // Another link: a snapshot of the folder keeps the earlier run alone.
        let trace = dir.path().join("linked.jsonl");
        std::fs::write(&trace, run("old")).unwrap();
        let snapshot = dir.path().join("snapshot.jsonl");
        std::fs::hard_link(&trace, &snapshot).unwrap();
        std::fs::write(aside_of(&trace), run("new")).unwrap();
        assert!(join_aside(&trace, &both).unwrap());
        assert_eq!(
            std::fs::read_to_string(&trace).unwrap(),
            run("old") + &run("new")
        );
        assert_eq!(std::fs::read_to_string(&snapshot).unwrap(), run("old"));
        // A last line cut short: the new run's first line does not join it.
        let trace = dir.path().join("cut.jsonl");
        std::fs::write(&trace, run("old") + "{\"run_id\":\"old\",\"st").unwrap();
        std::fs::write(aside_of(&trace), run("new")).unwrap();
        assert!(join_aside(&trace, &both).unwrap());
        assert_eq!(
            std::fs::read_to_string(&trace).unwrap(),
            run("old") + &run("new")
        );
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
        assert_eq!(find_rerun_leftovers(&traces).tidy(Some(&named)).unwrap(), 2);
        for folder in [traces.clone(), traces.join("r1")] {
            let trace = folder.join("t.jsonl");
            assert_eq!(std::fs::read_to_string(&trace).unwrap(), run("old"));
            assert!(!aside_of(&trace).exists());
        }
        // Without results to keep by, only the asides and a join's temporary file go.
        let trace = traces.join("t.jsonl");
        std::fs::write(aside_of(&trace), run("new")).unwrap();
        std::fs::write(traces.join(".t.jsonl.tmp-1-0"), run("new")).unwrap();
        assert_eq!(find_rerun_leftovers(&traces).tidy(None).unwrap(), 0);
        assert_eq!(std::fs::read_to_string(&trace).unwrap(), run("old"));
        assert!(!aside_of(&trace).exists());
        assert!(!traces.join(".t.jsonl.tmp-1-0").exists());
    }
}

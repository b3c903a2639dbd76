//! One run's folder, `DIR/runs/<eval-id>/`: `header.json`, the append-only `rows.jsonl` ending in
//! a `sealed` line, and the traces. Everything is created new (`O_EXCL`) and never rewritten.

use std::fmt::Display;
use std::fs::{self, File};
use std::io::{self, Write};
use std::path::{Path, PathBuf};
use std::sync::{Mutex, PoisonError};

use serde::{Deserialize, Serialize};

use crate::eval::{Selection, Shard, SuiteInfo, TaskResult};
use crate::trace::Capture;

/// The folder of runs in an output folder.
pub const RUNS_DIR: &str = "runs";
/// A run's header file.
pub const HEADER_NAME: &str = "header.json";
/// A run's row log.
pub const ROWS_NAME: &str = "rows.jsonl";
/// The format of a run header: serde reads no other.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum RunFormat {
    /// `looptrace.run/1`.
    #[serde(rename = "looptrace.run/1")]
    V1,
}

/// What started a run.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum RunKind {
    /// A plain `eval`: no parents.
    Eval,
    /// `eval --resume`: its parent is the run a crash or a signal stopped.
    Resume,
    /// `eval --rerun-failed`: its parents are the runs the results it updates name.
    Rerun,
}

/// `header.json`: what a run set out to do, written before its first task.
/// `Tasks` is the list as held: read back, or (when written) wherever the ids are.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct RunHeader<Tasks = Vec<String>> {
    /// `looptrace.run/1`.
    pub format: RunFormat,
    /// The run's id (its folder's name), part of every run id its traces hold.
    pub eval_id: String,
    /// The looptrace version that wrote it.
    pub looptrace_version: String,
    /// When the run started, UTC, RFC 3339.
    pub created_at: String,
    /// What started it.
    pub kind: RunKind,
    /// The runs whose rows this one builds on, oldest first.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub parents: Vec<String>,
    /// The suite.
    pub suite: SuiteInfo,
    /// The trace capture.
    pub capture: Capture,
    /// `--repeat N` (with `--repeat-until-decided MAX`, MAX).
    pub repeats: u32,
    /// `--repeat-until-decided`: the stopping rule, which a task's 1 to `repeats` rows followed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub adaptive: Option<crate::stats::AdaptiveRule>,
    /// `per-task` or `single`.
    pub trace_layout: String,
    /// `--shard K/N`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub shard: Option<Shard>,
    /// The `--model`s given (several: a model matrix), which `--resume` applies again.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub models: Vec<String>,
    /// What `results.json` records as `selection` (the `--only` and `--skip` patterns among it).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub selection: Option<Selection>,
    /// The task ids whose rows the view lists, in the view's order: for `eval` and `--resume` the
    /// tasks the run covers (after `--shard`), whose rows alone it keeps; for `--rerun-failed`
    /// the suite's tasks (rows of tasks no longer in it are kept, last).
    pub tasks: Tasks,
}

/// The last line of `rows.jsonl`: the invocation ended (a crash leaves none).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Seal {
    /// Always `true`; what tells this line from a row.
    pub sealed: bool,
    /// Whether SIGINT or SIGTERM stopped it before every owed row was written, or it settles
    /// results that stay interrupted.
    #[serde(default)]
    pub interrupted: bool,
    /// Tasks a rerun's results owed rows for that it did not run (`not_reached` of the view).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub not_reached: Vec<String>,
}

/// An error reading or writing the run store: the file, and what is wrong with it.
#[derive(Debug, thiserror::Error)]
#[error("{message}")]
pub struct StoreError {
    /// The file or folder.
    pub path: PathBuf,
    /// What failed, naming the file (and the line of one that is not what looptrace writes).
    pub message: String,
}

/// Failing to `action` (read, write, create...) the file or folder `path`.
pub(super) fn io_error<'p>(
    action: &'static str,
    path: &'p Path,
) -> impl FnOnce(io::Error) -> StoreError + 'p {
    move |err| StoreError {
        message: format!("failed to {action} `{}`: {err}", path.display()),
        path: path.to_path_buf(),
    }
}

/// Line `line` of `path` is not `what` (a header or a row looptrace writes), as `message` says.
pub(super) fn malformed(path: &Path, line: usize, what: &str, message: impl Display) -> StoreError {
    let message = format!(
        "line {line} of `{}` is not {what}: {message}",
        path.display()
    );
    let path = path.to_path_buf();
    StoreError { path, message }
}

/// A run being written: its folder and its row log, shared by the runner's workers.
pub struct RunFolder {
    /// The run's folder.
    pub dir: PathBuf,
    rows: Mutex<File>,
}

use crate::output::create_new_append as create_new;

impl RunFolder {
    /// Creates `DIR/runs/<header.eval_id>/` (which must not exist), its `header.json` and an
    /// empty `rows.jsonl`. They are made in a staging folder (`runs/.<eval-id>.new/`, which no
    /// reader takes for a run) renamed into place whole: a crash never leaves a run without its
    /// header, only a staging folder that `gc` removes.
    pub fn create<T: Serialize>(
        out: &Path,
        header: &RunHeader<T>,
    ) -> Result<RunFolder, StoreError> {
        let (dir, file) = create_whole(out, &header.eval_id, |staging| {
            fs::create_dir(staging)?;
            // Written as it is serialized: a header lists every task, which may be a million.
            let mut writer = io::BufWriter::new(create_new(&staging.join(HEADER_NAME))?);
            serde_json::to_writer_pretty(&mut writer, header)?;
            writer.write_all(b"\n")?;
            writer.flush()?;
            create_new(&staging.join(ROWS_NAME))
        })?;
        let rows = Mutex::new(file);
        Ok(RunFolder { dir, rows })
    }

    /// Appends `row` as one line in one `write` on a file opened for appending (a crash leaves
    /// whole lines and at most one torn last line); returns the line.
    pub fn append(&self, row: &TaskResult) -> Result<Vec<u8>, StoreError> {
        // Serialized before the lock: the runner's workers wait only for each other's write.
        let line =
            row_line(row).map_err(|err| io_error("write", &self.dir.join(ROWS_NAME))(err))?;
        self.append_lines(&line).map(|()| line)
    }

    /// Appends rows' whole lines (of [`row_line`]) in one `write`.
    pub fn append_lines(&self, lines: &[u8]) -> Result<(), StoreError> {
        let mut file = self.rows.lock().unwrap_or_else(PoisonError::into_inner);
        if let Some(cut) = crate::fault::rows_bytes(lines) {
            let _ = file.write_all(&lines[..cut]);
            crate::fault::abort();
        }
        // The log's path is made only for an error: rows are written by the million.
        (file.write_all(lines)).map_err(|err| io_error("write", &self.dir.join(ROWS_NAME))(err))
    }

    /// Appends the `sealed` line: the invocation ended and the run is never written again.
    pub fn seal(&self, seal: &Seal) -> Result<(), StoreError> {
        let file = &mut *self.rows.lock().unwrap_or_else(PoisonError::into_inner);
        (row_line(seal).and_then(|line| file.write_all(&line)))
            .and_then(|()| file.sync_all())
            .map_err(io_error("write", &self.dir.join(ROWS_NAME)))
    }
}

/// A row's (or the seal's) line in the row log.
pub fn row_line(row: &impl Serialize) -> io::Result<Vec<u8>> {
    let mut line = serde_json::to_vec(row)?;
    line.push(b'\n');
    Ok(line)
}

/// A run read back.
#[derive(Clone, Debug)]
pub struct RunRead {
    /// Its header.
    pub header: RunHeader,
    /// Its whole rows, in the order they were written.
    pub rows: Vec<TaskResult>,
    /// Its seal; `None` when a crash or a kill ended it.
    pub seal: Option<Seal>,
    /// The number of a torn last line (a crash while it was written), which is ignored.
    pub torn_line: Option<usize>,
}

/// Reads the header of run `id` in `out`.
pub fn read_header(out: &Path, id: &str) -> Result<RunHeader, StoreError> {
    let path = out.join(RUNS_DIR).join(id).join(HEADER_NAME);
    let text = fs::read(&path).map_err(io_error("read", &path))?;
    let header = serde_json::from_slice(&text);
    header.map_err(|e| malformed(&path, e.line(), "a run header this looptrace reads", e))
}

/// Reads run `id` of the output folder `out`.
pub fn read_run(out: &Path, id: &str) -> Result<RunRead, StoreError> {
    let header = read_header(out, id)?;
    let path = out.join(RUNS_DIR).join(id).join(ROWS_NAME);
    let bytes = fs::read(&path).map_err(io_error("read", &path))?;
    let (mut rows, mut seal, mut torn_line) = (Vec::new(), None, None);
    for (line, number) in bytes.split_inclusive(|b| *b == b'\n').zip(1..) {
        let bad = |what, message: &dyn Display| malformed(&path, number, what, message);
        if !line.ends_with(b"\n") {
            // Only the last line can lack its newline: the write of a crashed process.
            torn_line = Some(number);
        } else if seal.is_some() {
            let message = "a line follows the `sealed` line";
            return Err(bad("the end of a sealed run", &message));
        } else if line.starts_with(b"{\"sealed\"") {
            seal = Some(serde_json::from_slice(line).map_err(|e| bad("a seal", &e))?);
        } else {
            rows.push(serde_json::from_slice(line).map_err(|e| bad("a result row", &e))?);
        }
    }
    Ok(RunRead {
        header,
        rows,
        seal,
        torn_line,
    })
}

/// The ids of the runs in `out`, oldest first (ids start with the time they were made); none
/// when there is no `runs/` folder.
pub fn list_runs(out: &Path) -> Result<Vec<String>, StoreError> {
    let names = folders(out)?.into_iter();
    Ok(names.filter(|name| is_run_id(name)).collect())
}

/// Makes run `id` of `out` whole or not at all: `fill` makes it as a staging folder
/// (`runs/.<id>.<token>.new`, which no reader takes for a run), renamed into place when filled.
/// A crash never leaves a run without its header, only a staging folder that `gc` removes.
/// Renaming onto a run that exists fails: it is never empty.
pub(super) fn create_whole<T>(
    out: &Path,
    id: &str,
    fill: impl FnOnce(&Path) -> io::Result<T>,
) -> Result<(PathBuf, T), StoreError> {
    let runs = out.join(RUNS_DIR);
    fs::create_dir_all(&runs).map_err(io_error("create", &runs))?;
    let dir = runs.join(id);
    let staging = runs.join(format!(".{id}.{}.new", crate::run::unique_token()));
    let filled = fill(&staging)
        .and_then(|filled| fs::rename(&staging, &dir).map(|()| filled))
        .map_err(io_error("create", &dir))?;
    Ok((dir, filled))
}

/// The names of the folders in `out/runs/`, sorted; none when there is no `runs/` folder.
pub(super) fn folders(out: &Path) -> Result<Vec<String>, StoreError> {
    let runs = out.join(RUNS_DIR);
    let entries = match fs::read_dir(&runs) {
        Err(err) if err.kind() == io::ErrorKind::NotFound => return Ok(Vec::new()),
        entries => entries.map_err(io_error("read", &runs))?,
    };
    let mut names: Vec<String> = (entries.flatten())
        .filter(|entry| entry.file_type().is_ok_and(|t| t.is_dir()))
        .map(|entry| entry.file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    Ok(names)
}

/// Whether `path` (as a row names its trace) stays inside the folder it is relative to: no root,
/// no `..`. Paths from a results file are never followed out of their folder.
pub fn is_inside(path: &str) -> bool {
    let normal = |part| matches!(part, std::path::Component::Normal(_));
    !path.is_empty() && Path::new(path).components().all(normal)
}

/// Whether `name` is shaped as eval ids are (`[0-9a-z]+-[0-9a-z]+`): anything else in `runs/` is
/// not a run.
pub fn is_run_id(name: &str) -> bool {
    let part = |s: &str| !s.is_empty() && s.bytes().all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'z'));
    name.split_once('-')
        .is_some_and(|(time, random)| part(time) && part(random))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn header(id: &str) -> RunHeader {
        RunHeader {
            format: RunFormat::V1,
            eval_id: id.to_owned(),
            looptrace_version: "0".to_owned(),
            created_at: "t".to_owned(),
            kind: RunKind::Eval,
            parents: Vec::new(),
            suite: SuiteInfo {
                name: "s".to_owned(),
                tasks: 1,
                fingerprint: "f".to_owned(),
            },
            capture: Capture::Summary,
            repeats: 1,
            adaptive: None,
            trace_layout: "per-task".to_owned(),
            shard: None,
            models: Vec::new(),
            selection: None,
            tasks: vec!["a".to_owned()],
        }
    }

    #[test]
    fn a_run_folder_is_made_once_and_reads_back_with_its_seal() {
        let dir = tempfile::tempdir().unwrap();
        let run = RunFolder::create(dir.path(), &header("abc-1")).unwrap();
        // The same id again is refused: nothing is ever written into a run twice.
        assert!(RunFolder::create(dir.path(), &header("abc-1")).is_err());
        run.seal(&Seal {
            sealed: true,
            interrupted: true,
            not_reached: vec!["b".to_owned()],
        })
        .unwrap();
        let read = read_run(dir.path(), "abc-1").unwrap();
        assert_eq!(read.header, header("abc-1"));
        assert!(read.rows.is_empty());
        assert_eq!(read.seal.unwrap().not_reached, ["b"]);
        std::fs::create_dir(dir.path().join("runs/not a run")).unwrap();
        assert_eq!(list_runs(dir.path()).unwrap(), ["abc-1"]);
    }

    #[test]
    fn a_crash_before_the_rename_leaves_no_run_and_gc_removes_its_staging_folder() {
        let dir = tempfile::tempdir().unwrap();
        RunFolder::create(dir.path(), &header("abc-1")).unwrap();
        // No staging folder stays behind a run made whole.
        assert_eq!(folders(dir.path()).unwrap(), ["abc-1"]);
        // A crash between making the staging folder and renaming it: a header cut short.
        let staging = dir.path().join("runs/.abc-2.new");
        std::fs::create_dir(&staging).unwrap();
        std::fs::write(staging.join(HEADER_NAME), b"").unwrap();
        assert_eq!(list_runs(dir.path()).unwrap(), ["abc-1"]);
        assert_eq!(folders(dir.path()).unwrap(), [".abc-2.new", "abc-1"]);
        let plan = crate::eval::store::plan_gc(dir.path(), &["abc-1".to_owned()], 0).unwrap();
        assert_eq!(plan.remove.len(), 1);
        assert_eq!(plan.remove[0].0, ".abc-2.new");
        crate::eval::store::remove_runs(dir.path(), &plan).unwrap();
        assert!(!staging.exists());
        assert!(dir.path().join("runs/abc-1/header.json").is_file());
    }

    #[test]
    fn gc_keeps_a_run_newer_than_the_view_and_the_runs_it_is_folded_over() {
        let dir = tempfile::tempdir().unwrap();
        let first = RunFolder::create(dir.path(), &header("abc-1")).unwrap();
        let row: TaskResult = serde_json::from_value(serde_json::json!({
            "id": "a", "model": "actions", "exit_reason": "finished", "steps_used": 1,
            "max_steps": 5, "tool_calls": 0, "tool_errors": 0, "feedback": 0,
            "duration_ms": 0.0, "expectation": "met"
        }))
        .unwrap();
        first.append(&row).unwrap();
        let mut resume = header("abc-2");
        resume.kind = RunKind::Resume;
        resume.parents = vec!["abc-1".to_owned()];
        RunFolder::create(dir.path(), &resume).unwrap();
        // Both crashed before any view was written: the next `--resume` continues the second,
        // which keeps the first one's row.
        let plan = crate::eval::store::plan_gc(dir.path(), &[], 0).unwrap();
        assert!(plan.remove.is_empty(), "{plan:?}");
        assert_eq!(plan.kept.len(), 2);
        // Sealed, but a crash came before its view: the next `--resume` writes that view.
        let mut sealed = header("abc-3");
        sealed.kind = RunKind::Resume;
        sealed.parents = vec!["abc-1".to_owned()];
        let run = RunFolder::create(dir.path(), &sealed).unwrap();
        run.seal(&Seal {
            sealed: true,
            ..Seal::default()
        })
        .unwrap();
        let plan = crate::eval::store::plan_gc(dir.path(), &[], 0).unwrap();
        let removed: Vec<&str> = plan.remove.iter().map(|(id, _, _)| id.as_str()).collect();
        assert_eq!(removed, ["abc-2"], "{plan:?}");
    }
}

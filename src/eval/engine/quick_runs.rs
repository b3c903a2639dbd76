//! Runs that start nothing outside the process, written many at a time. A replayed run whose
//! tools all run in looptrace takes microseconds, less than the two `write`s that would record it,
//! so the runner lends its trace lines with its row ([`RunnerOptions::keep_quick_runs`]) and they
//! are written 64 KiB at a time: the trace lines first, then the rows, so a row on disk always
//! names a run whose trace is whole (what `--resume` keeps). A crash loses at most one batch of
//! such runs, and `--resume` runs them again.
//!
//! The lines are copied into the batch, not taken: a buffer one worker made and another freed
//! would make glibc's `free` wait on the first worker's arena, which cost more than the copy.
//!
//! [`RunnerOptions::keep_quick_runs`]: crate::eval::RunnerOptions::keep_quick_runs

use std::fs::File;
use std::io::Write;
use std::path::PathBuf;
use std::sync::{Arc, Mutex, PoisonError};

use crate::eval::TaskResult;
use crate::eval::store::{RunFolder, row_line};

/// How many bytes of lines a batch holds before they are written.
const BATCH_BYTES: usize = 64 * 1024;

/// The run's single trace file, and the lines held for it and for the row log.
pub(super) struct QuickRuns {
    traces: Arc<File>,
    path: PathBuf,
    held: Mutex<Held>,
}

#[derive(Default)]
struct Held {
    /// The runs' trace lines, one run after another.
    traces: Vec<u8>,
    rows: Vec<u8>,
}

impl Held {
    /// Buffers with room for a whole batch and the run that fills it.
    fn with_room() -> Held {
        Held {
            traces: Vec::with_capacity(BATCH_BYTES + BATCH_BYTES / 4),
            rows: Vec::with_capacity(BATCH_BYTES / 2),
        }
    }
}

impl QuickRuns {
    /// Batches for the single trace file `traces`, at `path`.
    pub(super) fn new(traces: Arc<File>, path: PathBuf) -> QuickRuns {
        let held = Mutex::new(Held::with_room());
        QuickRuns { traces, path, held }
    }

    /// Holds a run's trace `lines` and `row`, writing the batch once it is full; returns the
    /// row's line.
    pub(super) fn add(
        &self,
        lines: &[u8],
        row: &TaskResult,
        run: &RunFolder,
    ) -> Result<Vec<u8>, String> {
        let line = row_line(row).map_err(|err| format!("failed to write a row: {err}"))?;
        let mut held = self.held.lock().unwrap_or_else(PoisonError::into_inner);
        held.traces.extend_from_slice(lines);
        held.rows.extend_from_slice(&line);
        if held.traces.len() + held.rows.len() >= BATCH_BYTES {
            // Written outside the lock: the other workers go on holding their runs meanwhile,
            // in buffers made whole at once (a buffer grown by `realloc` in one worker's turn
            // and another's waits on the arena of the first).
            let full = std::mem::replace(&mut *held, Held::with_room());
            drop(held);
            self.write(full, run)?;
        }
        Ok(line)
    }

    /// Writes what is held.
    pub(super) fn flush(&self, run: &RunFolder) -> Result<(), String> {
        let held = std::mem::take(&mut *self.held.lock().unwrap_or_else(PoisonError::into_inner));
        self.write(held, run)
    }

    /// Writes a batch: one `write` each (unless cut short) on files opened for appending, so
    /// the lines land whole after any other run's lines, and the rows only once their runs'
    /// traces are there.
    fn write(&self, held: Held, run: &RunFolder) -> Result<(), String> {
        (&*self.traces)
            .write_all(&held.traces)
            .map_err(|err| format!("failed to write `{}`: {err}", self.path.display()))?;
        run.append_lines(&held.rows).map_err(|err| err.to_string())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::eval::store::{RunHeader, read_run};

    fn header() -> RunHeader {
        serde_json::from_value(serde_json::json!({
            "format": "looptrace.run/1", "eval_id": "abc-1", "looptrace_version": "0",
            "created_at": "t", "kind": "eval", "capture": "summary", "repeats": 1,
            "trace_layout": "single", "tasks": [],
            "suite": {"name": "s", "tasks": 300, "fingerprint": "f"}
        }))
        .unwrap()
    }

    fn row(id: &str) -> TaskResult {
        serde_json::from_value(serde_json::json!({
            "id": id, "run_id": format!("{id}.abc-1"), "model": "replay", "exit_reason": "finished",
            "steps_used": 1, "max_steps": 5, "tool_calls": 0, "tool_errors": 0, "feedback": 0,
            "duration_ms": 0.0, "expectation": "met"
        }))
        .unwrap()
    }

    #[test]
    fn rows_reach_their_log_only_after_their_runs_traces_and_all_of_them_by_the_flush() {
        let dir = tempfile::tempdir().unwrap();
        let run = RunFolder::create(dir.path(), &header()).unwrap();
        let path = run.dir.join("traces.jsonl");
        let file = crate::output::create_new_append(&path).unwrap();
        let quick = QuickRuns::new(Arc::new(file), path.clone());
        let trace = |i: usize| {
            format!(
                "{{\"run_id\":\"t{i}.abc-1\",\"pad\":\"{}\"}}\n",
                "x".repeat(400)
            )
        };
        let mut written_rows = 0;
        for i in 0..300 {
            let line = quick
                .add(trace(i).as_bytes(), &row(&format!("t{i}")), &run)
                .unwrap();
            assert!(line.ends_with(b"\n"));
            // Whatever is on disk: every row's run is in the trace file already.
            let rows = read_run(dir.path(), "abc-1").unwrap().rows;
            let traces = std::fs::read_to_string(&path).unwrap();
            for row in &rows {
                let id = row.run_id.as_deref().unwrap();
                assert!(traces.contains(&format!("\"{id}\"")), "{id}");
            }
            written_rows = rows.len();
        }
        // Batches were written along the way, not only at the end.
        assert!(written_rows > 0 && written_rows < 300, "{written_rows}");
        quick.flush(&run).unwrap();
        assert_eq!(read_run(dir.path(), "abc-1").unwrap().rows.len(), 300);
        assert_eq!(std::fs::read_to_string(&path).unwrap().lines().count(), 300);
    }
}

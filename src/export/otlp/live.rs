//! Pushing runs as they end: a caller that writes traces (an evaluation) names each finished
//! run's trace file and run id; a background thread reads the run back from its file, builds its
//! spans and sends whatever has ended since its last request as one batch. The caller never waits
//! for the receiver, and a receiver that fails stops the sending, not the caller's work.
//!
//! The ids are those `export --otlp` gives the same file, so sending a run again later (or
//! exporting the folder) creates no duplicates.

use std::collections::{BTreeMap, HashSet};
use std::path::{Path, PathBuf};
use std::sync::mpsc::{Receiver, Sender, channel};
use std::thread::JoinHandle;

use super::build::{BuildOptions, build_run};
use super::endpoint::PushConfig;
use super::ids::TraceId;
use super::proto::encode_request;
use super::push::{PushStats, Pusher};
use crate::trace::{ReadOptions, RunStream};

/// One ended run: the trace files that may hold it (the first that does is read) and its id.
type Ended = (Vec<PathBuf>, String);

/// What a live push did, once it is finished.
#[derive(Debug, Default)]
pub struct LivePushReport {
    /// What was sent.
    pub stats: PushStats,
    /// Runs that were queued but not sent.
    pub unsent: u64,
    /// Why: the failed request (after which nothing more is tried), runs not found in their
    /// traces.
    pub errors: Vec<String>,
}

/// A background sender of runs as they end.
#[derive(Debug)]
pub struct LivePush {
    queue: Option<Sender<Ended>>,
    thread: Option<JoinHandle<LivePushReport>>,
}

impl LivePush {
    /// Starts the sending thread.
    pub fn start(config: PushConfig, options: BuildOptions) -> LivePush {
        let (queue, ended) = channel();
        let pusher = Pusher::new(config);
        let thread = std::thread::spawn(move || send_all(&ended, pusher, &options));
        LivePush {
            queue: Some(queue),
            thread: Some(thread),
        }
    }

    /// Queues the run `run_id`, whose trace is the first of `candidates` that holds it.
    pub fn run_ended(&self, candidates: Vec<PathBuf>, run_id: &str) {
        if let Some(queue) = &self.queue {
            // The thread only stops when the queue closes; a send cannot fail before.
            let _ = queue.send((candidates, run_id.to_owned()));
        }
    }

    /// Waits until every queued run was sent (or given up on) and says what happened.
    pub fn finish(mut self) -> LivePushReport {
        drop(self.queue.take());
        match self.thread.take().map(JoinHandle::join) {
            Some(Ok(report)) => report,
            Some(Err(_)) => LivePushReport {
                errors: vec!["the sending thread stopped unexpectedly".to_owned()],
                ..LivePushReport::default()
            },
            None => LivePushReport::default(),
        }
    }
}

impl Drop for LivePush {
    fn drop(&mut self) {
        drop(self.queue.take());
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

fn send_all(ended: &Receiver<Ended>, mut pusher: Pusher, options: &BuildOptions) -> LivePushReport {
    let mut errors = Vec::new();
    let mut queued: u64 = 0;
    while let Ok(first) = ended.recv() {
        // Everything that ended while the last request was out goes in this one.
        let mut batch = vec![first];
        batch.extend(ended.try_iter());
        queued += batch.len() as u64;
        // After a failed request the receiver is not tried again: the runs stay in their traces.
        if pusher.stats().failed_runs > 0 {
            continue;
        }
        for (file, runs) in by_file(&batch) {
            if let Err(error) = add_runs(&file, &runs, &mut pusher, options) {
                errors.push(error);
            }
        }
        if let Err(error) = pusher.flush() {
            errors.push(error.to_string());
        }
    }
    let stats = pusher.stats();
    LivePushReport {
        stats,
        unsent: queued.saturating_sub(stats.runs),
        errors,
    }
}

/// The wanted run ids per trace file: the first candidate that exists.
fn by_file(batch: &[Ended]) -> BTreeMap<PathBuf, HashSet<String>> {
    let mut files: BTreeMap<PathBuf, HashSet<String>> = BTreeMap::new();
    for (candidates, run_id) in batch {
        let file = candidates
            .iter()
            .find(|path| path.is_file())
            .or(candidates.first());
        if let Some(file) = file {
            files
                .entry(file.clone())
                .or_default()
                .insert(run_id.clone());
        }
    }
    files
}

/// Reads `file` once and adds the runs of `wanted` to the batch; returns how many it added.
fn add_runs(
    file: &Path,
    wanted: &HashSet<String>,
    pusher: &mut Pusher,
    options: &BuildOptions,
) -> Result<u64, String> {
    let name = file
        .file_name()
        .map_or_else(String::new, |n| n.to_string_lossy().into_owned());
    let mut stream = RunStream::open(file, ReadOptions::default()).map_err(|e| e.to_string())?;
    let mut added = 0;
    for streamed in stream.by_ref() {
        let streamed = streamed.map_err(|e| e.to_string())?;
        if !wanted.contains(&streamed.run.run_id) {
            continue;
        }
        // The ids `export --otlp` gives this run of this file.
        let trace_id = TraceId::derive(&name, &streamed.run.run_id, streamed.occurrence, 0);
        let exported = build_run(&streamed.run, trace_id, &name, options);
        let request = encode_request(std::slice::from_ref(&exported));
        pusher
            .add(&request, exported.spans.len() as u64)
            .map_err(|e| e.to_string())?;
        added += 1;
    }
    if added < wanted.len() as u64 {
        return Err(format!(
            "{} not found in `{}`",
            crate::plural(wanted.len() as u64 - added, "run", "runs"),
            file.display()
        ));
    }
    Ok(added)
}

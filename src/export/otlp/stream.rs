//! The streaming driver: runs come from a [`RunStream`] as each ends, are turned into spans,
//! encoded (OTLP/JSON lines for a file, OTLP protobuf for a push) and handed to a [`RunSink`] at
//! once, so only the runs still open are held, whatever the size of the input.
//!
//! Two threads share the work: this one reads, parses and groups the input and writes the
//! output; a second one builds and encodes the spans. Both queues between them are bounded, so
//! memory stays bounded too; the order of the runs is kept.

use std::io::{Read, Write};
use std::sync::mpsc::{Receiver, SyncSender, TrySendError, sync_channel};

use super::build::{BuildOptions, build_run};
use super::ids::{TraceId, TraceIds};
use super::json::encode_run;
use super::proto::encode_request;
use super::push::{PushError, Pusher};
use crate::trace::{Capture, RecordedRun, RunStream, TraceError};

/// How many runs wait in each queue between the two threads.
const QUEUE_RUNS: usize = 32;

/// What one export wrote.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ExportStats {
    /// Runs written, one line each.
    pub runs: u64,
    /// Spans written.
    pub spans: u64,
    /// Runs exported without content although content was asked for: not full capture.
    pub without_content: u64,
    /// Runs that a results file (`--results`) gave an expectation verdict.
    pub with_verdict: u64,
}

/// Why an export stopped.
#[derive(Debug, thiserror::Error)]
pub enum ExportError {
    /// The input is malformed or unreadable.
    #[error(transparent)]
    Input(#[from] TraceError),
    /// Writing the output failed.
    #[error("failed to write the export: {0}")]
    Write(std::io::Error),
    /// The receiver did not take a batch.
    #[error(transparent)]
    Push(#[from] PushError),
}

/// How each run is encoded.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Encoding {
    /// One OTLP/JSON `TracesData` line per run (the file exporter's format).
    JsonLines,
    /// One protobuf `ExportTraceServiceRequest` per run (the OTLP/HTTP body).
    Protobuf,
}

/// Where encoded runs go: a file or standard output, or a receiver.
pub trait RunSink {
    /// The encoding it takes.
    fn encoding(&self) -> Encoding;

    /// Takes one encoded run holding `spans` spans.
    fn write_run(&mut self, encoded: &[u8], spans: u64) -> Result<(), ExportError>;
}

/// A receiver takes protobuf requests.
impl RunSink for Pusher {
    fn encoding(&self) -> Encoding {
        Encoding::Protobuf
    }

    fn write_run(&mut self, request: &[u8], spans: u64) -> Result<(), ExportError> {
        Ok(self.add(request, spans)?)
    }
}

/// Files and standard output take OTLP/JSON lines.
impl<W: Write + ?Sized> RunSink for W {
    fn encoding(&self) -> Encoding {
        Encoding::JsonLines
    }

    fn write_run(&mut self, encoded: &[u8], _spans: u64) -> Result<(), ExportError> {
        self.write_all(encoded).map_err(ExportError::Write)
    }
}

/// One encoded run: its line and how many spans it holds.
type Encoded = (Vec<u8>, u64);

/// Exports every run of `stream`, whose file is named `file`, to `out`, each encoded as `out`
/// takes it.
pub fn export_stream<R: Read>(
    stream: &mut RunStream<R>,
    file: &str,
    ids: &mut TraceIds,
    options: &BuildOptions,
    out: &mut dyn RunSink,
    stats: &mut ExportStats,
) -> Result<(), ExportError> {
    let encoding = out.encoding();
    std::thread::scope(|scope| {
        let (runs_in, runs_out) = sync_channel::<(RecordedRun, TraceId)>(QUEUE_RUNS);
        let (lines_in, lines_out) = sync_channel::<Encoded>(QUEUE_RUNS);
        scope.spawn(move || encode_all(&runs_out, &lines_in, file, options, encoding));
        let mut write = |(line, spans): Encoded| -> Result<(), ExportError> {
            out.write_run(&line, spans)?;
            stats.runs += 1;
            stats.spans += spans;
            Ok(())
        };
        let result = (|| {
            for run in stream.by_ref() {
                let streamed = run?;
                let trace_id = ids.assign(file, &streamed.run.run_id, streamed.occurrence);
                if options.content
                    && streamed.run.started().and_then(|e| e.capture) != Some(Capture::Full)
                {
                    stats.without_content += 1;
                }
                if options.verdicts.contains_key(&streamed.run.run_id) {
                    stats.with_verdict += 1;
                }
                send(&runs_in, (streamed.run, trace_id), &lines_out, &mut write)?;
            }
            Ok(())
        })();
        // Closing the queue ends the encoder once it has encoded what it was given.
        drop(runs_in);
        for encoded in lines_out {
            if result.is_ok() {
                write(encoded)?;
            }
        }
        result
    })
}

/// Queues `item` for the encoder, writing finished lines while the queue is full, so neither
/// thread ever waits for the other while the other waits too.
fn send(
    queue: &SyncSender<(RecordedRun, TraceId)>,
    mut item: (RecordedRun, TraceId),
    lines: &Receiver<Encoded>,
    write: &mut impl FnMut(Encoded) -> Result<(), ExportError>,
) -> Result<(), ExportError> {
    loop {
        while let Ok(encoded) = lines.try_recv() {
            write(encoded)?;
        }
        match queue.try_send(item) {
            Ok(()) => return Ok(()),
            Err(TrySendError::Full(back)) => {
                item = back;
                // The encoder is busy: wait for its next line.
                match lines.recv() {
                    Ok(encoded) => write(encoded)?,
                    Err(_) => return Ok(()),
                }
            }
            // The encoder is gone only if it panicked; the scope reports that.
            Err(TrySendError::Disconnected(_)) => return Ok(()),
        }
    }
}

fn encode_all(
    runs: &Receiver<(RecordedRun, TraceId)>,
    lines: &SyncSender<Encoded>,
    file: &str,
    options: &BuildOptions,
    encoding: Encoding,
) {
    for (run, trace_id) in runs {
        let exported = build_run(&run, trace_id, file, options);
        let line = match encoding {
            Encoding::JsonLines => {
                let mut line = Vec::with_capacity(4096);
                encode_run(&exported, &mut line);
                line
            }
            Encoding::Protobuf => encode_request(std::slice::from_ref(&exported)),
        };
        if lines.send((line, exported.spans.len() as u64)).is_err() {
            return;
        }
    }
}

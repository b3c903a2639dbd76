//! Fault injection for process-level tests: `LOOPTRACE_FAULT` makes the process abort (no
//! unwinding, no cleanup) at one chosen point, so tests can check what a crash there leaves:
//!
//! - `abort_after_events:N`: right after the Nth trace event is written (mid-trace);
//! - `abort_before_row:N`: when eval is about to append the Nth result row to its run's
//!   `rows.jsonl` (the task's trace is complete, its row is not written);
//! - `abort_mid_row:N`: after writing only the first half of the Nth row's line (a torn line);
//! - `abort_in_results_write`: after part of `results.json` reached its temporary file, before
//!   the rename;
//!
//! Compiled in, inert unless the variable is set.

use std::sync::OnceLock;
use std::sync::atomic::{AtomicU64, Ordering};

/// The environment variable that arms a fault.
pub const FAULT_VAR: &str = "LOOPTRACE_FAULT";

/// A crash point.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Fault {
    /// Abort after the Nth trace event reaches its file.
    AfterEvents(u64),
    /// Abort before the Nth result row is appended.
    BeforeRow(u64),
    /// Abort halfway through writing the Nth result row.
    MidRow(u64),
    /// Abort while `results.json` is being written.
    InResultsWrite,
}

static FAULT: OnceLock<Option<Fault>> = OnceLock::new();
static EVENTS: AtomicU64 = AtomicU64::new(0);
static ROWS: AtomicU64 = AtomicU64::new(0);

/// Reads the fault setting; a malformed value is a usage error.
pub fn configured() -> Result<Option<Fault>, String> {
    let Some(value) = std::env::var_os(FAULT_VAR) else {
        return Ok(None);
    };
    let value = value.to_string_lossy();
    let counted = |prefix: &str| {
        value
            .strip_prefix(prefix)
            .and_then(|n| n.parse::<u64>().ok())
            .filter(|n| *n >= 1)
    };
    let fault = if value == "abort_in_results_write" {
        Some(Fault::InResultsWrite)
    } else {
        counted("abort_after_events:")
            .map(Fault::AfterEvents)
            .or_else(|| counted("abort_before_row:").map(Fault::BeforeRow))
            .or_else(|| counted("abort_mid_row:").map(Fault::MidRow))
    };
    fault.map(Some).ok_or_else(|| {
        format!(
            "{FAULT_VAR}={value:?} is not understood: expected abort_after_events:N, abort_before_row:N or abort_mid_row:N with N >= 1, or abort_in_results_write"
        )
    })
}

fn armed() -> Option<Fault> {
    *FAULT.get_or_init(|| configured().ok().flatten())
}

/// Called after each trace event reaches the file.
pub(crate) fn event_written() {
    if let Some(Fault::AfterEvents(limit)) = armed()
        && EVENTS.fetch_add(1, Ordering::SeqCst) + 1 >= limit
    {
        std::process::abort();
    }
}

/// Called before result rows' lines are written; returns how many of their bytes to write
/// before aborting (`None`: write them all): the rows before the armed one, and half of it for
/// `mid_row`.
pub fn rows_bytes(lines: &[u8]) -> Option<usize> {
    let fault = armed()?;
    let (Fault::BeforeRow(n) | Fault::MidRow(n)) = fault else {
        return None;
    };
    let mut start = 0;
    for line in lines.split_inclusive(|b| *b == b'\n') {
        if ROWS.fetch_add(1, Ordering::SeqCst) + 1 == n {
            return Some(match fault {
                Fault::BeforeRow(_) => start,
                _ => start + line.len() / 2,
            });
        }
        start += line.len();
    }
    None
}

/// Called after a torn row was written.
pub fn abort() -> ! {
    std::process::abort()
}

/// Called once part of `results.json` reached its temporary file.
pub fn results_partly_written() {
    if armed() == Some(Fault::InResultsWrite) {
        std::process::abort();
    }
}

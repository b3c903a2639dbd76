//! Fault injection for process-level tests: `LOOPTRACE_FAULT=abort_after_events:N` makes the
//! process abort (no unwinding, no cleanup) right after the Nth trace event is written. Compiled
//! in, inert unless the variable is set.

use std::sync::OnceLock;
use std::sync::atomic::{AtomicU64, Ordering};

/// The environment variable that arms a fault.
pub const FAULT_VAR: &str = "LOOPTRACE_FAULT";

static ABORT_AFTER: OnceLock<Option<u64>> = OnceLock::new();
static WRITTEN: AtomicU64 = AtomicU64::new(0);

/// Reads the fault setting; a malformed value is a usage error.
pub fn configured() -> Result<Option<u64>, String> {
    let Some(value) = std::env::var_os(FAULT_VAR) else {
        return Ok(None);
    };
    let value = value.to_string_lossy();
    value
        .strip_prefix("abort_after_events:")
        .and_then(|n| n.parse::<u64>().ok())
        .filter(|n| *n >= 1)
        .map(Some)
        .ok_or_else(|| {
            format!(
                "{FAULT_VAR}={value:?} is not understood: expected abort_after_events:N with N >= 1"
            )
        })
}

/// Called after each trace event reaches the file.
pub(crate) fn event_written() {
    let limit = ABORT_AFTER.get_or_init(|| configured().ok().flatten());
    if let Some(limit) = *limit
        && WRITTEN.fetch_add(1, Ordering::SeqCst) + 1 >= limit
    {
        std::process::abort();
    }
}

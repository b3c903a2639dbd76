//! An evaluation run from Rust instead of the command line: plan the bundled sample suite, run
//! it while an observer prints each finished run, then read the verdict and the rows.
//!
//! `cargo run --example evaluate` (writes its run store in a temporary folder).

use std::sync::atomic::{AtomicUsize, Ordering};

use looptrace::eval::TaskResult;
use looptrace::eval::engine::{EvalObserver, EvalPlan, EvalRequest, EvalVerdict};

/// Prints one line per finished run, as a progress display would.
struct Lines {
    total: usize,
    failed: AtomicUsize,
}

impl EvalObserver for Lines {
    fn run_finished(&self, done: usize, row: &TaskResult) {
        if row.fails() {
            self.failed.fetch_add(1, Ordering::Relaxed);
        }
        println!("[{done}/{}] {} {}", self.total, row.id, row.exit_reason);
    }
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let out = std::env::temp_dir().join(format!("looptrace-example-{}", std::process::id()));
    let suite = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("sample_traces/suite.json");
    let mut request = EvalRequest::suite(suite);
    request.out = Some(out.clone());
    request.jobs = Some(2);
    // Everything is loaded and checked here; the folder is locked, and nothing is written yet.
    let plan = EvalPlan::new(request)?;
    let observer = Lines {
        total: plan.runs_planned(),
        failed: AtomicUsize::new(0),
    };
    let outcome = plan.execute(&observer)?;
    println!(
        "{} runs, {} failed; results in {}",
        outcome.ran,
        observer.failed.load(Ordering::Relaxed),
        outcome.results_path.display()
    );
    std::fs::remove_dir_all(&out)?;
    if outcome.verdict != EvalVerdict::Passed {
        return Err("the sample suite should pass".into());
    }
    Ok(())
}

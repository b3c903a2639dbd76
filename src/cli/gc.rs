//! `looptrace gc DIR`: removes the runs of an output folder that its view no longer needs, and
//! says how much space that frees. Nothing else ever deletes a run.

use std::path::PathBuf;

use clap::Args;

use super::{CliError, CliResult, Outcome};
use looptrace::eval::lock_output;
use looptrace::eval::store::{RESULTS_NAME, RUNS_DIR, plan_gc, read_view, remove_runs};

/// Arguments of `looptrace gc`.
#[derive(Debug, Args)]
pub struct GcArgs {
    /// The output folder of `eval` (it holds `runs/` and `results.json`).
    #[arg(value_name = "DIR")]
    pub dir: PathBuf,
    /// Also keep the N newest sealed runs the view does not name.
    #[arg(long, value_name = "N", default_value_t = 0)]
    pub keep: usize,
    /// Say what would be removed, and remove nothing.
    #[arg(long)]
    pub dry_run: bool,
}

/// Runs `looptrace gc`.
pub fn run(args: GcArgs) -> CliResult {
    let runs = args.dir.join(RUNS_DIR);
    if !runs.is_dir() {
        return Err(CliError::input(format!(
            "`{}` holds no `{RUNS_DIR}/` folder: not an output folder of eval (results format 2)",
            args.dir.display()
        )));
    }
    // One writer per folder: no evaluation adds a run while gc decides.
    let _lock = lock_output(&args.dir)?;
    let referenced = match args.dir.join(RESULTS_NAME).exists() {
        true => read_view(&args.dir).map_err(CliError::Input)?.runs,
        false => Vec::new(),
    };
    let plan =
        plan_gc(&args.dir, &referenced, args.keep).map_err(|e| CliError::input(e.to_string()))?;
    let verb = if args.dry_run {
        "would remove"
    } else {
        "removed"
    };
    for (id, bytes, why) in &plan.remove {
        eprintln!(
            "{verb} `{}` ({}): {why}",
            runs.join(id).display(),
            human_bytes(*bytes)
        );
    }
    if !args.dry_run {
        remove_runs(&args.dir, &plan).map_err(|e| CliError::internal(e.to_string()))?;
    }
    let kept: u64 = plan.kept.iter().map(|(_, bytes)| bytes).sum();
    println!(
        "{verb} {}, {}; kept {}, {}",
        looptrace::plural(plan.remove.len() as u64, "run", "runs"),
        human_bytes(plan.freed()),
        looptrace::plural(plan.kept.len() as u64, "run", "runs"),
        human_bytes(kept)
    );
    Ok(Outcome::Success)
}

/// Bytes as people read them: `812 B`, `4.2 KB`, `1.3 MB`, `2.0 GB`.
pub(super) fn human_bytes(bytes: u64) -> String {
    const UNITS: [&str; 4] = ["KB", "MB", "GB", "TB"];
    if bytes < 1000 {
        return format!("{bytes} B");
    }
    let mut value = bytes as f64 / 1000.0;
    let mut unit = 0;
    while value >= 1000.0 && unit + 1 < UNITS.len() {
        value /= 1000.0;
        unit += 1;
    }
    format!("{value:.1} {}", UNITS[unit])
}

//! `looptrace gc DIR`: removes the runs of an output folder that its view no longer needs, and
//! says how much space that frees. Nothing else ever deletes a run.

use std::path::PathBuf;

use clap::Args;

use super::{CliError, CliResult, Outcome};
use looptrace::eval::lock_output;
use looptrace::eval::store::{RESULTS_NAME, RUNS_DIR, plan_gc, read_view, remove_runs};
use looptrace::{human_bytes, plural};

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
    let (dir, runs) = (&args.dir, args.dir.join(RUNS_DIR));
    if !runs.is_dir() {
        let why = "not an output folder of eval (results format 2)";
        let message = format!("`{}` holds no `{RUNS_DIR}/` folder: {why}", dir.display());
        return Err(CliError::input(message));
    }
    // One writer per folder: no evaluation adds a run while gc decides.
    let _lock = lock_output("--out", dir)?;
    let referenced = match dir.join(RESULTS_NAME).exists() {
        true => read_view(dir).map_err(CliError::Input)?.runs,
        false => Vec::new(),
    };
    let plan = plan_gc(dir, &referenced, args.keep).map_err(|e| CliError::input(e.to_string()))?;
    let verb = match args.dry_run {
        true => "would remove",
        false => "removed",
    };
    for (id, bytes, why) in &plan.remove {
        let (run, bytes) = (runs.join(id), human_bytes(*bytes));
        eprintln!("{verb} `{}` ({bytes}): {why}", run.display());
    }
    if !args.dry_run {
        remove_runs(dir, &plan).map_err(|e| CliError::internal(e.to_string()))?;
    }
    let count = |n: usize| plural(n as u64, "run", "runs");
    let freed = human_bytes(plan.remove.iter().map(|(_, bytes, _)| bytes).sum());
    let kept = human_bytes(plan.kept.iter().map(|(_, bytes)| bytes).sum());
    let (removed, kept_runs) = (count(plan.remove.len()), count(plan.kept.len()));
    println!("{verb} {removed}, {freed}; kept {kept_runs}, {kept}");
    Ok(Outcome::Success)
}

//! What a crashed evaluation or rerun leaves in its output folder, and how the next one removes
//! it: temporary files written aside, the earlier runs of a rerun's tasks in `traces.jsonl` or
//! beside per-task traces, and a rerun's partial file, which no command resumes.

use std::path::Path;

use super::CliError;
use looptrace::eval::{
    PARTIAL_NAME, RerunLeftovers, ResultsFile, SINGLE_TRACE, keep_runs, read_partial, run_ids,
    runs_in,
};

/// Removes the temporary files a crash left in the output folder while `results.json`, the
/// partial file or the single trace file was being replaced (`.NAME.tmp-PID-N`).
pub fn remove_crash_leftovers(out: &Path) {
    let prefixes = ["results.json", PARTIAL_NAME, SINGLE_TRACE].map(|name| format!(".{name}.tmp-"));
    for entry in std::fs::read_dir(out).into_iter().flatten().flatten() {
        let name = entry.file_name().to_string_lossy().into_owned();
        if prefixes.iter().any(|p| name.starts_with(p))
            && entry.file_type().is_ok_and(|t| t.is_file())
        {
            let _ = std::fs::remove_file(entry.path());
        }
    }
}

/// What a rerun that crashed after replacing `results.json` leaves with the single layout: the
/// rerun tasks' earlier runs still in `traces.jsonl`, and temporary files. A rerun that then finds
/// nothing to run removes them, so the folder holds the runs its results name.
pub fn tidy_after_crashed_rerun(out: &Path, results: &ResultsFile) -> Result<(), CliError> {
    let single = out.join(SINGLE_TRACE);
    let found = match std::fs::symlink_metadata(&single) {
        Err(err) if err.kind() == std::io::ErrorKind::NotFound => false,
        Ok(meta) if !meta.is_file() => {
            return Err(CliError::input(format!(
                "--rerun-failed: `{}` is not a regular file (a link, folder or device), and eval never rewrites one",
                single.display()
            )));
        }
        _ => true,
    };
    remove_crash_leftovers(out);
    if !found {
        return Ok(());
    }
    let failed = |err: std::io::Error| {
        CliError::internal(format!("failed to rewrite `{}`: {err}", single.display()))
    };
    let named = run_ids(&results.tasks);
    let extra = runs_in(&single).map_err(failed)?.difference(&named).count();
    if extra > 0 {
        keep_runs(&single, &named).map_err(failed)?;
        eprintln!(
            "removed {} from `{}` that an interrupted rerun left (its results name none of them)",
            looptrace::plural(extra as u64, "run", "runs"),
            single.display()
        );
    }
    Ok(())
}

/// Fails (exit 2) when something other than a regular file stands where a rerun in place writes
/// a run aside, or beside such a run where its trace goes (see [`RerunLeftovers::blocked`]).
pub fn refuse_blocked_asides(flag: &str, leftovers: &RerunLeftovers) -> Result<(), CliError> {
    match leftovers.blocked() {
        Some(path) => Err(CliError::input(format!(
            "{flag}: `{}` is not a regular file, where eval writes a rerun's run aside or tidies what one left: remove it",
            path.display()
        ))),
        None => Ok(()),
    }
}

/// Removes the per-task traces a crashed rerun in place left written aside in `out`. With
/// `results` (the results a rerun in this folder carries rows of), each trace beside one keeps
/// only the runs they name: a crash between joining the traces and swapping the new runs in
/// left some holding a run the folder's results do not name.
pub fn tidy_rerun_asides(
    out: &Path,
    leftovers: &RerunLeftovers,
    results: Option<&ResultsFile>,
) -> Result<(), CliError> {
    let traces = out.join("traces");
    let named = results.map(|results| run_ids(&results.tasks));
    let removed = leftovers.tidy(named.as_ref()).map_err(|err| {
        CliError::internal(format!(
            "failed to tidy what an interrupted rerun left in `{}`: {err}",
            traces.display()
        ))
    })?;
    if removed > 0 {
        eprintln!(
            "removed {} from the traces in `{}` that an interrupted rerun left (its results name none of them)",
            looptrace::plural(removed as u64, "run", "runs"),
            traces.display()
        );
    }
    Ok(())
}

/// Removes the partial file a crashed rerun left beside results that need nothing more: no
/// command resumes it (`--resume` refuses a rerun's partial file), and while it stays, `--resume`
/// sends the user back to the rerun. A partial file of a plain evaluation is left for `--resume`.
pub fn remove_crashed_rerun_partial(partial: &Path) {
    let Ok(Some(read)) = read_partial(partial) else {
        return;
    };
    if read.header.rerun_failed.is_some() {
        match std::fs::remove_file(partial) {
            Ok(()) => eprintln!(
                "removed `{}`, which an interrupted rerun left",
                partial.display()
            ),
            Err(err) => eprintln!(
                "warning: failed to remove `{}`, which an interrupted rerun left: {err}",
                partial.display()
            ),
        }
    }
}

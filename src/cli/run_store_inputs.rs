//! `report`, `show` and `export` given an eval output folder read the traces its view names, each
//! row's run once (`--all-runs`: every run's); see [`looptrace::eval::store::view_traces`].

use std::collections::HashSet;
use std::fs;
use std::io::{BufRead, BufReader, BufWriter, Write};
use std::path::Path;

use super::CliError;
use super::foreign_inputs::TempTrace;
use looptrace::eval::store::{is_run_store, view_traces};

/// The paths to read, and the temporary copies standing in for some of them (keyed by the path
/// shown).
type Expanded = (Vec<String>, Vec<(String, TempTrace)>);

/// `paths` with each run store's folder replaced by the trace files to read, and the temporary
/// copies that hold only the named runs of a file holding others too (keyed by the path shown).
pub fn expand(paths: &[String], all_runs: bool) -> Result<Expanded, CliError> {
    let mut expanded = Vec::new();
    let mut temps = Vec::new();
    for arg in paths {
        let path = Path::new(arg);
        if arg == "-" || !path.is_dir() || !is_run_store(path) {
            expanded.push(arg.clone());
            continue;
        }
        for (trace, keep) in view_traces(path, all_runs).map_err(CliError::Input)? {
            let shown = trace.display().to_string();
            if let Some(keep) = keep {
                temps.push((shown.clone(), only_runs(&trace, &keep)?));
            }
            expanded.push(shown);
        }
    }
    Ok((expanded, temps))
}

/// A temporary copy of the trace file `path` holding only the lines of the runs `keep`.
fn only_runs(path: &Path, keep: &[String]) -> Result<TempTrace, CliError> {
    #[derive(serde::Deserialize)]
    struct Head {
        run_id: String,
    }
    static COUNTER: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
    let n = COUNTER.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let temp_path =
        std::env::temp_dir().join(format!("looptrace-view-{}-{n}.jsonl", std::process::id()));
    let failed = |what: &str, p: &Path, err: std::io::Error| {
        CliError::internal(format!("failed to {what} `{}`: {err}", p.display()))
    };
    // Only a file this process creates is written (and later removed).
    let file = looptrace::output::create_new_append(&temp_path)
        .map_err(|e| failed("create", &temp_path, e))?;
    let temp = TempTrace {
        path: temp_path,
        format: "looptrace",
        warnings: Vec::new(),
    };
    let keep: HashSet<&str> = keep.iter().map(String::as_str).collect();
    let source = fs::File::open(path)
        .map_err(|e| CliError::input(format!("failed to read `{}`: {e}", path.display())))?;
    let mut reader = BufReader::new(source);
    let mut out = BufWriter::new(file);
    let mut line = Vec::new();
    loop {
        line.clear();
        if reader
            .read_until(b'\n', &mut line)
            .map_err(|e| failed("read", path, e))?
            == 0
        {
            break;
        }
        // Lines of other runs go, and so does a last line a crash cut short: a named run ended
        // (and its row was written) before it, so it is a line of a run the view does not name.
        // Anything else is left for the trace reader to judge.
        let torn = !line.ends_with(b"\n");
        let other =
            serde_json::from_slice::<Head>(&line).is_ok_and(|h| !keep.contains(h.run_id.as_str()));
        if !other && !torn {
            out.write_all(&line)
                .map_err(|e| failed("write", &temp.path, e))?;
        }
    }
    out.flush().map_err(|e| failed("write", &temp.path, e))?;
    Ok(temp)
}

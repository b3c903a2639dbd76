//! The floor for the `looptrace eval` benchmark: the time it takes simply to create and write the
//! trace files an evaluation writes, with no agent loop, no JSON and no hashing.
//!
//! `cargo run --release --example eval_floor -- TRACES_DIR OUT_DIR [--reps N] [--jobs N]
//! [--results RESULTS_JSON]`
//!
//! Every `*.jsonl` file in TRACES_DIR (the `traces/` folder of an earlier `looptrace eval --out`)
//! is read into memory first. Then, in a fresh folder under OUT_DIR for each repetition, only this
//! is timed: creating each file and writing its bytes, once with one `write` per line (the calls
//! looptrace's trace writer makes, so the honest floor for the same syscalls) and once with one
//! `write` per file. The median of the repetitions is printed as tasks (files) per second.
//!
//! With `--results` (that evaluation's `results.json`), the floor writes the evaluation's other
//! files too: after each trace file, the task's row appended to `rows.jsonl` with one
//! `write` (the file shared by the threads and opened for appending, as the evaluation does), and
//! at the end `results.json` in one `write`.
//!
//! The folders are left in place: deleting thousands of files right before creating thousands more
//! slows ext4 down (see `bench/eval.sh`), so the caller removes OUT_DIR when it is done.

use std::fs::{self, File};
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::{Duration, Instant};

/// One trace file held in memory, with its lines already split so splitting is not timed.
struct TraceFile {
    name: String,
    bytes: Vec<u8>,
    /// End offsets (exclusive) of each line, newline included.
    line_ends: Vec<usize>,
    /// The task's row in `results.json`, newline included, with `--results`.
    row: Option<Vec<u8>>,
}

/// What `--results` adds: the rows go to `rows.jsonl`, the whole view is written at the end.
struct Results {
    bytes: Vec<u8>,
}

/// How each file's bytes are written.
#[derive(Clone, Copy)]
enum Writes {
    PerLine,
    PerFile,
}

impl Writes {
    fn label(self) -> &'static str {
        match self {
            Writes::PerLine => "one write per line",
            Writes::PerFile => "one write per file",
        }
    }

    fn folder(self) -> &'static str {
        match self {
            Writes::PerLine => "lines",
            Writes::PerFile => "files",
        }
    }
}

struct Args {
    traces: PathBuf,
    out: PathBuf,
    reps: usize,
    jobs: usize,
    results: Option<PathBuf>,
}

const USAGE: &str =
    "usage: eval_floor TRACES_DIR OUT_DIR [--reps N] [--jobs N] [--results RESULTS_JSON]";

fn parse_args() -> Result<Args, String> {
    let mut positional = Vec::new();
    let mut reps = 5;
    let mut jobs = 1;
    let mut results = None;
    let mut args = std::env::args().skip(1);
    while let Some(arg) = args.next() {
        match arg.as_str() {
            "--results" => {
                results = Some(PathBuf::from(args.next().ok_or("--results needs a file")?));
            }
            "--reps" | "--jobs" => {
                let value = args
                    .next()
                    .and_then(|v| v.parse::<usize>().ok())
                    .filter(|&n| n >= 1)
                    .ok_or_else(|| format!("{arg} needs a whole number of at least 1"))?;
                if arg == "--reps" {
                    reps = value;
                } else {
                    jobs = value;
                }
            }
            "-h" | "--help" => return Err(USAGE.to_owned()),
            _ => positional.push(PathBuf::from(arg)),
        }
    }
    match <[PathBuf; 2]>::try_from(positional) {
        Ok([traces, out]) => Ok(Args {
            traces,
            out,
            reps,
            jobs,
            results,
        }),
        Err(_) => Err(USAGE.to_owned()),
    }
}

fn load(dir: &Path) -> Result<Vec<TraceFile>, String> {
    let entries =
        fs::read_dir(dir).map_err(|err| format!("failed to read `{}`: {err}", dir.display()))?;
    let mut files = Vec::new();
    for entry in entries {
        let entry = entry.map_err(|err| format!("failed to read `{}`: {err}", dir.display()))?;
        let name = entry.file_name().to_string_lossy().into_owned();
        if !name.ends_with(".jsonl") {
            continue;
        }
        let path = entry.path();
        let bytes =
            fs::read(&path).map_err(|err| format!("failed to read `{}`: {err}", path.display()))?;
        let mut line_ends: Vec<usize> = memchr::memchr_iter(b'\n', &bytes).map(|i| i + 1).collect();
        if line_ends.last() != Some(&bytes.len()) && !bytes.is_empty() {
            line_ends.push(bytes.len());
        }
        files.push(TraceFile {
            name,
            bytes,
            line_ends,
            row: None,
        });
    }
    if files.is_empty() {
        return Err(format!("no `.jsonl` files in `{}`", dir.display()));
    }
    files.sort_by(|a, b| a.name.cmp(&b.name));
    Ok(files)
}

/// Reads `results.json` and gives each trace file its row: the compact line of `tasks` whose
/// `trace` ends in its name.
fn load_results(path: &Path, files: &mut [TraceFile]) -> Result<Results, String> {
    let text = fs::read_to_string(path)
        .map_err(|err| format!("failed to read `{}`: {err}", path.display()))?;
    let index: std::collections::HashMap<String, usize> = files
        .iter()
        .enumerate()
        .map(|(i, f)| (f.name.clone(), i))
        .collect();
    for line in text.lines().filter(|l| l.starts_with("    {")) {
        let row = line.trim().trim_end_matches(',');
        let value: serde_json::Value = serde_json::from_str(row)
            .map_err(|err| format!("`{}`: a row is not JSON: {err}", path.display()))?;
        // A row's `trace` is `runs/<eval-id>/traces/<file>`: the file name is what the folder holds.
        let file_name = value["trace"].as_str().and_then(|t| t.rsplit('/').next());
        if let Some(&i) = file_name.and_then(|t| index.get(t)) {
            files[i].row = Some(format!("{row}\n").into_bytes());
        }
    }
    if let Some(file) = files.iter().find(|f| f.row.is_none()) {
        return Err(format!(
            "`{}` has no row for `{}`",
            path.display(),
            file.name
        ));
    }
    Ok(Results {
        bytes: text.into_bytes(),
    })
}

fn write_files(
    dir: &Path,
    files: &[TraceFile],
    writes: Writes,
    mut partial: Option<&File>,
) -> std::io::Result<()> {
    for file in files {
        let mut out = File::create(dir.join(&file.name))?;
        match writes {
            Writes::PerFile => out.write_all(&file.bytes)?,
            Writes::PerLine => {
                let mut start = 0;
                for &end in &file.line_ends {
                    out.write_all(&file.bytes[start..end])?;
                    start = end;
                }
            }
        }
        if let (Some(partial), Some(row)) = (partial.as_mut(), &file.row) {
            partial.write_all(row)?;
        }
    }
    Ok(())
}

/// Times one repetition in a fresh folder, the files split among `jobs` threads.
fn time_once(
    dir: &Path,
    files: &[TraceFile],
    writes: Writes,
    jobs: usize,
    results: Option<&Results>,
) -> Result<Duration, String> {
    if dir.exists() {
        return Err(format!(
            "`{}` exists already: give a new OUT_DIR",
            dir.display()
        ));
    }
    fs::create_dir_all(dir)
        .map_err(|err| format!("failed to create `{}`: {err}", dir.display()))?;
    let chunk = files.len().div_ceil(jobs);
    let started = Instant::now();
    let partial = match results {
        Some(_) => Some(
            fs::OpenOptions::new()
                .append(true)
                .create(true)
                .open(dir.join("rows.jsonl"))
                .map_err(|err| format!("failed to create under `{}`: {err}", dir.display()))?,
        ),
        None => None,
    };
    let partial = partial.as_ref();
    let outcome: std::io::Result<()> = std::thread::scope(|scope| {
        let workers: Vec<_> = files
            .chunks(chunk)
            .map(|part| scope.spawn(move || write_files(dir, part, writes, partial)))
            .collect();
        for worker in workers {
            worker
                .join()
                .unwrap_or_else(|_| Err(std::io::Error::other("a writer thread panicked")))?;
        }
        if let Some(results) = results {
            File::create(dir.join("results.json"))?.write_all(&results.bytes)?;
        }
        Ok(())
    });
    let elapsed = started.elapsed();
    outcome.map_err(|err| format!("failed to write under `{}`: {err}", dir.display()))?;
    Ok(elapsed)
}

fn median(mut times: Vec<Duration>) -> Duration {
    times.sort();
    times[times.len() / 2]
}

fn run(args: &Args) -> Result<(), String> {
    let mut files = load(&args.traces)?;
    let results = match &args.results {
        Some(path) => Some(load_results(path, &mut files)?),
        None => None,
    };
    let bytes: usize = files.iter().map(|f| f.bytes.len()).sum();
    let lines: usize = files.iter().map(|f| f.line_ends.len()).sum();
    println!(
        "floor: {} files, {lines} lines, {bytes} bytes{}; {} threads; median of {} repetitions",
        files.len(),
        match &results {
            Some(r) => format!(
                ", with rows.jsonl and results.json ({} bytes)",
                r.bytes.len()
            ),
            None => String::new(),
        },
        args.jobs,
        args.reps
    );
    for writes in [Writes::PerLine, Writes::PerFile] {
        let mut times = Vec::with_capacity(args.reps);
        for rep in 0..args.reps {
            let dir = args
                .out
                .join(format!("{}-{}-threads-{rep}", writes.folder(), args.jobs));
            times.push(time_once(
                &dir,
                &files,
                writes,
                args.jobs,
                results.as_ref(),
            )?);
        }
        let time = median(times);
        println!(
            "{:<20} {:>10.0} tasks/s  ({:.3} s)",
            writes.label(),
            files.len() as f64 / time.as_secs_f64(),
            time.as_secs_f64()
        );
    }
    Ok(())
}

fn main() -> ExitCode {
    match parse_args().and_then(|args| run(&args)) {
        Ok(()) => ExitCode::SUCCESS,
        Err(message) => {
            eprintln!("eval_floor: {message}");
            ExitCode::from(2)
        }
    }
}

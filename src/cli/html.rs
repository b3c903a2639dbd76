//! What the commands that write an HTML report (or list runs) share: reading one row per run
//! from the inputs, writing an output file as a whole, and the pages of `eval`, `merge` and
//! `replay`.

use std::fs;
use std::io::{self, Write};
use std::path::{Path, PathBuf};

use looptrace::report::{Input, RunTable, Source};

use super::common::same_file;
use super::{CliError, CliResult, Outcome};

/// Standard input or a pipe copied to a temporary file, so that it can be read twice (once for the
/// totals, once for the rows); removed when dropped.
pub struct Spooled {
    paths: Vec<PathBuf>,
}

impl Drop for Spooled {
    fn drop(&mut self) {
        for path in &self.paths {
            let _ = fs::remove_file(path);
        }
    }
}

/// Copies every input that cannot be read twice (standard input, pipes) to a temporary file and
/// points the input at it, keeping its name.
pub fn spool_streams(inputs: &mut [Input]) -> Result<Spooled, CliError> {
    let mut spooled = Spooled { paths: Vec::new() };
    for (n, input) in inputs.iter_mut().enumerate() {
        let regular = match &input.source {
            Source::Path(path) => fs::metadata(path).is_ok_and(|m| m.is_file()),
            Source::Stdin => false,
        };
        if regular {
            continue;
        }
        let temp = std::env::temp_dir().join(format!(
            "looptrace-stream-{}-{n}-{}.jsonl",
            std::process::id(),
            looptrace::run::unique_token()
        ));
        let mut file = fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .open(&temp)
            .map_err(|err| {
                CliError::internal(format!("failed to create `{}`: {err}", temp.display()))
            })?;
        spooled.paths.push(temp.clone());
        let copied = match &input.source {
            Source::Stdin => io::copy(&mut io::stdin().lock(), &mut file),
            Source::Path(path) => {
                fs::File::open(path).and_then(|mut from| io::copy(&mut from, &mut file))
            }
        };
        copied.map_err(|err| CliError::input(format!("failed to read `{}`: {err}", input.name)))?;
        input.source = Source::Path(temp);
    }
    Ok(spooled)
}

/// One row per run of `inputs` (regular files, see [`spool_streams`]), with timelines or not.
pub fn read_rows(
    inputs: &[Input],
    formats: &[&'static str],
    lenient: bool,
    timelines: bool,
) -> Result<RunTable, CliError> {
    let mut table = RunTable::default();
    for (i, input) in inputs.iter().enumerate() {
        let Source::Path(path) = &input.source else {
            continue;
        };
        let format = formats.get(i).copied().unwrap_or("looptrace");
        table
            .read(path, &input.name, format, lenient, timelines)
            .map_err(CliError::input)?;
    }
    Ok(table)
}

/// Writes `bytes` to `output` as a whole (nothing half-written on failure), or to standard output.
/// An output that is one of the `inputs` is refused.
pub fn write_output(output: Option<&Path>, bytes: &[u8], inputs: &[&Path]) -> CliResult {
    let Some(path) = output else {
        let mut out = super::common::outcome_stdout();
        out.write_all(bytes)?;
        out.flush()?;
        return Ok(Outcome::Success);
    };
    if let Some(input) = inputs.iter().find(|input| same_file(input, path)) {
        return Err(CliError::input(format!(
            "-o would overwrite the input `{}`",
            input.display()
        )));
    }
    super::import::write_atomically(path, |out| {
        out.write_all(bytes)?;
        Ok(0)
    })?;
    Ok(Outcome::Success)
}

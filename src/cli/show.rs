//! `looptrace show`: the events of trace files, folders or standard input, run by run, readable or
//! as JSONL. Runs are streamed: each is printed as soon as it ends (runs that never end last), so
//! memory does not grow with the file.

use std::io::{BufWriter, IoSlice, IsTerminal, Write};

use clap::{Args, ValueEnum};

use super::{CliError, CliResult, Outcome};
use looptrace::replay::{RunIds, times};
use looptrace::report::Source;
use looptrace::text::escape;
use looptrace::trace::{
    JsonLine, LineItem, ReadOptions, ReadStats, RunStream, ShownEvent, StreamedRun, TraceReader,
    render_lines,
};

/// Arguments of `looptrace show`.
#[derive(Debug, Args)]
pub struct ShowArgs {
    /// Trace files of any importable format, folders (every trace file inside, sorted) or `-`
    /// for standard input.
    #[arg(required = true, value_name = "TRACE")]
    pub paths: Vec<String>,
    /// Given an eval output folder, read every run under its `runs/`, not only those its
    /// `results.json` names.
    #[arg(long)]
    pub all_runs: bool,
    /// Show only this run.
    #[arg(long, value_name = "ID")]
    pub run: Option<String>,
    /// With `--run`, the how-many-th run with that id (from 1), for a reused id.
    #[arg(long, value_name = "N", requires = "run", value_parser = clap::value_parser!(u32).range(1..))]
    pub occurrence: Option<u32>,
    /// `text` for people, `json` for the parsed events as JSONL.
    #[arg(short = 'f', long, value_enum, default_value_t = ShowFormat::Text)]
    pub format: ShowFormat,
    /// Skip malformed lines (counted and reported) instead of failing.
    #[arg(long)]
    pub lenient: bool,
    /// How a foreign trace is imported for showing: `summary` or `full`.
    #[arg(long, value_enum, default_value_t = super::common::CaptureArg::Summary)]
    pub capture: super::common::CaptureArg,
}

/// Output formats of `show`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum ShowFormat {
    /// One readable line per event.
    Text,
    /// The parsed events as JSONL.
    Json,
}

/// Bytes of output gathered before a write, whatever the runs' sizes.
const OUT_BUFFER: usize = 64 * 1024;

/// Runs `looptrace show`.
pub fn run(args: ShowArgs) -> CliResult {
    let options = ReadOptions {
        lenient: args.lenient,
        ..ReadOptions::default()
    };
    // Folders are walked and foreign trajectories imported into memory, as `report` does.
    let foreign = super::foreign_inputs::inputs_with_capture(
        &args.paths,
        args.capture.into(),
        args.lenient,
        args.all_runs,
    )?;
    foreign.warn();
    let (mut inputs, folder_warnings) =
        looptrace::report::collect_inputs(&foreign.paths).map_err(CliError::input)?;
    foreign.substitute(&mut inputs);
    let mut printer = Printer {
        args: &args,
        wanted: args.occurrence.unwrap_or(1),
        color: std::io::stdout().is_terminal() && std::env::var_os("NO_COLOR").is_none(),
        ids: RunIds::default(),
        printed: 0,
        header: None,
        // Stdout alone flushes at every newline: a write per event line. Runs are flushed as
        // each ends instead (below), so a reader through a pipe still sees every run at once.
        out: BufWriter::with_capacity(OUT_BUFFER, std::io::stdout().lock()),
    };
    let mut warnings: Vec<String> = folder_warnings.iter().map(ToString::to_string).collect();
    for input in &inputs {
        // Line numbers are per file: with several, each file's runs are headed by its name.
        printer.header = (inputs.len() > 1).then(|| format!("== {} ==", escape(&input.name)));
        let stats = match args.format {
            // Each event's line of text is made as it is read; texts are read only as far as
            // they are shown.
            ShowFormat::Text if printer.color => {
                printer.print_input::<ShownEvent<true>>(input, options)?
            }
            ShowFormat::Text => printer.print_input::<ShownEvent<false>>(input, options)?,
            // Lines that are already as written are copied through, not parsed and written.
            ShowFormat::Json => printer.print_input::<JsonLine>(input, options)?,
        };
        warnings.extend(stats.warnings(&input.name));
    }
    let shown = args.paths.join("`, `");
    if let Some(id) = &args.run {
        let found = printer.ids.selected();
        if printer.printed == 0 {
            return Err(CliError::input(printer.ids.not_found(
                id,
                printer.wanted,
                &shown,
            )));
        }
        if found > 1 && args.occurrence.is_none() {
            eprintln!(
                "note: run {:?} occurs {} in `{shown}`; showing the 1st (choose with --occurrence N)",
                escape(id),
                times(found)
            );
        }
    }
    for warning in warnings {
        eprintln!("warning: {}", escape(&warning));
    }
    Ok(Outcome::Success)
}

/// Prints the selected runs of one input after another, counting runs across all of them.
struct Printer<'a> {
    args: &'a ShowArgs,
    wanted: u32,
    color: bool,
    ids: RunIds,
    printed: usize,
    /// Printed before the next run shown in text, then cleared.
    header: Option<String>,
    out: BufWriter<std::io::StdoutLock<'static>>,
}

impl Printer<'_> {
    /// Prints the selected runs of one input, its lines kept as `T`.
    fn print_input<T: Shown>(
        &mut self,
        input: &looptrace::report::Input,
        options: ReadOptions,
    ) -> Result<ReadStats, CliError> {
        match &input.source {
            Source::Path(path) => {
                let stream =
                    RunStream::<_, T>::open_mapped(path, options).map_err(CliError::input)?;
                self.print(stream)
            }
            // Standard input, a foreign file's imported events, a run store's named runs.
            other => {
                let lines = other.open().map_err(|err| {
                    CliError::input(format!("failed to read `{}`: {err}", input.name))
                })?;
                let reader = TraceReader::new(lines, &input.name, options);
                self.print(RunStream::<_, T>::items(reader))
            }
        }
    }

    /// Prints the selected runs of `stream` as each ends; returns what the reader tolerated.
    fn print<R: std::io::Read, T: Shown>(
        &mut self,
        stream: RunStream<R, T>,
    ) -> Result<ReadStats, CliError> {
        // Occurrences label runs in text and select them with `--run`; otherwise nothing need be
        // kept per run, so memory stays flat whatever the number of runs.
        let mut stream = if self.args.run.is_none() && self.args.format == ShowFormat::Json {
            stream.without_occurrences()
        } else {
            stream
        };
        for run in stream.by_ref() {
            let streamed = run.map_err(CliError::input)?;
            self.ids
                .note(&streamed.run.run_id, self.args.run.as_deref());
            if let Some(id) = &self.args.run
                && (streamed.run.run_id != *id || streamed.occurrence != self.wanted)
            {
                continue;
            }
            T::write(self, streamed)?;
            // Each run reaches the reader as soon as it ends, also through a pipe.
            self.out.flush()?;
            self.printed += 1;
        }
        Ok(stream.into_stats())
    }
}

/// How one form of line is printed.
trait Shown: LineItem {
    /// Writes one selected run.
    fn write(printer: &mut Printer<'_>, run: StreamedRun<Self>) -> Result<(), CliError>;
}

impl<const COLOR: bool> Shown for ShownEvent<COLOR> {
    fn write(printer: &mut Printer<'_>, streamed: StreamedRun<Self>) -> Result<(), CliError> {
        if printer.printed > 0 {
            writeln!(printer.out)?;
        }
        if let Some(header) = printer.header.take() {
            writeln!(printer.out, "{header}")?;
        }
        let run = &streamed.run;
        let lines = run.events.iter().map(|(line, event)| (*line, event.text()));
        let ending = run.events.iter().find_map(|(_, event)| event.ending());
        let text = render_lines(&run.run_id, streamed.occurrence, lines, ending, COLOR);
        printer.out.write_all(text.as_bytes())?;
        Ok(())
    }
}

impl Shown for JsonLine {
    fn write(printer: &mut Printer<'_>, run: StreamedRun<Self>) -> Result<(), CliError> {
        // The lines go out as they were kept, a slice each, in as few writes as the system
        // takes: no copy into the buffer (which holds nothing here: JSON has no headers).
        let mut slices: Vec<IoSlice<'_>> = (run.run.events.iter())
            .map(|(_, line)| IoSlice::new(line.bytes_with_newline()))
            .collect();
        printer.out.flush()?;
        write_all_vectored(printer.out.get_mut(), &mut slices)?;
        Ok(())
    }
}

/// Writes every slice whole, however the system splits the writes.
fn write_all_vectored(out: &mut impl Write, mut slices: &mut [IoSlice<'_>]) -> std::io::Result<()> {
    while !slices.is_empty() {
        match out.write_vectored(slices) {
            Ok(0) => return Err(std::io::ErrorKind::WriteZero.into()),
            Ok(n) => IoSlice::advance_slices(&mut slices, n),
            Err(err) if err.kind() == std::io::ErrorKind::Interrupted => {}
            Err(err) => return Err(err),
        }
    }
    Ok(())
}

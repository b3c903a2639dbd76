//! Importers of other agents' trajectories: one file per format behind one [`Importer`] trait,
//! each turning its input into [`ImportedRun`]s that [`to_events`] writes as trace v1 events.
//! `docs/import.md` gives each format's mapping.

mod archive;
mod batch;
mod claude_code;
mod code_agent;
mod codex;
mod error;
mod file;
mod gemini_cli;
mod importer;
mod inspect;
mod looptrace;
mod mini_swe_agent;
mod openhands;
mod otel_genai;
mod otlp;
mod run;
mod statuses;
mod swe_agent;

pub use archive::Limits as ArchiveLimits;
pub use batch::BatchFolders;
pub use error::ImportError;
pub use file::{
    Converted, Detected, HEAD_BYTES, RunIds, convert, convert_leaving_out, detect, import_path,
    is_probed_name,
};
pub use importer::{Context, Imported, Importer, MAX_DOCUMENT_BYTES, Sink};
pub use run::{EmitOptions, Ending, ImportedRun, Item, to_events};

/// Every format, in the order ties are broken by `auto`.
pub static IMPORTERS: &[&dyn Importer] = &[
    &looptrace::Looptrace,
    &code_agent::CodeAgent,
    &swe_agent::SweAgent,
    &mini_swe_agent::MiniSweAgent,
    &openhands::OpenHands,
    &codex::Codex,
    &claude_code::ClaudeCode,
    &gemini_cli::GeminiCli,
    &inspect::Inspect,
    &otel_genai::OtelGenai,
    &otlp::Otlp,
];

/// The importer named `name` (a `--from` value).
pub fn by_name(name: &str) -> Option<&'static dyn Importer> {
    IMPORTERS
        .iter()
        .copied()
        .find(|importer| importer.name() == name)
}

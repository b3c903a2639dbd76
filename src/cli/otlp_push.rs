//! `eval --otlp-endpoint URL`: each run's spans are sent to an OTLP/HTTP receiver as the run
//! ends, from a thread of their own; a receiver that fails is reported on stderr and changes
//! nothing the evaluation writes or its exit code (the runs stay in their traces, and
//! `export --otlp DIR --endpoint URL` sends them again with the same ids).

use std::path::Path;
use std::sync::{Mutex, PoisonError};

use looptrace::eval::TaskResult;
use looptrace::export::otlp::{BuildOptions, ConfigError, LivePush, PushConfig, ResourceConfig};
use looptrace::text::escape;

use super::CliError;

/// The push of one evaluation, if it asked for one; taken out when finished.
#[derive(Debug, Default)]
pub struct EvalPush(Mutex<Option<LivePush>>);

impl EvalPush {
    /// Checks the settings (bad ones exit 2 before any task runs) and starts the sender.
    pub fn start(endpoint: Option<&str>) -> Result<EvalPush, CliError> {
        let Some(endpoint) = endpoint else {
            return Ok(EvalPush::default());
        };
        let env = |name: &str| std::env::var(name).ok();
        let config = PushConfig::resolve(Some(endpoint), &env).map_err(|err| match err {
            // Named as eval names the endpoint.
            ConfigError::BadEndpoint { url, .. } => CliError::input(ConfigError::BadEndpoint {
                setting: "--otlp-endpoint",
                url,
            }),
            err => CliError::input(err),
        })?;
        let options = BuildOptions {
            resource: ResourceConfig::from_env(&env).map_err(CliError::input)?,
            ..BuildOptions::default()
        };
        Ok(EvalPush(Mutex::new(Some(LivePush::start(config, options)))))
    }

    /// Queues the run of `row`, whose trace path is relative to the output folder `out`.
    pub fn run_ended(&self, out: &Path, row: &TaskResult) {
        let push = self.0.lock().unwrap_or_else(PoisonError::into_inner);
        if let (Some(push), Some(trace), Some(run_id)) = (&*push, &row.trace, &row.run_id) {
            push.run_ended(vec![out.join(trace)], run_id);
        }
    }

    /// Waits for the last request and says what was sent.
    pub fn finish(&self, quiet: bool) {
        let taken = self.0.lock().unwrap_or_else(PoisonError::into_inner).take();
        let Some(push) = taken else { return };
        let report = push.finish();
        for error in &report.errors {
            eprintln!("warning: OTLP push: {}", escape(error));
        }
        if report.unsent > 0 {
            eprintln!(
                "warning: OTLP push: {} not sent (the evaluation's outputs are complete; `looptrace export --otlp` sends them again)",
                looptrace::plural(report.unsent, "run", "runs")
            );
        }
        if !quiet || report.unsent > 0 {
            eprintln!(
                "OTLP push: sent {} ({})",
                looptrace::plural(report.stats.runs, "run", "runs"),
                looptrace::plural(report.stats.spans, "span", "spans")
            );
        }
    }
}

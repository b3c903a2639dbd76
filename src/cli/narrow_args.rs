//! `--limit N` and `--sample N [--seed S]`: smoke runs of a few of the selected tasks, chosen
//! after `--only`/`--skip` and before `--shard` splits them; and `--retries N`, which runs a
//! task again after a provider failure, as a quick run against a live model needs.

use clap::Args;

use looptrace::eval::Narrowing;

/// How eval narrows its selection.
#[derive(Debug, Args)]
pub struct NarrowArgs {
    /// Run only the first N of the selected tasks (after --only/--skip, before --shard).
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u64).range(1..), conflicts_with_all = ["sample", "rerun_failed"])]
    pub limit: Option<u64>,
    /// Run N of the selected tasks, chosen at random but reproducibly: the same --seed over the
    /// same suite always chooses the same tasks (in suite order).
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u64).range(1..), conflicts_with = "rerun_failed")]
    pub sample: Option<u64>,
    /// The seed of --sample (default 0).
    #[arg(long, value_name = "S", requires = "sample")]
    pub seed: Option<u64>,
    /// Run a task again, up to N times, when its run ends internal_error with a provider
    /// failure another attempt may not meet (rate_limited, provider_unavailable, timeout,
    /// connection_failed); the row records `retried`, every attempt's run stays in the trace.
    #[arg(long, value_name = "N", default_value_t = 0)]
    pub retries: u32,
}

impl NarrowArgs {
    /// The narrowing asked for.
    pub fn narrowing(&self) -> Narrowing {
        let count = |n: u64| usize::try_from(n).unwrap_or(usize::MAX);
        Narrowing {
            limit: self.limit.map(count),
            sample: self.sample.map(count),
            // Recorded as used, so that a resume without `--seed` matches one with `--seed 0`.
            seed: self
                .sample
                .map(|_| self.seed.unwrap_or(looptrace::eval::DEFAULT_SEED)),
        }
    }
}

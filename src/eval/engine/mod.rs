//! The evaluation engine as a library: an [`EvalRequest`] (what was asked, plain values) becomes
//! an [`EvalPlan`] (everything loaded, selected and checked, the output folder locked, nothing
//! written), which [`EvalPlan::execute`] runs while an [`EvalObserver`] follows, giving an
//! [`EvalOutcome`] (results, comparison, verdict, messages). Every refusal is an [`EvalError`].
//!
//! ```no_run
//! use looptrace::eval::engine::{EvalPlan, EvalRequest, EvalVerdict, Quiet};
//!
//! let mut request = EvalRequest::suite("sample_traces/suite.json");
//! request.out = Some("target/sample-eval".into());
//! let outcome = EvalPlan::new(request)?.execute(&Quiet)?;
//! println!("{} rows, passed: {}", outcome.results.totals.tasks, outcome.verdict == EvalVerdict::Passed);
//! # Ok::<(), looptrace::eval::engine::EvalError>(())
//! ```

mod error;
mod execute;
mod flag_checks;
mod merge_plan;
mod observer;
mod outcome;
mod paths;
mod plan;
mod quick_runs;
mod recorded_models;
mod request;
mod resume;
mod view;

pub use error::EvalError;
pub use flag_checks::{check_regression_test, check_stats, read_baseline};
pub use merge_plan::{MergeOutcome, MergePlan, MergeRequest};
pub use observer::{EvalObserver, Quiet};
pub use outcome::{EvalOutcome, EvalVerdict, Notice, NoticeKind, adaptive_verdict, verdict};
pub use paths::{check_output, folder_of, is_device, probe_writable, refuse_traces_as_outputs};
pub use plan::EvalPlan;
pub use request::{EvalRequest, EvalSource};
pub use view::rebuild_view;
pub(crate) use view::write_view;

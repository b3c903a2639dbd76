//! `--baseline RESULTS`: how each task's outcome moved since an earlier results file. A regression
//! is a task that met its expectations before and does not now, or finished before and does not
//! now. With `--repeat` on either side, a task's runs are taken together: it met its expectations
//! (or finished) in every run, in some, or in none, and a regression is a move down that scale
//! (every → some, every → none, some → none).

use std::collections::{BTreeMap, HashMap, HashSet};

use super::expect::Verdict;
use super::results::{ResultsFile, TaskResult};
use crate::run::ExitReason;
use crate::stats::{PairedCounts, PairedVerdict, RegressionTest};

/// The comparison with a baseline.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Comparison {
    /// `(old exit reason, new exit reason)` → tasks, for tasks in both files; a repeated task
    /// counts once, with the exit reason most of its runs ended with.
    pub transitions: BTreeMap<(ExitReason, ExitReason), usize>,
    /// Tasks that got worse, with why, in suite order.
    pub regressions: Vec<(String, String)>,
    /// Tasks that got better, with why, in suite order.
    pub improvements: Vec<(String, String)>,
    /// Tasks only in the new results.
    pub added: Vec<String>,
    /// Tasks only in the baseline.
    pub removed: Vec<String>,
    /// Each task in both files: the runs that passed and ran on each side, in the current order.
    pub pairs: Vec<PairedCounts>,
    /// The paired test over `pairs`, once [`Comparison::judge`] ran it.
    pub paired: Option<PairedVerdict>,
}

impl Comparison {
    /// Runs the paired regression test (`--regression-test`, default `sign` when either side
    /// has repeats, else `mcnemar`) at `confidence`; `mcnemar` with repeats is refused.
    pub fn judge(&mut self, test: Option<RegressionTest>, confidence: f64) -> Result<(), String> {
        let repeats = self.pairs.iter().any(|p| p.before.1 > 1 || p.now.1 > 1);
        let test = test.unwrap_or(RegressionTest::default_for(repeats));
        self.paired = Some(crate::stats::judge(&self.pairs, test, confidence)?);
        Ok(())
    }

    /// Whether the comparison finds a regression that fails the evaluation: under a statistical
    /// test, one that is statistically clear; under `none` (or before judging), any task that
    /// moved down.
    pub fn regressed(&self) -> bool {
        match &self.paired {
            Some(v) if v.test != RegressionTest::None => v.regression,
            _ => !self.regressions.is_empty(),
        }
    }

    /// Whether a statistical test decides the exit code (not `none`).
    pub fn tested(&self) -> bool {
        self.paired
            .as_ref()
            .is_some_and(|v| v.test != RegressionTest::None)
    }
}

/// Compares `current` with `baseline`, task by task.
pub fn compare(baseline: &ResultsFile, current: &ResultsFile) -> Comparison {
    compare_outcomes(outcomes(&baseline.tasks), outcomes(&current.tasks))
}

/// Compares the current tasks, counted as their rows arrived (`(id, counts)` in suite order,
/// only tasks with a run), with `baseline`: the same comparison as [`compare`], without holding
/// the current rows.
pub fn compare_counted<'a>(
    baseline: &'a ResultsFile,
    current: impl IntoIterator<Item = (&'a str, &'a OutcomeCounts)>,
) -> Comparison {
    let new = current
        .into_iter()
        .map(|(id, counts)| counts.outcome(id))
        .collect();
    compare_outcomes(outcomes(&baseline.tasks), new)
}

fn compare_outcomes(old: Vec<Outcome<'_>>, new: Vec<Outcome<'_>>) -> Comparison {
    let before_of: HashMap<&str, &Outcome> = old.iter().map(|o| (o.id.as_ref(), o)).collect();
    let mut comparison = Comparison::default();
    for now in &new {
        let Some(before) = before_of.get(now.id.as_ref()) else {
            comparison.added.push(now.id.to_string());
            continue;
        };
        *comparison
            .transitions
            .entry((before.typical, now.typical))
            .or_default() += 1;
        comparison.pairs.push(PairedCounts {
            id: now.id.to_string(),
            before: (before.passed, before.runs),
            now: (now.passed, now.runs),
        });
        match moved(before, now) {
            Some(Move::Worse(why)) => comparison.regressions.push((now.id.to_string(), why)),
            Some(Move::Better(why)) => comparison.improvements.push((now.id.to_string(), why)),
            None => {}
        }
    }
    let now_ids: HashSet<&str> = new.iter().map(|o| o.id.as_ref()).collect();
    comparison.removed = old
        .iter()
        .filter(|o| !now_ids.contains(o.id.as_ref()))
        .map(|o| o.id.to_string())
        .collect();
    comparison
}

/// One task's runs (its repeats, or its one run) in one results file, taken together.
struct Outcome<'a> {
    /// The task, and under a model matrix its model: `id[model]` (see [`TaskResult::row_key`]).
    id: std::borrow::Cow<'a, str>,
    runs: u32,
    /// Runs whose expectations were checked (met or failed).
    checked: u32,
    /// Runs that met their expectations.
    met: u32,
    /// Runs that finished.
    finished: u32,
    /// Runs that passed ([`TaskResult::passes`]).
    passed: u32,
    /// The exit reason most runs ended with; a tie goes to the earliest run's.
    typical: ExitReason,
}

/// One task's runs counted as they arrive, in any order: what a comparison needs of them.
#[derive(Clone, Debug, Default)]
pub struct OutcomeCounts {
    runs: u32,
    checked: u32,
    met: u32,
    finished: u32,
    passed: u32,
    /// Runs per exit reason, in [`ExitReason::ALL`] order.
    reasons: [u32; 4],
    /// The earliest run (by its order among the task's runs) that ended with each exit reason.
    first: [Option<usize>; 4],
}

impl OutcomeCounts {
    /// Counts `row`, the task's run at `order` (its position among the evaluation's rows).
    pub fn add(&mut self, row: &TaskResult, order: usize) {
        self.runs += 1;
        self.checked += u32::from(row.expectation != Verdict::None);
        self.met += u32::from(row.expectation == Verdict::Met);
        self.finished += u32::from(row.exit_reason == ExitReason::Finished);
        self.passed += u32::from(row.passes());
        let k = reason_index(row.exit_reason);
        self.reasons[k] += 1;
        self.first[k] = Some(self.first[k].map_or(order, |f| f.min(order)));
    }

    /// Whether any run was counted.
    pub fn ran(&self) -> bool {
        self.runs > 0
    }

    /// The outcome of task `id`: the exit reason most runs ended with, a tie going to the one
    /// that came first.
    fn outcome<'a>(&self, id: impl Into<std::borrow::Cow<'a, str>>) -> Outcome<'a> {
        let id = id.into();
        let most = self.reasons.iter().copied().max().unwrap_or(0);
        let typical = (0..4)
            .filter(|&k| self.reasons[k] == most && most > 0)
            .min_by_key(|&k| self.first[k])
            .map_or(ExitReason::Finished, |k| ExitReason::ALL[k]);
        Outcome {
            id,
            runs: self.runs,
            checked: self.checked,
            met: self.met,
            finished: self.finished,
            passed: self.passed,
            typical,
        }
    }
}

fn reason_index(reason: ExitReason) -> usize {
    ExitReason::ALL
        .iter()
        .position(|r| *r == reason)
        .unwrap_or_default()
}

/// Each task's outcome, in the order the tasks first appear.
fn outcomes(rows: &[TaskResult]) -> Vec<Outcome<'_>> {
    let mut by_task: Vec<(std::borrow::Cow<'_, str>, OutcomeCounts)> = Vec::new();
    let mut index: HashMap<std::borrow::Cow<'_, str>, usize> = HashMap::new();
    for (order, row) in rows.iter().enumerate() {
        let key = row.row_key();
        let i = *index.entry(key.clone()).or_insert_with(|| {
            by_task.push((key, OutcomeCounts::default()));
            by_task.len() - 1
        });
        by_task[i].1.add(row, order);
    }
    by_task
        .into_iter()
        .map(|(id, counts)| counts.outcome(id))
        .collect()
}

/// In how many of a task's runs something held, on the scale a comparison reads: worst first.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
enum Share {
    NoRun,
    SomeRuns,
    EveryRun,
}

/// The share of `count` out of `of` runs; nothing when no run could say (`of` is 0).
fn share(count: u32, of: u32) -> Option<Share> {
    match count {
        _ if of == 0 => None,
        0 => Some(Share::NoRun),
        _ if count == of => Some(Share::EveryRun),
        _ => Some(Share::SomeRuns),
    }
}

/// Which way a task moved, with why.
enum Move {
    Worse(String),
    Better(String),
}

/// How `now` moved from `before`: expectations first, then finishing; a regression on either
/// outweighs an improvement on the other.
fn moved(before: &Outcome, now: &Outcome) -> Option<Move> {
    /// (what, (runs it held in, runs that could say) before, the same now)
    type Count = (&'static str, (u32, u32), (u32, u32));
    const MET: &str = "met its expectations";
    let counts: [Count; 2] = [
        (MET, (before.met, before.checked), (now.met, now.checked)),
        (
            "finished",
            (before.finished, before.runs),
            (now.finished, now.runs),
        ),
    ];
    let find = |worse: bool| {
        counts.into_iter().find(|(_, (k0, n0), (k1, n1))| {
            match (share(*k0, *n0), share(*k1, *n1)) {
                (Some(a), Some(b)) => (a > b && worse) || (a < b && !worse),
                _ => false,
            }
        })
    };
    let words = |(what, (k0, n0), (k1, n1)): Count, worse: bool| -> String {
        if before.runs > 1 || now.runs > 1 {
            return format!(
                "{what} in {k0} of {} before, {k1} of {n1} now",
                crate::plural(n0, "run", "runs")
            );
        }
        // One run on each side: the words of a comparison without repeats.
        match (what == MET, worse) {
            (true, true) => "met its expectations before, fails them now".to_owned(),
            (true, false) => "failed its expectations before, meets them now".to_owned(),
            (false, true) => format!("finished before, {} now", now.typical),
            (false, false) => format!("{} before, finished now", before.typical),
        }
    };
    if let Some(count) = find(true) {
        Some(Move::Worse(words(count, true)))
    } else {
        find(false).map(|count| Move::Better(words(count, false)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A row of task `id` (repeat `repeat`, 0 for none) that ended `exit` with verdict `verdict`.
    fn row(id: &str, repeat: u32, exit: &str, verdict: &str) -> serde_json::Value {
        let mut row = serde_json::json!({
            "id": id, "model": "actions", "exit_reason": exit, "steps_used": 1, "max_steps": 5,
            "tool_calls": 0, "tool_errors": 0, "feedback": 0, "duration_ms": 0.0,
            "expectation": verdict
        });
        if repeat > 0 {
            row["repeat"] = repeat.into();
        }
        row
    }

    fn results(rows: Vec<serde_json::Value>) -> ResultsFile {
        serde_json::from_value(serde_json::json!({
            "format": "looptrace.results/1", "looptrace_version": "0", "created_at": "",
            "suite": {"name": "s", "tasks": 0, "fingerprint": ""}, "capture": "summary",
            "tasks": rows,
            "totals": {"tasks": 0, "exit_reasons": {}, "expectations": {"met": 0, "failed": 0, "none": 0}}
        }))
        .unwrap()
    }

    /// Task `id`'s repeats, one per `(exit, verdict)`.
    fn repeats(id: &str, runs: &[(&str, &str)]) -> Vec<serde_json::Value> {
        (1..)
            .zip(runs)
            .map(|(k, (exit, verdict))| row(id, k, exit, verdict))
            .collect()
    }

    fn pairs(items: &[(&str, &str)]) -> Vec<(String, String)> {
        items
            .iter()
            .map(|(a, b)| ((*a).to_owned(), (*b).to_owned()))
            .collect()
    }

    const MET: (&str, &str) = ("finished", "met");
    const FAILED: (&str, &str) = ("finished", "failed");
    const CUT: (&str, &str) = ("max_steps_exceeded", "none");
    const DONE: (&str, &str) = ("finished", "none");

    #[test]
    fn one_run_on_each_side_keeps_the_words_without_repeats() {
        let before = results(vec![
            row("a", 0, "finished", "met"),
            row("b", 0, "finished", "none"),
            row("c", 0, "finished", "failed"),
            row("d", 0, "max_steps_exceeded", "none"),
            row("gone", 0, "finished", "met"),
        ]);
        let now = results(vec![
            row("a", 0, "finished", "failed"),
            row("b", 0, "max_steps_exceeded", "none"),
            row("c", 0, "finished", "met"),
            row("d", 0, "finished", "none"),
            row("new", 0, "finished", "met"),
        ]);
        let c = compare(&before, &now);
        assert_eq!(
            c.regressions,
            pairs(&[
                ("a", "met its expectations before, fails them now"),
                ("b", "finished before, max_steps_exceeded now")
            ])
        );
        assert_eq!(
            c.improvements,
            pairs(&[
                ("c", "failed its expectations before, meets them now"),
                ("d", "max_steps_exceeded before, finished now")
            ])
        );
        assert_eq!(
            (c.added, c.removed),
            (vec!["new".to_owned()], vec!["gone".to_owned()])
        );
        assert_eq!(c.transitions.values().sum::<usize>(), 4);
    }

    #[test]
    fn repeated_tasks_move_only_between_every_some_and_no_run() {
        let before = results(
            [
                repeats("steady", &[MET, MET, MET]),
                repeats("flaky", &[MET, FAILED, MET]),
                repeats("fixed", &[FAILED, FAILED, FAILED]),
                repeats("stops", &[DONE, DONE, DONE]),
                repeats("gone", &[MET, MET, MET]),
            ]
            .concat(),
        );
        let now = results(
            [
                repeats("steady", &[MET, FAILED, MET]),
                repeats("flaky", &[FAILED, FAILED, MET]),
                repeats("fixed", &[MET, MET, MET]),
                repeats("stops", &[CUT, DONE, CUT]),
                repeats("new", &[MET, MET, MET]),
            ]
            .concat(),
        );
        let c = compare(&before, &now);
        assert_eq!(
            c.regressions,
            pairs(&[
                (
                    "steady",
                    "met its expectations in 3 of 3 runs before, 2 of 3 now"
                ),
                ("stops", "finished in 3 of 3 runs before, 1 of 3 now"),
            ])
        );
        assert_eq!(
            c.improvements,
            pairs(&[(
                "fixed",
                "met its expectations in 0 of 3 runs before, 3 of 3 now"
            )])
        );
        assert_eq!(
            (c.added, c.removed),
            (vec!["new".to_owned()], vec!["gone".to_owned()])
        );
        // One transition per task, from the exit reason most of its runs ended with.
        use ExitReason::{Finished, MaxStepsExceeded};
        let expected: BTreeMap<(ExitReason, ExitReason), usize> =
            [((Finished, Finished), 3), ((Finished, MaxStepsExceeded), 1)].into();
        assert_eq!(c.transitions, expected);
    }

    #[test]
    fn one_repeated_side_compares_its_runs_with_the_one_run() {
        let once = results(vec![row("t", 0, "finished", "met")]);
        let thrice = results(repeats("t", &[MET, FAILED, MET]));
        let c = compare(&once, &thrice);
        assert_eq!(
            c.regressions,
            pairs(&[("t", "met its expectations in 1 of 1 run before, 2 of 3 now")])
        );
        let c = compare(&thrice, &once);
        assert_eq!(
            c.improvements,
            pairs(&[(
                "t",
                "met its expectations in 2 of 3 runs before, 1 of 1 now"
            )])
        );
        assert!(c.regressions.is_empty());
    }

    #[test]
    fn a_tie_of_exit_reasons_goes_to_the_earliest_run() {
        let before = results(repeats("t", &[CUT, DONE]));
        let now = results(repeats("t", &[DONE, CUT]));
        let c = compare(&before, &now);
        let expected: BTreeMap<(ExitReason, ExitReason), usize> =
            [((ExitReason::MaxStepsExceeded, ExitReason::Finished), 1)].into();
        assert_eq!(c.transitions, expected);
        assert!(c.regressions.is_empty() && c.improvements.is_empty());
    }

    #[test]
    fn counting_rows_as_they_arrive_compares_as_the_rows_do() {
        let before = results(
            [
                repeats("steady", &[("finished", "met"); 3]),
                repeats("tie", &[("finished", "met"); 2]),
                repeats("slips", &[("finished", "met"); 3]),
            ]
            .concat(),
        );
        let now = results(
            [
                repeats("steady", &[("finished", "met"); 3]),
                // Two exit reasons once each: the tie goes to the earlier run's.
                repeats(
                    "tie",
                    &[("max_steps_exceeded", "failed"), ("finished", "met")],
                ),
                repeats(
                    "slips",
                    &[
                        ("finished", "met"),
                        ("internal_error", "failed"),
                        ("finished", "met"),
                    ],
                ),
            ]
            .concat(),
        );
        let expected = compare(&before, &now);
        // The rows arrive in reverse, each with its position among the evaluation's rows.
        let ids = ["steady", "tie", "slips"];
        let mut counts = vec![OutcomeCounts::default(); ids.len()];
        for (position, row) in now.tasks.iter().enumerate().rev() {
            let task = ids.iter().position(|id| *id == row.id).unwrap();
            counts[task].add(row, position);
        }
        let counted = compare_counted(&before, ids.iter().copied().zip(&counts));
        assert_eq!(counted, expected);
        assert_eq!(expected.regressions.len(), 2, "{expected:?}");
        assert_eq!(
            expected
                .transitions
                .get(&(ExitReason::Finished, ExitReason::MaxStepsExceeded)),
            Some(&1),
            "{expected:?}"
        );
    }
}

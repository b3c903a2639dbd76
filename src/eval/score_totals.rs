//! Each scorer's totals over an evaluation's rows: how many runs it scored, how many passed, and
//! the mean of its values, for the pages and reports that summarize scores.

use serde::Serialize;

use super::results::TaskResult;

/// One scorer (by name and kind) over every row it scored.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct ScoreTotal {
    /// The score's name.
    pub name: String,
    /// Its kind.
    pub kind: String,
    /// Runs it scored.
    pub scored: u32,
    /// Runs it passed.
    pub passed: u32,
    /// The mean of its values, over the runs that had one.
    pub mean_value: Option<f64>,
}

/// The totals of every scorer in `rows`, in the order they first appear.
pub fn score_totals(rows: &[TaskResult]) -> Vec<ScoreTotal> {
    let mut totals: Vec<(ScoreTotal, f64, u32)> = Vec::new();
    for score in rows.iter().flat_map(|row| &row.scores) {
        let i = match totals
            .iter()
            .position(|(t, _, _)| t.name == score.name && t.kind == score.kind)
        {
            Some(i) => i,
            None => {
                totals.push((
                    ScoreTotal {
                        name: score.name.clone(),
                        kind: score.kind.clone(),
                        scored: 0,
                        passed: 0,
                        mean_value: None,
                    },
                    0.0,
                    0,
                ));
                totals.len() - 1
            }
        };
        let (total, sum, valued) = &mut totals[i];
        total.scored += 1;
        if score.passed == Some(true) {
            total.passed += 1;
        }
        if let Some(value) = score.value {
            *sum += value;
            *valued += 1;
        }
    }
    totals
        .into_iter()
        .map(|(mut total, sum, valued)| {
            total.mean_value = (valued > 0).then(|| sum / f64::from(valued));
            total
        })
        .collect()
}

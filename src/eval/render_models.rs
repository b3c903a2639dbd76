//! Models side by side: under a model matrix (`eval --model A --model B`), each task's pass
//! rate per model, one column per model, and each model's overall pass rate. A pure function of
//! the pass rates, for the console table, the JSON report and the HTML page alike.

use serde::Serialize;

use super::render_shared::PassRate;

/// `(passed, runs)` of one task under one model; `None` when it did not run there.
pub type Cell = Option<(u32, u32)>;

/// The comparison of the models a matrix ran.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct ModelMatrix {
    /// The models, in the order their rows first appear.
    pub models: Vec<String>,
    /// Each task (in order) with its `(passed, runs)` per model (`None`: it did not run there).
    pub tasks: Vec<(String, Vec<Cell>)>,
    /// Each model's passing runs and runs over every task.
    pub totals: Vec<(u32, u32)>,
}

impl ModelMatrix {
    /// The comparison, when the rates name more than one model.
    pub fn of(rates: &[PassRate<'_>]) -> Option<ModelMatrix> {
        ModelMatrix::of_rates(rates.iter().cloned())
    }

    /// [`ModelMatrix::of`] rates read one at a time (walked again by cloning the iterator).
    pub fn of_rates<'r>(rates: impl Iterator<Item = PassRate<'r>> + Clone) -> Option<ModelMatrix> {
        use std::collections::HashMap;
        let mut models: Vec<&str> = Vec::new();
        let mut model_index: HashMap<&str, usize> = HashMap::new();
        for rate in rates.clone() {
            model_index.entry(rate.model).or_insert_with(|| {
                models.push(rate.model);
                models.len() - 1
            });
        }
        // One model has nothing to compare: its tasks' ids are not gathered.
        if models.len() < 2 {
            return None;
        }
        let mut tasks: Vec<(String, Vec<Cell>)> = Vec::new();
        let mut id_index: HashMap<String, usize> = HashMap::new();
        let (mut totals, mut count) = (vec![(0, 0); models.len()], 0);
        for rate in rates {
            count += 1;
            let m = model_index[rate.model];
            let t = *id_index.entry(rate.id.to_string()).or_insert_with(|| {
                tasks.push((rate.id.to_string(), vec![None; models.len()]));
                tasks.len() - 1
            });
            tasks[t].1[m] = Some((rate.passed, rate.runs));
            totals[m].0 += rate.passed;
            totals[m].1 += rate.runs;
        }
        // A matrix runs one task against several models; a suite whose tasks each have their own
        // kind of model has nothing to compare side by side.
        if tasks.len() == count {
            return None;
        }
        Some(ModelMatrix {
            models: models.into_iter().map(str::to_owned).collect(),
            tasks,
            totals,
        })
    }

    /// The header and rows of the table: `task`, then one column per model; the last row is
    /// each model's overall pass rate.
    pub fn cells(&self) -> (Vec<String>, Vec<Vec<String>>) {
        let mut header = vec!["task".to_owned()];
        header.extend(self.models.iter().cloned());
        let cell = |rate: Cell| match rate {
            Some((passed, runs)) => format!("{passed}/{runs}"),
            None => "-".to_owned(),
        };
        let mut rows: Vec<Vec<String>> = self
            .tasks
            .iter()
            .map(|(id, rates)| {
                let mut row = vec![id.clone()];
                row.extend(rates.iter().map(|r| cell(*r)));
                row
            })
            .collect();
        let mut total = vec!["pass rate".to_owned()];
        total.extend(self.totals.iter().map(|&(passed, runs)| {
            let share = if runs == 0 {
                0.0
            } else {
                f64::from(passed) / f64::from(runs)
            };
            format!("{passed}/{runs} ({:.0}%)", share * 100.0)
        }));
        rows.push(total);
        (header, rows)
    }

    /// The comparison as the JSON report writes it.
    pub fn json(&self) -> serde_json::Value {
        let models: Vec<serde_json::Value> = self
            .models
            .iter()
            .enumerate()
            .map(|(m, model)| {
                let (passed, runs) = self.totals[m];
                let tasks: serde_json::Map<String, serde_json::Value> = self
                    .tasks
                    .iter()
                    .filter_map(|(id, rates)| {
                        rates[m].map(|(passed, runs)| {
                            (
                                id.clone(),
                                serde_json::json!({"passed": passed, "runs": runs}),
                            )
                        })
                    })
                    .collect();
                serde_json::json!({
                    "model": model,
                    "passed": passed,
                    "runs": runs,
                    "pass_rate": if runs == 0 { 0.0 } else { f64::from(passed) / f64::from(runs) },
                    "tasks": tasks,
                })
            })
            .collect();
        serde_json::Value::Array(models)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_column_per_model_and_a_total_row() {
        let rate = |id, model, passed, runs| PassRate {
            id: std::borrow::Cow::Borrowed(id),
            model,
            passed,
            runs,
        };
        let rates = [
            rate("a", "small", 3, 3),
            rate("a", "big", 1, 3),
            rate("b", "small", 0, 3),
            rate("b", "big", 3, 3),
        ];
        let matrix = ModelMatrix::of(&rates).unwrap();
        let (header, rows) = matrix.cells();
        assert_eq!(header, ["task", "small", "big"]);
        assert_eq!(
            rows,
            [
                vec!["a", "3/3", "1/3"],
                vec!["b", "0/3", "3/3"],
                vec!["pass rate", "3/6 (50%)", "4/6 (67%)"],
            ]
        );
        assert!(
            ModelMatrix::of(&rates[..1]).is_none(),
            "one model: no comparison"
        );
    }
}

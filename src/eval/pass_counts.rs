//! Each task's passes over its repeats, counted as the rows were written: what the report shows
//! when the outcome does not hold every row. Packed, as the suite's task entries are: a million
//! tasks' ids in one string, each task's counts in 24 bytes.

use crate::eval::PassRate;

/// The pass counts of the tasks that ran, in suite order.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct PassCounts {
    /// Every id, one after another.
    ids: String,
    /// Per task: where its id ends in `ids`, its model in `models`, and its counts.
    tasks: Vec<Counted>,
    /// The model labels the tasks name, each once.
    models: Vec<String>,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Counted {
    id_end: usize,
    model: usize,
    passed: u32,
    runs: u32,
}

impl PassCounts {
    /// Adds a task that passed `passed` of its `runs` runs.
    pub(crate) fn push(&mut self, id: &str, model: &str, passed: u32, runs: u32) {
        self.ids.push_str(id);
        // Tasks of one model come together, and a suite names few models.
        let last = self.tasks.last().map(|t| t.model);
        let model = match last.filter(|&i| self.models[i] == model) {
            Some(i) => i,
            None => match self.models.iter().position(|m| m == model) {
                Some(i) => i,
                None => {
                    self.models.push(model.to_owned());
                    self.models.len() - 1
                }
            },
        };
        let id_end = self.ids.len();
        (self.tasks).push(Counted {
            id_end,
            model,
            passed,
            runs,
        });
    }

    /// How many tasks.
    pub fn len(&self) -> usize {
        self.tasks.len()
    }

    /// Whether no task ran.
    pub fn is_empty(&self) -> bool {
        self.tasks.is_empty()
    }

    /// Each task's pass rate, in suite order.
    pub fn rates(&self) -> PackedRates<'_> {
        PackedRates {
            counts: self,
            next: 0,
            start: 0,
        }
    }
}

/// Each task's pass rate read from [`PassCounts`], in suite order.
#[derive(Clone, Debug)]
pub struct PackedRates<'c> {
    counts: &'c PassCounts,
    next: usize,
    /// Where the next task's id starts.
    start: usize,
}

impl<'c> Iterator for PackedRates<'c> {
    type Item = PassRate<'c>;

    fn next(&mut self) -> Option<PassRate<'c>> {
        let counts = self.counts;
        let t = counts.tasks.get(self.next)?;
        let id = &counts.ids[self.start..t.id_end];
        (self.next, self.start) = (self.next + 1, t.id_end);
        Some(PassRate {
            id,
            model: &counts.models[t.model],
            passed: t.passed,
            runs: t.runs,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rates_come_back_as_pushed() {
        let mut counts = PassCounts::default();
        let pushed = [
            ("a", "actions", 1, 2),
            ("bb", "actions", 0, 1),
            ("c", "gpt[x]", 3, 3),
            ("d", "actions", 2, 2),
        ];
        for (id, model, passed, runs) in pushed {
            counts.push(id, model, passed, runs);
        }
        let rates: Vec<_> = (counts.rates())
            .map(|r| (r.id, r.model, r.passed, r.runs))
            .collect();
        assert_eq!(rates, pushed);
        assert_eq!(counts.models.len(), 2);
        assert_eq!(counts.len(), 4);
    }
}

//! Every task's id and model kind, packed: what selection, fingerprints and resumes read
//! without reading a task. A million ids cost megabytes, not a hundred.

use std::fmt;

use super::task::SuiteTask;

/// A task id borrowed from the suite's [`TaskEntries`].
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct IdRef<'a>(&'a str);

impl<'a> IdRef<'a> {
    /// An id read from where it was written.
    pub(super) fn new(id: &'a str) -> IdRef<'a> {
        IdRef(id)
    }

    /// The id as text.
    pub fn as_str(&self) -> &'a str {
        self.0
    }
}

impl fmt::Display for IdRef<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.0)
    }
}

/// What is known of a task without reading it, borrowed from the suite's [`TaskEntries`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TaskEntry<'a> {
    /// The task's id.
    pub id: IdRef<'a>,
    /// Its model's kind (`responses`, `actions`, `replay`, `chat`).
    pub model_kind: &'static str,
    /// The model as given, when it came from outside the task (`defaults.model`, `--model`).
    pub model_name: Option<&'a str>,
}

impl TaskEntry<'_> {
    /// The model as results name it: as given, else the kind.
    pub fn model_label(&self) -> &str {
        self.model_name.unwrap_or(self.model_kind)
    }

    /// What tells the task's rows apart across models: `id`, or `id[model]` for a model given
    /// from outside the task (as [`crate::eval::TaskResult::row_key`]).
    pub fn row_key(&self) -> String {
        match self.model_name {
            Some(model) => format!("{}[{model}]", self.id),
            None => self.id.to_string(),
        }
    }
}

/// Every 64th entry's start in the block of ids: an entry is found from the nearest by adding
/// at most 63 lengths.
const STRIDE: usize = 64;

/// Every task's id and model, in suite order: the ids in one block of text with a byte of
/// length each (ids are at most 200 ASCII characters), the models as runs of equal ones.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct TaskEntries {
    ids: String,
    lens: Vec<u8>,
    /// Where every [`STRIDE`]th id starts.
    starts: Vec<usize>,
    models: ModelRuns,
}

/// Each task's model as runs of equal ones: `(first entry, kind, model name)`.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ModelRuns(Vec<(usize, &'static str, Option<Box<str>>)>);

impl ModelRuns {
    /// Notes entry `i`'s model; entries come in order.
    pub fn push(&mut self, i: usize, model_kind: &'static str, model_name: Option<&str>) {
        let same = self
            .0
            .last()
            .is_some_and(|(_, kind, name)| *kind == model_kind && name.as_deref() == model_name);
        if !same {
            self.0.push((i, model_kind, model_name.map(Box::from)));
        }
    }

    /// Entry `i`'s model kind and name.
    pub fn at(&self, i: usize) -> (&'static str, Option<&str>) {
        let run = self.0.partition_point(|(from, _, _)| *from <= i).max(1) - 1;
        self.0
            .get(run)
            .map_or(("", None), |(_, kind, name)| (kind, name.as_deref()))
    }

    /// A reader of the models of entries asked for in order.
    pub fn cursor(&self) -> ModelCursor<'_> {
        ModelCursor { runs: self, run: 0 }
    }
}

/// Reads [`ModelRuns`] for entries in order without searching.
pub struct ModelCursor<'a> {
    runs: &'a ModelRuns,
    run: usize,
}

impl<'a> ModelCursor<'a> {
    /// Entry `i`'s model kind and name; `i` never goes back.
    pub fn at(&mut self, i: usize) -> (&'static str, Option<&'a str>) {
        let runs = &self.runs.0;
        while runs
            .get(self.run + 1)
            .is_some_and(|(from, _, _)| *from <= i)
        {
            self.run += 1;
        }
        runs.get(self.run)
            .map_or(("", None), |(_, kind, name)| (kind, name.as_deref()))
    }
}

impl TaskEntries {
    /// Adds the entry of `task`.
    pub fn push_task(&mut self, task: &SuiteTask) {
        let name = task.model_name.as_ref().map(|m| m.given.as_str());
        self.push(task.id.as_str(), task.model.kind(), name);
    }

    /// Adds an entry; `id` is a checked task id (at most 200 characters).
    pub fn push(&mut self, id: &str, model_kind: &'static str, model_name: Option<&str>) {
        let i = self.lens.len();
        if i.is_multiple_of(STRIDE) {
            self.starts.push(self.ids.len());
        }
        self.ids.push_str(id);
        self.lens.push(u8::try_from(id.len()).unwrap_or(u8::MAX));
        self.models.push(i, model_kind, model_name);
    }

    /// How many entries.
    pub fn len(&self) -> usize {
        self.lens.len()
    }

    /// Whether there are none.
    pub fn is_empty(&self) -> bool {
        self.lens.is_empty()
    }

    /// Entry `i`, if there is one.
    pub fn get(&self, i: usize) -> Option<TaskEntry<'_>> {
        let len = *self.lens.get(i)? as usize;
        let first = i - i % STRIDE;
        let start = self.starts[i / STRIDE]
            + self.lens[first..i]
                .iter()
                .map(|&l| l as usize)
                .sum::<usize>();
        let (model_kind, model_name) = self.models.at(i);
        Some(TaskEntry {
            id: IdRef(self.ids.get(start..start + len)?),
            model_kind,
            model_name,
        })
    }

    /// Every entry, in order.
    pub fn iter(&self) -> impl Iterator<Item = TaskEntry<'_>> + '_ {
        let mut start = 0;
        let mut models = self.models.cursor();
        self.lens.iter().enumerate().map(move |(i, &len)| {
            let id = self
                .ids
                .get(start..start + len as usize)
                .unwrap_or_default();
            start += len as usize;
            let (model_kind, model_name) = models.at(i);
            TaskEntry {
                id: IdRef(id),
                model_kind,
                model_name,
            }
        })
    }
}

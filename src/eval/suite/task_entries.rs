//! Every task's id and model kind, packed: what selection, fingerprints and resumes read
//! without reading a task. A million ids cost megabytes, not a hundred.

use std::fmt;

use super::task::SuiteTask;

/// A task id borrowed from the suite's [`TaskEntries`].
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct IdRef<'a>(&'a str);

impl<'a> IdRef<'a> {
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
/// length each (ids are at most 200 characters), the models as runs of equal ones.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct TaskEntries {
    ids: String,
    lens: Vec<u8>,
    /// Where every [`STRIDE`]th id starts.
    starts: Vec<usize>,
    /// `(first entry, kind, model name)`: each run of entries with the same model.
    models: Vec<(usize, &'static str, Option<Box<str>>)>,
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
        let same = self
            .models
            .last()
            .is_some_and(|(_, kind, name)| *kind == model_kind && name.as_deref() == model_name);
        if !same {
            self.models.push((i, model_kind, model_name.map(Box::from)));
        }
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
        let run = self.models.partition_point(|(from, _, _)| *from <= i) - 1;
        let (_, model_kind, name) = &self.models[run];
        Some(TaskEntry {
            id: IdRef(&self.ids[start..start + len]),
            model_kind,
            model_name: name.as_deref(),
        })
    }

    /// Every entry, in order.
    pub fn iter(&self) -> impl Iterator<Item = TaskEntry<'_>> + '_ {
        let mut start = 0;
        let mut run = 0;
        self.lens.iter().enumerate().map(move |(i, &len)| {
            while self
                .models
                .get(run + 1)
                .is_some_and(|(from, _, _)| *from <= i)
            {
                run += 1;
            }
            let (_, model_kind, name) = &self.models[run];
            let id = &self.ids[start..start + len as usize];
            start += len as usize;
            TaskEntry {
                id: IdRef(id),
                model_kind,
                model_name: name.as_deref(),
            }
        })
    }
}

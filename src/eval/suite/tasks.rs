//! A suite's tasks, held or streamed, and the seam the runner pulls tasks through. A suite's
//! `tasks` array is held as loaded; a tasks file is checked once and then read task by task as
//! the runner reaches them. Either way every task's id and model kind are known up front, so
//! selection (`--only`, `--skip`, `--shard`), fingerprints and resumes never read a task.

use std::borrow::Cow;
use std::path::{Path, PathBuf};

use super::tasks_file::{Indexed, TasksFile, note};
use crate::eval::suite::{SuiteTask, TaskId};

/// What is known of a task without reading it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TaskEntry {
    /// The task's id.
    pub id: TaskId,
    /// Its model's kind (`responses`, `actions`, `replay`, `chat`).
    pub model_kind: &'static str,
    /// The model as given, when it came from outside the task (`defaults.model`, `--model`).
    pub model_name: Option<String>,
}

impl TaskEntry {
    /// The entry of `task`.
    pub fn of(task: &SuiteTask) -> TaskEntry {
        TaskEntry {
            id: task.id.clone(),
            model_kind: task.model.kind(),
            model_name: task.model_name.as_ref().map(|m| m.given.clone()),
        }
    }

    /// The model as results name it: as given, else the kind.
    pub fn model_label(&self) -> &str {
        self.model_name.as_deref().unwrap_or(self.model_kind)
    }

    /// What tells the task's rows apart across models: `id`, or `id[model]` for a model given
    /// from outside the task (as [`crate::eval::TaskResult::row_key`]).
    pub fn row_key(&self) -> String {
        match &self.model_name {
            Some(model) => format!("{}[{model}]", self.id),
            None => self.id.to_string(),
        }
    }
}

/// A suite's tasks, in suite order.
#[derive(Clone, Debug)]
pub struct SuiteTasks {
    entries: Vec<TaskEntry>,
    store: Store,
    key_vars: Vec<String>,
    read_files: Vec<PathBuf>,
}

#[derive(Clone, Debug)]
enum Store {
    Held(Vec<SuiteTask>),
    Streamed(Box<TasksFile>),
}

impl SuiteTasks {
    /// Tasks held in memory.
    pub fn held(tasks: Vec<SuiteTask>) -> SuiteTasks {
        let mut key_vars = Vec::new();
        let mut read_files = Vec::new();
        for task in &tasks {
            note(task, &mut key_vars, &mut read_files);
        }
        SuiteTasks {
            entries: tasks.iter().map(TaskEntry::of).collect(),
            store: Store::Held(tasks),
            key_vars,
            read_files,
        }
    }

    /// Tasks read from a checked tasks file as they run.
    pub fn streamed(indexed: Indexed) -> SuiteTasks {
        let mut read_files = indexed.read_files;
        read_files.push(indexed.file.path().to_path_buf());
        SuiteTasks {
            entries: indexed.entries,
            store: Store::Streamed(Box::new(indexed.file)),
            key_vars: indexed.key_vars,
            read_files,
        }
    }

    /// How many tasks.
    pub fn len(&self) -> usize {
        self.entries.len()
    }

    /// Whether there are none.
    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// Every task's id and model kind, in suite order.
    pub fn entries(&self) -> &[TaskEntry] {
        &self.entries
    }

    /// The tasks, when they are held (a suite's `tasks` array, a corpus).
    pub fn held_tasks(&self) -> Option<&[SuiteTask]> {
        match &self.store {
            Store::Held(tasks) => Some(tasks),
            Store::Streamed(_) => None,
        }
    }

    /// The tasks file they are read from, if they are streamed.
    pub fn tasks_file(&self) -> Option<&Path> {
        match &self.store {
            Store::Held(_) => None,
            Store::Streamed(file) => Some(file.path()),
        }
    }

    /// Task `i`, borrowed when held, read from its line when streamed.
    pub fn get(&self, i: usize) -> Result<Cow<'_, SuiteTask>, String> {
        match &self.store {
            Store::Held(tasks) => tasks
                .get(i)
                .map(Cow::Borrowed)
                .ok_or_else(|| format!("no task {i} in the suite")),
            Store::Streamed(file) => file.task(i).map(Cow::Owned),
        }
    }

    /// The variables the tasks' live models read their keys from (`api_key_env`), each once.
    pub fn key_vars(&self) -> &[String] {
        &self.key_vars
    }

    /// Every file the tasks read besides the suite: recordings, the tasks file.
    pub fn read_files(&self) -> &[PathBuf] {
        &self.read_files
    }

    /// The tasks at `positions` (suite order), or all of them.
    pub fn select(&self, positions: Option<Vec<usize>>) -> Selected<'_> {
        let entries = match &positions {
            None => Cow::Borrowed(self.entries.as_slice()),
            Some(positions) => Cow::Owned(
                positions
                    .iter()
                    .filter_map(|&i| self.entries.get(i).cloned())
                    .collect(),
            ),
        };
        Selected {
            tasks: self,
            positions,
            entries,
        }
    }
}

/// Where the runner takes its tasks from: task `i` of what it was asked to run.
pub trait TaskSource: Sync {
    /// Task `i`; `Err` is a task that can no longer be read (its file changed).
    fn task(&self, i: usize) -> Result<Cow<'_, SuiteTask>, String>;
}

impl TaskSource for [SuiteTask] {
    fn task(&self, i: usize) -> Result<Cow<'_, SuiteTask>, String> {
        self.get(i)
            .map(Cow::Borrowed)
            .ok_or_else(|| format!("no task {i}"))
    }
}

impl TaskSource for SuiteTasks {
    fn task(&self, i: usize) -> Result<Cow<'_, SuiteTask>, String> {
        self.get(i)
    }
}

/// Some of a suite's tasks, in suite order: what an evaluation runs.
#[derive(Debug)]
pub struct Selected<'s> {
    tasks: &'s SuiteTasks,
    positions: Option<Vec<usize>>,
    entries: Cow<'s, [TaskEntry]>,
}

impl Selected<'_> {
    /// How many tasks are selected.
    pub fn len(&self) -> usize {
        self.entries.len()
    }

    /// Whether none is.
    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// The selected tasks' ids and model kinds.
    pub fn entries(&self) -> &[TaskEntry] {
        &self.entries
    }
}

impl TaskSource for Selected<'_> {
    fn task(&self, i: usize) -> Result<Cow<'_, SuiteTask>, String> {
        let position = match &self.positions {
            None => i,
            Some(positions) => *positions
                .get(i)
                .ok_or_else(|| format!("no selected task {i}"))?,
        };
        self.tasks.get(position)
    }
}

//! A suite's tasks, held or streamed, and the seam the runner pulls tasks through. A suite's
//! `tasks` array is held as loaded, or (when an evaluation runs only some of them) read again from
//! the suite's text as each runs; a tasks file is checked once and then read task by task as
//! the runner reaches them. Either way every task's id and model kind are known up front, so
//! selection (`--only`, `--skip`, `--shard`), fingerprints and resumes never read a task. A
//! suite's ids are packed in one block of text (a few bytes a task beside the id itself); a tasks
//! file's, dataset's or corpus's are read back in order from where its check wrote them
//! (`logged_entries.rs`), so an evaluation of a million rows holds none of them. What compares
//! ids at will (a resume, a rerun, a baseline, the full report) holds them packed.

use std::borrow::Cow;
use std::ops::ControlFlow;
use std::path::{Path, PathBuf};
use std::sync::{Arc, OnceLock};

use super::inline::InlineTasks;
use super::logged_entries::LoggedEntries;
use super::task::SuiteTask;
use super::task_entries::{TaskEntries, TaskEntry};
use super::tasks_file::{Indexed, TasksFile, note};

/// A suite's tasks, in suite order.
#[derive(Clone, Debug)]
pub struct SuiteTasks {
    entries: Entries,
    store: Store,
    key_vars: Vec<String>,
    read_files: Vec<PathBuf>,
}

/// Every task's id and model: packed in memory, or read back from where a file's check wrote
/// them (and packed on first asking for them at will).
#[derive(Clone, Debug)]
enum Entries {
    Packed(TaskEntries),
    Logged(LoggedEntries, OnceLock<TaskEntries>),
}

#[derive(Clone, Debug)]
enum Store {
    Held(Vec<SuiteTask>),
    Streamed(Box<TasksFile>),
    /// A suite's `tasks` array, read again from the suite's text as each task runs.
    Inline(Box<InlineTasks>),
    /// Tasks made as they run from what a [`TaskMaker`] keeps of each.
    Made(Arc<dyn TaskMaker>),
}

/// Makes tasks on demand from what it keeps of each, far less than a task (a corpus of recorded
/// runs keeps where each run's lines are).
pub trait TaskMaker: std::fmt::Debug + Send + Sync {
    /// Task `i`, whose id is `id`.
    fn task(&self, i: usize, id: &str) -> Result<SuiteTask, String>;
}

impl SuiteTasks {
    /// Tasks held in memory.
    pub fn held(tasks: Vec<SuiteTask>) -> SuiteTasks {
        let mut key_vars = Vec::new();
        let mut read_files = Vec::new();
        let mut entries = TaskEntries::default();
        for task in &tasks {
            note(task, &mut key_vars, &mut read_files);
            entries.push_task(task);
        }
        SuiteTasks {
            entries: Entries::Packed(entries),
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
            entries: Entries::Logged(indexed.entries, OnceLock::new()),
            store: Store::Streamed(Box::new(indexed.file)),
            key_vars: indexed.key_vars,
            read_files,
        }
    }

    /// A suite's inline tasks, checked but not held: each is read again as it runs.
    pub fn inline(
        entries: TaskEntries,
        tasks: InlineTasks,
        key_vars: Vec<String>,
        read_files: Vec<PathBuf>,
    ) -> SuiteTasks {
        SuiteTasks {
            entries: Entries::Packed(entries),
            store: Store::Inline(Box::new(tasks)),
            key_vars,
            read_files,
        }
    }

    /// Tasks made as they run by `maker`, with these entries; `read_files` are the files they
    /// read.
    pub fn made(
        entries: TaskEntries,
        maker: Arc<dyn TaskMaker>,
        read_files: Vec<PathBuf>,
    ) -> SuiteTasks {
        SuiteTasks {
            entries: Entries::Packed(entries),
            store: Store::Made(maker),
            key_vars: Vec::new(),
            read_files,
        }
    }

    /// [`SuiteTasks::made`] with entries read back from where they were written.
    pub fn made_logged(
        entries: LoggedEntries,
        maker: Arc<dyn TaskMaker>,
        read_files: Vec<PathBuf>,
    ) -> SuiteTasks {
        SuiteTasks {
            entries: Entries::Logged(entries, OnceLock::new()),
            store: Store::Made(maker),
            key_vars: Vec::new(),
            read_files,
        }
    }

    /// How many tasks.
    pub fn len(&self) -> usize {
        match &self.entries {
            Entries::Packed(entries) => entries.len(),
            Entries::Logged(entries, _) => entries.len(),
        }
    }

    /// Whether there are none.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Every task's id and model kind, in suite order, held: a tasks file's or dataset's are
    /// packed on first asking and kept. What reads them in order uses [`SuiteTasks::scan`],
    /// which holds none; [`SuiteTasks::hold_entries`] packs them first where reading them
    /// could fail. Empty when they cannot be read back (only after `hold_entries` failed).
    pub fn entries(&self) -> &TaskEntries {
        static NONE: OnceLock<TaskEntries> = OnceLock::new();
        match &self.entries {
            Entries::Packed(entries) => entries,
            Entries::Logged(logged, held) => match held.get() {
                Some(held) => held,
                None => match logged.to_packed() {
                    Ok(packed) => held.get_or_init(|| packed),
                    Err(_) => NONE.get_or_init(TaskEntries::default),
                },
            },
        }
    }

    /// Packs a tasks file's or dataset's ids to hold them, for what compares ids at will (a
    /// resume, a rerun, a baseline, the full report); `Err` when they cannot be read back.
    pub fn hold_entries(&self) -> Result<(), String> {
        if let Entries::Logged(logged, held) = &self.entries
            && held.get().is_none()
        {
            let packed = logged.to_packed().map_err(|err| ids_unread(&err))?;
            let _ = held.set(packed);
        }
        Ok(())
    }

    /// Calls `each` with every task's entry from task `from` on, in suite order, until it
    /// breaks; a tasks file's ids are read back, not held.
    pub fn scan(
        &self,
        from: usize,
        mut each: impl FnMut(usize, TaskEntry<'_>) -> ControlFlow<()>,
    ) -> Result<(), String> {
        match &self.entries {
            Entries::Packed(entries) => {
                for (i, entry) in entries.iter().enumerate().skip(from) {
                    if each(i, entry).is_break() {
                        break;
                    }
                }
                Ok(())
            }
            Entries::Logged(logged, _) => logged.scan(from, each).map_err(|err| ids_unread(&err)),
        }
    }

    /// Task `i`'s id.
    pub fn id(&self, i: usize) -> Result<Option<String>, String> {
        match &self.entries {
            Entries::Packed(entries) => Ok(entries.get(i).map(|e| e.id.to_string())),
            Entries::Logged(logged, _) => logged.id(i).map_err(|err| ids_unread(&err)),
        }
    }

    /// The tasks, when they are held (a suite's `tasks` array, a corpus).
    pub fn held_tasks(&self) -> Option<&[SuiteTask]> {
        match &self.store {
            Store::Held(tasks) => Some(tasks),
            Store::Streamed(_) | Store::Inline(_) | Store::Made(_) => None,
        }
    }

    /// The tasks file they are read from, if they are streamed.
    pub fn tasks_file(&self) -> Option<&Path> {
        match &self.store {
            Store::Held(_) | Store::Inline(_) | Store::Made(_) => None,
            Store::Streamed(file) => Some(file.path()),
        }
    }

    /// Task `i`, borrowed when held, read from its line when streamed or from its text when
    /// inline.
    pub fn get(&self, i: usize) -> Result<Cow<'_, SuiteTask>, String> {
        match &self.store {
            Store::Held(tasks) => tasks
                .get(i)
                .map(Cow::Borrowed)
                .ok_or_else(|| format!("no task {i} in the suite")),
            Store::Inline(tasks) => tasks.task(i).map(Cow::Owned),
            Store::Made(maker) => {
                let id = self
                    .id(i)?
                    .ok_or_else(|| format!("no task {i} in the suite"))?;
                maker.task(i, &id).map(Cow::Owned)
            }
            Store::Streamed(file) => {
                let task = file.task(i)?;
                match self.id(i)? {
                    Some(id) if id == task.id.as_str() => Ok(Cow::Owned(task)),
                    _ => Err(format!(
                        "`{}` changed since eval checked it: task {} is now {:?}",
                        file.path().display(),
                        i + 1,
                        task.id.as_str()
                    )),
                }
            }
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
        Selected {
            tasks: self,
            positions,
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
}

impl<'s> Selected<'s> {
    /// How many tasks are selected.
    pub fn len(&self) -> usize {
        self.positions.as_ref().map_or(self.tasks.len(), Vec::len)
    }

    /// Whether none is.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The selected tasks' ids and model kinds, in order, held (see [`SuiteTasks::entries`]).
    pub fn entries(&self) -> Box<dyn Iterator<Item = TaskEntry<'s>> + '_> {
        let entries = self.tasks.entries();
        match &self.positions {
            None => Box::new(entries.iter()),
            Some(positions) => Box::new(positions.iter().filter_map(|&i| entries.get(i))),
        }
    }

    fn position(&self, i: usize) -> Option<usize> {
        match &self.positions {
            None => (i < self.tasks.len()).then_some(i),
            Some(positions) => positions.get(i).copied(),
        }
    }

    /// Selected task `i`'s id and model kind (held, see [`SuiteTasks::entries`]).
    pub fn entry(&self, i: usize) -> Option<TaskEntry<'s>> {
        self.position(i).and_then(|p| self.tasks.entries().get(p))
    }

    /// Calls `each` with every selected task's entry, in order, until it breaks; a tasks
    /// file's ids are read back, not held.
    pub fn scan(
        &self,
        mut each: impl FnMut(TaskEntry<'_>) -> ControlFlow<()>,
    ) -> Result<(), String> {
        let Some(positions) = &self.positions else {
            return self.tasks.scan(0, |_, entry| each(entry));
        };
        let mut wanted = positions.iter().copied().peekable();
        let Some(&first) = wanted.peek() else {
            return Ok(());
        };
        // Positions are in suite order: one pass from the first picks them out.
        self.tasks.scan(first, |i, entry| {
            while wanted.next_if(|&p| p < i).is_some() {}
            if wanted.next_if_eq(&i).is_some() {
                each(entry)?;
            }
            match wanted.peek() {
                Some(_) => ControlFlow::Continue(()),
                None => ControlFlow::Break(()),
            }
        })
    }
}

/// Why a tasks file's ids could not be read back from where its check wrote them.
fn ids_unread(err: &std::io::Error) -> String {
    format!("failed to read back the task ids set aside while checking the suite: {err}")
}

impl TaskSource for Selected<'_> {
    fn task(&self, i: usize) -> Result<Cow<'_, SuiteTask>, String> {
        let position = self
            .position(i)
            .ok_or_else(|| format!("no selected task {i}"))?;
        self.tasks.get(position)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn packed_entries_read_back_as_pushed_one_by_one_and_in_order() {
        let mut entries = TaskEntries::default();
        let mut pushed = Vec::new();
        for i in 0..500 {
            let id = "x".repeat(i % 200 + 1) + &i.to_string();
            let id = id[id.len().saturating_sub(200)..].to_owned();
            let (kind, name) = match i / 100 {
                0 | 3 => ("actions", None),
                1 => ("chat", Some("gpt")),
                _ => ("chat", Some("claude")),
            };
            entries.push(&id, kind, name);
            pushed.push((id, kind, name));
        }
        assert_eq!(entries.len(), 500);
        assert!(entries.get(500).is_none());
        let read: Vec<(String, &str, Option<&str>)> = entries
            .iter()
            .map(|e| (e.id.to_string(), e.model_kind, e.model_name))
            .collect();
        let expected: Vec<(String, &str, Option<&str>)> = pushed
            .iter()
            .map(|(id, kind, name)| (id.clone(), *kind, *name))
            .collect();
        assert_eq!(read, expected);
        for (i, (id, kind, name)) in pushed.iter().enumerate() {
            let entry = entries.get(i).unwrap();
            assert_eq!(
                (entry.id.as_str(), entry.model_kind, entry.model_name),
                (id.as_str(), *kind, *name)
            );
        }
        assert_eq!(
            entries.get(150).unwrap().row_key(),
            format!("{}[gpt]", pushed[150].0)
        );
        assert_eq!(entries.get(350).unwrap().model_label(), "actions");
    }
}

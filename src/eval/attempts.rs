//! The runs a batch makes, by position: a task of the suite and which of its repeats, listed or
//! made on demand for every task once per repeat.

/// One run to make: a task of the suite, and which of its repeats (1-based).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Attempt {
    /// The task's index in the suite's task list.
    pub task: usize,
    /// The repeat, from 1.
    pub repeat: u32,
}

/// The runs a batch makes, by position: a list, or every task once per repeat, which takes no
/// memory however many tasks there are.
pub trait Attempts: Sync {
    /// How many runs.
    fn len(&self) -> usize;
    /// Run `i`.
    fn get(&self, i: usize) -> Option<Attempt>;
    /// Whether there are none.
    fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

impl Attempts for [Attempt] {
    fn len(&self) -> usize {
        <[Attempt]>::len(self)
    }
    fn get(&self, i: usize) -> Option<Attempt> {
        <[Attempt]>::get(self, i).copied()
    }
}

impl Attempts for Vec<Attempt> {
    fn len(&self) -> usize {
        self.as_slice().len()
    }
    fn get(&self, i: usize) -> Option<Attempt> {
        self.as_slice().get(i).copied()
    }
}

/// Tasks `0..tasks`, each once per repeat from `first` to `last`: every task's first repeat,
/// then every task's second, so an early stop leaves whole epochs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Epochs {
    /// How many tasks.
    pub tasks: usize,
    /// The first repeat, from 1.
    pub first: u32,
    /// The last repeat.
    pub last: u32,
}

impl Attempts for Epochs {
    fn len(&self) -> usize {
        self.tasks * (self.last + 1).saturating_sub(self.first) as usize
    }
    fn get(&self, i: usize) -> Option<Attempt> {
        (i < Attempts::len(self)).then(|| Attempt {
            task: i % self.tasks,
            repeat: self.first + (i / self.tasks) as u32,
        })
    }
}

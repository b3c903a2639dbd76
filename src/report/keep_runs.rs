//! Reading only some runs of a trace file: a run store's view names the runs it stands for, and
//! a trace file (`--trace-layout single`, or a task's trace that a retry or a rerun appended to)
//! may hold others too. [`KeepRuns`] is a reader that passes on the lines of the named runs as
//! the file is read, so every reader of events (`report`, `show`, `export`) reads the view's
//! runs without a copy of the file.

use std::collections::BTreeSet;
use std::io::{self, BufRead, Read};

/// A reader of the lines of `inner` that belong to the runs `keep`.
///
/// A line that names another run goes, and so does a last line a crash cut short (no newline):
/// a named run ended, and its row was written, before it, so it is a line of a run the view does
/// not name. Anything else (a line without a readable `run_id`) is passed on for the trace
/// reader to judge.
pub struct KeepRuns<'k, R> {
    inner: R,
    keep: &'k BTreeSet<String>,
    line: Vec<u8>,
    /// How much of `line` was handed out.
    at: usize,
    done: bool,
}

impl<'k, R: BufRead> KeepRuns<'k, R> {
    /// Reads the lines of `inner` that belong to the runs `keep`.
    pub fn new(inner: R, keep: &'k BTreeSet<String>) -> Self {
        KeepRuns {
            inner,
            keep,
            line: Vec::new(),
            at: 0,
            done: false,
        }
    }

    /// Reads lines until one to pass on is in `line` (or the input ends).
    fn next_line(&mut self) -> io::Result<()> {
        #[derive(serde::Deserialize)]
        struct Head<'a> {
            #[serde(borrow)]
            run_id: std::borrow::Cow<'a, str>,
        }
        loop {
            self.line.clear();
            self.at = 0;
            if self.inner.read_until(b'\n', &mut self.line)? == 0 {
                self.done = true;
                return Ok(());
            }
            let torn = !self.line.ends_with(b"\n");
            let other = serde_json::from_slice::<Head>(&self.line)
                .is_ok_and(|head| !self.keep.contains(head.run_id.as_ref()));
            if !other && !torn {
                return Ok(());
            }
        }
    }
}

impl<R: BufRead> Read for KeepRuns<'_, R> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        while self.at == self.line.len() {
            if self.done {
                return Ok(0);
            }
            self.next_line()?;
        }
        let n = buf.len().min(self.line.len() - self.at);
        buf[..n].copy_from_slice(&self.line[self.at..self.at + n]);
        self.at += n;
        Ok(n)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn passes_on_the_named_runs_and_drops_a_torn_last_line() {
        let trace = concat!(
            "{\"run_id\":\"a\",\"step\":0}\n",
            "{\"run_id\":\"b\",\"step\":0}\n",
            "not json\n",
            "{\"run_id\":\"a\",\"step\":1}\n",
            "{\"run_id\":\"b\",\"st"
        );
        let keep: BTreeSet<String> = ["a".to_owned()].into();
        let mut kept = String::new();
        KeepRuns::new(trace.as_bytes(), &keep)
            .read_to_string(&mut kept)
            .unwrap();
        assert_eq!(
            kept,
            "{\"run_id\":\"a\",\"step\":0}\nnot json\n{\"run_id\":\"a\",\"step\":1}\n"
        );
    }
}

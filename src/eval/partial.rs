//! `DIR/results.partial.jsonl`: the rows of an evaluation as its tasks finish, so a crashed or
//! killed evaluation can be resumed (`eval --resume`) and `results.json` can be assembled from
//! disk instead of memory. The first line is a header naming the suite; each further line is one
//! task's result row, appended with one `write` on a file opened for appending, so a crash leaves
//! whole lines and at most one torn last line.

use std::fs::File;
use std::io::{self, BufRead, BufReader, Read, Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};
use std::sync::{Mutex, PoisonError};

use serde::{Deserialize, Serialize, Serializer};
use serde_json::value::RawValue;

use super::results::{Shard, SuiteInfo, TaskResult};
use crate::trace::Capture;

/// The partial file's name in the output folder.
pub const PARTIAL_NAME: &str = "results.partial.jsonl";

/// The format name in the partial file's header.
pub const PARTIAL_FORMAT: &str = "looptrace.results-partial/1";

/// The first line of a partial file: what the rows belong to.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct PartialHeader {
    /// `looptrace.results-partial/1`.
    pub format: String,
    /// The suite the rows come from.
    pub suite: SuiteInfo,
    /// The id of the evaluation that started the file (resumed evaluations keep it).
    pub eval_id: String,
    /// The trace capture the rows were written with.
    pub capture: Capture,
    /// `--repeat N`.
    pub repeats: u32,
    /// `per-task` or `single`.
    pub trace_layout: String,
    /// The results file of `--rerun-failed`, when the rows are a rerun's: `--resume` cannot
    /// continue those (the rerun again does).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rerun_failed: Option<String>,
    /// `--shard K/N`, when the evaluation ran one shard.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub shard: Option<Shard>,
    /// The `--only` patterns.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub only: Vec<String>,
    /// The `--skip` patterns.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub skip: Vec<String>,
}

/// A partial file read back.
#[derive(Debug)]
pub struct PartialRead {
    /// The header.
    pub header: PartialHeader,
    /// The whole rows, in the order they were written.
    pub rows: Vec<TaskResult>,
    /// The number of a torn last line (a crash while it was written), which is ignored.
    pub torn_line: Option<usize>,
}

/// Reads `path`; `Ok(None)` when there is no such file. A torn last line is reported, not an
/// error; any other line that is not a row is.
pub fn read_partial(path: &Path) -> Result<Option<PartialRead>, String> {
    let file = match File::open(path) {
        Ok(file) => file,
        Err(err) if err.kind() == io::ErrorKind::NotFound => return Ok(None),
        Err(err) => return Err(format!("failed to read `{}`: {err}", path.display())),
    };
    let mut reader = BufReader::new(file);
    let mut header = None;
    let mut rows = Vec::new();
    let mut torn_line = None;
    let mut line = Vec::new();
    let mut number = 0;
    loop {
        line.clear();
        let read = reader
            .read_until(b'\n', &mut line)
            .map_err(|err| format!("failed to read `{}`: {err}", path.display()))?;
        if read == 0 {
            break;
        }
        number += 1;
        if !line.ends_with(b"\n") {
            // Only the last line can lack its newline: the write of a crashed process.
            torn_line = Some(number);
            break;
        }
        let bad = |err: serde_json::Error| {
            format!(
                "line {number} of `{}` is not a result row: {err}",
                path.display()
            )
        };
        if header.is_none() {
            let parsed: PartialHeader = serde_json::from_slice(&line).map_err(|err| {
                format!(
                    "line 1 of `{}` is not a partial results header: {err}",
                    path.display()
                )
            })?;
            if parsed.format != PARTIAL_FORMAT {
                return Err(format!(
                    "`{}` has format {:?}; this looptrace reads {PARTIAL_FORMAT:?}",
                    path.display(),
                    parsed.format
                ));
            }
            header = Some(parsed);
        } else {
            rows.push(serde_json::from_slice(&line).map_err(bad)?);
        }
    }
    let Some(header) = header else {
        return Err(format!(
            "`{}` has no header line: not a partial results file",
            path.display()
        ));
    };
    Ok(Some(PartialRead {
        header,
        rows,
        torn_line,
    }))
}

/// The partial file being appended to, shared by the runner's workers.
pub struct PartialLog {
    path: PathBuf,
    /// The file, and its length (where the next row starts).
    file: Mutex<(File, u64)>,
}

impl PartialLog {
    /// Writes a new partial file holding `header` and `kept` (atomically: the old file stays until
    /// the new one is complete), then opens it for appending. Returns the offset of each kept row.
    pub fn start<'r>(
        path: &Path,
        header: &PartialHeader,
        kept: impl IntoIterator<Item = &'r TaskResult>,
    ) -> io::Result<(PartialLog, Vec<u64>)> {
        let mut replacement = crate::output::Replacement::begin(path)?;
        let mut out = io::BufWriter::new(replacement.file());
        let mut offset = 0;
        let mut line = serde_json::to_vec(header)?;
        line.push(b'\n');
        out.write_all(&line)?;
        offset += line.len() as u64;
        let mut offsets = Vec::new();
        for row in kept {
            line.clear();
            serde_json::to_writer(&mut line, row)?;
            line.push(b'\n');
            out.write_all(&line)?;
            offsets.push(offset);
            offset += line.len() as u64;
        }
        out.flush()?;
        drop(out);
        replacement.commit_unsynced()?;
        let file = crate::output::open_append(path)?;
        Ok((
            PartialLog {
                path: path.to_path_buf(),
                file: Mutex::new((file, offset)),
            },
            offsets,
        ))
    }

    /// Appends `row` as one line in one `write`; returns where it starts.
    pub fn append(&self, row: &TaskResult) -> io::Result<u64> {
        let mut line = serde_json::to_vec(row)?;
        line.push(b'\n');
        let mut guard = self.file.lock().unwrap_or_else(PoisonError::into_inner);
        let (file, end) = &mut *guard;
        if let Some(cut) = crate::fault::row_bytes(line.len()) {
            let _ = file.write_all(&line[..cut]);
            crate::fault::abort();
        }
        let offset = *end;
        let written = file.write(&line)?;
        if written != line.len() {
            file.write_all(&line[written..])?;
        }
        *end += line.len() as u64;
        Ok(offset)
    }

    /// The file's path.
    pub fn path(&self) -> &Path {
        &self.path
    }
}

/// The rows of an evaluation as offsets into its partial file, serialized by reading each one
/// back: `results.json` is written without holding the rows in memory.
pub struct RowsOnDisk<'a> {
    /// The partial file.
    pub path: &'a Path,
    /// Where each row starts, in the order the rows are written out.
    pub offsets: &'a [u64],
}

impl RowsOnDisk<'_> {
    /// Reads the rows back one at a time, in order, calling `each` with each.
    pub fn for_each(
        &self,
        mut each: impl FnMut(TaskResult) -> Result<(), String>,
    ) -> Result<(), String> {
        self.for_each_line(|offset, line| {
            let row: TaskResult = serde_json::from_slice(line)
                .map_err(|err| self.changed(offset, &err.to_string()))?;
            each(row)
        })
    }

    /// Calls `each` with every row's offset and line (without its newline), in order.
    fn for_each_line(
        &self,
        mut each: impl FnMut(u64, &[u8]) -> Result<(), String>,
    ) -> Result<(), String> {
        let failed = |err: io::Error| format!("failed to read `{}`: {err}", self.path.display());
        // Rows finish nearly in order, so most jumps land in the buffer: a relative seek keeps
        // it, where an absolute one would throw it away and read again.
        let mut reader = BufReader::with_capacity(1 << 16, File::open(self.path).map_err(failed)?);
        let mut line = Vec::new();
        let mut position = 0u64;
        for &offset in self.offsets {
            if offset != position {
                let jump = i64::try_from(offset)
                    .ok()
                    .zip(i64::try_from(position).ok())
                    .map(|(to, from)| to - from);
                match jump {
                    Some(jump) => reader.seek_relative(jump).map_err(failed)?,
                    None => _ = reader.seek(SeekFrom::Start(offset)).map_err(failed)?,
                }
            }
            line.clear();
            let read = reader
                .by_ref()
                .read_until(b'\n', &mut line)
                .map_err(failed)?;
            position = offset + read as u64;
            if line.pop() != Some(b'\n') {
                return Err(self.changed(offset, "the row's line ends early"));
            }
            each(offset, &line)?;
        }
        Ok(())
    }

    fn changed(&self, offset: u64, err: &str) -> String {
        format!(
            "`{}` changed while it was read (byte {offset}): {err}",
            self.path.display()
        )
    }
}

/// The rows as they are in the partial file (compact JSON, one per line), each checked to be
/// one JSON value: `results.json` lays rows out the same way, so they are copied, not parsed
/// into rows and printed again.
impl Serialize for RowsOnDisk<'_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        use serde::ser::{Error, SerializeSeq};
        let mut seq = serializer.serialize_seq(Some(self.offsets.len()))?;
        let mut failed = None;
        let read = self.for_each_line(|offset, line| {
            let row: &RawValue = serde_json::from_slice(line)
                .map_err(|err| self.changed(offset, &err.to_string()))?;
            seq.serialize_element(row).map_err(|err| {
                let text = err.to_string();
                failed = Some(err);
                text
            })
        });
        if let Some(err) = failed {
            return Err(err);
        }
        read.map_err(S::Error::custom)?;
        seq.end()
    }
}

#[cfg(test)]
mod tests {
    use super::RowsOnDisk;

    /// Rows are read back in the order asked, whether the next one is just behind, just ahead,
    /// or farther than the read buffer in either direction.
    #[test]
    fn rows_are_read_back_in_any_order() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("rows.jsonl");
        let lines: Vec<String> = (0..40)
            .map(|i| {
                let width = if i % 7 == 3 { 70_000 } else { 20 + i };
                format!("\"{i:03}{}\"", "x".repeat(width))
            })
            .collect();
        let mut offsets = Vec::new();
        let mut text = String::from("{\"header\":true}\n");
        for line in &lines {
            offsets.push(text.len() as u64);
            text.push_str(line);
            text.push('\n');
        }
        std::fs::write(&path, &text).unwrap();
        let order: Vec<usize> = [39, 0, 2, 1, 3, 38, 10, 9, 24, 17, 5, 31, 31, 4]
            .into_iter()
            .chain(6..9)
            .collect();
        let wanted: Vec<u64> = order.iter().map(|&i| offsets[i]).collect();
        let rows = RowsOnDisk {
            path: &path,
            offsets: &wanted,
        };
        let mut seen = Vec::new();
        rows.for_each_line(|offset, line| {
            seen.push((offset, String::from_utf8(line.to_vec()).unwrap()));
            Ok(())
        })
        .unwrap();
        let expected: Vec<(u64, String)> = order
            .iter()
            .map(|&i| (offsets[i], lines[i].clone()))
            .collect();
        assert_eq!(seen, expected);
    }
}

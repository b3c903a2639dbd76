//! A plain evaluation's rows put in output order without being held: each row's line, as its
//! run's row log (`rows.jsonl`) got it, goes to [`InOrder`] by its output position as the row is
//! written (rows finish nearly in order, so few wait), and the rows come back in order in a
//! nameless scratch file that `results.json` and the JUnit file are then written from, one line
//! at a time. Nothing is read back from the row log, which stays the run's own.

use std::fs::File;
use std::io::{self, BufRead, BufReader, BufWriter, Seek, SeekFrom};

use serde::{Serialize, Serializer};
use serde_json::value::RawValue;

use super::results::TaskResult;
use crate::replay::InOrder;
use crate::scratch_file::unnamed_file;

/// An evaluation's rows in output order in a scratch file, one line each, read as often as
/// needed (the JUnit file goes through them twice).
pub struct RowsOnDisk(File);

impl RowsOnDisk {
    /// The rows `in_order` was given, each as its line in the row log, in output order.
    pub fn new(in_order: InOrder) -> io::Result<RowsOnDisk> {
        let mut writer = BufWriter::new(unnamed_file()?);
        in_order.finish(&mut writer)?;
        let file = writer
            .into_inner()
            .map_err(io::IntoInnerError::into_error)?;
        Ok(RowsOnDisk(file))
    }

    /// Reads the rows back one at a time, in order, calling `each` with each.
    pub fn for_each(
        &self,
        mut each: impl FnMut(TaskResult) -> Result<(), String>,
    ) -> Result<(), String> {
        self.for_each_line(|line| each(serde_json::from_slice(line).map_err(|e| e.to_string())?))
    }

    /// Calls `each` with every row's line (without its newline), in order.
    fn for_each_line(
        &self,
        mut each: impl FnMut(&[u8]) -> Result<(), String>,
    ) -> Result<(), String> {
        let failed = |err: io::Error| format!("failed to read the rows set aside: {err}");
        let mut file = &self.0;
        file.seek(SeekFrom::Start(0)).map_err(failed)?;
        let mut reader = BufReader::with_capacity(1 << 16, file);
        let mut line = Vec::new();
        while reader.read_until(b'\n', &mut line).map_err(failed)? > 0 {
            line.pop();
            each(&line)?;
            line.clear();
        }
        Ok(())
    }
}

/// The rows as they are in the row log (compact JSON, one per line): `results.json` lays rows
/// out the same way, so they are copied, not parsed into rows and printed again.
impl Serialize for RowsOnDisk {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        use serde::ser::{Error, SerializeSeq};
        let mut seq = serializer.serialize_seq(None)?;
        // The writer's error reaches `write_results` as its message, whichever side failed.
        self.for_each_line(|line| {
            let row: &RawValue = serde_json::from_slice(line).map_err(|e| e.to_string())?;
            seq.serialize_element(row).map_err(|err| err.to_string())
        })
        .map_err(S::Error::custom)?;
        seq.end()
    }
}

#[cfg(test)]
mod tests {
    use super::{InOrder, RowsOnDisk};

    /// Rows given in any order come back in output order, as often as they are read, skipping
    /// positions never given.
    #[test]
    fn rows_come_back_in_output_order() {
        let mut in_order = InOrder::default();
        for position in [3, 0, 2, 7, 1, 5] {
            let line = format!("{{\"at\":{position}}}\n");
            in_order.push(position, line.as_bytes()).unwrap();
        }
        let rows = RowsOnDisk::new(in_order).unwrap();
        for _ in 0..2 {
            let mut seen = Vec::new();
            rows.for_each_line(|line| {
                seen.push(String::from_utf8(line.to_vec()).unwrap());
                Ok(())
            })
            .unwrap();
            let expected: Vec<String> = [0, 1, 2, 3, 5, 7]
                .iter()
                .map(|at| format!("{{\"at\":{at}}}"))
                .collect();
            assert_eq!(seen, expected);
        }
    }
}

//! Temporary files that no other process can open and that leave nothing behind, where a
//! bounded-memory reader or writer sets bytes aside (replay's report put back in order, a
//! dataset's ids and their hashes, an evaluation's pass counts), and the window their small
//! records are read back through.

use std::fs::{File, OpenOptions};
use std::io;
use std::os::unix::fs::{FileExt, OpenOptionsExt};

/// Bytes read at once by [`ReadAhead`].
const READ_AHEAD: usize = 1 << 16;

/// Bytes of a file read ahead of where a reader is: one read serves a run of small records, not
/// one each.
#[derive(Clone, Debug, Default)]
pub struct ReadAhead {
    /// Where `bytes` start in the file.
    at: u64,
    bytes: Vec<u8>,
}

impl ReadAhead {
    /// The bytes of `file` (`len` bytes long) from `offset` on: at least `need` of them, or all
    /// up to its end. The file is read again only when what is held falls short.
    pub fn at(&mut self, file: &File, len: u64, offset: u64, need: usize) -> io::Result<&[u8]> {
        let end = self.at + self.bytes.len() as u64;
        let held = (self.at..=end).contains(&offset) && (end == len || end - offset >= need as u64);
        if !held {
            let want = (need.max(READ_AHEAD) as u64).min(len.saturating_sub(offset));
            self.bytes.resize(want as usize, 0);
            file.read_exact_at(&mut self.bytes, offset)?;
            self.at = offset;
        }
        Ok(&self.bytes[(offset - self.at) as usize..])
    }
}

/// A new temporary file, already nameless: `O_TMPFILE` where the system has it, else a new file
/// (mode 0600) removed right after it is made.
pub fn unnamed_file() -> io::Result<File> {
    let dir = std::env::temp_dir();
    #[cfg(target_os = "linux")]
    if let Ok(file) = OpenOptions::new()
        .read(true)
        .write(true)
        .mode(0o600)
        .custom_flags(libc::O_TMPFILE)
        .open(&dir)
    {
        return Ok(file);
    }
    let mut last = None;
    for attempt in 0..100u32 {
        let path = dir.join(format!(
            ".looptrace-scratch-{}-{attempt}",
            std::process::id()
        ));
        match OpenOptions::new()
            .read(true)
            .write(true)
            .create_new(true)
            .mode(0o600)
            .open(&path)
        {
            Ok(file) => {
                std::fs::remove_file(&path)?;
                return Ok(file);
            }
            Err(err) if err.kind() == io::ErrorKind::AlreadyExists => last = Some(err),
            Err(err) => return Err(err),
        }
    }
    Err(last.unwrap_or_else(|| io::Error::other("no temporary file could be made")))
}

#[cfg(test)]
mod tests {
    use std::io::{Read, Seek, SeekFrom, Write};

    use super::{READ_AHEAD, ReadAhead, unnamed_file};

    #[test]
    fn an_unnamed_file_holds_what_is_written_and_leaves_no_name() {
        let named = || -> Vec<_> {
            std::fs::read_dir(std::env::temp_dir())
                .unwrap()
                .flatten()
                .map(|entry| entry.file_name())
                .filter(|name| name.to_string_lossy().starts_with(".looptrace-scratch-"))
                .collect()
        };
        let before = named();
        let mut file = unnamed_file().unwrap();
        file.write_all(b"set aside").unwrap();
        file.seek(SeekFrom::Start(0)).unwrap();
        let mut text = String::new();
        file.read_to_string(&mut text).unwrap();
        assert_eq!(text, "set aside");
        assert_eq!(named(), before);
    }

    #[test]
    fn read_ahead_gives_the_bytes_from_any_offset_reading_only_when_short() {
        let mut file = unnamed_file().unwrap();
        let bytes: Vec<u8> = (0..3 * READ_AHEAD).map(|i| (i % 251) as u8).collect();
        file.write_all(&bytes).unwrap();
        let len = bytes.len() as u64;
        let mut ahead = ReadAhead::default();
        for (offset, need) in [
            (0, 10),
            (5, 300),
            (READ_AHEAD - 3, 200),
            (2 * READ_AHEAD, 9),
            (1, 2),
        ] {
            let got = ahead.at(&file, len, offset as u64, need).unwrap();
            assert!(got.len() >= need);
            assert_eq!(got, &bytes[offset..offset + got.len()]);
        }
        // Near the end, what there is.
        let got = ahead.at(&file, len, len - 4, 200).unwrap();
        assert_eq!(got, &bytes[bytes.len() - 4..]);
    }
}

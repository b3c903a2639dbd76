//! Temporary files that no other process can open and that leave nothing behind, where a
//! bounded-memory reader or writer sets bytes aside (replay's report put back in order, a
//! dataset's ids and their hashes).

use std::fs::{File, OpenOptions};
use std::io;
use std::os::unix::fs::OpenOptionsExt;

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

    use super::unnamed_file;

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
}

//! Opening output files without following symbolic links. A link placed where looptrace writes
//! (an old output folder, a shared CI workspace) would otherwise make it truncate or append to
//! whatever the link points at; every file looptrace creates, truncates or appends to is opened
//! here, with `O_NOFOLLOW` on the last component, and files replaced by renaming are written to a
//! temporary file that must not exist yet.

use std::fs::{File, OpenOptions};
use std::io;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

/// The error for an output path that is a symbolic link.
fn link_error() -> io::Error {
    io::Error::other("it is a symbolic link, and looptrace never writes through one")
}

/// Opens with `options`, never through a symbolic link at `path`.
fn open_nofollow(options: &mut OpenOptions, path: &Path) -> io::Result<File> {
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt;
        options.custom_flags(libc::O_NOFOLLOW);
    }
    match options.open(path) {
        Ok(file) => Ok(file),
        // O_NOFOLLOW reports a link as ELOOP; say what it means.
        Err(_) if is_symlink(path) => Err(link_error()),
        Err(err) => Err(err),
    }
}

/// What a file of `kind` is when it is neither a regular file, a folder nor a symbolic link: one
/// that opening for reading or writing may wait on for ever (a named pipe) or that is no file to
/// keep (a socket, a device).
#[cfg(unix)]
pub fn special_kind(kind: std::fs::FileType) -> Option<&'static str> {
    use std::os::unix::fs::FileTypeExt;
    if kind.is_fifo() {
        Some("a named pipe (FIFO)")
    } else if kind.is_socket() {
        Some("a socket")
    } else if kind.is_block_device() || kind.is_char_device() {
        Some("a device")
    } else {
        None
    }
}

/// Whether `path` itself is a symbolic link (dangling or not).
pub fn is_symlink(path: &Path) -> bool {
    std::fs::symlink_metadata(path).is_ok_and(|m| m.file_type().is_symlink())
}

/// Fails if `path` is a symbolic link: for outputs about to be replaced.
pub fn refuse_symlink(path: &Path) -> io::Result<()> {
    if is_symlink(path) {
        return Err(link_error());
    }
    Ok(())
}

/// Opens `path` for appending (and reading), creating it if needed; never truncates.
pub fn open_append(path: &Path) -> io::Result<File> {
    open_nofollow(
        OpenOptions::new().read(true).append(true).create(true),
        path,
    )
}

/// Creates `path` new (`O_EXCL`) for appending and reading: never a file, link or pipe that was
/// there already. Everything below a run store's `runs/` is created this way.
pub fn create_new_append(path: &Path) -> io::Result<File> {
    open_nofollow(
        OpenOptions::new().read(true).append(true).create_new(true),
        path,
    )
}

/// Creates `path` empty, or truncates the regular file already there; but a file with other hard
/// links (a folder copied with `cp -l`) is replaced by a new one, so the other names keep their
/// content. A new path costs one `open`, as before.
pub fn create_fresh(path: &Path) -> io::Result<File> {
    match open_nofollow(OpenOptions::new().write(true).create_new(true), path) {
        Err(err) if err.kind() == io::ErrorKind::AlreadyExists => {}
        created => return created,
    }
    #[cfg(unix)]
    {
        use std::os::unix::fs::MetadataExt;
        if std::fs::symlink_metadata(path).is_ok_and(|m| m.is_file() && m.nlink() > 1) {
            std::fs::remove_file(path)?;
            return open_nofollow(OpenOptions::new().write(true).create_new(true), path);
        }
    }
    open_nofollow(
        OpenOptions::new().write(true).create(true).truncate(true),
        path,
    )
}

/// Creates a new temporary file beside `path` (same folder, so it can be renamed over `path`),
/// named `.NAME.tmp-PID-N`; an existing file or link of that name is never opened.
pub fn create_temp_beside(path: &Path) -> io::Result<(File, PathBuf)> {
    static COUNTER: AtomicU64 = AtomicU64::new(0);
    let folder = match path.parent() {
        Some(parent) if !parent.as_os_str().is_empty() => parent,
        _ => Path::new("."),
    };
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_else(|| "output".to_owned());
    loop {
        let n = COUNTER.fetch_add(1, Ordering::Relaxed);
        let temp = folder.join(format!(".{name}.tmp-{}-{n}", std::process::id()));
        match open_nofollow(OpenOptions::new().write(true).create_new(true), &temp) {
            Ok(file) => return Ok((file, temp)),
            Err(err) if err.kind() == io::ErrorKind::AlreadyExists || is_symlink(&temp) => {
                if n > 1_000 {
                    return Err(err);
                }
            }
            Err(err) => return Err(err),
        }
    }
}

/// An output being replaced as a whole. A regular file (or a path with nothing yet) is written to a
/// new temporary file and renamed over the target only on [`Replacement::commit`], so a failure
/// leaves the old content; a device or FIFO already there (`-o /dev/null`, a named pipe) is written
/// in place, because renaming over it would replace the device node itself.
pub struct Replacement {
    file: File,
    path: PathBuf,
    temp: Option<PathBuf>,
}

impl Replacement {
    /// Starts replacing `path`; a symbolic link there is refused.
    pub fn begin(path: &Path) -> io::Result<Self> {
        refuse_symlink(path)?;
        let special = std::fs::metadata(path).is_ok_and(|m| !m.is_file() && !m.is_dir());
        if special {
            let file = open_nofollow(OpenOptions::new().write(true), path)?;
            return Ok(Self {
                file,
                path: path.to_path_buf(),
                temp: None,
            });
        }
        let (file, temp) = create_temp_beside(path)?;
        Ok(Self {
            file,
            path: path.to_path_buf(),
            temp: Some(temp),
        })
    }

    /// The file to write the new content to.
    pub fn file(&mut self) -> &mut File {
        &mut self.file
    }

    /// The file to write content that [`Replacement::commit`] will sync, starting its writeback
    /// as it goes (see [`EarlyWriteback`]).
    pub fn writer(&mut self) -> EarlyWriteback<'_> {
        EarlyWriteback::new(&mut self.file)
    }

    /// Makes the new content the target's: synced, renamed over it, the folder synced.
    pub fn commit(self) -> io::Result<()> {
        self.finish(true)
    }

    /// Renames the new content over the target without waiting for the disk: for a file whose
    /// later appends are never synced either (an evaluation's partial file), where syncing its
    /// start would buy nothing and, with many files still being written back, costs up to a
    /// tenth of a second. A crashed process still leaves the old content or the new, whole.
    pub fn commit_unsynced(self) -> io::Result<()> {
        self.finish(false)
    }

    fn finish(mut self, sync: bool) -> io::Result<()> {
        let Some(temp) = self.temp.take() else {
            return Ok(());
        };
        let synced = if sync { self.file.sync_all() } else { Ok(()) };
        let result = synced.and_then(|()| std::fs::rename(&temp, &self.path));
        if result.is_err() {
            let _ = std::fs::remove_file(&temp);
            return result;
        }
        if !sync {
            return Ok(());
        }
        let folder = match self.path.parent() {
            Some(parent) if !parent.as_os_str().is_empty() => parent,
            _ => Path::new("."),
        };
        if let Ok(folder) = File::open(folder) {
            let _ = folder.sync_all();
        }
        Ok(())
    }
}

impl Drop for Replacement {
    /// An uncommitted replacement leaves no temporary file behind.
    fn drop(&mut self) {
        if let Some(temp) = self.temp.take() {
            let _ = std::fs::remove_file(temp);
        }
    }
}

/// A file being written that is to be synced when complete: every megabyte written, the kernel
/// is asked to start writing it to disk, so the final sync waits only for the last one instead
/// of all of them.
pub struct EarlyWriteback<'f> {
    file: &'f mut File,
    written: u64,
    started: u64,
}

/// How much is written between two requests to start writing back.
const WRITEBACK_CHUNK: u64 = 1 << 20;

impl<'f> EarlyWriteback<'f> {
    /// Wraps `file`, written from its start.
    pub fn new(file: &'f mut File) -> Self {
        Self {
            file,
            written: 0,
            started: 0,
        }
    }
}

impl io::Write for EarlyWriteback<'_> {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        let n = self.file.write(buf)?;
        self.written += n as u64;
        if self.written - self.started >= WRITEBACK_CHUNK {
            #[cfg(target_os = "linux")]
            {
                use std::os::fd::AsRawFd;
                // SAFETY: a plain system call on a file descriptor this value borrows; it only
                // starts writeback and its failure changes nothing (the sync at the end still
                // writes everything).
                unsafe {
                    libc::sync_file_range(
                        self.file.as_raw_fd(),
                        self.started as libc::off64_t,
                        (self.written - self.started) as libc::off64_t,
                        libc::SYNC_FILE_RANGE_WRITE,
                    );
                }
            }
            self.started = self.written;
        }
        Ok(n)
    }

    fn flush(&mut self) -> io::Result<()> {
        self.file.flush()
    }
}

/// The device and inode of an existing file (following symlinks), which identify it whatever
/// path names it.
pub fn file_identity(path: &Path) -> Option<(u64, u64)> {
    use std::os::unix::fs::MetadataExt;
    std::fs::metadata(path).ok().map(|m| (m.dev(), m.ino()))
}

/// Whether two paths name the same file: the same path after resolving symlinks and `..`, or the
/// same device and inode. A path that does not exist yet is resolved through its nearest existing
/// folder, so `o/results.json` and `./o/../o/results.json` are one file before `o` exists.
pub fn same_file(a: &Path, b: &Path) -> bool {
    use std::os::unix::fs::MetadataExt;
    if let (Ok(ma), Ok(mb)) = (std::fs::metadata(a), std::fs::metadata(b)) {
        return ma.dev() == mb.dev() && ma.ino() == mb.ino();
    }
    match (resolve(a), resolve(b)) {
        (Some(x), Some(y)) => x == y,
        _ => false,
    }
}

/// `path` made absolute with symlinks resolved as far as it exists; the rest is added as written,
/// `.` dropped and `..` taking away the step before it.
pub fn resolve(path: &Path) -> Option<std::path::PathBuf> {
    use std::path::Component;
    if let Ok(canonical) = path.canonicalize() {
        return Some(canonical);
    }
    let absolute = std::env::current_dir().ok()?.join(path);
    let mut existing = absolute.as_path();
    let mut base = loop {
        match existing.canonicalize() {
            Ok(canonical) => break canonical,
            Err(_) => existing = existing.parent()?,
        }
    };
    for component in absolute.strip_prefix(existing).ok()?.components() {
        match component {
            Component::CurDir => {}
            Component::ParentDir => {
                base.pop();
            }
            Component::Normal(name) => base.push(name),
            Component::RootDir | Component::Prefix(_) => return None,
        }
    }
    Some(base)
}

/// An output path a command refuses to write: the flag that named it, the path and why.
#[derive(Debug, thiserror::Error)]
#[error("{message}")]
pub struct OutputRefused {
    /// The flag naming the output.
    pub flag: String,
    /// The path given.
    pub path: PathBuf,
    /// What is wrong, naming both.
    pub message: String,
}

impl OutputRefused {
    fn new(flag: &str, path: &Path, message: String) -> Self {
        OutputRefused {
            flag: flag.to_owned(),
            path: path.to_path_buf(),
            message,
        }
    }
}

/// Fails when an output file the command keeps (results, traces) is there but is not a regular
/// file: a folder, or a named pipe, socket or device, which writing would wait on or lose.
pub fn refuse_not_regular(flag: &str, path: &Path) -> Result<(), OutputRefused> {
    let Ok(meta) = std::fs::metadata(path) else {
        return Ok(());
    };
    if meta.is_dir() {
        return Err(OutputRefused::new(
            flag,
            path,
            format!("{flag}: `{}` is a folder, not a file", path.display()),
        ));
    }
    match special_kind(meta.file_type()) {
        Some(what) => Err(OutputRefused::new(
            flag,
            path,
            format!(
                "{flag}: `{}` is {what}, not a regular file (remove it or choose another path)",
                path.display()
            ),
        )),
        None => Ok(()),
    }
}

/// Fails when `folder`, where the command makes a folder of its own (`what`), is there but is not
/// a folder (nor a link to one): found before anything runs, not when the folder is made.
pub fn refuse_file_as_folder(flag: &str, folder: &Path, what: &str) -> Result<(), OutputRefused> {
    match std::fs::symlink_metadata(folder) {
        Ok(_) if !folder.is_dir() => Err(OutputRefused::new(
            flag,
            folder,
            format!(
                "{flag}: `{}` is not a folder, and {what}: remove it or choose another {flag}",
                folder.display()
            ),
        )),
        _ => Ok(()),
    }
}

/// Fails when MCP servers could not write their logs (at `logs`) in `dir` (`flag` names it):
/// `dir` is not a folder, or a log there is not a regular file (a named pipe would block the
/// server's start). No logs, no check.
pub fn refuse_blocked_logs(flag: &str, dir: &Path, logs: &[PathBuf]) -> Result<(), OutputRefused> {
    if logs.is_empty() {
        return Ok(());
    }
    refuse_file_as_folder(flag, dir, "the MCP servers' logs are written there")?;
    for log in logs {
        refuse_not_regular(flag, log)?;
    }
    Ok(())
}

#[cfg(all(test, unix))]
mod tests {
    use super::*;

    #[test]
    fn early_writeback_writes_every_byte_in_order() {
        use std::io::Write;
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("big");
        let mut file = File::create(&path).unwrap();
        // Pieces of odd sizes across several writeback chunks.
        let bytes: Vec<u8> = (0..3 * WRITEBACK_CHUNK as usize + 12_345)
            .map(|i| (i % 251) as u8)
            .collect();
        let mut out = EarlyWriteback::new(&mut file);
        for piece in bytes.chunks(70_001) {
            out.write_all(piece).unwrap();
        }
        out.flush().unwrap();
        assert!(out.started >= 3 * WRITEBACK_CHUNK);
        file.sync_all().unwrap();
        assert_eq!(std::fs::read(&path).unwrap(), bytes);
    }

    #[test]
    fn no_opener_writes_through_a_link() {
        let dir = tempfile::tempdir().unwrap();
        let target = dir.path().join("target");
        std::fs::write(&target, "keep").unwrap();
        let link = dir.path().join("link");
        std::os::unix::fs::symlink(&target, &link).unwrap();
        for result in [open_append(&link), create_fresh(&link)] {
            assert_eq!(
                result.unwrap_err().to_string(),
                "it is a symbolic link, and looptrace never writes through one"
            );
        }
        assert!(refuse_symlink(&link).is_err());
        assert!(refuse_symlink(&target).is_ok());
        assert_eq!(std::fs::read_to_string(&target).unwrap(), "keep");
    }

    #[test]
    fn a_fresh_file_leaves_its_other_hard_links_as_they_were() {
        let dir = tempfile::tempdir().unwrap();
        let (path, other) = (dir.path().join("trace"), dir.path().join("other"));
        std::fs::write(&path, "earlier run").unwrap();
        std::fs::hard_link(&path, &other).unwrap();
        io::Write::write_all(&mut create_fresh(&path).unwrap(), b"new").unwrap();
        assert_eq!(std::fs::read_to_string(&path).unwrap(), "new");
        assert_eq!(std::fs::read_to_string(&other).unwrap(), "earlier run");
        // A file of one name is truncated; a new one is made.
        io::Write::write_all(&mut create_fresh(&path).unwrap(), b"x").unwrap();
        assert_eq!(std::fs::read_to_string(&path).unwrap(), "x");
        let new = dir.path().join("new");
        io::Write::write_all(&mut create_fresh(&new).unwrap(), b"y").unwrap();
        assert_eq!(std::fs::read_to_string(&new).unwrap(), "y");
    }

    #[test]
    fn a_device_is_written_in_place_never_renamed_over() {
        let mut replacement = Replacement::begin(Path::new("/dev/null")).unwrap();
        io::Write::write_all(replacement.file(), b"gone").unwrap();
        replacement.commit().unwrap();
        let meta = std::fs::metadata("/dev/null").unwrap();
        assert!(!meta.is_file(), "/dev/null must stay a device");
    }

    #[test]
    fn an_uncommitted_replacement_keeps_the_old_content() {
        let dir = tempfile::tempdir().unwrap();
        let out = dir.path().join("out.json");
        std::fs::write(&out, "old").unwrap();
        let mut replacement = Replacement::begin(&out).unwrap();
        io::Write::write_all(replacement.file(), b"new").unwrap();
        drop(replacement);
        assert_eq!(std::fs::read_to_string(&out).unwrap(), "old");
        assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 1);
        let mut replacement = Replacement::begin(&out).unwrap();
        io::Write::write_all(replacement.file(), b"new").unwrap();
        replacement.commit().unwrap();
        assert_eq!(std::fs::read_to_string(&out).unwrap(), "new");
    }

    #[test]
    fn temporary_files_are_always_new() {
        let dir = tempfile::tempdir().unwrap();
        let out = dir.path().join("out.json");
        let (_, first) = create_temp_beside(&out).unwrap();
        let (_, second) = create_temp_beside(&out).unwrap();
        assert_ne!(first, second);
        assert_eq!(first.parent(), Some(dir.path()));
    }
}

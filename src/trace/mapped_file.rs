//! Reading a regular trace file through read-only memory maps of a window at a time, instead of
//! copying it into a buffer: on a trace in the page cache the kernel's copy was the largest
//! single cost of `show` after the lines' own checks. The reader sees the same bytes through the
//! same [`BufRead`] calls, a window where it saw a buffer; only one window is mapped at a time,
//! so memory stays flat whatever the file's size.
//!
//! A file that shrinks while it is mapped would stop the process (`SIGBUS`) on the pages past
//! its new end; trace writers only append, and the maps cover the length measured when the file
//! was opened, so bytes appended meanwhile are not read. Where a map cannot be made (an empty
//! file, a file system without maps, not Unix) the caller reads instead.

use std::fs::File;
use std::io::{self, BufRead, Read};

/// Bytes mapped at a time: a multiple of every page size in use.
const WINDOW: u64 = 2 * 1024 * 1024;

/// A regular file read a mapped window at a time.
pub(crate) struct MappedFile {
    file: File,
    /// The file's length when it was opened: nothing past it is read.
    len: u64,
    /// The window mapped now.
    window: Option<Window>,
    /// Bytes of the window consumed.
    consumed: usize,
    /// Where the next window starts.
    next: u64,
}

impl MappedFile {
    /// `file` read through maps, or `None` where that cannot be done (the caller reads it).
    pub(crate) fn new(file: File) -> Result<MappedFile, File> {
        let len = match file.metadata() {
            Ok(meta) if meta.is_file() && meta.len() > 0 => meta.len(),
            _ => return Err(file),
        };
        let mut mapped = MappedFile {
            file,
            len,
            window: None,
            consumed: 0,
            next: 0,
        };
        // The first window tells whether maps work here at all.
        match mapped.map_next() {
            Ok(()) => Ok(mapped),
            Err(_) => Err(mapped.file),
        }
    }

    fn map_next(&mut self) -> io::Result<()> {
        self.window = None;
        self.consumed = 0;
        if self.next >= self.len {
            return Ok(());
        }
        let len = (self.len - self.next).min(WINDOW);
        let window = Window::map(&self.file, self.next, len as usize)?;
        self.window = Some(window);
        self.next += len;
        Ok(())
    }
}

impl Read for MappedFile {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let available = self.fill_buf()?;
        let n = available.len().min(buf.len());
        buf[..n].copy_from_slice(&available[..n]);
        self.consume(n);
        Ok(n)
    }
}

impl BufRead for MappedFile {
    fn fill_buf(&mut self) -> io::Result<&[u8]> {
        let exhausted = self
            .window
            .as_ref()
            .is_none_or(|window| self.consumed >= window.bytes().len());
        if exhausted && self.next < self.len {
            self.map_next()?;
        }
        Ok(self.buffer())
    }

    fn consume(&mut self, amount: usize) {
        let len = self.window.as_ref().map_or(0, |w| w.bytes().len());
        self.consumed = (self.consumed + amount).min(len);
    }
}

impl MappedFile {
    /// The bytes mapped and not yet consumed, without mapping more (as `BufReader::buffer`).
    pub(crate) fn buffer(&self) -> &[u8] {
        match &self.window {
            Some(window) => &window.bytes()[self.consumed..],
            None => &[],
        }
    }
}

/// One read-only map of part of a file (also `report`'s map of a whole file).
pub(crate) struct Window {
    #[cfg(unix)]
    ptr: std::ptr::NonNull<libc::c_void>,
    len: usize,
}

impl Window {
    /// Maps `len` bytes of `file` from `offset` (a multiple of the page size).
    #[cfg(unix)]
    pub(crate) fn map(file: &File, offset: u64, len: usize) -> io::Result<Window> {
        use std::os::fd::AsRawFd;
        let offset = libc::off_t::try_from(offset).map_err(io::Error::other)?;
        // SAFETY: a new private read-only mapping of an open file; the kernel picks the address
        // and checks the length, offset and descriptor, and a failure is returned as
        // `MAP_FAILED`.
        let ptr = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                len,
                libc::PROT_READ,
                libc::MAP_PRIVATE,
                file.as_raw_fd(),
                offset,
            )
        };
        if ptr == libc::MAP_FAILED {
            return Err(io::Error::last_os_error());
        }
        let ptr = std::ptr::NonNull::new(ptr).ok_or_else(|| io::Error::other("null map"))?;
        Ok(Window { ptr, len })
    }

    /// Maps nothing where maps are not used: the caller reads instead.
    #[cfg(not(unix))]
    pub(crate) fn map(_file: &File, _offset: u64, _len: usize) -> io::Result<Window> {
        Err(io::Error::other("no maps"))
    }

    pub(crate) fn bytes(&self) -> &[u8] {
        #[cfg(unix)]
        // SAFETY: the mapping holds `len` readable bytes until `drop`, and it is never written.
        unsafe {
            std::slice::from_raw_parts(self.ptr.as_ptr().cast::<u8>(), self.len)
        }
        #[cfg(not(unix))]
        &[]
    }
}

#[cfg(unix)]
impl Drop for Window {
    fn drop(&mut self) {
        // SAFETY: unmaps exactly the mapping made in `map`, which no slice outlives (`bytes`
        // borrows `self`).
        unsafe {
            libc::munmap(self.ptr.as_ptr(), self.len);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;

    /// Read through maps, a file gives the bytes reading it gives, across windows and at its
    /// end, whatever the sizes asked for.
    #[test]
    fn reads_what_the_file_holds() {
        let len = (2 * WINDOW + 12_345) as usize;
        let text: Vec<u8> = (0..len).map(|i| b'a' + (i % 23) as u8).collect();
        let mut path = std::env::temp_dir();
        path.push(format!("looptrace-mapped-file-{}", std::process::id()));
        File::create(&path).unwrap().write_all(&text).unwrap();
        for step in [1_000_003, 4096, 65_536] {
            let Ok(mut mapped) = MappedFile::new(File::open(&path).unwrap()) else {
                panic!("a regular file is mapped");
            };
            let mut read = Vec::new();
            let mut buf = vec![0; step];
            loop {
                let n = mapped.read(&mut buf).unwrap();
                if n == 0 {
                    break;
                }
                read.extend_from_slice(&buf[..n]);
            }
            assert_eq!(read, text);
        }
        std::fs::remove_file(&path).unwrap();
        let empty = tempfile_empty();
        assert!(MappedFile::new(File::open(&empty).unwrap()).is_err());
        std::fs::remove_file(&empty).unwrap();
    }

    fn tempfile_empty() -> std::path::PathBuf {
        let mut path = std::env::temp_dir();
        path.push(format!("looptrace-mapped-empty-{}", std::process::id()));
        File::create(&path).unwrap();
        path
    }
}

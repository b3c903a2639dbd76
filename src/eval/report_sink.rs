//! Where a report is written: its text gathered a chunk at a time and handed on, so a report
//! with a row per task never lies whole in memory.

use std::io::{self, Write};

/// Bytes gathered before they are handed on.
const CHUNK: usize = 64 * 1024;

/// A report being written to `out`.
pub(super) struct ReportSink<'w> {
    text: Vec<u8>,
    out: &'w mut dyn Write,
    failed: Option<io::Error>,
}

impl<'w> ReportSink<'w> {
    /// A report written to `out`.
    pub(super) fn new(out: &'w mut dyn Write) -> ReportSink<'w> {
        ReportSink {
            text: Vec::new(),
            out,
            failed: None,
        }
    }

    /// Adds `text`, handing on what was gathered once it fills a chunk.
    pub(super) fn push_str(&mut self, text: &str) {
        self.push(text.as_bytes());
    }

    fn push(&mut self, bytes: &[u8]) {
        self.text.extend_from_slice(bytes);
        if self.text.len() >= CHUNK {
            self.hand_on();
        }
    }

    fn hand_on(&mut self) {
        // After a failed write nothing more is written: the first error is the one reported.
        if self.failed.is_none()
            && let Err(err) = self.out.write_all(&self.text)
        {
            self.failed = Some(err);
        }
        self.text.clear();
    }

    /// Hands on the rest; the first error in writing, if any.
    pub(super) fn finish(mut self) -> io::Result<()> {
        self.hand_on();
        self.failed.map_or(Ok(()), Err)
    }
}

/// What a serializer writes (the JSON report) is added as text is.
impl Write for ReportSink<'_> {
    fn write(&mut self, bytes: &[u8]) -> io::Result<usize> {
        self.push(bytes);
        Ok(bytes.len())
    }

    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn text_arrives_whole_and_in_order_across_chunks() {
        let mut out = Vec::new();
        let mut sink = ReportSink::new(&mut out);
        let line = "x".repeat(1000) + "\n";
        for _ in 0..200 {
            sink.push_str(&line);
        }
        sink.push_str("end\n");
        sink.finish().unwrap();
        assert_eq!(out, (line.repeat(200) + "end\n").into_bytes());
    }

    #[test]
    fn the_first_write_error_is_reported() {
        struct Broken;
        impl Write for Broken {
            fn write(&mut self, _: &[u8]) -> io::Result<usize> {
                Err(io::Error::new(io::ErrorKind::BrokenPipe, "closed"))
            }
            fn flush(&mut self) -> io::Result<()> {
                Ok(())
            }
        }
        let mut broken = Broken;
        let mut sink = ReportSink::new(&mut broken);
        sink.push_str(&"y".repeat(CHUNK + 1));
        sink.push_str("more");
        let err = sink.finish().unwrap_err();
        assert_eq!(err.kind(), io::ErrorKind::BrokenPipe);
    }
}

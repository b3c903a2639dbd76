//! A position in one trace line, and the moves both of the trace scanner's readers make with
//! it: the full scanner ([`super::scan`]) and its fast lane ([`super::compact_line`]). Syntax
//! errors name the column, as the full scanner reports them.

use super::line_error::LineError;

/// A position in one line.
pub(super) struct Cursor<'a> {
    pub(super) bytes: &'a [u8],
    pub(super) pos: usize,
}

impl<'a> Cursor<'a> {
    /// A cursor at byte `pos` of `bytes`.
    #[inline]
    pub(super) fn at(bytes: &'a [u8], pos: usize) -> Cursor<'a> {
        Cursor { bytes, pos }
    }

    #[inline]
    pub(super) fn peek(&self) -> Option<u8> {
        self.bytes.get(self.pos).copied()
    }

    #[inline]
    pub(super) fn bump(&mut self) -> Option<u8> {
        let byte = self.peek()?;
        self.pos += 1;
        Some(byte)
    }

    #[inline]
    pub(super) fn eat(&mut self, byte: u8) -> bool {
        if self.peek() == Some(byte) {
            self.pos += 1;
            true
        } else {
            false
        }
    }

    #[inline]
    pub(super) fn skip_ws(&mut self) {
        while let Some(b' ' | b'\t' | b'\r' | b'\n') = self.peek() {
            self.pos += 1;
        }
    }

    /// A syntax error at the current position, or "unexpected end of line" past the end.
    pub(super) fn syntax(&self, message: &'static str) -> LineError {
        if self.pos >= self.bytes.len() {
            LineError::Syntax {
                message: "unexpected end of line",
                column: self.bytes.len() + 1,
            }
        } else {
            LineError::Syntax {
                message,
                column: self.pos + 1,
            }
        }
    }

    /// A syntax error at the byte just consumed.
    pub(super) fn syntax_back(&mut self, message: &'static str) -> LineError {
        if self.pos > 0 && self.pos <= self.bytes.len() {
            self.pos -= 1;
        }
        self.syntax(message)
    }
}

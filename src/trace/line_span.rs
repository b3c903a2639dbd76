//! Where one event's line is in its trace file, so that it can be read again: what the run
//! grouping keeps of lines it does not hold parsed.

/// Where one event's line is in its file: enough to read it again.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct LineSpan {
    /// The 1-based line number.
    pub line: u64,
    /// The byte offset of the line's start.
    pub offset: u64,
    /// The line's length in bytes, without its `\n`.
    pub len: u32,
}

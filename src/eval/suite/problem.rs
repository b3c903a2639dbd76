//! What a suite's checks report: a place in the suite and what is wrong there.

/// `(JSON path, what is wrong)`.
pub type Problem = (String, String);

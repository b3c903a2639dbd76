//! Running a program the way the finish gate and command tools need it: in its own process group,
//! with input on stdin, a timeout after which the whole group (grandchildren included) is killed,
//! and output kept to a bounded head and tail, cut on UTF-8 boundaries.

mod cut;
mod env;
pub mod groups;
mod run;

pub use cut::{CutText, cut_bytes, cut_output};
pub use env::{BASE_ENV, allowed_env};
pub use run::{Ended, Finished, Kept, OutputMode, ProcessSpec, run_process};

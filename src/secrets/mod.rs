//! Secrets: API keys and the hash key. They go to the host they are meant for and nowhere else:
//! [`Redactor`] takes them out of every body and message looptrace shows or writes, in any form a
//! server may echo them, and [`env`] keeps their variables out of every child process.

pub mod env;
mod redact;

pub use env::{
    HASH_KEY_VAR, PLACEHOLDER_KEY, forbid_var, is_forbidden_var, refuse_forbidden_names,
    without_forbidden,
};
pub use redact::{REDACTED, Redactor};

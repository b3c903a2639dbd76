//! The environment a child program gets: an allow-list read from looptrace's own, never a
//! secret variable ([`crate::secrets::env`]), whatever the list names.

use std::ffi::OsString;

/// The variables every tool, server and finish gate gets from looptrace's environment, beside
/// the names a tools file lists in `env`.
pub const BASE_ENV: [&str; 6] = ["PATH", "HOME", "LANG", "LC_ALL", "TERM", "TMPDIR"];

/// [`BASE_ENV`] and `names`, with the values they have in our environment now (unset ones
/// left out, each name once, secret variables never).
pub fn allowed_env<'a>(names: impl IntoIterator<Item = &'a str>) -> Vec<(OsString, OsString)> {
    let mut env: Vec<(OsString, OsString)> = Vec::new();
    for name in BASE_ENV.into_iter().chain(names) {
        if env.iter().any(|(k, _)| k == name) || crate::secrets::is_forbidden_var(name) {
            continue;
        }
        if let Some(value) = std::env::var_os(name) {
            env.push((name.into(), value));
        }
    }
    env
}

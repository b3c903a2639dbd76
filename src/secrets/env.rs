//! The variables no child process of looptrace (tool, MCP server, finish gate, scorer) ever
//! receives, whatever an allow-list says: `LOOPTRACE_HASH_KEY` and every variable an API key was
//! read from. The set is process-wide so that the one place programs are spawned can enforce it.

use std::collections::BTreeSet;
use std::ffi::OsString;
use std::sync::{Mutex, PoisonError};

/// The variable that keys summary hashes (HMAC); a secret like an API key.
pub const HASH_KEY_VAR: &str = "LOOPTRACE_HASH_KEY";

/// Names of the variables API keys were read from, besides [`HASH_KEY_VAR`].
static KEY_VARS: Mutex<BTreeSet<String>> = Mutex::new(BTreeSet::new());

/// Marks `name` as holding a secret: from now on no child process receives it.
pub fn forbid_var(name: &str) {
    KEY_VARS
        .lock()
        .unwrap_or_else(PoisonError::into_inner)
        .insert(name.to_owned());
}

/// Whether `name` holds a secret: the hash key, or a variable an API key was read from.
pub fn is_forbidden_var(name: &str) -> bool {
    name == HASH_KEY_VAR
        || KEY_VARS
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .contains(name)
}

/// The key an agent task's agent is given in place of the real one, which only its proxy holds
/// (`docs/suite-format.md`, `agent`): no secret, so it may stand under a key's variable name.
pub const PLACEHOLDER_KEY: &str = "looptrace-placeholder-key";

/// `env` without the secret variables (a variable holding [`PLACEHOLDER_KEY`] holds none).
pub fn without_forbidden(env: Vec<(OsString, OsString)>) -> Vec<(OsString, OsString)> {
    env.into_iter()
        .filter(|(name, value)| {
            !name.to_str().is_some_and(is_forbidden_var) || value == PLACEHOLDER_KEY
        })
        .collect()
}

/// Refuses an allow-list entry (or fixed variable) named `name` at `path` (`$.env[0]`,
/// `$.mcp_servers[1].env.NAME`, ...) when it names the hash key or one of `key_vars` (the
/// `--api-key-env` variable and every model's `api_key_env`). The message says why.
pub fn refuse_forbidden_names<'a>(
    names: impl IntoIterator<Item = (String, &'a str)>,
    key_vars: &[String],
) -> Vec<(String, String)> {
    names
        .into_iter()
        .filter(|(_, name)| *name == HASH_KEY_VAR || key_vars.iter().any(|key| key == name))
        .map(|(path, name)| {
            let what = if name == HASH_KEY_VAR {
                "the hash key"
            } else {
                "an API key"
            };
            (
                path,
                format!("`{name}` holds {what}: no tool, MCP server or finish gate may receive it"),
            )
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_hash_key_and_registered_key_variables_never_pass() {
        forbid_var("SECRETS_TEST_KEY_VAR");
        let env = vec![
            ("PATH".into(), "/bin".into()),
            (HASH_KEY_VAR.into(), "k".into()),
            ("SECRETS_TEST_KEY_VAR".into(), "sk".into()),
        ];
        assert_eq!(
            without_forbidden(env),
            vec![(OsString::from("PATH"), OsString::from("/bin"))]
        );
        let placeholder = vec![("SECRETS_TEST_KEY_VAR".into(), PLACEHOLDER_KEY.into())];
        assert_eq!(without_forbidden(placeholder.clone()), placeholder);
    }

    #[test]
    fn allow_list_entries_naming_a_secret_are_refused_with_their_path() {
        let refused = refuse_forbidden_names(
            [
                ("$.env[0]".to_owned(), "HOME"),
                ("$.env[1]".to_owned(), "MY_KEY"),
                ("$.env[2]".to_owned(), HASH_KEY_VAR),
            ],
            &["MY_KEY".to_owned()],
        );
        assert_eq!(refused.len(), 2);
        assert_eq!(refused[0].0, "$.env[1]");
        assert!(refused[0].1.contains("`MY_KEY` holds an API key"));
        assert!(refused[1].1.contains("the hash key"));
    }
}

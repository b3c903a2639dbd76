//! An agent task's command, checked (by the suite's loader, `eval/suite/agent.rs`): its program
//! and arguments, its timeout, the variables it is given, and the request parts a replay
//! ignores. Also the
//! environment it runs with: an allow-list read from looptrace's own (never a secret variable),
//! the suite's fixed variables, and the proxy's base URLs with a placeholder key, so that the
//! real key stays with the proxy.

use std::ffi::OsString;
use std::time::Duration;

use super::placeholders::{self, Values};
use crate::model::live::Api;
use crate::proxy::IgnoredPath;

/// How long an agent may run when its task says not.
pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(600);

use crate::secrets::PLACEHOLDER_KEY;

/// The variables looptrace sets for every agent: the base URLs the common SDKs and litellm read,
/// their keys (the placeholder), and where the run is.
pub const SET_VARS: [&str; 8] = [
    "OPENAI_BASE_URL",
    "OPENAI_API_BASE",
    "OPENAI_API_KEY",
    "ANTHROPIC_BASE_URL",
    "ANTHROPIC_API_KEY",
    "LOOPTRACE_PROXY_URL",
    "LOOPTRACE_RUN_ID",
    "LOOPTRACE_TASK_ID",
];

/// A suite's `agent`, checked.
#[derive(Clone, Debug)]
pub struct AgentCommand {
    /// The program and its arguments, placeholders unfilled.
    pub command: Vec<String>,
    /// How long it may run before its process group is killed.
    pub timeout: Duration,
    /// Variables set for it, values unfilled.
    pub env: Vec<(String, String)>,
    /// Variables passed on from looptrace's environment.
    pub pass_env: Vec<String>,
    /// Request parts a replay leaves out of the match.
    pub ignore: Vec<IgnoredPath>,
}

impl AgentCommand {
    /// The program and its arguments, filled.
    pub fn argv(&self, values: &Values) -> Vec<String> {
        self.command
            .iter()
            .map(|arg| placeholders::fill(arg, values))
            .collect()
    }

    /// The agent's whole environment: the base allow-list and `pass_env` from ours (secret
    /// variables never), the suite's `env` filled, then the variables looptrace sets.
    pub fn environment(&self, api: Api, values: &Values) -> Vec<(OsString, OsString)> {
        let mut env = crate::process::allowed_env(self.pass_env.iter().map(String::as_str));
        let mut set = |name: &str, value: String| {
            env.retain(|(k, _)| k != name);
            env.push((name.into(), value.into()));
        };
        for (name, value) in &self.env {
            set(name, placeholders::fill(value, values));
        }
        let (openai, anthropic) = match api {
            Api::AnthropicMessages => (format!("{}/v1", values.proxy_url), values.base_url.clone()),
            _ => (values.base_url.clone(), values.proxy_url.clone()),
        };
        set("OPENAI_BASE_URL", openai.clone());
        set("OPENAI_API_BASE", openai);
        set("ANTHROPIC_BASE_URL", anthropic);
        set("OPENAI_API_KEY", PLACEHOLDER_KEY.to_owned());
        set("ANTHROPIC_API_KEY", PLACEHOLDER_KEY.to_owned());
        set("LOOPTRACE_PROXY_URL", values.proxy_url.clone());
        set("LOOPTRACE_RUN_ID", values.run_id.clone());
        set("LOOPTRACE_TASK_ID", values.task_id.clone());
        crate::secrets::without_forbidden(env)
    }
}

/// Why an agent may not be given the variable `name`, if it may not: it holds a secret, or
/// looptrace sets it.
pub fn refused_name(name: &str) -> Option<String> {
    if name == crate::secrets::HASH_KEY_VAR || crate::secrets::is_forbidden_var(name) {
        return Some(format!(
            "`{name}` holds a secret: an agent gets a placeholder key, and the proxy sends the real one upstream"
        ));
    }
    SET_VARS.contains(&name).then(|| {
        format!("`{name}` is set by looptrace for every agent (it points the agent at its proxy)")
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_environment_points_at_the_proxy_with_a_placeholder_key() {
        let command = AgentCommand {
            command: vec!["mini".to_owned(), "-t".to_owned(), "{prompt}".to_owned()],
            timeout: DEFAULT_TIMEOUT,
            env: vec![("MODE".to_owned(), "{model}".to_owned())],
            pass_env: Vec::new(),
            ignore: Vec::new(),
        };
        let values = Values {
            prompt: "do it".to_owned(),
            model: "gpt-x".to_owned(),
            base_url: "http://127.0.0.1:9/v1".to_owned(),
            proxy_url: "http://127.0.0.1:9".to_owned(),
            ..Values::default()
        };
        assert_eq!(command.argv(&values), ["mini", "-t", "do it"]);
        let env = command.environment(Api::OpenAiChat, &values);
        let get = |name: &str| {
            env.iter()
                .find(|(k, _)| k == name)
                .map(|(_, v)| v.to_string_lossy().into_owned())
        };
        assert_eq!(
            get("OPENAI_BASE_URL").as_deref(),
            Some("http://127.0.0.1:9/v1")
        );
        assert_eq!(
            get("ANTHROPIC_BASE_URL").as_deref(),
            Some("http://127.0.0.1:9")
        );
        assert_eq!(get("OPENAI_API_KEY").as_deref(), Some(PLACEHOLDER_KEY));
        assert_eq!(get("MODE").as_deref(), Some("gpt-x"));
        let anthropic = command.environment(Api::AnthropicMessages, &values);
        assert!(
            anthropic
                .iter()
                .any(|(k, v)| k == "OPENAI_BASE_URL" && v == "http://127.0.0.1:9/v1")
        );
    }
}

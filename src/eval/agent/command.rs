//! An agent task's command, checked: its program and arguments (placeholders known), its
//! timeout, the variables it is given, and the request parts a replay ignores. Also the
//! environment it runs with: an allow-list read from looptrace's own (never a secret variable),
//! the suite's fixed variables, and the proxy's base URLs with a placeholder key, so that the
//! real key stays with the proxy.

use std::ffi::OsString;
use std::path::Path;
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

/// `(JSON path, what is wrong)`.
type Problem = (String, String);

impl AgentCommand {
    /// Checks `spec` (at `path`, `$.tasks[3].agent`): placeholders known, no variable that
    /// holds a secret or that looptrace sets itself, ignore paths that parse. A program named by
    /// a relative path (`./agent.py`, `bin/agent`) is the suite folder's (`base`); a bare name is
    /// looked up on `PATH`.
    pub fn from_spec(
        spec: crate::eval::suite::AgentSpec,
        path: &str,
        base: &Path,
    ) -> Result<AgentCommand, Vec<Problem>> {
        let mut problems = Vec::new();
        for (i, arg) in spec.command.iter().enumerate() {
            if let Err(message) = placeholders::check(arg) {
                problems.push((format!("{path}.command[{i}]"), message));
            }
        }
        let env: Vec<(String, String)> = spec.env.unwrap_or_default().into_iter().collect();
        for (name, value) in &env {
            let at = format!("{path}.env.{name}");
            if let Err(message) = placeholders::check(value) {
                problems.push((at.clone(), message));
            }
            if let Some(message) = refused_name(name) {
                problems.push((at, message));
            }
        }
        let pass_env = spec.pass_env.unwrap_or_default();
        for (i, name) in pass_env.iter().enumerate() {
            if let Some(message) = refused_name(name) {
                problems.push((format!("{path}.pass_env[{i}]"), message));
            }
        }
        let mut ignore = Vec::new();
        for (i, text) in spec.ignore.unwrap_or_default().iter().enumerate() {
            match IgnoredPath::parse(text) {
                Ok(parsed) => ignore.push(parsed),
                Err(message) => problems.push((format!("{path}.ignore[{i}]"), message)),
            }
        }
        if !problems.is_empty() {
            return Err(problems);
        }
        let mut command = spec.command;
        if let Some(program) = command.first_mut()
            && program.contains('/')
            && !program.contains('{')
            && Path::new(program.as_str()).is_relative()
        {
            *program = base.join(program.as_str()).display().to_string();
        }
        Ok(AgentCommand {
            command,
            timeout: spec
                .timeout_s
                .map_or(DEFAULT_TIMEOUT, |s| Duration::from_secs_f64(s.min(1e9))),
            env,
            pass_env,
            ignore,
        })
    }

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

/// Why an agent may not be given the variable `name`, if it may not.
fn refused_name(name: &str) -> Option<String> {
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
    use crate::eval::suite::AgentSpec;

    fn spec(json: serde_json::Value) -> AgentSpec {
        serde_json::from_value(json).unwrap()
    }

    #[test]
    fn the_environment_points_at_the_proxy_with_a_placeholder_key() {
        let command = AgentCommand::from_spec(
            spec(serde_json::json!({"command": ["mini", "-t", "{prompt}"], "env": {"MODE": "{model}"}})),
            "$.tasks[0].agent",
            Path::new("."),
        )
        .unwrap();
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
        assert_eq!(command.timeout, DEFAULT_TIMEOUT);
    }

    #[test]
    fn secrets_and_looptrace_s_own_variables_are_refused_by_path() {
        let problems = AgentCommand::from_spec(
            spec(serde_json::json!({
                "command": ["a", "{nope}"],
                "env": {"OPENAI_API_KEY": "x"},
                "pass_env": ["LOOPTRACE_HASH_KEY"],
                "ignore": ["no-dollar"]
            })),
            "$.tasks[0].agent",
            Path::new("."),
        )
        .unwrap_err();
        let paths: Vec<&str> = problems.iter().map(|(p, _)| p.as_str()).collect();
        assert_eq!(
            paths,
            [
                "$.tasks[0].agent.command[1]",
                "$.tasks[0].agent.env.OPENAI_API_KEY",
                "$.tasks[0].agent.pass_env[0]",
                "$.tasks[0].agent.ignore[0]"
            ]
        );
    }
}

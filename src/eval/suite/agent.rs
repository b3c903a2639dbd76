//! A task's `agent` (or `defaults.agent`) as written, checked into the command an evaluation
//! runs: placeholders known, no variable that holds a secret or that looptrace sets itself,
//! ignore paths that parse, and a program named by a relative path found in the suite's folder.

use std::path::Path;
use std::time::Duration;

use super::problem::Problem;
use super::spec::AgentSpec;
use crate::eval::agent::{AgentCommand, DEFAULT_TIMEOUT, check_placeholders, refused_name};
use crate::proxy::IgnoredPath;

/// Checks `spec` (at `path`, `$.tasks[3].agent`). A program named by a relative path
/// (`./agent.py`, `bin/agent`) is the suite folder's (`base`); a bare name is looked up on `PATH`.
pub fn agent_command(
    spec: AgentSpec,
    path: &str,
    base: &Path,
) -> Result<AgentCommand, Vec<Problem>> {
    let mut problems = Vec::new();
    for (i, arg) in spec.command.iter().enumerate() {
        if let Err(message) = check_placeholders(arg) {
            problems.push((format!("{path}.command[{i}]"), message));
        }
    }
    let env: Vec<(String, String)> = spec.env.unwrap_or_default().into_iter().collect();
    for (name, value) in &env {
        let at = format!("{path}.env.{name}");
        if let Err(message) = check_placeholders(value) {
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

#[cfg(test)]
mod tests {
    use super::*;

    fn spec(json: serde_json::Value) -> AgentSpec {
        serde_json::from_value(json).unwrap()
    }

    #[test]
    fn a_relative_program_is_the_suite_folder_s_and_the_timeout_defaults() {
        let command = agent_command(
            spec(serde_json::json!({"command": ["bin/agent", "{prompt}"]})),
            "$.tasks[0].agent",
            Path::new("/suite"),
        )
        .unwrap();
        assert_eq!(command.command, ["/suite/bin/agent", "{prompt}"]);
        assert_eq!(command.timeout, DEFAULT_TIMEOUT);
    }

    #[test]
    fn secrets_and_looptrace_s_own_variables_are_refused_by_path() {
        let problems = agent_command(
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

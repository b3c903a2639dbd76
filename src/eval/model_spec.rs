//! Models named outside a task: `--model SPEC`, `defaults.model`, a judge's `model`, and the
//! suite's `models` section. A SPEC is `API:MODEL@BASE_URL` (one of the three wire formats, the
//! model name sent in requests, the server) or the name of an entry of `models`. Each resolves
//! once, when the suite loads, to a live configuration and the variable its key is read from.

use std::collections::BTreeMap;
use std::time::Duration;

use serde::Deserialize;

use crate::model::live::{Api, LiveConfig, api_key_from_env};

/// A model as a suite or the command line names it, resolved.
#[derive(Clone, Debug)]
pub struct NamedModel {
    /// The model as given: the SPEC, or the name of its `models` entry. Rows are told apart by it.
    pub name: String,
    /// Everything but the key, which is read when a run starts.
    pub config: LiveConfig,
    /// The environment variable holding the key.
    pub api_key_env: Option<String>,
    /// What the model's tokens cost, when the suite says.
    pub prices: Option<Prices>,
}

/// US dollars per million tokens, for `max_cost_usd`.
#[derive(Clone, Copy, Debug, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Prices {
    /// Per million input (prompt) tokens.
    pub input_usd_per_mtok: f64,
    /// Per million output (generated) tokens.
    pub output_usd_per_mtok: f64,
}

impl Prices {
    /// The cost of `input` and `output` tokens.
    pub fn cost(&self, input: u64, output: u64) -> f64 {
        (input as f64 * self.input_usd_per_mtok + output as f64 * self.output_usd_per_mtok) / 1e6
    }
}

/// One entry of the suite's `models` section: the keys of a task's `chat` model, and prices.
#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ModelEntry {
    /// `openai-chat`, `anthropic-messages` or `openai-responses`.
    pub api: String,
    /// The server.
    pub base_url: String,
    /// The model name sent in requests.
    pub model: String,
    /// The variable holding the key.
    #[serde(default)]
    pub api_key_env: Option<String>,
    /// Sampling temperature.
    #[serde(default)]
    pub temperature: Option<f64>,
    /// Output token limit per call.
    #[serde(default)]
    pub max_output_tokens: Option<u32>,
    /// Seconds one attempt may take.
    #[serde(default)]
    pub timeout_s: Option<f64>,
    /// Attempts after the first.
    #[serde(default)]
    pub max_retries: Option<u32>,
    /// Seconds all attempts of one call may take.
    #[serde(default)]
    pub retry_budget_s: Option<f64>,
    /// The system prompt.
    #[serde(default)]
    pub system: Option<String>,
    /// What its tokens cost.
    #[serde(default)]
    pub prices: Option<Prices>,
}

/// The suite's `models` section, by name.
pub type ModelsSection = BTreeMap<String, ModelEntry>;

/// Reads the `models` section: each entry checked, each problem with its JSON path under `path`.
pub fn models_section(
    value: &serde_json::Value,
    path: &str,
) -> Result<BTreeMap<String, NamedModel>, Vec<(String, String)>> {
    let section: BTreeMap<String, serde_json::Value> = serde_json::from_value(value.clone())
        .map_err(|err| {
            vec![(
                path.to_owned(),
                format!("expected an object of named models: {err}"),
            )]
        })?;
    let mut problems = Vec::new();
    let mut models = BTreeMap::new();
    for (name, entry) in section {
        let at = format!("{path}.{name}");
        if name.is_empty() || name.contains(':') || name.contains('@') {
            problems.push((
                at.clone(),
                "a model's name must not be empty or hold `:` or `@` (those make a SPEC)"
                    .to_owned(),
            ));
            continue;
        }
        match serde_json::from_value::<ModelEntry>(entry)
            .map_err(|err| err.to_string())
            .and_then(|entry| entry.resolve(&name))
        {
            Ok(model) => {
                models.insert(name, model);
            }
            Err(message) => problems.push((at, message)),
        }
    }
    if problems.is_empty() {
        Ok(models)
    } else {
        Err(problems)
    }
}

impl ModelEntry {
    /// The entry as a model named `name`; its key variable must be set.
    pub fn resolve(self, name: &str) -> Result<NamedModel, String> {
        let api = parse_api(&self.api)?;
        let mut config = LiveConfig::new(api, self.base_url, self.model);
        if let Some(t) = self.temperature {
            if !(t.is_finite() && t >= 0.0) {
                return Err(format!(
                    "`temperature` must be a number of at least 0, got {t}"
                ));
            }
            config.temperature = Some(t);
        }
        config.max_output_tokens = self.max_output_tokens;
        if let Some(n) = self.max_retries {
            config.max_retries = n;
        }
        for (key, given, slot) in [
            ("timeout_s", self.timeout_s, &mut config.timeout),
            (
                "retry_budget_s",
                self.retry_budget_s,
                &mut config.retry_budget,
            ),
        ] {
            if let Some(seconds) = given {
                if !(seconds.is_finite() && seconds > 0.0) {
                    return Err(format!("`{key}` must be a positive number, got {seconds}"));
                }
                *slot = Duration::from_secs_f64(seconds.min(1e9));
            }
        }
        config.system = self.system;
        if let Some(prices) = self.prices
            && !(prices.input_usd_per_mtok >= 0.0 && prices.output_usd_per_mtok >= 0.0)
        {
            return Err("`prices` must not be negative".to_owned());
        }
        api_key_from_env(self.api_key_env.as_deref())?;
        Ok(NamedModel {
            name: name.to_owned(),
            config,
            api_key_env: self.api_key_env,
            prices: self.prices,
        })
    }
}

fn parse_api(name: &str) -> Result<Api, String> {
    Api::parse(name).ok_or_else(|| {
        format!(
            "unknown wire format {name:?} (expected \"openai-chat\", \"anthropic-messages\" or \"openai-responses\")"
        )
    })
}

/// Resolves a SPEC: a name of `models`, else `API:MODEL@BASE_URL` whose key is read from
/// `api_key_env`. The key variable must be set.
pub fn resolve_spec(
    spec: &str,
    models: &BTreeMap<String, NamedModel>,
    api_key_env: Option<&str>,
) -> Result<NamedModel, String> {
    if let Some(model) = models.get(spec) {
        return Ok(model.clone());
    }
    let Some((api, rest)) = spec.split_once(':') else {
        let known = if models.is_empty() {
            "the suite has no `models` section".to_owned()
        } else {
            format!(
                "the suite's models are {}",
                models
                    .keys()
                    .map(|k| format!("{k:?}"))
                    .collect::<Vec<_>>()
                    .join(", ")
            )
        };
        return Err(format!(
            "unknown model {spec:?}: give API:MODEL@BASE_URL or a name from `models` ({known})"
        ));
    };
    let api = parse_api(api)?;
    let Some(at) = rest.rfind("@http://").or_else(|| rest.rfind("@https://")) else {
        return Err(format!(
            "model {spec:?} names no server: write API:MODEL@BASE_URL, e.g. openai-chat:gpt-4.1@http://127.0.0.1:4000/v1"
        ));
    };
    let (model, base_url) = (&rest[..at], &rest[at + 1..]);
    if model.is_empty() {
        return Err(format!("model {spec:?} names no model before `@`"));
    }
    api_key_from_env(api_key_env)?;
    Ok(NamedModel {
        name: spec.to_owned(),
        config: LiveConfig::new(api, base_url, model),
        api_key_env: api_key_env.map(str::to_owned),
        prices: None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_spec_names_its_format_model_and_server() {
        let model = resolve_spec(
            "openai-chat:llama3:8b@http://127.0.0.1:4000/v1",
            &BTreeMap::new(),
            None,
        )
        .unwrap();
        assert_eq!(model.name, "openai-chat:llama3:8b@http://127.0.0.1:4000/v1");
        assert_eq!(model.config.api, Api::OpenAiChat);
        assert_eq!(model.config.model, "llama3:8b");
        assert_eq!(model.config.base_url, "http://127.0.0.1:4000/v1");
        for (spec, says) in [
            ("gpt-4.1", "unknown model \"gpt-4.1\""),
            ("grpc:m@http://h", "unknown wire format \"grpc\""),
            ("openai-chat:m", "names no server"),
            ("openai-chat:@http://h", "names no model"),
        ] {
            let err = resolve_spec(spec, &BTreeMap::new(), None).unwrap_err();
            assert!(err.contains(says), "{spec}: {err}");
        }
    }

    #[test]
    fn a_section_entry_is_found_by_name_and_checked() {
        let value = serde_json::json!({
            "small": {"api": "openai-chat", "base_url": "http://h/v1", "model": "s",
                      "prices": {"input_usd_per_mtok": 1.0, "output_usd_per_mtok": 2.0}}
        });
        let models = models_section(&value, "$.models").unwrap();
        let small = resolve_spec("small", &models, None).unwrap();
        assert_eq!(small.name, "small");
        assert_eq!(small.prices.unwrap().cost(1_000_000, 500_000), 2.0);
        let bad = serde_json::json!({"x": {"api": "openai-chat", "base_url": "u", "model": "m", "colour": 1}});
        let problems = models_section(&bad, "$.models").unwrap_err();
        assert_eq!(problems[0].0, "$.models.x");
        assert!(
            problems[0].1.contains("unknown field `colour`"),
            "{problems:?}"
        );
    }
}

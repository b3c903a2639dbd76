//! Models from the command line: `eval --model SPEC` gives every task that model, and several
//! `--model`s make a matrix, every task against each model. A row is then one (task, model,
//! repeat): the model as given names it in results, and `<task-id>@<model>` names its trace and
//! working folder.

use std::collections::HashSet;

use super::model_spec::{NamedModel, resolve_spec};
use super::suite::{ModelName, Suite, SuiteTask, SuiteTasks, TaskId, TaskModel};

/// The longest model part of a file name under a matrix.
const MAX_SLUG_CHARS: usize = 48;

/// The models `--model` named, resolved against the suite's `models`; the key of a model given
/// as `API:MODEL@BASE_URL` is read from `api_key_env`.
pub fn resolve_models(
    suite: &Suite,
    specs: &[String],
    api_key_env: Option<&str>,
) -> Result<Vec<NamedModel>, String> {
    let mut seen = HashSet::new();
    let mut models = Vec::with_capacity(specs.len());
    for spec in specs {
        if !seen.insert(spec.as_str()) {
            return Err(format!("--model {spec} is given twice"));
        }
        let model = resolve_spec(spec, &suite.models, api_key_env)
            .map_err(|message| format!("--model {spec}: {message}"))?;
        models.push(model);
    }
    Ok(models)
}

/// Gives every task of `suite` the `models`: one model replaces each task's own; several make
/// every task run against each, the task's rows for its models together in the order given.
/// The tasks must be held (a suite's `tasks` array, not a streamed tasks file).
pub fn apply_models(suite: &mut Suite, models: &[NamedModel]) -> Result<(), String> {
    if models.is_empty() {
        return Ok(());
    }
    let Some(held) = suite.tasks.held_tasks() else {
        return Err(
            "--model needs the suite's tasks inline: a suite with a tasks file or a dataset takes its \
             model from `defaults.model` or each task"
                .to_owned(),
        );
    };
    let slugs = (models.len() > 1).then(|| slugs(models));
    let mut tasks = Vec::with_capacity(held.len() * models.len());
    for task in held {
        for (k, model) in models.iter().enumerate() {
            let mut task = task.clone();
            give(&mut task, model, slugs.as_ref().map(|s| s[k].clone()));
            tasks.push(task);
        }
    }
    suite.tasks = SuiteTasks::held(tasks);
    Ok(())
}

fn give(task: &mut SuiteTask, model: &NamedModel, slug: Option<String>) {
    task.model = TaskModel::named(model);
    task.model_name = Some(ModelName {
        given: model.name.clone(),
        slug,
    });
}

/// Each model's part of file names: its name made safe and cut short, numbered where two would
/// be the same.
fn slugs(models: &[NamedModel]) -> Vec<String> {
    let mut seen = HashSet::new();
    models
        .iter()
        .enumerate()
        .map(|(i, model)| {
            let safe: String = TaskId::sanitize(&model.name)
                .chars()
                .take(MAX_SLUG_CHARS)
                .collect();
            if seen.insert(safe.clone()) {
                safe
            } else {
                let numbered = format!("{safe}-{}", i + 1);
                seen.insert(numbered.clone());
                numbered
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::live::{Api, LiveConfig};

    fn model(name: &str) -> NamedModel {
        NamedModel {
            name: name.to_owned(),
            config: LiveConfig::new(Api::OpenAiChat, "http://h/v1", "m"),
            api_key_env: None,
            prices: None,
        }
    }

    #[test]
    fn names_made_safe_stay_apart() {
        let long = format!("openai-chat:{}@http://h", "x".repeat(60));
        assert_eq!(
            slugs(&[
                model("small"),
                model("small!"),
                model("small?"),
                model(&long)
            ]),
            [
                "small".to_owned(),
                "small_".to_owned(),
                "small_-3".to_owned(),
                format!("openai-chat_{}", "x".repeat(36)),
            ]
        );
    }
}

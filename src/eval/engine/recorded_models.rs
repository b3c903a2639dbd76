//! The models an earlier evaluation ran, which `--resume` and `--rerun-failed` apply again: the
//! `--model`s its run's header records, or the models a matrix's results name. Others given are
//! refused, since rows of two matrices would mix.

use std::path::Path;

use super::EvalError;
use crate::eval::read_results;
use crate::eval::store::{list_runs, read_header};

/// The `--model`s the newest run in `out` was given (none when it has no run, or ran each task's
/// own model).
pub(super) fn of_newest_run(out: &Path) -> Vec<String> {
    let Ok(ids) = list_runs(out) else {
        return Vec::new();
    };
    ids.last()
        .and_then(|newest| read_header(out, newest).ok())
        .map(|header| header.models)
        .unwrap_or_default()
}

/// The models of a matrix's results at `path`, in the order their rows first name them (none
/// unless its rows name two or more, or when it cannot be read: reading it later says why).
pub(super) fn of_matrix_results(path: &Path) -> Vec<String> {
    let Ok(results) = read_results(path) else {
        return Vec::new();
    };
    let mut models: Vec<String> = Vec::new();
    for row in &results.tasks {
        if let Some(model) = row.given_model()
            && !models.iter().any(|m| m == model)
        {
            models.push(model.to_owned());
        }
    }
    if models.len() > 1 { models } else { Vec::new() }
}

/// The models to run: those `given`, or when none were, those `recorded`. Refuses `given` models
/// other than the recorded ones, naming both.
pub(super) fn choose(
    flag: &str,
    given: &[String],
    recorded: Vec<String>,
) -> Result<Vec<String>, EvalError> {
    if given.is_empty() {
        return Ok(recorded);
    }
    if recorded.is_empty() || recorded == given {
        return Ok(given.to_vec());
    }
    Err(EvalError::flags(format!(
        "{flag} continues an evaluation of {}, this eval has {}: give the same --model flags in the same order, or none to use the recorded ones",
        list(&recorded),
        list(given)
    )))
}

fn list(models: &[String]) -> String {
    models
        .iter()
        .map(|m| format!("--model {m}"))
        .collect::<Vec<_>>()
        .join(" ")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn names(list: &[&str]) -> Vec<String> {
        list.iter().map(|s| (*s).to_owned()).collect()
    }

    #[test]
    fn the_recorded_models_serve_when_none_are_given_and_others_are_refused() {
        assert_eq!(
            choose("--resume", &[], names(&["a", "b"])).unwrap(),
            names(&["a", "b"])
        );
        assert_eq!(
            choose("--resume", &names(&["a", "b"]), names(&["a", "b"])).unwrap(),
            names(&["a", "b"])
        );
        assert_eq!(
            choose("--resume", &names(&["a"]), Vec::new()).unwrap(),
            names(&["a"])
        );
        let refused = choose("--resume", &names(&["a", "c"]), names(&["a", "b"]))
            .unwrap_err()
            .to_string();
        assert!(refused.contains("--model a --model b"), "{refused}");
        assert!(refused.contains("--model a --model c"), "{refused}");
    }
}

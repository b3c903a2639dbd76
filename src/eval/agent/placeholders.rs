//! The placeholders of an agent command's strings: `{prompt}`, `{model}`, `{base_url}`,
//! `{proxy_url}`, `{task_id}`, `{run_id}`, `{workdir}`; `{{` and `}}` are braces. Names are
//! checked when the suite loads, so a typo is the suite's problem, not an agent that runs with
//! `{promt}` in its arguments.

/// The names a string may hold.
pub const NAMES: [&str; 7] = [
    "prompt",
    "model",
    "base_url",
    "proxy_url",
    "task_id",
    "run_id",
    "workdir",
];

/// One attempt's values of the placeholders.
#[derive(Clone, Debug, Default)]
pub struct Values {
    /// The task's prompt.
    pub prompt: String,
    /// The model's name, as the upstream knows it.
    pub model: String,
    /// The proxy's base URL in the model's API (`http://127.0.0.1:PORT/v1` for OpenAI's).
    pub base_url: String,
    /// The proxy's origin, `http://127.0.0.1:PORT`.
    pub proxy_url: String,
    /// The task's id.
    pub task_id: String,
    /// The run's id.
    pub run_id: String,
    /// The working folder.
    pub workdir: String,
}

impl Values {
    fn get(&self, name: &str) -> Option<&str> {
        Some(match name {
            "prompt" => &self.prompt,
            "model" => &self.model,
            "base_url" => &self.base_url,
            "proxy_url" => &self.proxy_url,
            "task_id" => &self.task_id,
            "run_id" => &self.run_id,
            "workdir" => &self.workdir,
            _ => return None,
        })
    }
}

/// The pieces of a template: text, and names between braces.
enum Piece<'a> {
    Text(&'a str),
    Name(&'a str),
}

/// Splits `template` into pieces, or says what is wrong with its braces.
fn pieces(template: &str) -> Result<Vec<Piece<'_>>, String> {
    let mut found = Vec::new();
    let mut rest = template;
    loop {
        let Some(at) = rest.find(['{', '}']) else {
            found.push(Piece::Text(rest));
            return Ok(found);
        };
        found.push(Piece::Text(&rest[..at]));
        let tail = &rest[at..];
        if tail.starts_with("{{") || tail.starts_with("}}") {
            found.push(Piece::Text(&tail[..1]));
            rest = &tail[2..];
        } else if tail.starts_with('}') {
            return Err(format!(
                "{template:?} closes `}}` without opening it (write `}}}}` for a brace)"
            ));
        } else {
            let Some(end) = tail.find('}') else {
                return Err(format!(
                    "{template:?} opens `{{` without closing it (write `{{{{` for a brace)"
                ));
            };
            found.push(Piece::Name(&tail[1..end]));
            rest = &tail[end + 1..];
        }
    }
}

/// Checks that `template` names only known placeholders.
pub fn check(template: &str) -> Result<(), String> {
    for piece in pieces(template)? {
        if let Piece::Name(name) = piece
            && !NAMES.contains(&name)
        {
            return Err(format!(
                "unknown placeholder `{{{name}}}` in {template:?}; known: {}",
                NAMES.map(|n| format!("{{{n}}}")).join(", ")
            ));
        }
    }
    Ok(())
}

/// `template` with its placeholders replaced; a checked template has only known names (an
/// unknown one is left as written).
pub fn fill(template: &str, values: &Values) -> String {
    let Ok(pieces) = pieces(template) else {
        return template.to_owned();
    };
    let mut out = String::with_capacity(template.len());
    for piece in pieces {
        match piece {
            Piece::Text(text) => out.push_str(text),
            Piece::Name(name) => match values.get(name) {
                Some(value) => out.push_str(value),
                None => {
                    out.push('{');
                    out.push_str(name);
                    out.push('}');
                }
            },
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn placeholders_are_filled_and_braces_escaped() {
        let values = Values {
            prompt: "fix {it}".to_owned(),
            model: "gpt".to_owned(),
            ..Values::default()
        };
        assert_eq!(
            fill("-t {prompt} -m openai/{model}", &values),
            "-t fix {it} -m openai/gpt"
        );
        assert_eq!(fill("{{literal}} {model}", &values), "{literal} gpt");
        assert!(check("{prompt} {workdir} {{x}}").is_ok());
    }

    #[test]
    fn unknown_names_and_lone_braces_are_refused() {
        let unknown = check("{promt}").unwrap_err();
        assert!(
            unknown.contains("unknown placeholder `{promt}`"),
            "{unknown}"
        );
        assert!(check("{prompt").unwrap_err().contains("without closing"));
        assert!(check("a } b").unwrap_err().contains("without opening"));
    }
}

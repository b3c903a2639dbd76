//! From a task as written ([`TaskSpec`]) to a task to run ([`SuiteTask`]): the suite's defaults
//! applied, and what a schema cannot say checked by hand: replay sources that are readable,
//! full-capture recordings inside the suite's folder, finish-gate programs found there, and the
//! variables live models read their keys from.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use super::agent::agent_command;
use super::spec::{
    ActionKind, ActionSpec, ChatSpec, DefaultsSpec, ExpectSpec, FinishGateSpec, ModelSpec, TaskSpec,
};
use super::task::{DEFAULT_MAX_STEPS, Expectations, ModelName, SuiteTask, TaskId, TaskModel};
use crate::agent::Limits;
use crate::eval::RunSource;
use crate::eval::agent::AgentCommand;
use crate::eval::model_spec::{NamedModel, resolve_spec};
use crate::eval::scorers::{CheckCache, Checks, Scorer, ScorerSpec};
use crate::eval::scripted_action::ScriptedAction;
use crate::gate::{CommandGate, CommandGateConfig};
use crate::model::live::{Api, LiveConfig, api_key_from_env};
use crate::replay::ReplayModel;
use crate::run::Finish;
use crate::trace::{Capture, ReadOptions, read_trace};

/// The problem of a task with no model where nothing else gives one.
pub const MISSING_MODEL: &str = "missing key `model` (give the task a `model`, the suite a `defaults.model`, or eval --model SPEC)";

pub use super::problem::Problem;

/// The suite's folder and its defaults: what every task is resolved against.
#[derive(Clone, Debug)]
pub struct Context {
    /// The folder relative paths start from, as given.
    pub base_dir: PathBuf,
    /// The same, resolved (`None` when it cannot be).
    pub canonical_base: Option<PathBuf>,
    /// `defaults.max_steps`.
    pub max_steps: Option<u32>,
    /// `defaults.capture`, else summary.
    pub capture: Capture,
    /// `defaults.finish_gate`, resolved.
    pub finish_gate: Option<CommandGate>,
    /// `defaults.max_total_tokens` and `defaults.max_seconds`.
    pub limits: Limits,
    /// The suite's `models` section.
    pub models: Arc<BTreeMap<String, NamedModel>>,
    /// `defaults.model`, resolved.
    pub default_model: Option<NamedModel>,
    /// Whether the evaluation gives every task its model (`eval --model`): a task may then have
    /// none of its own.
    pub models_given: bool,
    /// `defaults.expect`, under every task's own: its plain expectations, and its answer and
    /// run checks (built into each task's scorers).
    pub expect: Arc<(Expectations, Checks)>,
    /// `defaults.scorers`, built.
    pub scorers: Vec<Arc<dyn Scorer>>,
    /// Answer checks compiled so far, shared by the tasks.
    pub check_cache: Arc<Mutex<CheckCache>>,
    /// `defaults.agent`, checked.
    pub agent: Option<Arc<AgentCommand>>,
}

impl Context {
    /// The context of a suite in `base_dir` with `defaults`.
    pub fn new(base_dir: &Path, defaults: DefaultsSpec) -> Context {
        Context::with_models(base_dir, defaults, BTreeMap::new(), false).0
    }

    /// The context of a suite in `base_dir` with `defaults` and a `models` section; `models_given`
    /// when the evaluation gives every task its model. Also the problems of the defaults' model,
    /// expectations and scorers.
    pub fn with_models(
        base_dir: &Path,
        mut defaults: DefaultsSpec,
        models: BTreeMap<String, NamedModel>,
        models_given: bool,
    ) -> (Context, Vec<Problem>) {
        let mut problems = Vec::new();
        let expect = defaults.expect.take();
        let scorers = defaults.scorers.take();
        let model = defaults.model.take();
        let agent = defaults.agent.take();
        let mut context = Context::plain(base_dir, defaults);
        if let Some(spec) = agent {
            match agent_command(spec, "$.defaults.agent", &context.base()) {
                Ok(agent) => context.agent = Some(Arc::new(agent)),
                Err(found) => problems.extend(found),
            }
        }
        context.models = Arc::new(models);
        context.models_given = models_given;
        if let Some(spec) = model {
            match resolve_spec(&spec, &context.models, None) {
                Ok(model) => context.default_model = Some(model),
                Err(message) => problems.push(("$.defaults.model".to_owned(), message)),
            }
        }
        if let Some(expect) = expect {
            context.expect = Arc::new(expectations(expect, &Default::default()));
        }
        if let Some(specs) = scorers {
            match context.scorers(&specs, "$.defaults.scorers") {
                Ok(built) => context.scorers = built,
                Err(found) => problems.extend(found),
            }
        }
        (context, problems)
    }

    fn plain(base_dir: &Path, defaults: DefaultsSpec) -> Context {
        let canonical_base = base_dir.canonicalize().ok();
        let mut context = Context {
            models: Arc::default(),
            default_model: None,
            models_given: false,
            expect: Arc::default(),
            scorers: Vec::new(),
            check_cache: Arc::default(),
            agent: None,
            base_dir: base_dir.to_path_buf(),
            canonical_base,
            max_steps: defaults.max_steps,
            capture: defaults.capture.unwrap_or(Capture::Summary),
            finish_gate: None,
            limits: Limits {
                max_total_tokens: defaults.max_total_tokens,
                max_seconds: defaults.max_seconds,
            },
        };
        if let Some(gate) = defaults.finish_gate {
            context.finish_gate = Some(context.gate(gate));
        }
        context
    }

    /// Whether a task without a `model` gets one: `defaults.model`, or `eval --model`.
    pub fn model_given(&self) -> bool {
        self.models_given || self.default_model.is_some()
    }

    /// The suite's folder, resolved where it can be.
    pub fn base(&self) -> PathBuf {
        self.canonical_base
            .clone()
            .unwrap_or_else(|| self.base_dir.clone())
    }

    /// A file named relative to the suite that must stay inside its folder (no absolute path, no
    /// `..` or link leading out): its path as given under the folder, and resolved.
    pub fn inside(&self, relative: &str) -> Result<(PathBuf, PathBuf), String> {
        if Path::new(relative).is_absolute() {
            return Err(format!(
                "{relative:?} must be relative to the suite's folder"
            ));
        }
        let joined = self.base_dir.join(relative);
        let canonical = joined
            .canonicalize()
            .map_err(|err| format!("cannot read {relative:?}: {err}"))?;
        match &self.canonical_base {
            Some(base) if canonical.starts_with(base) => Ok((joined, canonical)),
            _ => Err(format!("{relative:?} leads outside the suite's folder")),
        }
    }

    /// A finish gate as written, its program resolved against the suite's folder.
    fn gate(&self, spec: FinishGateSpec) -> CommandGate {
        let mut config = CommandGateConfig::new(spec.command);
        if let Some(seconds) = spec.timeout_s {
            config.timeout_s = seconds;
        }
        if let Some(bytes) = spec.max_output_bytes {
            config.max_output_bytes = usize::try_from(bytes).unwrap_or(usize::MAX);
        }
        let base = self.base();
        let program = Path::new(&config.command[0]);
        let program = if program.to_string_lossy().contains('/') {
            base.join(program)
        } else {
            program.to_path_buf()
        };
        CommandGate::new(config).with_program(program).in_dir(base)
    }

    /// `scorers`, each built (programs resolved against the suite's folder, judges' models
    /// against `models`); names must be distinct.
    fn scorers(
        &self,
        specs: &[ScorerSpec],
        path: &str,
    ) -> Result<Vec<Arc<dyn Scorer>>, Vec<Problem>> {
        let mut problems = Vec::new();
        let mut names = std::collections::HashSet::new();
        let mut built = Vec::new();
        for (i, spec) in specs.iter().enumerate() {
            let name = spec.name();
            let scorer = if names.insert(name.clone()) {
                spec.build(&self.base(), &self.models)
            } else {
                Err(format!(
                    "another scorer is named {name:?}: give each a distinct `name`"
                ))
            };
            match scorer {
                Ok(scorer) => built.push(scorer),
                Err(message) => problems.push((format!("{path}[{i}]"), message)),
            }
        }
        if problems.is_empty() {
            Ok(built)
        } else {
            Err(problems)
        }
    }

    /// The task to run from `spec`, or every problem the schema could not see, under `path`.
    pub fn task(&self, spec: TaskSpec, path: &str) -> Result<SuiteTask, Vec<Problem>> {
        let mut problems = Vec::new();
        let id = TaskId::parse_owned(spec.id)
            .map_err(|message| problems.push((format!("{path}.id"), message)))
            .ok();
        let (model, model_name) = match (spec.model, &self.default_model) {
            (Some(model), _) => (
                self.model(model, path)
                    .map_err(|problem| problems.push(problem))
                    .ok(),
                None,
            ),
            (None, Some(named)) => (
                Some(TaskModel::named(named)),
                Some(ModelName {
                    given: named.name.clone(),
                    slug: None,
                }),
            ),
            (None, None) if self.models_given => (Some(TaskModel::Unset), None),
            (None, None) => {
                problems.push((path.to_owned(), MISSING_MODEL.to_owned()));
                (None, None)
            }
        };
        let (mut expect, checks) = expectations(spec.expect.unwrap_or_default(), &self.expect);
        // Most tasks have no such check: the shared cache is then not locked.
        let options_only = Checks {
            ignore_case: checks.ignore_case,
            normalize_whitespace: checks.normalize_whitespace,
            ..Checks::default()
        };
        if checks != options_only {
            let mut cache = self
                .check_cache
                .lock()
                .unwrap_or_else(PoisonError::into_inner);
            match checks.scorers(&mut cache) {
                Ok(checks) => expect.scorers = checks,
                Err(found) => problems.extend(
                    found
                        .into_iter()
                        .map(|(key, message)| (format!("{path}.expect.{key}"), message)),
                ),
            }
        }
        match spec.scorers {
            Some(specs) => match self.scorers(&specs, &format!("{path}.scorers")) {
                Ok(built) => expect.scorers.extend(built),
                Err(found) => problems.extend(found),
            },
            None => expect.scorers.extend(self.scorers.iter().cloned()),
        }
        let agent = self.agent_of(spec.agent, path, model.as_ref(), spec.finish_gate.is_some());
        let agent = agent.map_err(|found| problems.extend(found)).ok().flatten();
        let (Some(id), Some(model)) = (id, model) else {
            return Err(problems);
        };
        if !problems.is_empty() {
            return Err(problems);
        }
        let (prompt, recorded_steps) = match &model {
            TaskModel::Replay { run, path: file } => {
                let replay = run.model(file).ok();
                let recorded = replay.as_ref().map(|m| m.task().prompt.clone());
                (spec.prompt.or(recorded), replay.and_then(|m| m.max_steps()))
            }
            _ => (spec.prompt, None),
        };
        let Some(prompt) = prompt else {
            // The schema requires it of every task but replay ones.
            return Err(vec![(path.to_owned(), "missing key `prompt`".to_owned())]);
        };
        Ok(SuiteTask {
            id,
            prompt,
            // A replay keeps its recorded budget unless the task itself sets one.
            max_steps: spec
                .max_steps
                .or(recorded_steps)
                .or(self.max_steps)
                .unwrap_or(DEFAULT_MAX_STEPS),
            model,
            expect,
            // An agent's finishes are its own: no finish gate checks them.
            finish_gate: match spec.finish_gate {
                _ if agent.is_some() => None,
                Some(gate) => Some(self.gate(gate)),
                None => self.finish_gate.clone(),
            },
            limits: Limits {
                max_total_tokens: spec.max_total_tokens.or(self.limits.max_total_tokens),
                max_seconds: spec.max_seconds.or(self.limits.max_seconds),
            },
            model_name,
            agent,
        })
    }

    /// The task's agent command (its own, else `defaults.agent`): its model must be a live one,
    /// which names the server the agent's calls go to, and it takes no finish gate.
    fn agent_of(
        &self,
        spec: Option<super::spec::AgentSpec>,
        path: &str,
        model: Option<&TaskModel>,
        gated: bool,
    ) -> Result<Option<Arc<AgentCommand>>, Vec<Problem>> {
        let agent = match spec {
            Some(spec) => Arc::new(agent_command(spec, &format!("{path}.agent"), &self.base())?),
            None => match &self.agent {
                Some(agent) => Arc::clone(agent),
                None => return Ok(None),
            },
        };
        let mut problems = Vec::new();
        if let Some(model) =
            model.filter(|m| !matches!(m, TaskModel::Chat { .. } | TaskModel::Unset))
        {
            problems.push((
                format!("{path}.model"),
                format!(
                    "an agent task's model is the live model its agent calls (`chat`, a name from `models`, or eval --model), not `{}`",
                    model.kind()
                ),
            ));
        }
        if gated {
            problems.push((
                format!("{path}.finish_gate"),
                "an agent task takes no finish gate: its agent decides when it is done; check its work with a `command` scorer".to_owned(),
            ));
        }
        if problems.is_empty() {
            Ok(Some(agent))
        } else {
            Err(problems)
        }
    }

    /// The model of the task at `task_path`.
    fn model(&self, spec: ModelSpec, task_path: &str) -> Result<TaskModel, Problem> {
        // Held until the task runs: no spare capacity (a list read from text grows by doubling,
        // and collecting in place would keep the larger specs' buffer).
        if let Some(mut responses) = spec.responses {
            responses.shrink_to_fit();
            return Ok(TaskModel::Responses(responses));
        }
        if let Some(actions) = spec.actions {
            let mut held = Vec::with_capacity(actions.len());
            held.extend(actions.into_iter().map(action));
            return Ok(TaskModel::Actions(held));
        }
        let path = &format!("{task_path}.model");
        if let Some(chat) = spec.chat {
            return chat_model(chat, path);
        }
        match spec.replay {
            Some(file) => self.replay(file, spec.run_id, spec.occurrence, path),
            None => Err((
                path.to_owned(),
                "expected one of `responses`, `actions`, `replay` or `chat`".to_owned(),
            )),
        }
    }

    /// Resolves and reads a replay source; it must stay inside the suite's folder.
    fn replay(
        &self,
        file: String,
        run_id: Option<String>,
        occurrence: Option<u32>,
        path: &str,
    ) -> Result<TaskModel, Problem> {
        let replay_path = format!("{path}.replay");
        let at = |message: String| (replay_path.clone(), message);
        let (resolved, canonical) = self.inside(&file).map_err(at)?;
        // Opening a named pipe would wait for a writer forever: only regular files are read.
        let meta = std::fs::metadata(&canonical)
            .map_err(|err| at(format!("cannot read {file:?}: {err}")))?;
        if meta.is_dir() {
            return Err(at(format!("{file:?} is a folder, not a trace file")));
        }
        if let Some(what) = crate::output::special_kind(meta.file_type()) {
            return Err(at(format!("{file:?} is {what}, not a regular file")));
        }
        let contents = read_trace(&canonical, ReadOptions::default())
            .map_err(|err| at(format!("cannot read {file:?}: {err}")))?;
        let run = match run_id {
            Some(id) => match contents.occurrence(&id, occurrence.unwrap_or(1)) {
                Some(run) => run.clone(),
                None => {
                    let problem = match occurrence {
                        Some(n) if contents.run(&id).is_some() => {
                            format!("{file:?} has no {} run {id:?}", crate::trace::ordinal(n))
                        }
                        _ => format!("no run {id:?} in {file:?}"),
                    };
                    return Err((format!("{path}.run_id"), problem));
                }
            },
            None => match contents.runs.as_slice() {
                [only] => only.clone(),
                runs => {
                    return Err((
                        path.to_owned(),
                        format!("{file:?} holds {} runs: name one with `run_id`", runs.len()),
                    ));
                }
            },
        };
        ReplayModel::from_run(&run).map_err(|err| at(err.to_string()))?;
        Ok(TaskModel::Replay {
            path: resolved,
            run: RunSource::Held(Arc::new(run)),
        })
    }
}

/// A scripted action as the task holds it; the schema has checked that its keys fit its `type`.
fn action(spec: ActionSpec) -> ScriptedAction {
    match spec.kind {
        ActionKind::ToolCall => ScriptedAction::ToolCall {
            tool_name: spec.tool_name.unwrap_or_default(),
            arguments: spec.arguments.unwrap_or_else(no_arguments),
        },
        ActionKind::Finish => ScriptedAction::Finish(Finish {
            answer: spec.answer.unwrap_or_default(),
        }),
    }
}

/// `{}`.
fn no_arguments() -> Box<serde_json::value::RawValue> {
    serde_json::value::RawValue::from_string("{}".to_owned()).expect("`{}` is JSON")
}

/// `"chat": {...}`: a live model server; a named key variable must be set.
fn chat_model(spec: ChatSpec, path: &str) -> Result<TaskModel, Problem> {
    let path = format!("{path}.chat");
    let api = Api::parse(&spec.api)
        .ok_or_else(|| (format!("{path}.api"), format!("unknown api {:?}", spec.api)))?;
    api_key_from_env(spec.api_key_env.as_deref())
        .map_err(|message| (format!("{path}.api_key_env"), message))?;
    let mut config = LiveConfig::new(api, spec.base_url, spec.model);
    config.temperature = spec.temperature;
    config.max_output_tokens = spec.max_output_tokens;
    if let Some(retries) = spec.max_retries {
        config.max_retries = retries;
    }
    if let Some(seconds) = spec.timeout_s {
        config.timeout = Duration::from_secs_f64(seconds.min(1e9));
    }
    if let Some(seconds) = spec.retry_budget_s {
        config.retry_budget = Duration::from_secs_f64(seconds.min(1e9));
    }
    config.system = spec.system;
    Ok(TaskModel::Chat {
        config: Box::new(config),
        api_key_env: spec.api_key_env,
        prices: None,
    })
}

/// A task's `expect` over the suite's `defaults.expect`: each key the task gives wins. The
/// answer and run checks come apart, for the caller to build into scorers.
fn expectations(
    spec: ExpectSpec,
    (defaults, default_checks): &(Expectations, Checks),
) -> (Expectations, Checks) {
    let basic = spec.basic;
    let checks = spec.checks.over(default_checks);
    let expect = Expectations {
        exit_reason: basic.exit_reason.or(defaults.exit_reason),
        answer: basic.answer.or_else(|| defaults.answer.clone()),
        answer_contains: basic
            .answer_contains
            .or_else(|| defaults.answer_contains.clone()),
        max_steps_used: basic.max_steps_used.or(defaults.max_steps_used),
        max_gate_rejections: basic.max_gate_rejections.or(defaults.max_gate_rejections),
        text: checks.text_options(),
        scorers: Vec::new(),
    };
    (expect, checks)
}

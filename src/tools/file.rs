//! The tools file (`docs/tools.md`, `schemas/tools.schema.json`): command tools, the bash builtin
//! and MCP servers, with the working folder and environment they run in. The shipped schema is
//! the file's one definition: it is checked first and every violation is reported with its JSON
//! path; typed structs then read what passed, and only what a schema cannot say (unique names,
//! programs that exist, a template folder that exists) is checked by hand.

use std::collections::BTreeMap;
use std::ffi::OsString;
use std::fmt;
use std::path::{Path, PathBuf};
use std::sync::OnceLock;

use serde::Deserialize;
use serde_json::Value;

use super::kinds::{BashTool, CommandTool};
use super::mcp::McpServers;
use super::provider::{ToolContext, ToolFailure};
use super::registry::ToolRegistry;
use super::workdir;
use crate::json_error::path_from_pointer;

pub use crate::process::BASE_ENV;

const SCHEMA: &str = include_str!("../../schemas/tools.schema.json");

/// The `error_kind` of a task whose tools could not all be registered: a server's tool whose name
/// is taken or breaks the naming rule, or whose schema is not a JSON Schema. Only servers can
/// cause it (the file's own tools are checked when it loads), and `looptrace tools` reports it
/// as bad input.
pub const TOOL_NAME_CLASH: &str = "tool_name_clash";

/// A command tool as written.
#[derive(Clone, Debug, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CommandToolConfig {
    /// The tool's name.
    pub name: String,
    /// What it does.
    #[serde(default)]
    pub description: Option<String>,
    /// The JSON Schema its arguments must satisfy.
    pub input_schema: Value,
    /// What a successful call returns.
    #[serde(default)]
    pub output_description: Option<String>,
    /// Which failures come back as error observations.
    #[serde(default)]
    pub error_description: Option<String>,
    /// The program and its arguments.
    pub command: Vec<String>,
    /// Fixed environment values for this tool.
    #[serde(default)]
    pub env: BTreeMap<String, String>,
    /// Seconds before its process group is killed.
    #[serde(default)]
    pub timeout_s: Option<u64>,
    /// Bytes of stdout kept (head and tail).
    #[serde(default)]
    pub max_output_bytes: Option<usize>,
}

/// The bash builtin as written.
#[derive(Clone, Debug, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct BashConfig {
    /// Always `bash`.
    pub builtin: String,
    /// Fixed environment values for the shell.
    #[serde(default)]
    pub env: BTreeMap<String, String>,
    /// Seconds before its process group is killed.
    #[serde(default)]
    pub timeout_s: Option<u64>,
    /// Bytes of output kept (head and tail).
    #[serde(default)]
    pub max_output_bytes: Option<usize>,
}

/// An MCP server as written, with its program resolved.
#[derive(Clone, Debug, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct McpServerConfig {
    /// The server's name (logs are `mcp-<name>.log`).
    pub name: String,
    /// The program and its arguments; `{workdir}` in an argument is the task's working folder,
    /// `{toolsdir}` the tools file's folder.
    pub command: Vec<String>,
    /// Fixed environment values for the server.
    #[serde(default)]
    pub env: BTreeMap<String, String>,
    /// Seconds a start or a call may take before the server counts as hung.
    #[serde(default)]
    pub timeout_s: Option<u64>,
    /// Put before every tool name of the server.
    #[serde(default)]
    pub prefix: Option<String>,
    /// The program to start: `command[0]`, resolved against the tools file's folder when it
    /// holds a `/`.
    #[serde(skip)]
    pub program: PathBuf,
    /// The JSON path of this entry, for messages.
    #[serde(skip)]
    pub json_path: String,
}

impl McpServerConfig {
    /// Where the server's stderr goes when logs are kept in `dir`.
    pub fn log_path(&self, dir: &Path) -> PathBuf {
        dir.join(format!("mcp-{}.log", self.name))
    }
}

impl McpServerConfig {
    /// Whether the server depends on the task's working folder, so it starts once per task
    /// rather than once per suite.
    pub fn per_task(&self) -> bool {
        let uses = |s: &String| s.contains("{workdir}");
        self.command.iter().any(uses) || self.env.values().any(uses)
    }
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawWorkdir {
    template: String,
}

/// A loaded, checked tools file.
#[derive(Clone, Debug)]
pub struct ToolsFile {
    /// The file it was read from; `None` inline in a suite.
    path: Option<PathBuf>,
    folder: PathBuf,
    template: Option<PathBuf>,
    template_hash: Option<String>,
    env_names: Vec<String>,
    /// Every variable name the file passes on or sets (`env` lists and maps), with its JSON path.
    env_entries: Vec<(String, String)>,
    command_tools: Vec<CommandTool>,
    bash: Option<BashTool>,
    mcp_servers: Vec<McpServerConfig>,
}

/// Every problem found in a tools file, each with its JSON path.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ToolsFileError {
    /// The file as the user named it (or the suite holding the tools inline).
    pub file: String,
    /// `(JSON path, what is wrong)`.
    pub problems: Vec<(String, String)>,
}

impl fmt::Display for ToolsFileError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        crate::text::write_problems(f, "tools file", &self.file, &self.problems)
    }
}

impl std::error::Error for ToolsFileError {}

impl ToolsFile {
    /// Reads and checks the tools file at `path`.
    pub fn load(path: &Path) -> Result<ToolsFile, ToolsFileError> {
        let file = path.display().to_string();
        let fail = |message: String| ToolsFileError {
            file: file.clone(),
            problems: vec![("$".to_owned(), message)],
        };
        let text = std::fs::read_to_string(path)
            .map_err(|err| fail(format!("failed to read the file: {err}")))?;
        let value: Value = serde_json::from_str(&text).map_err(|err| {
            fail(format!(
                "invalid JSON at line {}, column {}: {}",
                err.line(),
                err.column(),
                crate::json_error::describe_plain(&err)
            ))
        })?;
        let folder = match path.parent() {
            Some(p) if !p.as_os_str().is_empty() => p,
            _ => Path::new("."),
        };
        let mut tools = ToolsFile::from_value(&value, folder, "$")
            .map_err(|problems| ToolsFileError { file, problems })?;
        tools.path = Some(path.to_path_buf());
        Ok(tools)
    }

    /// The file the tools were read from (an input that nothing may write over); `None` when they
    /// were given inline in a suite.
    pub fn path(&self) -> Option<&Path> {
        self.path.as_deref()
    }

    /// Checks a tools file's JSON `value` whose paths resolve against `folder`; problems are
    /// reported under `root` (`$` for a file, `$.tools` inline in a suite).
    pub fn from_value(
        value: &Value,
        folder: &Path,
        root: &str,
    ) -> Result<ToolsFile, Vec<(String, String)>> {
        let mut check = Checker {
            root,
            problems: schema()
                .iter_errors(value)
                .map(|err| {
                    (
                        path_from_pointer(root, err.instance_path().as_str()),
                        err.to_string(),
                    )
                })
                .collect(),
            flawed: Vec::new(),
            folder: folder
                .canonicalize()
                .unwrap_or_else(|_| folder.to_path_buf()),
            search_path: std::env::var_os("PATH").unwrap_or_default(),
            names: BTreeMap::from([(
                "calculator".to_owned(),
                "the built-in calculator".to_owned(),
            )]),
        };
        // The hand-written checks still look at every entry the schema passed, so one run
        // reports every problem.
        check.flawed = check
            .problems
            .iter()
            .map(|(path, _)| path.clone())
            .collect();
        let Some(object) = value.as_object() else {
            return Err(check.problems);
        };
        let entries = |key: &str| match object.get(key) {
            Some(Value::Array(items)) => items.as_slice(),
            _ => &[],
        };
        let (template, template_hash) = match object.get("workdir") {
            Some(workdir) => check.workdir(workdir),
            None => (None, None),
        };
        let env_names = entries("env")
            .iter()
            .filter_map(|v| v.as_str().map(str::to_owned))
            .collect();
        let env_entries =
            check.env_entries(entries("env"), entries("tools"), entries("mcp_servers"));
        for (path, message) in crate::secrets::refuse_forbidden_names(
            env_entries
                .iter()
                .map(|(path, name)| (path.clone(), name.as_str())),
            &[],
        ) {
            check.problem(path, message);
        }
        let mut command_tools = Vec::new();
        let mut bash = None;
        for (i, entry) in entries("tools").iter().enumerate() {
            match check.tool(i, entry) {
                Some(Tool::Command(tool)) => command_tools.push(tool),
                Some(Tool::Bash(tool)) => bash = Some(tool),
                None => {}
            }
        }
        let mut mcp_servers = Vec::new();
        for (i, entry) in entries("mcp_servers").iter().enumerate() {
            if let Some(server) = check.server(i, entry, &mcp_servers) {
                mcp_servers.push(server);
            }
        }
        if !check.problems.is_empty() {
            return Err(check.problems);
        }
        Ok(ToolsFile {
            path: None,
            folder: check.folder,
            template,
            template_hash,
            env_names,
            env_entries,
            command_tools,
            bash,
            mcp_servers,
        })
    }

    /// The folder the tools file is in: tools run there when there is no template.
    pub fn folder(&self) -> &Path {
        &self.folder
    }

    /// The working-folder template, if any.
    pub fn template(&self) -> Option<&Path> {
        self.template.as_deref()
    }

    /// `sha256:HEX` of the template's content (paths, file bytes, executable bits).
    pub fn template_hash(&self) -> Option<&str> {
        self.template_hash.as_deref()
    }

    /// The MCP servers as written.
    pub fn mcp_servers(&self) -> &[McpServerConfig] {
        &self.mcp_servers
    }

    /// Where the MCP servers' logs go when logs are kept in `dir`.
    pub fn log_paths(&self, dir: &Path) -> Vec<PathBuf> {
        self.mcp_servers().iter().map(|s| s.log_path(dir)).collect()
    }

    /// The environment every tool gets: the allow-list, read from ours now.
    pub fn allowed_env(&self) -> Vec<(OsString, OsString)> {
        crate::process::allowed_env(self.env_names.iter().map(String::as_str))
    }

    /// The names the file's `env` allow-list passes on, beside [`BASE_ENV`].
    pub fn env_names(&self) -> &[String] {
        &self.env_names
    }

    /// Refuses a file whose `env` allow-list or fixed `env` values name a variable an API key
    /// is read from (`key_vars`: `--api-key-env` and every model's `api_key_env`): every such
    /// entry, with its JSON path. The hash key is refused when the file loads.
    pub fn refuse_key_vars(&self, key_vars: &[String]) -> Result<(), String> {
        let refused = crate::secrets::refuse_forbidden_names(
            self.env_entries
                .iter()
                .map(|(path, name)| (path.clone(), name.as_str())),
            key_vars,
        );
        if refused.is_empty() {
            return Ok(());
        }
        let place = self.path.as_deref().map_or_else(
            || "the tools file".to_owned(),
            |p| format!("`{}`", p.display()),
        );
        let lines: Vec<String> = refused
            .into_iter()
            .map(|(path, message)| format!("{place}: {path}: {message}"))
            .collect();
        Err(lines.join("\n"))
    }

    /// Makes `dir` the fresh working folder of one task: a copy of the template. Without a
    /// template, tasks run in the tools file's folder and `dir` is not made.
    pub fn prepare_workdir(&self, dir: &Path) -> std::io::Result<PathBuf> {
        match &self.template {
            Some(template) => {
                workdir::copy_fresh(template, dir)?;
                dir.canonicalize()
            }
            None => Ok(self.folder.clone()),
        }
    }

    /// The context of a task whose working folder is `workdir`.
    pub fn context(&self, workdir: PathBuf, log_dir: Option<PathBuf>) -> ToolContext {
        ToolContext {
            workdir,
            tools_dir: self.folder.clone(),
            env: self.allowed_env(),
            log_dir,
        }
    }

    /// The registry of one task: the calculator, the command tools, bash and the tools of every
    /// MCP server, running in `context`. `Err` is a server that failed to start.
    pub fn registry(
        &self,
        context: &ToolContext,
        servers: &McpServers,
    ) -> Result<ToolRegistry, ToolFailure> {
        let mut registry = ToolRegistry::builtin();
        registry.record_spec_hashes();
        let register = |registry: &mut ToolRegistry, provider| {
            registry
                .register_provider(provider)
                .map_err(|err| ToolFailure::new(TOOL_NAME_CLASH, err.to_string()))
        };
        for tool in &self.command_tools {
            register(&mut registry, Box::new(tool.bind(context)))?;
        }
        if let Some(bash) = &self.bash {
            register(&mut registry, Box::new(bash.bind(context)))?;
        }
        for provider in servers.providers(context)? {
            register(&mut registry, provider)?;
        }
        Ok(registry)
    }
}

/// What the schema cannot say, checked entry by entry with the problems found so far.
struct Checker<'a> {
    root: &'a str,
    problems: Vec<(String, String)>,
    /// Paths the schema already found wrong: their entries are not read again.
    flawed: Vec<String>,
    folder: PathBuf,
    search_path: OsString,
    /// Tool names taken so far, with where.
    names: BTreeMap<String, String>,
}

enum Tool {
    Command(CommandTool),
    Bash(BashTool),
}

impl Checker<'_> {
    fn at(&self, pointer: &str) -> String {
        path_from_pointer(self.root, pointer)
    }

    /// Whether the schema found nothing wrong at or under `path`.
    fn clean(&self, path: &str) -> bool {
        let (field, item) = (format!("{path}."), format!("{path}["));
        !self
            .flawed
            .iter()
            .any(|f| f == path || f.starts_with(&field) || f.starts_with(&item))
    }

    fn problem(&mut self, path: String, message: impl Into<String>) {
        self.problems.push((path, message.into()));
    }

    /// An entry the schema passed, as its typed struct.
    fn read<T: serde::de::DeserializeOwned>(&mut self, path: &str, entry: &Value) -> Option<T> {
        if !self.clean(path) {
            return None;
        }
        serde_json::from_value(entry.clone())
            .map_err(|err| self.problem(path.to_owned(), err.to_string()))
            .ok()
    }

    /// Takes a tool name, or reports who has it.
    fn claim(&mut self, name: &str, path: String) {
        match self.names.get(name) {
            Some(first) => {
                let message = format!("the tool name {name:?} is already taken by {first}");
                self.problem(path, message);
            }
            None => {
                self.names.insert(name.to_owned(), path);
            }
        }
    }

    /// Every variable name in the allow-list (`env`) and in the tools' and servers' fixed `env`
    /// values, with its JSON path.
    fn env_entries(
        &self,
        allowed: &[Value],
        tools: &[Value],
        servers: &[Value],
    ) -> Vec<(String, String)> {
        let mut found: Vec<(String, String)> = allowed
            .iter()
            .enumerate()
            .filter_map(|(i, name)| {
                Some((self.at(&format!("/env/{i}")), name.as_str()?.to_owned()))
            })
            .collect();
        for (kind, entries) in [("tools", tools), ("mcp_servers", servers)] {
            for (i, entry) in entries.iter().enumerate() {
                if let Some(Value::Object(fixed)) = entry.get("env") {
                    found.extend(fixed.keys().map(|name| {
                        let pointer = format!(
                            "/{kind}/{i}/env/{}",
                            name.replace('~', "~0").replace('/', "~1")
                        );
                        (self.at(&pointer), name.clone())
                    }));
                }
            }
        }
        found
    }

    /// The template folder and its content hash.
    fn workdir(&mut self, value: &Value) -> (Option<PathBuf>, Option<String>) {
        let path = self.at("/workdir/template");
        let Some(workdir) = self.read::<RawWorkdir>(&self.at("/workdir"), value) else {
            return (None, None);
        };
        let template = self.folder.join(&workdir.template);
        if !template.is_dir() {
            self.problem(path, format!("no folder `{}`", template.display()));
            return (None, None);
        }
        match workdir::content_hash(&template) {
            Ok(hash) => (Some(template), Some(hash)),
            Err(err) => {
                self.problem(path, format!("cannot read it: {err}"));
                (None, None)
            }
        }
    }

    fn tool(&mut self, i: usize, entry: &Value) -> Option<Tool> {
        let path = self.at(&format!("/tools/{i}"));
        if entry.get("builtin").is_some() {
            let config: BashConfig = self.read(&path, entry)?;
            self.claim("bash", path.clone());
            let Some(program) = find_program(Path::new("bash"), &self.search_path) else {
                self.problem(path, "no program `bash` on PATH");
                return None;
            };
            return Some(Tool::Bash(BashTool::new(config, program, entry)));
        }
        let config: CommandToolConfig = self.read(&path, entry)?;
        self.claim(&config.name, format!("{path}.name"));
        if let Err(err) = jsonschema::validator_for(&config.input_schema) {
            let message = format!("not a valid JSON Schema: {err}");
            self.problem(format!("{path}.input_schema"), message);
        }
        match resolve_program(&config.command[0], &self.folder, &self.search_path) {
            Ok(program) => Some(Tool::Command(CommandTool::new(config, program, entry))),
            Err(message) => {
                self.problem(format!("{path}.command[0]"), message);
                None
            }
        }
    }

    fn server(
        &mut self,
        i: usize,
        entry: &Value,
        earlier: &[McpServerConfig],
    ) -> Option<McpServerConfig> {
        let path = self.at(&format!("/mcp_servers/{i}"));
        let mut server: McpServerConfig = self.read(&path, entry)?;
        if server.prefix.is_some() && earlier.iter().any(|s| s.prefix == server.prefix) {
            self.problem(
                format!("{path}.prefix"),
                "another server has the same prefix",
            );
        }
        if earlier.iter().any(|s| s.name == server.name) {
            let message = format!("another server is named {:?}", server.name);
            self.problem(format!("{path}.name"), message);
        }
        match resolve_program(&server.command[0], &self.folder, &self.search_path) {
            Ok(program) => server.program = program,
            Err(message) => self.problem(format!("{path}.command[0]"), message),
        }
        server.json_path = path;
        Some(server)
    }
}

/// The compiled tools-file schema.
fn schema() -> &'static jsonschema::Validator {
    static VALIDATOR: OnceLock<jsonschema::Validator> = OnceLock::new();
    VALIDATOR.get_or_init(|| {
        let schema: Value =
            serde_json::from_str(SCHEMA).expect("the shipped tools schema is valid JSON");
        jsonschema::validator_for(&schema).expect("the shipped tools schema compiles")
    })
}

/// The program `command[0]` names: a path with a `/` is relative to `folder` and must exist; a
/// bare name must be found on `PATH`.
fn resolve_program(name: &str, folder: &Path, search_path: &OsString) -> Result<PathBuf, String> {
    if name.contains('/') {
        let path = folder.join(name);
        if path.is_file() {
            Ok(path)
        } else {
            Err(format!("no program `{}`", path.display()))
        }
    } else {
        find_program(Path::new(name), search_path)
            .ok_or_else(|| format!("no program `{name}` on PATH"))
    }
}

fn find_program(name: &Path, search_path: &OsString) -> Option<PathBuf> {
    use std::os::unix::fs::PermissionsExt;
    std::env::split_paths(search_path)
        .map(|dir| dir.join(name))
        .find(|path| {
            path.metadata()
                .is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
        })
}

//! What each agent kind needs to start: its program (from the settings), command line,
//! environment, the state it keeps under HOME (writable in the sandbox), what it can and cannot
//! do, and a fresh adapter for each process. The registry asks this and nothing else, so a new
//! kind is a new arm here and an adapter.

use std::path::{Path, PathBuf};

use super::acp::AcpClient;
use super::adapter::{AgentAdapter, StatePath};
use super::claude::{self, ClaudeCode};
use super::codex::Codex;
use super::spawn::Arguments;
use crate::config::{AcpAgent, Settings};
use crate::domain::agent_kind::AgentKind;
use crate::domain::launch::CliOptions;
use crate::domain::validate::Transport;

/// Why an agent cannot be started.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum AgentError {
    /// No such agent (422).
    #[error("unknown agent {agent:?}: expected claude, codex, gemini{configured} (ACP agents are defined in the `acp_agents` setting)")]
    Unknown { agent: String, configured: String },
    /// Its CLI cannot be found (503).
    #[error("the {agent} CLI {program:?} cannot be found; install it or point {setting} at it")]
    Missing { agent: String, program: String, setting: String },
    /// What it needs beside its CLI cannot be prepared (503).
    #[error("the {agent} CLI cannot be started: {why}")]
    Unprepared { agent: String, why: String },
    /// The launch asks for something this agent cannot do (422).
    #[error("agent {agent} does not support {what}")]
    Unsupported { agent: String, what: String },
}

/// How to start one CLI of a kind (its environment is [`kind_env`], given with its enclosure).
pub struct AgentLaunch {
    pub program: String,
    /// A function of the wire (only Claude Code's differs by transport).
    pub arguments: Arguments,
}

/// The setting that names an agent's program, as its environment variable.
pub fn setting(kind: &AgentKind) -> String {
    match kind {
        AgentKind::Claude => "CONDUIT_CLI_PATH".to_string(),
        AgentKind::Codex => "CONDUIT_CODEX_PATH".to_string(),
        AgentKind::Gemini => "CONDUIT_GEMINI_PATH".to_string(),
        AgentKind::Acp(name) => format!("acp_agents.{name}.command"),
    }
}

/// Checks that the agent exists in these settings.
pub fn known(settings: &Settings, kind: &AgentKind) -> Result<(), AgentError> {
    acp_definition(settings, kind).map(|_| ())
}

fn acp_definition<'a>(settings: &'a Settings, kind: &AgentKind) -> Result<Option<&'a AcpAgent>, AgentError> {
    match kind {
        AgentKind::Acp(name) => settings.agents.acp.get(name).map(Some).ok_or_else(|| AgentError::Unknown {
            agent: name.clone(),
            configured: settings.agents.acp.keys().map(|k| format!(", {k}")).collect(),
        }),
        _ => Ok(None),
    }
}

/// The program as configured (a name on PATH or a path).
pub fn configured_program(settings: &Settings, kind: &AgentKind) -> Result<String, AgentError> {
    Ok(match kind {
        AgentKind::Claude => settings.cli_path.clone(),
        AgentKind::Codex => settings.agents.codex_path.clone(),
        AgentKind::Gemini => settings.agents.gemini_path.clone(),
        AgentKind::Acp(_) => acp_definition(settings, kind)?.map(|d| d.command.clone()).unwrap_or_default(),
    })
}

/// Finds the program on disk (blocking: run it on the blocking pool). Codex's npm wrapper is
/// resolved to the native binary it would start (a node process less, ~40 MiB).
pub fn locate(settings: &Settings, kind: &AgentKind) -> Result<PathBuf, AgentError> {
    let program = configured_program(settings, kind)?;
    let found = crate::process::executable::resolve(&program).ok_or_else(|| AgentError::Missing {
        agent: kind.to_string(),
        program: program.clone(),
        setting: setting(kind),
    })?;
    match kind {
        AgentKind::Codex => return Ok(codex_native(&found).unwrap_or(found)),
        AgentKind::Gemini => write_gemini_policy(settings).map_err(|e| AgentError::Unprepared {
            agent: kind.to_string(),
            why: format!("its policy file {} cannot be written: {e}", gemini_policy(settings).display()),
        })?,
        _ => {}
    }
    Ok(found)
}

/// Gemini CLI's policy engine lets some calls run without asking (read-only tools, shell
/// commands it deems safe). This admin-tier policy, given with `--admin-policy`, makes every
/// tool call ask, so every one reaches Conduit's rules; a rule with `argsPattern` is what
/// overrides the safe-command shortcut. Admin tier: the user's own policies cannot lower it.
const GEMINI_POLICY: &str = r#"# Written by Conduit: every Gemini CLI tool call asks, so Conduit's rules decide each.
[[rule]]
toolName = "*"
decision = "ask_user"
priority = 998

[[rule]]
toolName = "run_shell_command"
argsPattern = ".*"
decision = "ask_user"
priority = 999
"#;

/// Beside the database: read-only inside every sandbox (the agent cannot change it).
fn gemini_policy(settings: &Settings) -> PathBuf {
    let dir = settings.db_path.parent().map(Path::to_path_buf).unwrap_or_default();
    dir.join("agents").join("gemini-policy.toml")
}

fn write_gemini_policy(settings: &Settings) -> std::io::Result<()> {
    let path = gemini_policy(settings);
    if std::fs::read_to_string(&path).is_ok_and(|text| text == GEMINI_POLICY) {
        return Ok(());
    }
    if let Some(dir) = path.parent() {
        std::fs::create_dir_all(dir)?;
    }
    // Written whole, then renamed: a CLI starting meanwhile reads the old file or the new one.
    let partial = path.with_extension("toml.partial");
    std::fs::write(&partial, GEMINI_POLICY)?;
    std::fs::rename(&partial, &path)
}

/// `.../node_modules/@openai/codex/bin/codex.js` (or a link to it) -> the platform package's
/// `vendor/<target>/bin/codex`, where the wrapper would find it. `None`: not the wrapper, or
/// no native build beside it (the wrapper is then started as it is).
fn codex_native(found: &Path) -> Option<PathBuf> {
    let script = std::fs::canonicalize(found).ok()?;
    if script.file_name()? != "codex.js" {
        return None;
    }
    let package = script.parent()?.parent()?;
    let (target, platform) = match std::env::consts::ARCH {
        "x86_64" => ("x86_64-unknown-linux-musl", "codex-linux-x64"),
        "aarch64" => ("aarch64-unknown-linux-musl", "codex-linux-arm64"),
        _ => return None,
    };
    let candidates = [
        package.parent()?.join(platform),
        package.join("node_modules").join("@openai").join(platform),
        package.to_path_buf(),
    ];
    candidates
        .iter()
        .map(|root| root.join("vendor").join(target).join("bin").join("codex"))
        .find(|binary| binary.is_file())
}

/// What a CLI of `kind` is started with over the environment every child gets: the
/// environment the wrapper would have given the native Codex binary (it reports how it was
/// installed), Gemini CLI's (no relaunch: it would start itself a second time), an ACP agent's
/// `env`, Claude Code's session access token.
pub fn kind_env(settings: &Settings, kind: &AgentKind, program: &Path) -> Vec<(String, String)> {
    let pair = |k: &str, v: &str| (k.to_string(), v.to_string());
    match kind {
        AgentKind::Claude => settings
            .cli_session_access_token
            .clone()
            .map(|t| ("CLAUDE_CODE_SESSION_ACCESS_TOKEN".to_string(), t))
            .into_iter()
            .collect(),
        AgentKind::Codex => {
            // .../@openai/codex-linux-x64/vendor/<target>/bin/codex: the wrapper's package is
            // the platform package's sibling `codex`.
            let wrapper_root = program.ancestors().nth(4).and_then(|p| p.parent()).map(|p| p.join("codex"));
            let mut env = vec![pair("CODEX_MANAGED_BY_NPM", "1")];
            if let Some(root) = wrapper_root.filter(|r| r.is_dir()) {
                env.push(("CODEX_MANAGED_PACKAGE_ROOT".to_string(), root.to_string_lossy().into_owned()));
            }
            env
        }
        AgentKind::Gemini => vec![pair("GEMINI_CLI_NO_RELAUNCH", "true")],
        AgentKind::Acp(name) => settings.agents.acp.get(name).map(|d| d.env.clone()).unwrap_or_default(),
    }
}

/// Refuses what the agent cannot do, before anything is started (422).
pub fn check_launch(
    settings: &Settings,
    kind: &AgentKind,
    options: &CliOptions,
    transport: Option<Transport>,
) -> Result<(), AgentError> {
    let definition = acp_definition(settings, kind)?;
    let unsupported = |what: &str| Err(AgentError::Unsupported { agent: kind.to_string(), what: what.to_string() });
    if *kind == AgentKind::Claude {
        return Ok(());
    }
    if transport == Some(Transport::Websocket) {
        return unsupported("the websocket transport (it speaks over stdio only)");
    }
    if options.permission_mode.is_some() {
        return unsupported("permission modes (Conduit's rules decide its tool calls)");
    }
    if options.fork_session {
        return unsupported("forking a session");
    }
    if kind.protocol() == crate::domain::agent_kind::Protocol::Acp {
        if options.system_prompt.is_some() || options.append_system_prompt.is_some() {
            return unsupported("system prompts (ACP has no field for them)");
        }
        if options.model.is_some() && definition.is_some_and(|d| d.model_args.is_empty()) {
            return unsupported("choosing a model (its `acp_agents` entry has no `model_args`)");
        }
    }
    Ok(())
}

/// The command line, environment and adapter of one process of `kind`, working in `folder`.
/// `program` is what [`locate`] found.
pub fn prepare(
    settings: &Settings,
    kind: &AgentKind,
    program: &Path,
    options: &CliOptions,
    folder: &str,
) -> Result<(AgentLaunch, Box<dyn AgentAdapter>), AgentError> {
    let definition = acp_definition(settings, kind)?;
    let fixed = |args: Vec<String>| -> Arguments { Box::new(move |_| args) };
    let (arguments, adapter): (Arguments, Box<dyn AgentAdapter>) = match kind {
        AgentKind::Claude => {
            let options = options.clone();
            (Box::new(move |wire| claude::arguments(&options, wire)), Box::new(ClaudeCode::default()))
        }
        AgentKind::Codex => (fixed(super::codex::arguments()), Box::new(Codex::new(options, folder))),
        AgentKind::Gemini => {
            let policy = std::path::absolute(gemini_policy(settings)).unwrap_or_else(|_| gemini_policy(settings));
            let mut args = vec!["--acp".to_string(), format!("--admin-policy={}", policy.display())];
            if let Some(model) = &options.model {
                args.push(format!("--model={model}"));
            }
            (fixed(args), Box::new(AcpClient::new(kind.clone(), options, folder)))
        }
        AgentKind::Acp(_) => {
            let definition = definition.cloned().unwrap_or(AcpAgent {
                command: String::new(),
                args: Vec::new(),
                model_args: Vec::new(),
                env: Vec::new(),
            });
            let mut args = definition.args.clone();
            if let Some(model) = &options.model {
                args.extend(definition.model_args.iter().map(|a| a.replace("{model}", model)));
            }
            (fixed(args), Box::new(AcpClient::new(kind.clone(), options, folder)))
        }
    };
    let launch = AgentLaunch { program: program.to_string_lossy().into_owned(), arguments };
    Ok((launch, adapter))
}

/// Gets a session of `kind` ready to be resumed (blocking: file system work).
///
/// Gemini CLI 0.61.0 names a chat file by the UTC minute its session was created, and a
/// process loading the session names its own recording by the current minute: within the same
/// minute both are one file, the load overwrites the history and fails. The saved chat is
/// renamed to the minute before, which the CLI's session lookup reads the same.
pub fn before_resume(settings: &Settings, kind: &AgentKind, session: &str) {
    if *kind != AgentKind::Gemini {
        return;
    }
    let (Some(home), Some(short)) = (settings.home.as_deref(), session.get(..8)) else { return };
    let now = chrono::Utc::now();
    let minute = |t: chrono::DateTime<chrono::Utc>| t.format("%Y-%m-%dT%H-%M").to_string();
    let (current, earlier) = (minute(now), minute(now - chrono::Duration::minutes(1)));
    let Ok(projects) = std::fs::read_dir(home.join(".gemini").join("tmp")) else { return };
    for project in projects.flatten() {
        let chats = project.path().join("chats");
        let file = chats.join(format!("session-{current}-{short}.jsonl"));
        let renamed = chats.join(format!("session-{earlier}-{short}.jsonl"));
        if file.is_file() && !renamed.exists() {
            if let Err(e) = std::fs::rename(&file, &renamed) {
                tracing::warn!(file = %file.display(), error = %e, "could not move a Gemini chat out of the current minute");
            }
        }
    }
}

/// An agent as health reports it.
#[derive(Debug, Clone, serde::Serialize, utoipa::ToSchema)]
pub struct AgentHealth {
    /// `claude`, `codex`, `gemini` or a configured ACP agent's name.
    pub agent: String,
    /// Its CLI resolves to an executable file.
    pub available: bool,
    /// The installed version, read from its npm package (`null` when it was installed another way).
    pub version: Option<String>,
    /// The executable that would be started.
    pub path: Option<String>,
    /// The setting that names it.
    pub setting: String,
    /// Why it cannot be started.
    pub problem: Option<String>,
}

/// Every agent the settings know, checked (blocking: file system lookups).
pub fn health(settings: &Settings) -> Vec<AgentHealth> {
    let configured = settings.agents.acp.keys().map(|name| AgentKind::Acp(name.clone()));
    AgentKind::BUILT_IN
        .iter()
        .cloned()
        .chain(configured)
        .map(|kind| {
            let found = locate(settings, &kind);
            AgentHealth {
                agent: kind.to_string(),
                available: found.is_ok(),
                version: found.as_ref().ok().and_then(|p| package_version(p)),
                path: found.as_ref().ok().map(|p| p.to_string_lossy().into_owned()),
                setting: setting(&kind),
                problem: found.err().map(|e| e.to_string()),
            }
        })
        .collect()
}

/// The version in the nearest `package.json` above the (link-resolved) executable: how the
/// npm packages of all three CLIs carry theirs, without starting them.
fn package_version(program: &Path) -> Option<String> {
    let real = std::fs::canonicalize(program).ok()?;
    real.ancestors().skip(1).take(6).find_map(|dir| {
        let text = std::fs::read_to_string(dir.join("package.json")).ok()?;
        let manifest: serde_json::Value = serde_json::from_str(&text).ok()?;
        manifest.get("version")?.as_str().map(str::to_string)
    })
}

/// What the agent keeps under HOME: writable (and created) inside the sandbox.
pub fn state_paths(settings: &Settings, kind: &AgentKind) -> Vec<StatePath> {
    let Some(home) = settings.home.as_deref() else {
        return Vec::new();
    };
    match kind {
        AgentKind::Claude => claude::state_paths(home),
        AgentKind::Codex => {
            let codex_home = std::env::var_os("CODEX_HOME").map(PathBuf::from).filter(|p| p.is_absolute());
            vec![StatePath::Folder(codex_home.unwrap_or_else(|| home.join(".codex")))]
        }
        AgentKind::Gemini => vec![
            StatePath::Folder(home.join(".gemini")),
            StatePath::ReadOnly(
                std::path::absolute(gemini_policy(settings)).unwrap_or_else(|_| gemini_policy(settings)),
            ),
        ],
        AgentKind::Acp(_) => Vec::new(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_npm_wrapper_of_codex_resolves_to_its_native_binary() {
        let dir = tempfile::tempdir().expect("tempdir");
        let modules = dir.path().join("node_modules");
        let script = modules.join("@openai/codex/bin/codex.js");
        let native = modules.join("@openai/codex-linux-x64/vendor/x86_64-unknown-linux-musl/bin/codex");
        for file in [&script, &native] {
            std::fs::create_dir_all(file.parent().expect("parent")).expect("mkdir");
            std::fs::write(file, "").expect("write");
        }
        let link = modules.join(".bin/codex");
        std::fs::create_dir_all(link.parent().expect("parent")).expect("mkdir");
        std::os::unix::fs::symlink("../@openai/codex/bin/codex.js", &link).expect("link");
        if std::env::consts::ARCH == "x86_64" {
            let found = codex_native(&link).expect("native");
            assert_eq!(std::fs::canonicalize(found).ok(), std::fs::canonicalize(&native).ok());
        }
        assert_eq!(codex_native(&native), None, "a native binary stays as it is");
    }
}

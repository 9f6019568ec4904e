//! The agent CLIs' settings: where Codex and Gemini CLI are, and the ACP agents defined by
//! configuration (`acp_agents`).

use std::collections::BTreeMap;

use toml::Value;

use super::layers::Layers;
use super::ConfigError;
use crate::domain::agent_kind::{check_name, AgentKind};

/// The `codex_path`, `gemini_path` and `acp_agents` settings.
#[derive(Debug, Clone, Default)]
pub struct AgentSettings {
    /// The Codex CLI: a name looked up on PATH or a path; the npm package's node wrapper is
    /// resolved to the native binary it ships.
    pub codex_path: String,
    /// The Gemini CLI, started as `gemini --acp`.
    pub gemini_path: String,
    /// ACP agents by name: any program speaking the Agent Client Protocol on its stdio.
    pub acp: BTreeMap<String, AcpAgent>,
}

/// One entry of `acp_agents`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AcpAgent {
    /// The program (a name on PATH or a path).
    pub command: String,
    /// Its arguments (what makes it speak ACP, say `--acp`).
    pub args: Vec<String>,
    /// Arguments added when a launch names a model; `{model}` is replaced by it. Empty: the
    /// agent cannot be given a model (a launch naming one is refused).
    pub model_args: Vec<String>,
    /// Extra environment variables.
    pub env: Vec<(String, String)>,
}

pub(super) fn agent_settings(l: &Layers) -> Result<AgentSettings, ConfigError> {
    let program = |key: &str| -> Result<String, ConfigError> {
        let value = l.string(key)?;
        if value.trim().is_empty() || value.contains('\0') {
            return Err(l.err(key, "expected an executable name or path"));
        }
        Ok(value)
    };
    Ok(AgentSettings { codex_path: program("codex_path")?, gemini_path: program("gemini_path")?, acp: acp_agents(l)? })
}

/// `acp_agents`: a TOML table in a file; in the environment, the same as an inline table
/// (`CONDUIT_ACP_AGENTS='{ goose = { command = "goose", args = ["acp"] } }'`).
fn acp_agents(l: &Layers) -> Result<BTreeMap<String, AcpAgent>, ConfigError> {
    const KEY: &str = "acp_agents";
    let table = l.table(KEY, "{ name = { command = \"...\" } }")?;
    let mut agents = BTreeMap::new();
    for (name, value) in table {
        check_name(&name).map_err(|e| l.err(KEY, e))?;
        if AgentKind::BUILT_IN.iter().any(|k| k.as_str() == name) {
            return Err(l.err(KEY, format!("{name:?} is a built-in agent; give yours another name")));
        }
        let bad = |problem: String| l.err(KEY, format!("agent {name:?}: {problem}"));
        let Value::Table(def) = value else {
            return Err(bad("expected a table with `command`, `args`, `model_args`, `env`".into()));
        };
        if let Some(unknown) = def.keys().find(|k| !["command", "args", "model_args", "env"].contains(&k.as_str())) {
            return Err(bad(format!("unknown key {unknown:?} (expected command, args, model_args, env)")));
        }
        let command = match def.get("command") {
            Some(Value::String(c)) if !c.trim().is_empty() && !c.contains('\0') => c.clone(),
            _ => return Err(bad("`command` must be an executable name or path".into())),
        };
        let strings = |field: &str| -> Result<Vec<String>, ConfigError> {
            match def.get(field) {
                None => Ok(Vec::new()),
                Some(Value::Array(items)) => items
                    .iter()
                    .map(|v| match v {
                        Value::String(s) if !s.contains('\0') => Ok(s.clone()),
                        other => Err(bad(format!("`{field}` must be a list of strings, got {other}"))),
                    })
                    .collect(),
                Some(other) => Err(bad(format!("`{field}` must be a list of strings, got {other}"))),
            }
        };
        let env = match def.get("env") {
            None => Vec::new(),
            Some(Value::Table(vars)) => vars
                .iter()
                .map(|(k, v)| match v {
                    Value::String(s) if !k.is_empty() && !k.contains(['=', '\0']) && !s.contains('\0') => {
                        Ok((k.clone(), s.clone()))
                    }
                    _ => Err(bad(format!("`env.{k}` must be a string"))),
                })
                .collect::<Result<_, _>>()?,
            Some(other) => return Err(bad(format!("`env` must be a table of strings, got {other}"))),
        };
        let agent = AcpAgent { command, args: strings("args")?, model_args: strings("model_args")?, env };
        agents.insert(name, agent);
    }
    Ok(agents)
}

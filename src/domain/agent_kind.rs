//! Which agent CLI a session or a scheduled agent talks to: Claude Code (stream-json), Codex
//! (`app-server`), Gemini CLI (the Agent Client Protocol), or an ACP agent the settings define.
//! Plain data: what each kind needs to start lives in `crate::supervisor::catalog`.

use serde::{Deserialize, Deserializer, Serialize, Serializer};

/// The longest agent name the settings may define.
pub const MAX_AGENT_NAME: usize = 32;

#[derive(Debug, Clone, PartialEq, Eq, Hash, Default)]
pub enum AgentKind {
    /// Claude Code over stream-json (the default).
    #[default]
    Claude,
    /// Codex through `codex app-server` (JSON-RPC over stdio).
    Codex,
    /// Gemini CLI through the Agent Client Protocol (`gemini --acp`).
    Gemini,
    /// An ACP agent defined in the `acp_agents` setting, by its name there.
    Acp(String),
}

/// How Conduit speaks with an agent kind.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Protocol {
    /// Claude Code's stream-json control protocol.
    StreamJson,
    /// Codex's `app-server` JSON-RPC.
    CodexAppServer,
    /// The Agent Client Protocol (JSON-RPC 2.0).
    Acp,
}

impl AgentKind {
    /// The kinds every build knows, in the order health lists them.
    pub const BUILT_IN: [AgentKind; 3] = [AgentKind::Claude, AgentKind::Codex, AgentKind::Gemini];

    pub fn as_str(&self) -> &str {
        match self {
            AgentKind::Claude => "claude",
            AgentKind::Codex => "codex",
            AgentKind::Gemini => "gemini",
            AgentKind::Acp(name) => name,
        }
    }

    pub fn protocol(&self) -> Protocol {
        match self {
            AgentKind::Claude => Protocol::StreamJson,
            AgentKind::Codex => Protocol::CodexAppServer,
            AgentKind::Gemini | AgentKind::Acp(_) => Protocol::Acp,
        }
    }

    /// Reads a name as sent or stored. Any well-formed name parses (a configured ACP agent's
    /// name); whether it is configured is the catalog's question.
    pub fn parse(text: &str) -> Result<AgentKind, String> {
        match text {
            "claude" => Ok(AgentKind::Claude),
            "codex" => Ok(AgentKind::Codex),
            "gemini" => Ok(AgentKind::Gemini),
            other => check_name(other).map(|()| AgentKind::Acp(other.to_string())),
        }
    }
}

/// An agent name: 1 to 32 characters, lower-case ASCII letters, digits, `-` and `_`, starting
/// with a letter.
pub fn check_name(name: &str) -> Result<(), String> {
    let well_formed = name.len() <= MAX_AGENT_NAME
        && name.chars().next().is_some_and(|c| c.is_ascii_lowercase())
        && name.chars().all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-' || c == '_');
    if well_formed {
        Ok(())
    } else {
        Err(format!(
            "{name:?} is not an agent name (1-{MAX_AGENT_NAME} lower-case letters, digits, `-` or `_`, starting with a letter)"
        ))
    }
}

impl std::fmt::Display for AgentKind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

impl std::str::FromStr for AgentKind {
    type Err = String;

    fn from_str(text: &str) -> Result<Self, Self::Err> {
        AgentKind::parse(text)
    }
}

impl Serialize for AgentKind {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(self.as_str())
    }
}

impl<'de> Deserialize<'de> for AgentKind {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let text = String::deserialize(deserializer)?;
        AgentKind::parse(&text).map_err(serde::de::Error::custom)
    }
}

impl utoipa::PartialSchema for AgentKind {
    fn schema() -> utoipa::openapi::RefOr<utoipa::openapi::schema::Schema> {
        use utoipa::openapi::schema::{ObjectBuilder, SchemaType, Type};
        ObjectBuilder::new()
            .schema_type(SchemaType::new(Type::String))
            .pattern(Some(r"^[a-z][a-z0-9_-]{0,31}$"))
            .max_length(Some(MAX_AGENT_NAME))
            .description(Some(
                "The agent CLI: `claude` (Claude Code, the default), `codex` (Codex app-server), `gemini` (Gemini CLI over ACP), or the name of an ACP agent defined in the `acp_agents` setting.",
            ))
            .examples(["claude", "codex", "gemini"].map(serde_json::Value::from))
            .into()
    }
}

impl utoipa::ToSchema for AgentKind {}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn built_in_names_and_configured_ones_round_trip() {
        for kind in AgentKind::BUILT_IN.iter().cloned().chain([AgentKind::Acp("my-agent_2".into())]) {
            let text = kind.to_string();
            assert_eq!(AgentKind::parse(&text), Ok(kind.clone()));
            let json = serde_json::to_string(&kind).expect("serializes");
            assert_eq!(serde_json::from_str::<AgentKind>(&json).expect("reads back"), kind);
        }
        assert_eq!(AgentKind::Gemini.protocol(), Protocol::Acp);
        assert_eq!(AgentKind::Acp("x".into()).protocol(), Protocol::Acp);
        assert_eq!(AgentKind::Codex.protocol(), Protocol::CodexAppServer);
    }

    #[test]
    fn malformed_names_are_refused() {
        for bad in ["", "Claude", "1x", "-x", "a b", "x/y", &"a".repeat(33), "é"] {
            assert!(AgentKind::parse(bad).is_err(), "{bad:?}");
            assert!(serde_json::from_str::<AgentKind>(&format!("{bad:?}")).is_err(), "{bad:?}");
        }
    }
}

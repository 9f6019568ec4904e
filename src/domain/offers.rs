//! What a session's agent offers to switch between: its models and permission modes, as the
//! CLI itself reported them (Claude Code's `initialize` answer, ACP's `session/new`), so a
//! client lists exactly what the CLI will accept.

use serde::Serialize;
use utoipa::ToSchema;

use super::agent_kind::AgentKind;
use super::validate::PERMISSION_MODES;

/// One model a CLI offers.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, serde::Deserialize, ToSchema)]
pub struct ModelChoice {
    /// What to pass to `POST /api/sessions/{id}/model`.
    pub value: String,
    /// The CLI's name for it.
    pub name: String,
    pub description: Option<String>,
}

/// Where a list came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum OffersSource {
    /// The session's running CLI reported it.
    Cli,
    /// The session is not live (or its CLI reports nothing): what the agent kind is known to take.
    Defaults,
}

/// A session's switchable models and permission modes.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, ToSchema)]
pub struct Offers {
    /// Empty when unknown: any model name may still be tried (the CLI judges it).
    pub models: Vec<ModelChoice>,
    /// Empty when the agent takes no permission modes.
    pub modes: Vec<String>,
    pub source: OffersSource,
}

impl Offers {
    /// What an agent kind takes when no CLI says: Claude Code's published modes; nothing known
    /// for the others (Codex has no modes, an ACP agent lists its own).
    pub fn defaults(kind: &AgentKind) -> Offers {
        let modes = match kind {
            AgentKind::Claude => PERMISSION_MODES.iter().map(|m| m.to_string()).collect(),
            AgentKind::Codex | AgentKind::Gemini | AgentKind::Acp(_) => Vec::new(),
        };
        Offers { models: Vec::new(), modes, source: OffersSource::Defaults }
    }

    /// Reported by a CLI.
    pub fn reported(models: Vec<ModelChoice>, modes: Vec<String>) -> Offers {
        Offers { models, modes, source: OffersSource::Cli }
    }
}

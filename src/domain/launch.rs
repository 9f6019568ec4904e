//! What a CLI is started with: the launch as the API and the agents ask for it.

use super::validate::Transport;

/// The CLI's own options for one session (or run).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct CliOptions {
    pub model: Option<String>,
    pub permission_mode: Option<String>,
    pub resume_session_id: Option<String>,
    pub fork_session: bool,
    pub system_prompt: Option<String>,
    pub append_system_prompt: Option<String>,
    /// What this process may still spend, in USD (Claude Code's `--max-budget-usd`).
    pub max_budget_usd: Option<f64>,
}

/// What a launch asks for; unset fields were already filled from the project's defaults.
#[derive(Debug, Clone, Default)]
pub struct LaunchSpec {
    pub name: Option<String>,
    pub external_key: Option<String>,
    pub options: CliOptions,
    /// `auto` is resolved here, from the installed CLI's version.
    pub transport: Option<Transport>,
    /// What a worktree session starts from (checked); `None`: the project folder's HEAD.
    pub base_ref: Option<String>,
    /// The agent CLI to run (checked against the settings).
    pub agent: super::agent_kind::AgentKind,
    /// The kernel limits the launch itself asks for (checked); the project's and the
    /// settings' fill in the rest.
    pub limits: super::resources::SessionLimits,
}

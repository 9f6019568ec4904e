//! `LimitBoard`: the latest usage-limit state each agent CLI reported, for
//! `GET /api/usage/limits` (and for whoever must know before starting work).
//!
//! Conduit runs every CLI of one kind with the same credentials, so a limit belongs to the
//! account of that kind: one entry per agent kind. Sessions tell the board what their CLI
//! reported; a limit whose reset has passed reads as `allowed`.

use std::collections::BTreeMap;

use actix::prelude::*;
use chrono::{DateTime, Utc};
use serde::Serialize;
use utoipa::ToSchema;

use crate::domain::agent_kind::AgentKind;
use crate::domain::usage::stamp;

/// Where an account stands with its limit.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum LimitStatus {
    /// Requests go through.
    Allowed,
    /// Requests go through, but most of the limit is used.
    Warning,
    /// Requests are refused until `resets_at`.
    Limited,
}

impl LimitStatus {
    /// From a `rate_limit_info.status`; unknown words read as allowed.
    pub fn from_cli(status: &str) -> LimitStatus {
        match status {
            "rejected" => LimitStatus::Limited,
            "allowed_warning" => LimitStatus::Warning,
            _ => LimitStatus::Allowed,
        }
    }
}

/// What a CLI reported.
#[derive(Message, Debug, Clone)]
#[rtype(result = "()")]
pub struct LimitSeen {
    pub agent: AgentKind,
    pub status: LimitStatus,
    pub resets_at: Option<DateTime<Utc>>,
    pub limit_type: Option<String>,
    pub utilization: Option<f64>,
    /// The CLI's words, when a turn failed on the limit.
    pub message: Option<String>,
    pub session_id: Option<String>,
}

/// The board, one entry per agent kind that reported anything.
#[derive(Message)]
#[rtype(result = "Vec<LimitView>")]
pub struct ListLimits;

#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct LimitView {
    /// The agent CLI (`claude`, `codex`, ...): its account's limit.
    pub agent: String,
    pub status: LimitStatus,
    /// When the limit resets (RFC 3339), when known.
    pub resets_at: Option<String>,
    /// Which limit: `five_hour`, `seven_day`, ...
    pub limit_type: Option<String>,
    /// How much of the limit is used, 0 to 1, when the CLI said.
    pub utilization: Option<f64>,
    /// The CLI's words for the last turn the limit stopped.
    pub message: Option<String>,
    /// The session whose CLI reported it last.
    pub session_id: Option<String>,
    pub reported_at: String,
}

#[derive(Default)]
pub struct LimitBoard {
    entries: BTreeMap<String, (LimitSeen, DateTime<Utc>)>,
}

impl Actor for LimitBoard {
    type Context = Context<Self>;
}

impl Handler<LimitSeen> for LimitBoard {
    type Result = ();

    fn handle(&mut self, msg: LimitSeen, _ctx: &mut Context<Self>) {
        self.entries.insert(msg.agent.to_string(), (msg, Utc::now()));
    }
}

impl Handler<ListLimits> for LimitBoard {
    type Result = MessageResult<ListLimits>;

    fn handle(&mut self, _msg: ListLimits, _ctx: &mut Context<Self>) -> Self::Result {
        let now = Utc::now();
        MessageResult(
            self.entries
                .iter()
                .map(|(agent, (seen, at))| {
                    let passed = seen.resets_at.is_some_and(|reset| reset <= now);
                    let status =
                        if seen.status == LimitStatus::Limited && passed { LimitStatus::Allowed } else { seen.status };
                    LimitView {
                        agent: agent.clone(),
                        status,
                        resets_at: seen.resets_at.as_ref().map(stamp),
                        limit_type: seen.limit_type.clone(),
                        utilization: seen.utilization,
                        message: seen.message.clone(),
                        session_id: seen.session_id.clone(),
                        reported_at: stamp(at),
                    }
                })
                .collect(),
        )
    }
}

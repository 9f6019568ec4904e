//! Queries on `permission_log`: one row per permission decision.

use diesel::prelude::*;
use serde::Serialize;
use utoipa::ToSchema;

use super::schema::permission_log;
use super::{DbConnection, StoreError};
use crate::domain::agent_kind::AgentKind;
use crate::domain::decision::{self, DecisionPoint, DecisionSource};
use crate::domain::ids::{ProjectId, RuleId, SessionId};
use crate::domain::rules::CommandReading;

#[derive(Debug, Clone, PartialEq, Insertable)]
#[diesel(table_name = permission_log)]
pub struct NewDecision {
    pub project_id: Option<ProjectId>,
    pub session_id: Option<SessionId>,
    pub request_id: String,
    pub tool_use_id: Option<String>,
    pub decision_point: DecisionPoint,
    pub tool_name: String,
    pub tool_input: String,
    pub decision: decision::Decision,
    pub decision_source: DecisionSource,
    pub rule_id: Option<RuleId>,
    pub reason: Option<String>,
    pub decided_at: String,
    /// JSON text of a [`CommandReading`], for a Bash call.
    pub command_reading: Option<String>,
    /// The agent whose call was decided (`null` for the exec API's commands).
    pub agent: Option<AgentKind>,
}

/// An audited decision.
#[derive(Debug, Clone, Queryable, Selectable, Serialize, ToSchema)]
#[diesel(table_name = permission_log)]
pub struct Decision {
    pub id: i64,
    #[schema(value_type = Option<String>)]
    pub project_id: Option<ProjectId>,
    #[schema(value_type = Option<String>)]
    pub session_id: Option<SessionId>,
    /// The CLI's control request id.
    pub request_id: String,
    /// Links the hook decision and a later `can_use_tool` for the same call.
    pub tool_use_id: Option<String>,
    /// The mechanism that asked: `hook` (Claude Code's PreToolUse), `can_use_tool`, `exec`,
    /// `codex_command_approval`, `codex_file_change_approval` or `acp_permission`.
    pub decision_point: DecisionPoint,
    pub tool_name: String,
    /// The tool input as JSON text, secrets redacted.
    pub tool_input: String,
    /// `allow` or `deny`.
    pub decision: decision::Decision,
    /// `auto_rule` when a rule matched, `auto_default` otherwise.
    pub decision_source: DecisionSource,
    #[schema(value_type = Option<String>)]
    pub rule_id: Option<RuleId>,
    pub reason: Option<String>,
    pub decided_at: String,
    /// How a Bash call's command was read (`null` for other tools): the simple commands the
    /// shell would run, the one a deny rule matched, and what could not be analyzed.
    #[schema(value_type = Option<CommandReading>)]
    #[serde(serialize_with = "reading_as_object")]
    pub command_reading: Option<String>,
    /// The agent whose tool call this was (`claude`, `codex`, `gemini`, ...); `null` for
    /// commands started through the exec API.
    pub agent: Option<AgentKind>,
}

/// The stored JSON text, answered as the object it is (`null` if it no longer reads).
fn reading_as_object<S: serde::Serializer>(text: &Option<String>, serializer: S) -> Result<S::Ok, S::Error> {
    let reading = text.as_deref().and_then(|t| serde_json::from_str::<CommandReading>(t).ok());
    serde::Serialize::serialize(&reading, serializer)
}

#[derive(Debug, Default, Clone)]
pub struct LogFilter {
    pub session_id: Option<SessionId>,
    pub project_id: Option<ProjectId>,
    pub decision: Option<decision::Decision>,
    /// The project a project-bound token is restricted to: with `project_id`, both must match.
    pub bound_to: Option<ProjectId>,
}

pub fn insert(conn: &mut DbConnection, row: &NewDecision) -> Result<(), StoreError> {
    diesel::insert_into(permission_log::table).values(row).execute(conn)?;
    Ok(())
}

/// Newest first.
pub fn list(conn: &mut DbConnection, filter: &LogFilter, limit: i64, offset: i64) -> Result<Vec<Decision>, StoreError> {
    let mut query = permission_log::table.into_boxed();
    if let Some(s) = &filter.session_id {
        query = query.filter(permission_log::session_id.eq(s.clone()));
    }
    if let Some(p) = &filter.project_id {
        query = query.filter(permission_log::project_id.eq(p.clone()));
    }
    if let Some(p) = &filter.bound_to {
        query = query.filter(permission_log::project_id.eq(p.clone()));
    }
    if let Some(d) = &filter.decision {
        query = query.filter(permission_log::decision.eq(*d));
    }
    Ok(query.order(permission_log::id.desc()).limit(limit).offset(offset).select(Decision::as_select()).load(conn)?)
}

//! Queries on `permission_log`: one row per permission decision.

use diesel::prelude::*;
use serde::Serialize;
use utoipa::ToSchema;

use super::schema::permission_log;
use super::{DbConnection, StoreError};

#[derive(Debug, Clone, PartialEq, Insertable)]
#[diesel(table_name = permission_log)]
pub struct NewDecision {
    pub project_id: Option<String>,
    pub session_id: Option<String>,
    pub request_id: String,
    pub tool_use_id: Option<String>,
    pub decision_point: &'static str,
    pub tool_name: String,
    pub tool_input: String,
    pub decision: &'static str,
    pub decision_source: &'static str,
    pub rule_id: Option<String>,
    pub reason: Option<String>,
    pub decided_at: String,
}

/// An audited decision.
#[derive(Debug, Clone, Queryable, Selectable, Serialize, ToSchema)]
#[diesel(table_name = permission_log)]
pub struct Decision {
    pub id: i64,
    pub project_id: Option<String>,
    pub session_id: Option<String>,
    /// The CLI's control request id.
    pub request_id: String,
    /// Links the hook decision and a later `can_use_tool` for the same call.
    pub tool_use_id: Option<String>,
    /// `hook` (PreToolUse) or `can_use_tool`.
    pub decision_point: String,
    pub tool_name: String,
    /// The tool input as JSON text, secrets redacted.
    pub tool_input: String,
    /// `allow` or `deny`.
    pub decision: String,
    /// `auto_rule` when a rule matched, `auto_default` otherwise.
    pub decision_source: String,
    pub rule_id: Option<String>,
    pub reason: Option<String>,
    pub decided_at: String,
}

#[derive(Debug, Default, Clone)]
pub struct LogFilter {
    pub session_id: Option<String>,
    pub project_id: Option<String>,
    pub decision: Option<String>,
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
    if let Some(d) = &filter.decision {
        query = query.filter(permission_log::decision.eq(d.clone()));
    }
    Ok(query.order(permission_log::id.desc()).limit(limit).offset(offset).select(Decision::as_select()).load(conn)?)
}

//! Queries on `permission_rules`. `project_id` NULL marks a global rule.

use diesel::prelude::*;

use super::schema::permission_rules;
use super::{DbConnection, StoreError};
use crate::domain::decision::Decision;
use crate::domain::ids::{ProjectId, RuleId};

#[derive(Debug, Clone, PartialEq, Queryable, Selectable, Insertable, AsChangeset)]
#[diesel(table_name = permission_rules, treat_none_as_null = true)]
pub struct RuleRow {
    pub id: RuleId,
    pub project_id: Option<ProjectId>,
    pub tool_name: String,
    pub rule_content: String,
    pub behavior: Decision,
    pub priority: i32,
    /// A JSON object, as text.
    pub updated_input: Option<String>,
    pub created_at: String,
    pub updated_at: String,
}

pub fn insert(conn: &mut DbConnection, rule: &RuleRow) -> Result<(), StoreError> {
    diesel::insert_into(permission_rules::table).values(rule).execute(conn)?;
    Ok(())
}

pub fn find(conn: &mut DbConnection, id: &RuleId) -> Result<Option<RuleRow>, StoreError> {
    Ok(permission_rules::table.find(id).select(RuleRow::as_select()).first(conn).optional()?)
}

/// A project's rules (or the global ones for `None`) in evaluation order: deny before allow,
/// higher priority first, older first.
pub fn list(
    conn: &mut DbConnection,
    project_id: Option<&ProjectId>,
    limit: i64,
    offset: i64,
) -> Result<Vec<RuleRow>, StoreError> {
    let query = permission_rules::table
        .order((
            permission_rules::behavior.desc(),
            permission_rules::priority.desc(),
            permission_rules::created_at.asc(),
            permission_rules::id.asc(),
        ))
        .limit(limit)
        .offset(offset)
        .select(RuleRow::as_select());
    Ok(match project_id {
        Some(p) => query.filter(permission_rules::project_id.eq(p)).load(conn)?,
        None => query.filter(permission_rules::project_id.is_null()).load(conn)?,
    })
}

/// The `rule_content` of every deny rule on a file-writing tool that applies to `project`
/// (its own and the global ones), for the sandbox's read-only binds.
pub fn write_denials(conn: &mut DbConnection, project: Option<&ProjectId>) -> Result<Vec<String>, StoreError> {
    let query = permission_rules::table
        .filter(permission_rules::behavior.eq(Decision::Deny))
        .filter(permission_rules::tool_name.eq_any(["Write", "Edit", "MultiEdit", "NotebookEdit"]))
        .select(permission_rules::rule_content);
    Ok(match project {
        Some(p) => {
            query.filter(permission_rules::project_id.eq(p).or(permission_rules::project_id.is_null())).load(conn)?
        }
        None => query.filter(permission_rules::project_id.is_null()).load(conn)?,
    })
}

/// Every rule, for the permission engine.
pub fn all(conn: &mut DbConnection) -> Result<Vec<RuleRow>, StoreError> {
    Ok(permission_rules::table.select(RuleRow::as_select()).load(conn)?)
}

pub fn update(conn: &mut DbConnection, rule: &RuleRow) -> Result<(), StoreError> {
    let n = diesel::update(permission_rules::table.find(&rule.id)).set(rule).execute(conn)?;
    if n == 0 {
        return Err(StoreError::NotFound);
    }
    Ok(())
}

pub fn delete(conn: &mut DbConnection, id: &RuleId) -> Result<bool, StoreError> {
    Ok(diesel::delete(permission_rules::table.find(id)).execute(conn)? > 0)
}

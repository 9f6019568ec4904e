//! Queries on `audit_log`: append, list newest first, and remove what is past the retention.
//! Rows are never updated (the database refuses it).

use diesel::prelude::*;
use serde::Serialize;
use utoipa::ToSchema;

use super::schema::audit_log;
use super::{DbConnection, StoreError};
use crate::domain::audit::{ActorKind, AuditEvent};

/// One audit row to append.
#[derive(Debug, Clone, PartialEq, Insertable)]
#[diesel(table_name = audit_log)]
pub struct NewAuditEntry {
    pub at: String,
    pub event: AuditEvent,
    pub actor: ActorKind,
    pub actor_id: Option<String>,
    pub method: String,
    pub route: String,
    pub target: Option<String>,
    pub status: i32,
    pub address: Option<String>,
}

/// One audit row.
#[derive(Debug, Clone, PartialEq, Queryable, Selectable, Serialize, ToSchema)]
#[diesel(table_name = audit_log)]
pub struct AuditEntry {
    /// Grows with every row: the cursor of `before`.
    pub id: i64,
    /// When the request was answered (RFC 3339, UTC).
    pub at: String,
    pub event: AuditEvent,
    pub actor: ActorKind,
    /// The user's id (`actor` `user`) or the API token's (`token`).
    pub actor_id: Option<String>,
    /// `POST`, `PUT`, `DELETE`, ... (`GET` for a refused read).
    pub method: String,
    /// The route's pattern (`/api/sessions/{id}/message`), never the path as sent: no query
    /// string is kept. `(no route)` when no route answers the path.
    pub route: String,
    /// The id the route names, or the one a creation made (from its `Location`).
    pub target: Option<String>,
    /// The HTTP status of the answer.
    pub status: i32,
    /// The client's address (the connection's peer).
    pub address: Option<String>,
}

/// Which rows a listing returns.
#[derive(Debug, Clone, Default)]
pub struct AuditFilter {
    /// Only rows older than this id.
    pub before: Option<i64>,
    pub event: Option<AuditEvent>,
    pub actor_id: Option<String>,
    /// Only rows at or after this time (RFC 3339, as stored).
    pub since: Option<String>,
}

/// Rows at a time in one INSERT: ten columns each stay far below SQLite's bound variables.
const ROWS_PER_INSERT: usize = 100;

/// Appends `rows`, in order, in one transaction: all of them or none.
pub fn append(conn: &mut DbConnection, rows: &[NewAuditEntry]) -> Result<(), StoreError> {
    conn.write_transaction(|conn| {
        for chunk in rows.chunks(ROWS_PER_INSERT) {
            // A multi-row INSERT is written per dialect (SQLite has no DEFAULT keyword).
            match conn {
                DbConnection::Sqlite(c) => diesel::insert_into(audit_log::table).values(chunk.to_vec()).execute(c)?,
                DbConnection::Pg(c) => diesel::insert_into(audit_log::table).values(chunk.to_vec()).execute(c)?,
            };
        }
        Ok(())
    })
}

/// Newest first, at most `limit`.
pub fn list(conn: &mut DbConnection, filter: &AuditFilter, limit: i64) -> Result<Vec<AuditEntry>, StoreError> {
    let mut query = audit_log::table.into_boxed();
    if let Some(before) = filter.before {
        query = query.filter(audit_log::id.lt(before));
    }
    if let Some(event) = filter.event {
        query = query.filter(audit_log::event.eq(event));
    }
    if let Some(actor_id) = &filter.actor_id {
        query = query.filter(audit_log::actor_id.eq(actor_id.clone()));
    }
    if let Some(since) = &filter.since {
        query = query.filter(audit_log::at.ge(since.clone()));
    }
    Ok(query.order(audit_log::id.desc()).limit(limit).select(AuditEntry::as_select()).load(conn)?)
}

/// Removes the rows older than `cutoff` (RFC 3339); how many.
pub fn remove_before(conn: &mut DbConnection, cutoff: &str) -> Result<usize, StoreError> {
    Ok(diesel::delete(audit_log::table.filter(audit_log::at.lt(cutoff))).execute(conn)?)
}

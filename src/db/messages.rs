//! Queries on `messages`: every line exchanged with a CLI, raw.

use diesel::prelude::*;
use serde::Serialize;
use utoipa::ToSchema;

use super::schema::messages;
use super::{DbConnection, StoreError};

#[derive(Debug, Clone, PartialEq, Insertable)]
#[diesel(table_name = messages)]
pub struct NewMessage {
    pub session_id: String,
    /// `to_cli` or `from_cli`.
    pub direction: &'static str,
    pub message_type: String,
    pub message_subtype: Option<String>,
    pub content: String,
    pub timestamp: String,
}

#[derive(Debug, Clone, Queryable, Selectable, Serialize, ToSchema)]
#[diesel(table_name = messages)]
pub struct Message {
    pub id: i64,
    pub session_id: String,
    /// `to_cli` or `from_cli`.
    pub direction: String,
    /// The line's `type` (`assistant`, `result`, ...), `stderr` for the CLI's stderr, or
    /// `invalid` for a line that is not a JSON object.
    pub message_type: String,
    pub message_subtype: Option<String>,
    /// The line exactly as exchanged.
    pub content: String,
    pub timestamp: String,
}

/// Inserts rows one statement each; callers wrap many in one transaction (the writer does),
/// which is where SQLite's cost is. Multi-row inserts are not available through diesel's
/// multi-backend connection.
pub fn insert_many(conn: &mut DbConnection, rows: &[NewMessage]) -> Result<(), StoreError> {
    for row in rows {
        diesel::insert_into(messages::table).values(row).execute(conn)?;
    }
    Ok(())
}

/// A session's lines, oldest first.
pub fn list(conn: &mut DbConnection, session_id: &str, limit: i64, offset: i64) -> Result<Vec<Message>, StoreError> {
    Ok(messages::table
        .filter(messages::session_id.eq(session_id))
        .order(messages::id.asc())
        .limit(limit)
        .offset(offset)
        .select(Message::as_select())
        .load(conn)?)
}

//! Queries on `messages`: every line exchanged with a CLI, raw; and `session_events`, a
//! session's other events. Together they are the session's stored event log, which streams
//! catch up from ([`events_between`]).

use diesel::prelude::*;
use serde::Serialize;
use utoipa::ToSchema;

use super::schema::{messages, session_events};
use super::{DbConnection, StoreError};

/// `None` is stored as NULL (not as the column's default), which COPY needs.
#[derive(Debug, Clone, PartialEq, Insertable)]
#[diesel(table_name = messages, treat_none_as_default_value = false)]
pub struct NewMessage {
    pub session_id: String,
    /// `to_cli` or `from_cli`.
    pub direction: &'static str,
    pub message_type: String,
    pub message_subtype: Option<String>,
    pub content: String,
    pub timestamp: String,
    /// The sequence number of the event this line was relayed as on the session's stream.
    pub seq: Option<i64>,
    /// The keeper's number of a line the CLI wrote (see [`crate::keeper`]); null otherwise.
    pub cli_seq: Option<i64>,
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
    /// The `seq` of the stream event that relayed this line (null for lines not relayed:
    /// control traffic, stderr, invalid lines, lines to the CLI).
    pub seq: Option<i64>,
    /// For a user turn: when it was written to the CLI. Null while it waits behind a running
    /// turn, and for good if the session ended before it was sent.
    pub delivered_at: Option<String>,
}

/// A session event that is not a line (status, created, closed, a permission decision).
#[derive(Debug, Clone, PartialEq, Insertable)]
#[diesel(table_name = session_events, treat_none_as_default_value = false)]
pub struct NewSessionEvent {
    pub session_id: String,
    pub seq: i64,
    pub kind: String,
    pub name: String,
    pub data: String,
    pub timestamp: String,
}

/// Inserts `$rows` (references to rows of `$table`) in order: on PostgreSQL all of them in one
/// binary COPY (one round trip, no statement to parse); on SQLite 100 per statement (a third
/// faster than one statement each; the writer wraps a batch in one transaction, which is where
/// SQLite's cost is). 100 rows of a few columns stay far below SQLite's 32,766 bound variables.
macro_rules! insert_all {
    ($conn:expr, $table:expr, $rows:expr) => {{
        let rows: Vec<_> = $rows.into_iter().collect();
        match $conn {
            DbConnection::Pg(_) if rows.is_empty() => {}
            DbConnection::Pg(c) => {
                diesel::copy_from($table).from_insertable(rows).execute(c)?;
            }
            DbConnection::Sqlite(c) => {
                for chunk in rows.chunks(100) {
                    diesel::insert_into($table).values(chunk.to_vec()).execute(c)?;
                }
            }
        }
        Ok(())
    }};
}

/// Inserts lines (see [`insert_all`]).
pub fn insert_many<'a>(
    conn: &mut DbConnection,
    rows: impl IntoIterator<Item = &'a NewMessage>,
) -> Result<(), StoreError> {
    insert_all!(conn, messages::table, rows)
}

/// Inserts session events (see [`insert_all`]).
pub fn insert_events<'a>(
    conn: &mut DbConnection,
    rows: impl IntoIterator<Item = &'a NewSessionEvent>,
) -> Result<(), StoreError> {
    insert_all!(conn, session_events::table, rows)
}

diesel::define_sql_function! {
    /// SQLite's id of the row the connection inserted last.
    fn last_insert_rowid() -> diesel::sql_types::BigInt;
}

/// Inserts one row and returns its id (for a user turn, whose delivery is recorded later).
pub fn insert_returning_id(conn: &mut DbConnection, row: &NewMessage) -> Result<i64, StoreError> {
    match conn {
        DbConnection::Sqlite(c) => {
            diesel::insert_into(messages::table).values(row).execute(c)?;
            Ok(diesel::select(last_insert_rowid()).get_result(c)?)
        }
        DbConnection::Pg(c) => {
            Ok(diesel::insert_into(messages::table).values(row).returning(messages::id).get_result(c)?)
        }
    }
}

/// Records that a user turn was written to the CLI (or, with `None`, that it waits again).
pub fn mark_delivered(conn: &mut DbConnection, id: i64, at: Option<&str>) -> Result<(), StoreError> {
    diesel::update(messages::table.find(id)).set(messages::delivered_at.eq(at)).execute(conn)?;
    Ok(())
}

/// A session's lines, oldest first.
pub fn list(conn: &mut DbConnection, session_id: &str, limit: i64, offset: i64) -> Result<Vec<Message>, StoreError> {
    list_window(conn, session_id, Window::From(offset), limit, true)
}

/// Which lines of a session a page holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Window {
    /// From the oldest, skipping this many.
    From(i64),
    /// The newest ones.
    Tail,
    /// The newest ones older than this message id.
    Before(i64),
}

/// Up to `limit` lines of a session in `window`, oldest first. Without `partial`, the lines
/// that only preview a message which follows whole (Claude Code's `stream_event`, Codex's
/// `*/delta`) are left out: a transcript reads the whole message instead.
pub fn list_window(
    conn: &mut DbConnection,
    session_id: &str,
    window: Window,
    limit: i64,
    partial: bool,
) -> Result<Vec<Message>, StoreError> {
    let mut query = messages::table.filter(messages::session_id.eq(session_id)).into_boxed();
    if !partial {
        query =
            query.filter(messages::message_type.ne("stream_event")).filter(messages::message_type.not_like("%/delta"));
    }
    let rows = match window {
        Window::From(offset) => {
            query.order(messages::id.asc()).limit(limit).offset(offset).select(Message::as_select()).load(conn)?
        }
        Window::Tail | Window::Before(_) => {
            if let Window::Before(id) = window {
                query = query.filter(messages::id.lt(id));
            }
            let mut newest: Vec<Message> =
                query.order(messages::id.desc()).limit(limit).select(Message::as_select()).load(conn)?;
            newest.reverse();
            newest
        }
    };
    Ok(rows)
}

/// The highest event sequence number stored for a session (0 when none): where its stream
/// goes on after a resume or a restart.
pub fn last_seq(conn: &mut DbConnection, session_id: &str) -> Result<u64, StoreError> {
    use diesel::dsl::max;
    let lines: Option<i64> =
        messages::table.filter(messages::session_id.eq(session_id)).select(max(messages::seq)).first(conn)?;
    let others: Option<i64> = session_events::table
        .filter(session_events::session_id.eq(session_id))
        .select(max(session_events::seq))
        .first(conn)?;
    Ok(lines.max(others).unwrap_or(0).max(0) as u64)
}

/// A stored user turn still to be delivered.
#[derive(Debug, Clone, PartialEq)]
pub struct PendingTurn {
    pub message_id: i64,
    /// Its number on the session's stream.
    pub seq: u64,
    /// What the user said.
    pub content: String,
}

/// The user turns of session `session_id` from stream number `from` on, oldest first: what a
/// session parked at a usage limit still has to deliver.
pub fn turns_from(conn: &mut DbConnection, session_id: &str, from: i64) -> Result<Vec<PendingTurn>, StoreError> {
    user_turns(conn, session_id, from, false)
}

/// The user turns of session `session_id` after stream number `after` that were never written
/// to the CLI, oldest first: what a session attached again after a restart still has to
/// deliver.
pub fn undelivered_turns(
    conn: &mut DbConnection,
    session_id: &str,
    after: u64,
) -> Result<Vec<PendingTurn>, StoreError> {
    user_turns(conn, session_id, i64::try_from(after).unwrap_or(i64::MAX).saturating_add(1), true)
}

/// Conduit's user turns of a session from stream number `from` on (only those never written
/// to the CLI, when `undelivered`), oldest first. A stored line that is not a user turn
/// Conduit wrote is skipped with a warning (it cannot be sent again as it was).
fn user_turns(
    conn: &mut DbConnection,
    session_id: &str,
    from: i64,
    undelivered: bool,
) -> Result<Vec<PendingTurn>, StoreError> {
    let mut query = messages::table
        .filter(messages::session_id.eq(session_id))
        .filter(messages::direction.eq("to_cli"))
        .filter(messages::message_type.eq("user"))
        .filter(messages::seq.ge(from))
        .into_boxed();
    if undelivered {
        query = query.filter(messages::delivered_at.is_null());
    }
    let rows: Vec<(i64, Option<i64>, String)> =
        query.order(messages::seq.asc()).select((messages::id, messages::seq, messages::content)).load(conn)?;
    Ok(rows
        .into_iter()
        .filter_map(|(message_id, seq, line)| {
            let content = crate::protocol::outgoing::user_turn_content(&line);
            if content.is_none() {
                tracing::warn!(session = session_id, message_id, "a stored user turn could not be read back; skipped");
            }
            Some(PendingTurn { message_id, seq: seq?.max(0) as u64, content: content? })
        })
        .collect())
}

/// One stored event of a session's stream.
#[derive(Debug, Clone, PartialEq)]
pub struct StoredEvent {
    pub seq: u64,
    pub kind: String,
    pub name: String,
    pub timestamp: String,
    pub data: String,
}

/// A session's stored events with `from <= seq < until`, in order, at most `limit`: relayed
/// lines (named as the live stream named them) merged with its other events.
pub fn events_between(
    conn: &mut DbConnection,
    session_id: &str,
    from: u64,
    until: u64,
    limit: i64,
) -> Result<Vec<StoredEvent>, StoreError> {
    let (from, until) = (from.min(i64::MAX as u64) as i64, until.min(i64::MAX as u64) as i64);
    type Line = (Option<i64>, String, Option<String>, String, String);
    let lines: Vec<Line> = messages::table
        .filter(messages::session_id.eq(session_id))
        .filter(messages::seq.ge(from).and(messages::seq.lt(until)))
        .order(messages::seq.asc())
        .limit(limit)
        .select((
            messages::seq,
            messages::message_type,
            messages::message_subtype,
            messages::timestamp,
            messages::content,
        ))
        .load(conn)?;
    type Other = (i64, String, String, String, String);
    let others: Vec<Other> = session_events::table
        .filter(session_events::session_id.eq(session_id))
        .filter(session_events::seq.ge(from).and(session_events::seq.lt(until)))
        .order(session_events::seq.asc())
        .limit(limit)
        .select((
            session_events::seq,
            session_events::kind,
            session_events::name,
            session_events::timestamp,
            session_events::data,
        ))
        .load(conn)?;
    let mut out: Vec<StoredEvent> = Vec::with_capacity(lines.len() + others.len());
    for (seq, message_type, subtype, timestamp, data) in lines {
        let (Some(seq), Some((kind, name))) = (seq, crate::domain::events::for_line(&message_type, subtype.as_deref()))
        else {
            continue;
        };
        out.push(StoredEvent { seq: seq as u64, kind: kind.to_string(), name, timestamp, data });
    }
    out.extend(others.into_iter().map(|(seq, kind, name, timestamp, data)| StoredEvent {
        seq: seq as u64,
        kind,
        name,
        timestamp,
        data,
    }));
    out.sort_by_key(|e| e.seq);
    out.truncate(limit.max(0) as usize);
    Ok(out)
}

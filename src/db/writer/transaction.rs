//! One batch, one transaction, on the writer's own connection.

use super::job::{Ack, Job, WriteOp};
use crate::db::checkpoint::{self, WalWatch, WRITER_CHECKPOINT_BYTES, WRITER_PRAGMAS};
use crate::db::messages::{self, NewMessage, NewSessionEvent};
use crate::db::{permission_log, sessions, usage, webhooks};
use crate::db::{DbConnection, Store, StoreError};

/// A job this large (a line of megabytes) leaves a PostgreSQL connection holding as much.
const HUGE_JOB_BYTES: usize = 4 << 20;

/// The writer thread's connection, opened on first use and again after a failure (a file that
/// went away and came back, say).
pub(super) struct Connection {
    pub(super) store: Store,
    pub(super) conn: Option<DbConnection>,
    /// Bytes committed since the writer's last checkpoint of its own.
    pub(super) unchecked: usize,
    /// SQLite: the WAL's size, checked after each commit.
    pub(super) wal: Option<WalWatch>,
    /// Cluster mode: this node's name, in the notices of stored events.
    pub(super) notify_as: Option<String>,
}

impl Connection {
    pub(super) fn transaction(&mut self, jobs: &[Job]) -> Result<Vec<Option<i64>>, StoreError> {
        let conn = match self.conn.as_mut() {
            Some(conn) => conn,
            None => self.conn.insert(self.store.dedicated(WRITER_PRAGMAS)?),
        };
        let result = conn_transaction(conn, jobs, self.notify_as.as_deref());
        match &result {
            Ok(_) if matches!(conn, DbConnection::Pg(_)) => {
                // libpq grows a connection's buffers to the largest message it sent and never
                // shrinks them: after a huge line, a fresh connection gives that memory back.
                if jobs.iter().any(|job| job.bytes() >= HUGE_JOB_BYTES) {
                    self.conn = None;
                }
            }
            Ok(_) => {
                self.unchecked += jobs.iter().map(Job::bytes).sum::<usize>();
                let wal_over = self.wal.as_mut().is_some_and(WalWatch::over_limit);
                if wal_over || self.unchecked >= WRITER_CHECKPOINT_BYTES {
                    checkpoint::checkpoint(conn);
                    self.unchecked = 0;
                }
            }
            Err(e) if !is_permanent(e) => self.conn = None,
            Err(_) => {}
        }
        result
    }
}

/// Refusals by the database itself (constraints) do not pass by retrying.
pub(super) fn is_permanent(e: &StoreError) -> bool {
    matches!(e, StoreError::Rejected(_) | StoreError::Conflict(_))
}

fn conn_transaction(
    conn: &mut DbConnection,
    jobs: &[Job],
    notify_as: Option<&str>,
) -> Result<Vec<Option<i64>>, StoreError> {
    conn.write_transaction(|conn| write_batch(conn, jobs, notify_as))
}

/// One transaction: the batch's lines are inserted together, and so are its session events,
/// each table in the order they were queued (a line that wants its id first sends the lines
/// before it); everything else applies in its place. Which table a row reached first is never
/// seen: the batch commits as one. Interleaving them instead (every streamed line is a line
/// and an event) cost a statement per row: on PostgreSQL, a round trip each.
/// Returns the row id of each line that asked.
fn write_batch(conn: &mut DbConnection, jobs: &[Job], notify_as: Option<&str>) -> Result<Vec<Option<i64>>, StoreError> {
    let mut ids = vec![None; jobs.len()];
    let mut lines: Vec<&NewMessage> = Vec::new();
    let mut events: Vec<&NewSessionEvent> = Vec::new();
    for (i, job) in jobs.iter().enumerate() {
        if let WriteOp::Message(m) = &job.op {
            if matches!(job.ack, Some(Ack::Id(_))) {
                messages::insert_many(conn, lines.drain(..))?;
                ids[i] = Some(messages::insert_returning_id(conn, m)?);
            } else {
                lines.push(m);
            }
            continue;
        }
        match &job.op {
            WriteOp::Message(_) | WriteOp::Flush => {}
            WriteOp::Event(e) => events.push(e),
            WriteOp::Delivered { message_id, at } => messages::mark_delivered(conn, *message_id, at.as_deref())?,
            WriteOp::Session { id, patch } => sessions::apply(conn, id, patch)?,
            WriteOp::TurnResult { id, patch, usage: cost } => {
                sessions::apply(conn, id, patch)?;
                usage::record(conn, cost)?;
            }
            WriteOp::Decision(row) => permission_log::insert(conn, row)?,
            WriteOp::Attempt(row) => webhooks::insert_attempt(conn, row)?,
        }
    }
    messages::insert_many(conn, lines)?;
    if let Some(node) = notify_as {
        // Delivered with the commit, never before it: a node told of events can read them.
        crate::db::relay::notify_events(conn, node, &numbered(jobs))?;
    }
    messages::insert_events(conn, events)?;
    Ok(ids)
}

/// The stream numbers a batch stores (session, seq): its numbered lines and its events.
fn numbered(jobs: &[Job]) -> Vec<(&str, i64)> {
    jobs.iter()
        .filter_map(|job| match &job.op {
            WriteOp::Message(m) => Some((m.session_id.as_str(), m.seq?)),
            WriteOp::Event(e) => Some((e.session_id.as_str(), e.seq)),
            _ => None,
        })
        .collect()
}

//! Queries on `processes`: commands and background processes started in workspaces.

use diesel::prelude::*;
use serde::Serialize;
use utoipa::ToSchema;

use super::schema::processes;
use super::{DbConnection, StoreError};
use crate::domain::ids::{ProcessId, ProjectId, SessionId};
use crate::domain::process::{Owner, ProcessKind, ProcessStatus};

/// A command or background process, as stored and as the API shows it.
#[derive(Debug, Clone, PartialEq, Queryable, Selectable, Insertable, Serialize, ToSchema)]
#[diesel(table_name = processes)]
pub struct ProcessRow {
    /// Conduit's id (UUID); not the pid.
    #[schema(value_type = String)]
    pub id: ProcessId,
    #[schema(value_type = String)]
    pub project_id: ProjectId,
    /// The session whose workspace it runs in; null for a project's folder.
    #[schema(value_type = Option<String>)]
    pub session_id: Option<SessionId>,
    pub kind: ProcessKind,
    /// The command line as the permission rules saw it.
    pub command: String,
    /// Where it started.
    pub cwd: String,
    /// The exec context it ran in, if any.
    pub context: Option<String>,
    pub status: ProcessStatus,
    /// The pid of its process group's leader (the sandbox, when sandboxed).
    pub pid: Option<i32>,
    pub exit_code: Option<i32>,
    /// The signal that ended it, if one did.
    pub signal: Option<i32>,
    /// Why Conduit ended it: `requested`, `timeout`, `owner_ended`, `shutdown`; null when it
    /// ended on its own.
    pub end_reason: Option<String>,
    pub started_at: String,
    pub ended_at: Option<String>,
    /// Bytes it wrote to stdout (stored up to the cap).
    pub stdout_bytes: i64,
    pub stderr_bytes: i64,
    /// Output past the cap was not kept.
    pub stdout_truncated: bool,
    pub stderr_truncated: bool,
    /// In cluster mode: the node it runs on.
    pub owner_node: Option<String>,
}

/// How a process ended, for its row.
#[derive(Debug, Clone, Default, AsChangeset)]
#[diesel(table_name = processes)]
pub struct Ending {
    pub status: Option<ProcessStatus>,
    pub exit_code: Option<Option<i32>>,
    pub signal: Option<Option<i32>>,
    pub end_reason: Option<Option<String>>,
    pub ended_at: Option<Option<String>>,
    pub stdout_bytes: Option<i64>,
    pub stderr_bytes: Option<i64>,
    pub stdout_truncated: Option<bool>,
    pub stderr_truncated: Option<bool>,
}

pub fn insert(conn: &mut DbConnection, row: &ProcessRow) -> Result<(), StoreError> {
    diesel::insert_into(processes::table).values(row).execute(conn)?;
    Ok(())
}

pub fn set_pid(conn: &mut DbConnection, id: &ProcessId, pid: i32) -> Result<(), StoreError> {
    diesel::update(processes::table.find(id)).set(processes::pid.eq(pid)).execute(conn)?;
    Ok(())
}

pub fn end(conn: &mut DbConnection, id: &ProcessId, ending: &Ending) -> Result<(), StoreError> {
    diesel::update(processes::table.find(id)).set(ending).execute(conn)?;
    Ok(())
}

pub fn find(conn: &mut DbConnection, id: &ProcessId) -> Result<Option<ProcessRow>, StoreError> {
    Ok(processes::table.find(id).select(ProcessRow::as_select()).first(conn).optional()?)
}

/// One owner's processes, newest first: a session's, or those of a project's folder (not its
/// sessions').
pub fn list(
    conn: &mut DbConnection,
    owner: &Owner,
    kind: Option<ProcessKind>,
    status: Option<ProcessStatus>,
    limit: i64,
    offset: i64,
) -> Result<Vec<ProcessRow>, StoreError> {
    let mut query = processes::table.select(ProcessRow::as_select()).into_boxed();
    query = match owner {
        Owner::Session(id) => query.filter(processes::session_id.eq(id.as_str())),
        Owner::Project(id) => {
            query.filter(processes::project_id.eq(id.as_str())).filter(processes::session_id.is_null())
        }
    };
    if let Some(kind) = kind {
        query = query.filter(processes::kind.eq(kind));
    }
    if let Some(status) = status {
        query = query.filter(processes::status.eq(status));
    }
    Ok(query.order((processes::started_at.desc(), processes::id.asc())).limit(limit).offset(offset).load(conn)?)
}

/// Deletes an owner's ended processes (all of them, or those ended before `before`); returns
/// their ids (their logs go too). With `node` (cluster mode), only that node's and those no
/// node recorded: another node's logs are on its own disk, so that node deletes its rows.
pub fn delete_ended(
    conn: &mut DbConnection,
    owner: Option<&Owner>,
    before: Option<&str>,
    node: Option<&str>,
) -> Result<Vec<ProcessId>, StoreError> {
    conn.write_transaction(|conn| {
        let mut query =
            processes::table.filter(processes::status.ne(ProcessStatus::Running)).select(processes::id).into_boxed();
        if let Some(node) = node {
            query = query.filter(processes::owner_node.eq(node.to_string()).or(processes::owner_node.is_null()));
        }
        query = match owner {
            Some(Owner::Session(id)) => query.filter(processes::session_id.eq(id.as_str())),
            Some(Owner::Project(id)) => {
                query.filter(processes::project_id.eq(id.as_str())).filter(processes::session_id.is_null())
            }
            None => query,
        };
        if let Some(before) = before {
            query = query.filter(processes::ended_at.lt(before));
        }
        let ids: Vec<ProcessId> = query.limit(10_000).load(conn)?;
        for chunk in ids.chunks(500) {
            diesel::delete(processes::table.filter(processes::id.eq_any(chunk.iter().map(ProcessId::as_str))))
                .execute(conn)?;
        }
        Ok::<_, diesel::result::Error>(ids)
    })
    .map_err(StoreError::from)
}

/// The nodes recorded as running (`running`) or having run the processes of a project's
/// folder (not its sessions'), by name.
pub fn nodes_of(conn: &mut DbConnection, project: &ProjectId, running: bool) -> Result<Vec<String>, StoreError> {
    let mut query = processes::table
        .filter(processes::project_id.eq(project.as_str()))
        .filter(processes::session_id.is_null())
        .select(processes::owner_node)
        .distinct()
        .into_boxed();
    query = if running {
        query.filter(processes::status.eq(ProcessStatus::Running))
    } else {
        query.filter(processes::status.ne(ProcessStatus::Running))
    };
    let names: Vec<Option<String>> = query.load(conn)?;
    let mut names: Vec<String> = names.into_iter().flatten().collect();
    names.sort();
    Ok(names)
}

/// After a crash of the service: every process still marked running is `lost`. Returns their
/// ids, so their leftovers can be looked for by marker.
pub fn lose_interrupted(conn: &mut DbConnection, now: &str, owner: Option<&str>) -> Result<Vec<ProcessId>, StoreError> {
    conn.write_transaction(|conn| {
        let mut running = processes::table.filter(processes::status.eq(ProcessStatus::Running)).into_boxed();
        if let Some(node) = owner {
            running = running.filter(processes::owner_node.eq(node.to_string()));
        }
        let ids: Vec<ProcessId> = running.select(processes::id).load(conn)?;
        diesel::update(processes::table.filter(processes::id.eq_any(&ids)))
            .set((processes::status.eq(ProcessStatus::Lost), processes::ended_at.eq(now)))
            .execute(conn)?;
        Ok::<_, diesel::result::Error>(ids)
    })
    .map_err(StoreError::from)
}

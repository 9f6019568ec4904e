//! Queries on `sessions`.

use diesel::prelude::*;
use serde::Serialize;
use utoipa::ToSchema;

use super::schema::sessions;
use super::{DbConnection, StoreError};
use crate::domain::agent_kind::AgentKind;
use crate::domain::ids::{ProjectId, SessionId};
use crate::domain::session::{ClosedReason, SessionStatus};
use crate::domain::workspace::WorkspaceMode;

/// A session: one supervised CLI process and everything recorded about it.
#[derive(Debug, Clone, PartialEq, Queryable, Selectable, Insertable, Serialize, ToSchema)]
#[diesel(table_name = sessions)]
pub struct Session {
    /// Conduit's id (UUID).
    #[schema(value_type = String)]
    pub id: SessionId,
    #[schema(value_type = String)]
    pub project_id: ProjectId,
    /// The CLI's own session id, known after its first `system`/`init`.
    pub session_id: Option<String>,
    /// Idempotency key given at launch, if any.
    pub external_key: Option<String>,
    pub name: String,
    /// starting, idle, active, compacting, closed or error.
    pub status: SessionStatus,
    pub model: Option<String>,
    pub permission_mode: Option<String>,
    #[serde(skip)]
    pub system_prompt: Option<String>,
    #[serde(skip)]
    pub append_system_prompt: Option<String>,
    #[serde(skip)]
    pub resume_session_id: Option<String>,
    #[serde(skip)]
    pub fork_session: bool,
    /// `stdio`, or `websocket` for the `--sdk-url` bridge transport.
    pub transport: String,
    /// The bridge's port on 127.0.0.1 (websocket transport only).
    pub ws_port: Option<i32>,
    pub cli_pid: Option<i32>,
    /// The CLI process's start time (clock ticks since boot), to recognise it after a restart.
    #[serde(skip)]
    pub cli_started_at: Option<String>,
    pub total_cost_usd: f64,
    pub total_input_tokens: i64,
    pub total_output_tokens: i64,
    pub num_turns: i32,
    pub error_message: Option<String>,
    pub created_at: String,
    pub last_active_at: String,
    pub closed_at: Option<String>,
    /// Why the session ended: `requested`, `idle_timeout`, `project_deleted`, `shutdown`,
    /// `cli_exited`, `launch_failed`, `service_restarted`, `node_lost`, `stalled` or
    /// `out_of_memory`; null while live.
    pub closed_reason: Option<ClosedReason>,
    /// What the session got: `shared` (the project folder) or `worktree` (its own).
    pub workspace_mode: WorkspaceMode,
    /// Its worktree's folder (worktree mode).
    pub worktree_path: Option<String>,
    /// Its worktree's branch, `conduit/<name>` (worktree mode).
    pub branch: Option<String>,
    /// What the worktree was made from: the ref given at launch, or the branch the project
    /// folder had checked out (`HEAD` when detached). Merges go into it.
    pub base_ref: Option<String>,
    /// The commit the worktree was made from: diffs are against it.
    pub base_commit: Option<String>,
    /// The agent CLI it runs: `claude`, `codex`, `gemini` or a configured ACP agent.
    pub agent: AgentKind,
    /// While `waiting_for_limit`: when the session delivers its queued turns again (the
    /// limit's reset, plus a little jitter).
    pub resumes_at: Option<String>,
    /// While `waiting_for_limit` or `paused`: why, in words.
    pub status_reason: Option<String>,
    /// The most this session may cost, in USD, when its launch set a cap.
    pub max_budget_usd: Option<f64>,
    /// In cluster mode: the node whose CLI runs (or last ran) it. Null on a single service.
    pub owner_node: Option<String>,
    /// The kernel limits its launch asked for itself (its project's `session_limits` and the
    /// settings fill in the rest, at each start); null: none of its own.
    #[schema(value_type = Option<crate::domain::resources::SessionLimits>)]
    pub limits: Option<crate::domain::resources::StoredLimits>,
}

/// A change to a session row; `None` leaves a column as it is.
#[derive(Debug, Clone, Default, PartialEq, AsChangeset)]
#[diesel(table_name = sessions)]
pub struct SessionPatch {
    pub status: Option<SessionStatus>,
    pub session_id: Option<String>,
    pub model: Option<String>,
    pub permission_mode: Option<String>,
    pub cli_pid: Option<Option<i32>>,
    pub cli_started_at: Option<Option<String>>,
    pub ws_port: Option<Option<i32>>,
    pub total_cost_usd: Option<f64>,
    pub total_input_tokens: Option<i64>,
    pub total_output_tokens: Option<i64>,
    pub num_turns: Option<i32>,
    pub error_message: Option<Option<String>>,
    pub last_active_at: Option<String>,
    pub closed_at: Option<Option<String>>,
    pub closed_reason: Option<Option<ClosedReason>>,
    pub worktree_path: Option<Option<String>>,
    pub branch: Option<Option<String>>,
    pub base_ref: Option<Option<String>>,
    pub base_commit: Option<Option<String>>,
    pub resumes_at: Option<Option<String>>,
    pub status_reason: Option<Option<String>>,
    /// While parked at a usage limit: the stream number of the first user turn to deliver
    /// again. Not part of [`Session`]: only a revival after a restart reads it.
    pub parked_from_seq: Option<Option<i64>>,
    /// A resume on another node takes the session over.
    pub owner_node: Option<Option<String>>,
    /// What the session's conversation must know to go on after a restart while its CLI runs
    /// on under a keeper (JSON; null: no keeper holds it). Not part of [`Session`]: only a
    /// restart reads it.
    pub keeper_state: Option<Option<String>>,
}

impl SessionPatch {
    pub fn is_empty(&self) -> bool {
        *self == SessionPatch::default()
    }
}

pub fn insert(conn: &mut DbConnection, session: &Session) -> Result<(), StoreError> {
    diesel::insert_into(sessions::table).values(session).execute(conn)?;
    Ok(())
}

pub fn find(conn: &mut DbConnection, id: &SessionId) -> Result<Option<Session>, StoreError> {
    Ok(sessions::table.find(id).select(Session::as_select()).first(conn).optional()?)
}

pub fn apply(conn: &mut DbConnection, id: &SessionId, patch: &SessionPatch) -> Result<(), StoreError> {
    if !patch.is_empty() {
        diesel::update(sessions::table.find(id)).set(patch).execute(conn)?;
    }
    Ok(())
}

/// A project's sessions, newest first.
pub fn list_for_project(
    conn: &mut DbConnection,
    project_id: &ProjectId,
    limit: i64,
    offset: i64,
) -> Result<Vec<Session>, StoreError> {
    Ok(sessions::table
        .filter(sessions::project_id.eq(project_id))
        .order((sessions::created_at.desc(), sessions::id.asc()))
        .limit(limit)
        .offset(offset)
        .select(Session::as_select())
        .load(conn)?)
}

/// Sessions whose status says their CLI is running, oldest first; `project`'s only when given.
pub fn list_live(
    conn: &mut DbConnection,
    project: Option<&ProjectId>,
    limit: i64,
    offset: i64,
) -> Result<Vec<Session>, StoreError> {
    let mut query = sessions::table.filter(sessions::status.eq_any(SessionStatus::LIVE)).into_boxed();
    if let Some(project) = project {
        query = query.filter(sessions::project_id.eq(project.clone()));
    }
    Ok(query
        .order((sessions::created_at.asc(), sessions::id.asc()))
        .limit(limit)
        .offset(offset)
        .select(Session::as_select())
        .load(conn)?)
}

/// How many sessions are in each status, and the turns every stored session ran (for
/// `/metrics`).
pub fn tally(conn: &mut DbConnection) -> Result<(Vec<(SessionStatus, i64)>, i64), StoreError> {
    let by_status = sessions::table
        .group_by(sessions::status)
        .select((sessions::status, diesel::dsl::count_star()))
        .load::<(SessionStatus, i64)>(conn)?;
    let turns: Option<i64> = sessions::table.select(diesel::dsl::sum(sessions::num_turns)).first(conn)?;
    Ok((by_status, turns.unwrap_or(0)))
}

/// Ids of live sessions whose stored `last_active_at` is before `cutoff`, quietest first: the
/// janitor's candidates (the actor itself decides whether one is truly idle). The stored time
/// only ever lags the actor's own, so this never misses an idle session. Uses
/// `sessions_status_last_active_idx`: one index range per live status, no table scan.
pub fn quiet_since(
    conn: &mut DbConnection,
    cutoff: &str,
    limit: i64,
    owner: Option<&str>,
) -> Result<Vec<SessionId>, StoreError> {
    let mut query = sessions::table.filter(sessions::status.eq_any(SessionStatus::LIVE)).into_boxed();
    if let Some(node) = owner {
        // In a cluster each node's janitor looks only at its own sessions.
        query = query.filter(sessions::owner_node.eq(node.to_string()));
    }
    Ok(query
        .filter(sessions::last_active_at.lt(cutoff))
        .order(sessions::last_active_at.asc())
        .limit(limit)
        .select(sessions::id)
        .load(conn)?)
}

/// A resume takes an ended session over: `patch` (status `starting` again, this node as its
/// owner) applies only while the row is still closed or errored. False when it is not.
pub fn take_over(conn: &mut DbConnection, id: &SessionId, patch: &SessionPatch) -> Result<bool, StoreError> {
    let ended = [SessionStatus::Closed, SessionStatus::Error];
    let updated =
        diesel::update(sessions::table.find(id).filter(sessions::status.eq_any(ended))).set(patch).execute(conn)?;
    Ok(updated == 1)
}

/// The live session of `project` with `key`, if any (there is at most one: a unique index).
pub fn live_with_key(conn: &mut DbConnection, project: &ProjectId, key: &str) -> Result<Option<Session>, StoreError> {
    Ok(sessions::table
        .filter(sessions::project_id.eq(project))
        .filter(sessions::external_key.eq(key))
        .filter(sessions::status.eq_any(SessionStatus::LIVE))
        .select(Session::as_select())
        .first(conn)
        .optional()?)
}

/// The node running a live session; `None` when the session has ended, is unknown or has no
/// owner (a single service).
pub fn live_owner(conn: &mut DbConnection, id: &SessionId) -> Result<Option<String>, StoreError> {
    Ok(sessions::table
        .find(id)
        .filter(sessions::status.eq_any(SessionStatus::LIVE))
        .select(sessions::owner_node)
        .first::<Option<String>>(conn)
        .optional()?
        .flatten())
}

pub fn count_live(conn: &mut DbConnection) -> Result<i64, StoreError> {
    Ok(sessions::table.filter(sessions::status.eq_any(SessionStatus::LIVE)).count().get_result(conn)?)
}

/// The sessions still marked live (in cluster mode, `owner`'s only; `None`: every one), each
/// with its `keeper_state` (set when a keeper holds its CLI).
pub fn live_with_keepers(
    conn: &mut DbConnection,
    owner: Option<&str>,
) -> Result<Vec<(Session, Option<String>)>, StoreError> {
    let query = sessions::table.filter(sessions::status.eq_any(SessionStatus::LIVE)).into_boxed();
    let query = match owner {
        Some(node) => query.filter(sessions::owner_node.eq(node.to_string())),
        None => query,
    };
    Ok(query.select((Session::as_select(), sessions::keeper_state)).load(conn)?)
}

/// After a stop or crash of the service: every session still marked live, but those in `kept`
/// (whose CLIs ran on under keepers that answered), is now `error`: `crashed` for those in
/// `crashed` (their keeper was there and is gone), `service_restarted` for the rest. Returns
/// the rows as they were, so their processes can be looked for. In cluster mode `owner` limits
/// this to the node's own sessions (the other nodes' are theirs); `None` is every session.
pub fn fail_interrupted(
    conn: &mut DbConnection,
    now: &str,
    owner: Option<&str>,
    (kept, crashed): (&[SessionId], &[SessionId]),
) -> Result<Vec<Session>, StoreError> {
    conn.write_transaction(|conn| {
        let live = || {
            let query = sessions::table.filter(sessions::status.eq_any(SessionStatus::LIVE)).into_boxed();
            match owner {
                Some(node) => query.filter(sessions::owner_node.eq(node.to_string())),
                None => query,
            }
        };
        let rows: Vec<Session> =
            live().select(Session::as_select()).load(conn)?.into_iter().filter(|r| !kept.contains(&r.id)).collect();
        let (lost, restarted): (Vec<SessionId>, Vec<SessionId>) =
            rows.iter().map(|r| r.id.clone()).partition(|id| crashed.contains(id));
        for (ids, reason, message) in [
            (restarted, ClosedReason::ServiceRestarted, "service restarted"),
            (lost, ClosedReason::Crashed, "its keeper was gone when the service restarted"),
        ] {
            diesel::update(sessions::table.filter(sessions::id.eq_any(&ids)))
                .set((
                    sessions::status.eq(SessionStatus::Error),
                    sessions::error_message.eq(message),
                    sessions::closed_at.eq(now),
                    sessions::closed_reason.eq(reason),
                    sessions::keeper_state.eq(None::<String>),
                ))
                .execute(conn)?;
        }
        Ok::<_, diesel::result::Error>(rows)
    })
    .map_err(StoreError::from)
}

/// A node's sessions the leader declared lost since `since` (while the node was down or cut
/// off): when the node starts again, their processes may still run on it.
pub fn lost_since(conn: &mut DbConnection, owner: &str, since: &str) -> Result<Vec<Session>, StoreError> {
    Ok(sessions::table
        .filter(sessions::owner_node.eq(owner))
        .filter(sessions::closed_reason.eq(ClosedReason::NodeLost))
        .filter(sessions::closed_at.ge(since))
        .select(Session::as_select())
        .load(conn)?)
}

/// Sessions that were parked at a usage limit when the service stopped or crashed: they are
/// brought back at the next start.
pub fn parked_before_restart(conn: &mut DbConnection) -> Result<Vec<SessionId>, StoreError> {
    Ok(sessions::table
        .filter(sessions::resumes_at.is_not_null())
        .filter(sessions::status.eq_any([SessionStatus::Closed, SessionStatus::Error]))
        .filter(
            sessions::closed_reason.assume_not_null().eq_any([ClosedReason::Shutdown, ClosedReason::ServiceRestarted]),
        )
        .order(sessions::resumes_at.asc())
        .select(sessions::id)
        .load(conn)?)
}

/// What a kept session's conversation stored to go on with after a restart (see
/// [`SessionPatch::keeper_state`]), and the number of the last line of its CLI's it stored.
pub fn kept_state(conn: &mut DbConnection, id: &SessionId) -> Result<(Option<String>, u64), StoreError> {
    use diesel::dsl::max;
    let state = sessions::table.find(id).select(sessions::keeper_state).first::<Option<String>>(conn).optional()?;
    let through: Option<i64> = super::schema::messages::table
        .filter(super::schema::messages::session_id.eq(id.as_str()))
        .filter(super::schema::messages::cli_seq.is_not_null())
        .select(max(super::schema::messages::cli_seq))
        .first(conn)?;
    Ok((state.flatten(), through.unwrap_or(0).max(0) as u64))
}

/// Where a parked session's turns still to deliver start (see [`SessionPatch::parked_from_seq`]).
pub fn parked_from(conn: &mut DbConnection, id: &SessionId) -> Result<Option<i64>, StoreError> {
    Ok(sessions::table.find(id).select(sessions::parked_from_seq).first::<Option<i64>>(conn).optional()?.flatten())
}

/// Where a session's commands, processes and terminals run: its workspace, and the project it
/// belongs to (for its rules and sandbox).
#[derive(Debug, Clone)]
pub struct SessionWorkspace {
    pub session: Session,
    pub project: super::projects::Project,
    /// The folder: the session's own worktree, or the project's folder when it shares it.
    pub folder: String,
}

/// The workspace of session `id`, if the session exists.
pub fn workspace(conn: &mut DbConnection, id: &SessionId) -> Result<Option<SessionWorkspace>, StoreError> {
    let Some(session) = find(conn, id)? else {
        return Ok(None);
    };
    let Some(project) = super::projects::find(conn, &session.project_id)? else {
        return Ok(None);
    };
    let folder = match (&session.workspace_mode, &session.worktree_path) {
        (WorkspaceMode::Worktree, Some(path)) => path.clone(),
        _ => project.folder_path.clone(),
    };
    Ok(Some(SessionWorkspace { session, project, folder }))
}

/// Which of `ids` name a stored session.
pub fn existing(conn: &mut DbConnection, ids: Vec<String>) -> Result<Vec<String>, StoreError> {
    Ok(sessions::table
        .filter(sessions::id.eq_any(ids))
        .select(sessions::id)
        .load::<SessionId>(conn)?
        .into_iter()
        .map(String::from)
        .collect())
}

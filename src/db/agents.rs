//! Queries on `agents` and `agent_executions`.

use diesel::prelude::*;
use serde::Serialize;
use utoipa::ToSchema;

use super::schema::{agent_executions, agents};
use super::{DbConnection, StoreError};
use crate::domain::agent::{AgentStatus, ExecutionStatus, TriggerKind};
use crate::domain::ids::{AgentId, ExecutionId, ProjectId};

/// Executions kept per agent; older ones are deleted as new ones finish.
pub const HISTORY_PER_AGENT: i64 = 100;

/// A scheduled agent: an objective run unattended on a cron schedule.
#[derive(Debug, Clone, PartialEq, Queryable, Selectable, Insertable, AsChangeset, Serialize, ToSchema)]
#[diesel(table_name = agents, treat_none_as_null = true)]
pub struct Agent {
    /// UUID.
    #[schema(value_type = String)]
    pub id: AgentId,
    /// The project it belongs to, if any.
    #[schema(value_type = Option<String>)]
    pub project_id: Option<ProjectId>,
    pub name: String,
    /// The one user turn each run sends.
    pub objective: String,
    /// Cron expression: 5 fields (minute first), or 6/7 with seconds first.
    pub schedule: String,
    /// Canonical folder the CLI runs in.
    pub cwd: String,
    pub model: Option<String>,
    /// A run longer than this is ended and recorded as `timeout`.
    pub timeout_ms: i64,
    /// `active`, `paused`, or `error` (after 5 failures in a row; resume to fire again).
    pub status: AgentStatus,
    pub consecutive_failures: i32,
    /// When the schedule fires next (while active).
    pub next_run_at: Option<String>,
    pub created_at: String,
    pub updated_at: String,
    /// `shared`: runs work in `cwd`; `worktree`: each run in a fresh git worktree of `cwd` on
    /// a branch of its own (`conduit/agent-<name>-<run>`), its checkout removed after the run.
    #[schema(value_type = crate::domain::workspace::WorkspaceMode)]
    pub workspace_mode: crate::domain::workspace::WorkspaceMode,
    /// The agent CLI each run starts (`claude` by default).
    pub agent: crate::domain::agent_kind::AgentKind,
    /// The most one run may cost, in USD (`null`: no cap): Claude Code gets it as
    /// `--max-budget-usd`.
    pub max_budget_usd: Option<f64>,
}

/// One run of an agent.
#[derive(Debug, Clone, PartialEq, Queryable, Selectable, Insertable, AsChangeset, Serialize, ToSchema)]
#[diesel(table_name = agent_executions, treat_none_as_null = true)]
pub struct Execution {
    /// UUID.
    #[schema(value_type = String)]
    pub id: ExecutionId,
    #[schema(value_type = String)]
    pub agent_id: AgentId,
    /// `cron` or `manual`.
    #[serde(rename = "trigger")]
    pub trigger_kind: TriggerKind,
    /// queued, running, success, failure, timeout, cancelled, skipped or waiting_for_limit.
    pub status: ExecutionStatus,
    pub exit_code: Option<i32>,
    pub started_at: Option<String>,
    pub finished_at: Option<String>,
    pub cost_usd: Option<f64>,
    pub input_tokens: Option<i64>,
    pub output_tokens: Option<i64>,
    /// The clean text answer (the run's `result`).
    pub output: String,
    /// Every line the CLI wrote, newline separated.
    pub raw_output: String,
    pub error: Option<String>,
    pub created_at: String,
    /// While `waiting_for_limit`: when it goes back to `queued` (the limit's reset plus a
    /// little jitter); null otherwise.
    pub resumes_at: Option<String>,
    /// In cluster mode: the node running its CLI.
    pub owner_node: Option<String>,
    /// A scheduled run: the fire time it is for (each runs once, whichever node fires it).
    pub fire_at: Option<String>,
}

/// An execution without its (possibly large) output, for listings.
#[derive(Debug, Clone, PartialEq, Queryable, Selectable, Serialize, ToSchema)]
#[diesel(table_name = agent_executions)]
pub struct ExecutionSummary {
    #[schema(value_type = String)]
    pub id: ExecutionId,
    #[schema(value_type = String)]
    pub agent_id: AgentId,
    #[serde(rename = "trigger")]
    pub trigger_kind: TriggerKind,
    pub status: ExecutionStatus,
    pub exit_code: Option<i32>,
    pub started_at: Option<String>,
    pub finished_at: Option<String>,
    pub cost_usd: Option<f64>,
    pub input_tokens: Option<i64>,
    pub output_tokens: Option<i64>,
    pub error: Option<String>,
    pub created_at: String,
    /// While `waiting_for_limit`: when it goes back to `queued`.
    pub resumes_at: Option<String>,
    /// Cluster mode: the node that ran it.
    pub owner_node: Option<String>,
    /// A scheduled run: the fire time it is for.
    pub fire_at: Option<String>,
}

pub fn insert(conn: &mut DbConnection, agent: &Agent) -> Result<(), StoreError> {
    diesel::insert_into(agents::table).values(agent).execute(conn)?;
    Ok(())
}

pub fn find(conn: &mut DbConnection, id: &AgentId) -> Result<Option<Agent>, StoreError> {
    Ok(agents::table.find(id).select(Agent::as_select()).first(conn).optional()?)
}

pub fn save(conn: &mut DbConnection, agent: &Agent) -> Result<(), StoreError> {
    diesel::update(agents::table.find(&agent.id)).set(agent).execute(conn)?;
    Ok(())
}

/// The next fire time alone (not an edit: `updated_at` stays).
pub fn save_next_run(conn: &mut DbConnection, id: &AgentId, next_run_at: Option<&str>) -> Result<(), StoreError> {
    diesel::update(agents::table.find(id)).set(agents::next_run_at.eq(next_run_at)).execute(conn)?;
    Ok(())
}

pub fn delete(conn: &mut DbConnection, id: &AgentId) -> Result<bool, StoreError> {
    Ok(diesel::delete(agents::table.find(id)).execute(conn)? > 0)
}

pub fn count(conn: &mut DbConnection) -> Result<i64, StoreError> {
    Ok(agents::table.count().get_result(conn)?)
}

/// Sorted by name, then id, so pages are stable; `project`'s only when given (agents of no
/// project are then left out).
pub fn list(
    conn: &mut DbConnection,
    project: Option<&ProjectId>,
    limit: i64,
    offset: i64,
) -> Result<Vec<Agent>, StoreError> {
    let mut query = agents::table.into_boxed();
    if let Some(project) = project {
        query = query.filter(agents::project_id.eq(project.clone()));
    }
    Ok(query
        .order((agents::name.asc(), agents::id.asc()))
        .limit(limit)
        .offset(offset)
        .select(Agent::as_select())
        .load(conn)?)
}

pub fn all(conn: &mut DbConnection) -> Result<Vec<Agent>, StoreError> {
    Ok(agents::table.select(Agent::as_select()).load(conn)?)
}

pub fn insert_execution(conn: &mut DbConnection, e: &Execution) -> Result<(), StoreError> {
    diesel::insert_into(agent_executions::table).values(e).execute(conn)?;
    Ok(())
}

pub fn save_execution(conn: &mut DbConnection, e: &Execution) -> Result<(), StoreError> {
    diesel::update(agent_executions::table.find(&e.id)).set(e).execute(conn)?;
    Ok(())
}

/// The execution without secrets in what the CLI wrote or said.
pub fn scrub_execution(e: &mut Execution) -> bool {
    let raw = crate::secrets::scrub_lines(&mut e.raw_output);
    let output = crate::secrets::scrub_text(&mut e.output);
    let error = crate::secrets::scrub_optional_text(&mut e.error);
    raw | output | error
}

pub fn find_execution(conn: &mut DbConnection, id: &ExecutionId) -> Result<Option<Execution>, StoreError> {
    Ok(agent_executions::table.find(id).select(Execution::as_select()).first(conn).optional()?)
}

/// An agent's executions, newest first.
pub fn executions(
    conn: &mut DbConnection,
    agent_id: &AgentId,
    limit: i64,
) -> Result<Vec<ExecutionSummary>, StoreError> {
    Ok(agent_executions::table
        .filter(agent_executions::agent_id.eq(agent_id))
        .order((agent_executions::created_at.desc(), agent_executions::id.desc()))
        .limit(limit)
        .select(ExecutionSummary::as_select())
        .load(conn)?)
}

/// Deletes an agent's finished executions beyond the newest [`HISTORY_PER_AGENT`].
pub fn prune_history(conn: &mut DbConnection, agent_id: &AgentId) -> Result<usize, StoreError> {
    let keep: Vec<ExecutionId> = agent_executions::table
        .filter(agent_executions::agent_id.eq(agent_id))
        .order((agent_executions::created_at.desc(), agent_executions::id.desc()))
        .limit(HISTORY_PER_AGENT)
        .select(agent_executions::id)
        .load(conn)?;
    Ok(diesel::delete(
        agent_executions::table
            .filter(agent_executions::agent_id.eq(agent_id))
            .filter(agent_executions::id.ne_all(keep))
            .filter(agent_executions::status.ne_all(ExecutionStatus::UNENDED)),
    )
    .execute(conn)?)
}

/// After a crash of the service: executions it left queued or running can never finish.
/// Returns their ids (their processes may still be running). A run waiting for a limit is left
/// as it is: its agent takes it up again when it starts.
pub fn fail_interrupted(
    conn: &mut DbConnection,
    now: &str,
    owner: Option<&str>,
) -> Result<Vec<ExecutionId>, StoreError> {
    conn.write_transaction(|conn| {
        let mut live =
            agent_executions::table.filter(agent_executions::status.eq_any(ExecutionStatus::LIVE)).into_boxed();
        if let Some(node) = owner {
            live = live.filter(agent_executions::owner_node.eq(node.to_string()));
        }
        let ids: Vec<ExecutionId> = live.select(agent_executions::id).load(conn)?;
        diesel::update(agent_executions::table.filter(agent_executions::id.eq_any(&ids)))
            .set((
                agent_executions::status.eq(ExecutionStatus::Failure),
                agent_executions::error.eq("service restarted"),
                agent_executions::finished_at.eq(now),
            ))
            .execute(conn)?;
        Ok::<_, diesel::result::Error>(ids)
    })
    .map_err(StoreError::from)
}

/// An agent's executions waiting for a limit, oldest first (its actor schedules them when it
/// starts).
pub fn waiting(conn: &mut DbConnection, agent_id: &AgentId) -> Result<Vec<Execution>, StoreError> {
    Ok(agent_executions::table
        .filter(agent_executions::agent_id.eq(agent_id))
        .filter(agent_executions::status.eq(ExecutionStatus::WaitingForLimit))
        .order((agent_executions::created_at.asc(), agent_executions::id.asc()))
        .select(Execution::as_select())
        .load(conn)?)
}

/// A running execution, with what the janitor needs to judge whether it is stuck.
pub struct RunningExecution {
    pub id: ExecutionId,
    pub agent_id: AgentId,
    pub started_at: String,
    pub timeout_ms: i64,
}

/// Every execution still `running` (indexed on status), with its agent's timeout.
pub fn running(conn: &mut DbConnection, owner: Option<&str>) -> Result<Vec<RunningExecution>, StoreError> {
    let mut query = agent_executions::table
        .inner_join(agents::table)
        .filter(agent_executions::status.eq(ExecutionStatus::Running))
        .into_boxed();
    if let Some(node) = owner {
        query = query.filter(agent_executions::owner_node.eq(node.to_string()));
    }
    let rows: Vec<(ExecutionId, AgentId, Option<String>, i64)> = query
        .select((agent_executions::id, agent_executions::agent_id, agent_executions::started_at, agents::timeout_ms))
        .load(conn)?;
    Ok(rows
        .into_iter()
        .map(|(id, agent_id, started_at, timeout_ms)| RunningExecution {
            id,
            agent_id,
            started_at: started_at.unwrap_or_default(),
            timeout_ms,
        })
        .collect())
}

/// Ends an execution no run actor owns any more, if it is still marked running.
pub fn fail_orphan(conn: &mut DbConnection, id: &ExecutionId, error: &str, now: &str) -> Result<bool, StoreError> {
    Ok(diesel::update(agent_executions::table.find(id).filter(agent_executions::status.eq(ExecutionStatus::Running)))
        .set((
            agent_executions::status.eq(ExecutionStatus::Failure),
            agent_executions::error.eq(error),
            agent_executions::finished_at.eq(now),
        ))
        .execute(conn)?
        > 0)
}

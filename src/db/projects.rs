//! Queries on `projects`.

use diesel::prelude::*;
use serde::Serialize;
use utoipa::ToSchema;

use super::schema::projects;
use super::{DbConnection, StoreError};
use crate::domain::agent_kind::AgentKind;
use crate::domain::cluster::NodeList;
use crate::domain::environment::ProjectEnv;
use crate::domain::ids::{AgentId, ProjectId};
use crate::domain::sandbox::SandboxMode;
use crate::domain::workspace::{CopyList, WorkspaceMode};

/// A project: a folder on disk where sessions run, with defaults for the sessions it launches.
#[derive(Debug, Clone, PartialEq, Queryable, Selectable, Insertable, AsChangeset, Serialize, ToSchema)]
#[diesel(table_name = projects, treat_none_as_null = true)]
pub struct Project {
    /// UUID.
    #[schema(value_type = String)]
    pub id: ProjectId,
    pub name: String,
    /// Canonical absolute path of the project folder.
    pub folder_path: String,
    pub description: Option<String>,
    /// rust, node, python, go, java or generic, detected from marker files.
    pub project_type: String,
    /// `manual` (created) or `imported`.
    pub source: String,
    pub default_model: Option<String>,
    pub default_permission_mode: Option<String>,
    pub default_system_prompt: Option<String>,
    pub default_append_system_prompt: Option<String>,
    /// Live sessions this project may have at once.
    pub max_sessions: i32,
    pub created_at: String,
    pub updated_at: String,
    /// The OS sandbox its CLIs run in; `null`: the service's `sandbox` setting.
    pub sandbox: Option<SandboxMode>,
    /// `shared` (sessions work in the folder itself) or `worktree` (each session gets a git
    /// worktree of its own on a branch `conduit/<name>`).
    pub workspace_mode: WorkspaceMode,
    /// Paths and globs, relative to the folder, copied into each new worktree (`.env`, ...).
    #[schema(value_type = Vec<String>)]
    pub workspace_copy: CopyList,
    /// Run with bash in each new worktree before the CLI starts; its output is streamed as
    /// `workspace.setup_output` events, and a failure puts the session in `error`.
    pub setup_script: Option<String>,
    /// The agent its sessions run when a launch names none; `null`: `claude`. The project's
    /// default model, permission mode and prompts apply to launches of this agent only.
    pub default_agent: Option<AgentKind>,
    /// What the project may spend per UTC day, in USD; `null`: no cap. Once spent, its
    /// sessions are `paused` and turns refused (402) until the next day or a raise.
    pub budget_daily_usd: Option<f64>,
    /// The same per UTC month.
    pub budget_monthly_usd: Option<f64>,
    /// How many turns its sessions may run at once; `null`: no limit. Beyond it, turns wait
    /// first come, first served (`GET /api/projects/{id}/turns` shows the line).
    pub max_running_turns: Option<i32>,
    /// Cluster mode: the nodes that have the project's folder, where its sessions are placed
    /// (launches and resumes); empty: every node.
    #[schema(value_type = Vec<String>)]
    pub nodes: NodeList,
    /// Variables every process of the project gets (its CLIs, exec commands, background
    /// processes, terminals, setup scripts), over what the service passes on. Shown by name,
    /// each value as `[REDACTED:project_env]`.
    #[schema(value_type = std::collections::BTreeMap<String, String>)]
    pub env: ProjectEnv,
    /// A turn of its sessions with no output from the CLI for this long (milliseconds, and
    /// nothing waiting for a decision) is stalled; 0: never; `null`: the
    /// `turn_inactivity_timeout_ms` setting.
    pub turn_inactivity_timeout_ms: Option<i64>,
    /// Kernel limits on its sessions' CLIs (`memory_max_mb`, `pids_max`, `cpu_weight`), each
    /// where a launch sets none; `null`: the `session_*` settings.
    #[schema(value_type = Option<crate::domain::resources::SessionLimits>)]
    pub session_limits: Option<crate::domain::resources::StoredLimits>,
}

pub fn insert(conn: &mut DbConnection, project: &Project) -> Result<(), StoreError> {
    diesel::insert_into(projects::table).values(project).execute(conn)?;
    Ok(())
}

/// Projects with a limit of running turns, and the limit.
pub fn turn_caps(conn: &mut DbConnection) -> Result<Vec<(ProjectId, i32)>, StoreError> {
    let rows: Vec<(ProjectId, Option<i32>)> = projects::table
        .filter(projects::max_running_turns.is_not_null())
        .select((projects::id, projects::max_running_turns))
        .load(conn)?;
    Ok(rows.into_iter().filter_map(|(id, max)| Some((id, max?))).collect())
}

/// Projects with a daily or monthly budget.
pub fn with_budgets(conn: &mut DbConnection) -> Result<Vec<ProjectId>, StoreError> {
    Ok(projects::table
        .filter(projects::budget_daily_usd.is_not_null().or(projects::budget_monthly_usd.is_not_null()))
        .select(projects::id)
        .load(conn)?)
}

pub fn find(conn: &mut DbConnection, id: &ProjectId) -> Result<Option<Project>, StoreError> {
    Ok(projects::table.find(id).select(Project::as_select()).first(conn).optional()?)
}

/// What a sandbox of `project` needs from the store: the project's `env`, and every other
/// project's folder (hidden wherever the sandbox would show it).
pub fn sandbox_view(conn: &mut DbConnection, project: &ProjectId) -> Result<(ProjectEnv, Vec<String>), StoreError> {
    let rows: Vec<(ProjectId, String, ProjectEnv)> =
        projects::table.select((projects::id, projects::folder_path, projects::env)).load(conn)?;
    let mut env = ProjectEnv::default();
    let mut others = Vec::with_capacity(rows.len());
    for (id, folder, vars) in rows {
        if id == *project {
            env = vars;
        } else {
            others.push(folder);
        }
    }
    Ok((env, others))
}

pub fn find_by_folder(conn: &mut DbConnection, folder: &str) -> Result<Option<Project>, StoreError> {
    Ok(projects::table.filter(projects::folder_path.eq(folder)).select(Project::as_select()).first(conn).optional()?)
}

/// Projects whose folder is one of `folders`: (folder_path, id) pairs.
pub fn ids_by_folder(conn: &mut DbConnection, folders: Vec<String>) -> Result<Vec<(String, ProjectId)>, StoreError> {
    Ok(projects::table
        .filter(projects::folder_path.eq_any(folders))
        .select((projects::folder_path, projects::id))
        .load(conn)?)
}

/// Sorted by name, then id, so pages are stable.
pub fn list(conn: &mut DbConnection, limit: i64, offset: i64) -> Result<Vec<Project>, StoreError> {
    Ok(projects::table
        .order((projects::name.asc(), projects::id.asc()))
        .limit(limit)
        .offset(offset)
        .select(Project::as_select())
        .load(conn)?)
}

/// Writes every column of `project`; `NotFound` when the row is gone.
pub fn update(conn: &mut DbConnection, project: &Project) -> Result<(), StoreError> {
    let n = diesel::update(projects::table.find(&project.id)).set(project).execute(conn)?;
    if n == 0 {
        return Err(StoreError::NotFound);
    }
    Ok(())
}

/// Deletes `project` and answers the ids of its agents, listed and deleted in one write
/// transaction: an agent created meanwhile is either listed here or refused (its project is
/// gone). The transaction's first statement writes (the row as it was loaded; it goes
/// anyway), which takes the write lock at once: a transaction that read first could not
/// upgrade once another connection had written. The deletion cascades to the agents' rows;
/// their actors are the caller's to end. `NotFound` when the row is gone.
pub fn delete_listing_agents(conn: &mut DbConnection, project: &Project) -> Result<Vec<AgentId>, StoreError> {
    conn.write_transaction(|conn| {
        update(conn, project)?;
        let agents = super::agents::all(conn)?
            .into_iter()
            .filter(|a| a.project_id.as_ref() == Some(&project.id))
            .map(|a| a.id)
            .collect();
        delete(conn, &project.id)?;
        Ok(agents)
    })
}

/// Deletes the project; its rules, sessions, messages and audit rows go with it (cascade).
pub fn delete(conn: &mut DbConnection, id: &ProjectId) -> Result<bool, StoreError> {
    Ok(diesel::delete(projects::table.find(id)).execute(conn)? > 0)
}

pub fn count(conn: &mut DbConnection) -> Result<i64, StoreError> {
    Ok(projects::table.count().get_result(conn)?)
}

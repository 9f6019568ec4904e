//! `PUT /api/projects/{id}`: a partial update.

use actix_web::{web, HttpResponse};
use serde::Deserialize;
use utoipa::ToSchema;

use super::{
    check_agent, check_defaults, conflict_on_folder, copy_list, load, no_project, node_list, project_env_over,
    resolve_folder, workspace_mode_for, Defaults,
};
use crate::db::{self, projects::Project, StoreError};
use crate::domain::agent_kind::AgentKind;
use crate::domain::cluster::NodeList;
use crate::domain::ids::ProjectId;
use crate::domain::resources::{SessionLimits, StoredLimits};
use crate::domain::sandbox::SandboxMode;
use crate::domain::time;
use crate::domain::validate::{self, PermissionMode};
use crate::domain::workspace::{CopyList, WorkspaceMode};
use crate::error::{AppError, AppResult, ErrorBody};
use crate::http::changes::{announce, Change, Entity};
use crate::http::fields::{present, required};
use crate::http::AppState;

/// A partial update: only the fields given change; `null` clears an optional field.
#[derive(Debug, Default, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct UpdateProject {
    #[serde(default, deserialize_with = "present")]
    #[schema(value_type = String, min_length = 1, max_length = 200)]
    pub name: Option<Option<String>>,
    #[serde(default, deserialize_with = "present")]
    #[schema(value_type = String, min_length = 1, max_length = 4096)]
    pub folder_path: Option<Option<String>>,
    #[serde(default, deserialize_with = "present")]
    #[schema(value_type = Option<String>)]
    pub description: Option<Option<String>>,
    #[serde(default, deserialize_with = "present")]
    #[schema(value_type = Option<String>, pattern = r"^[^\s-]\S*$", max_length = 200)]
    pub default_model: Option<Option<String>>,
    #[serde(default, deserialize_with = "present")]
    #[schema(value_type = Option<PermissionMode>)]
    pub default_permission_mode: Option<Option<PermissionMode>>,
    #[serde(default, deserialize_with = "present")]
    #[schema(value_type = Option<String>)]
    pub default_system_prompt: Option<Option<String>>,
    #[serde(default, deserialize_with = "present")]
    #[schema(value_type = Option<String>)]
    pub default_append_system_prompt: Option<Option<String>>,
    #[serde(default, deserialize_with = "present")]
    #[schema(value_type = i32, minimum = 1, maximum = 1000)]
    pub max_sessions: Option<Option<i32>>,
    /// `null`: back to the service's `sandbox` setting.
    #[serde(default, deserialize_with = "present")]
    #[schema(value_type = Option<SandboxMode>)]
    pub sandbox: Option<Option<SandboxMode>>,
    /// `shared` or `worktree` (the folder must be a git repository's top level, else 422);
    /// cannot be null. Sessions already launched keep what they got.
    #[serde(default, deserialize_with = "present")]
    #[schema(value_type = WorkspaceMode)]
    pub workspace_mode: Option<Option<WorkspaceMode>>,
    /// `null`: nothing is copied.
    #[serde(default, deserialize_with = "present")]
    #[schema(value_type = Option<Vec<String>>, max_items = 100)]
    pub workspace_copy: Option<Option<Vec<String>>>,
    /// `null`: no setup script.
    #[serde(default, deserialize_with = "present")]
    #[schema(value_type = Option<String>)]
    pub setup_script: Option<Option<String>>,
    /// `null`: back to `claude`.
    #[serde(default, deserialize_with = "present")]
    #[schema(value_type = Option<AgentKind>)]
    pub default_agent: Option<Option<AgentKind>>,
    /// What the project may spend per UTC day, in USD; `null`: no cap. Raising it (or
    /// clearing it) resumes the sessions and agents a spent budget paused.
    #[serde(default, deserialize_with = "present")]
    #[schema(value_type = Option<f64>, minimum = 0.0, exclusive_maximum = 1000000.0)]
    pub budget_daily_usd: Option<Option<f64>>,
    /// The same per UTC month.
    #[serde(default, deserialize_with = "present")]
    #[schema(value_type = Option<f64>, minimum = 0.0, exclusive_maximum = 1000000.0)]
    pub budget_monthly_usd: Option<Option<f64>>,
    /// How many turns its sessions may run at once, 1-1000; `null`: no limit. A raise lets
    /// waiting turns start at once; a cut stops no running turn.
    #[serde(default, deserialize_with = "present")]
    #[schema(value_type = Option<i32>, minimum = 1, maximum = 1000)]
    pub max_running_turns: Option<Option<i32>>,
    /// A turn with no output from the CLI for this long (milliseconds, nothing waiting for a
    /// decision) is stalled; 0: never; `null`: the setting. Sessions take it when they start
    /// (or resume).
    #[serde(default, deserialize_with = "present")]
    #[schema(value_type = Option<i64>, minimum = 0)]
    pub turn_inactivity_timeout_ms: Option<Option<i64>>,
    /// Cluster mode: the nodes that have the folder, where its sessions are placed; `null` or
    /// empty: every node. Sessions already running stay where they are.
    #[serde(default, deserialize_with = "present")]
    #[schema(value_type = Option<Vec<String>>, max_items = 64)]
    pub nodes: Option<Option<Vec<String>>>,
    /// The whole `env` map, replacing the one stored (`null` or `{}`: none). A value sent as
    /// `[REDACTED:project_env]` (as a read shows it) keeps the stored value of that name.
    #[serde(default, deserialize_with = "present")]
    #[schema(value_type = Option<std::collections::BTreeMap<String, String>>)]
    pub env: Option<Option<std::collections::BTreeMap<String, String>>>,
    /// Kernel limits on its sessions' CLIs (`memory_max_mb`, `pids_max`, `cpu_weight`), the
    /// whole object replacing the one stored; `null` or `{}`: none (the settings apply).
    /// Sessions take them when they start (or resume).
    #[serde(default, deserialize_with = "present")]
    #[schema(value_type = Option<SessionLimits>)]
    pub session_limits: Option<Option<SessionLimits>>,
}

/// Update a project (partial: absent fields keep their value, `null` clears).
#[utoipa::path(put, path = "/api/projects/{id}", tag = "projects", request_body = UpdateProject,
    params(("id" = String, Path, description = "Project id (UUID)")),
    responses(
        (status = 200, description = "The updated project", body = Project),
        (status = 400, description = "Malformed JSON", body = ErrorBody),
        (status = 403, description = "Folder outside the project root", body = ErrorBody),
        (status = 404, description = "No such project", body = ErrorBody),
        (status = 409, description = "Another project already uses this folder", body = ErrorBody),
        (status = 413, description = "Body over 1 MiB", body = ErrorBody),
        (status = 415, description = "Not JSON", body = ErrorBody),
        (status = 422, description = "Validation failed, or `worktree` mode on a folder that is not a git repository (`not_a_git_repository`)", body = ErrorBody),
    ))]
pub async fn update(
    state: web::Data<AppState>,
    id: web::Path<String>,
    body: web::Json<UpdateProject>,
) -> AppResult<HttpResponse> {
    let id: ProjectId = id.parse()?;
    let mut change = Checked::check(body.into_inner())?;
    check_agent(&state, change.rest.default_agent.as_ref().and_then(Option::as_ref))?;
    let mut project = load(&state, id).await?;
    if let Some(env) = change.rest.env.take() {
        project.env = project_env_over(env, &project.env)?;
    }
    let moved = change.folder_path.is_some();
    if let Some(raw) = change.folder_path.take() {
        let (folder, project_type) = resolve_folder(&state, raw).await?;
        project.folder_path = folder;
        project.project_type = project_type.to_string();
    }
    let wanted = change.workspace_mode.take();
    change.apply(&mut project);
    // A worktree project must stay on a repository (its new folder, or the mode asked for).
    if let Some(mode) =
        wanted.or((moved && project.workspace_mode == WorkspaceMode::Worktree).then_some(WorkspaceMode::Worktree))
    {
        project.workspace_mode = workspace_mode_for(&project.folder_path, Some(mode)).await?;
    }
    project.updated_at = time::now();
    save(&state, &project).await?;
    crate::http::usage::reevaluate(&state, project.id.clone()).await;
    state.turn_gate.do_send(crate::actors::turn_gate::SetTurnCap::of(&project));
    announce(&state, Entity::Project, Change::Updated, &project);
    Ok(HttpResponse::Ok().json(project))
}

/// An update whose fields passed their checks.
struct Checked {
    name: Option<String>,
    folder_path: Option<String>,
    max_sessions: Option<i32>,
    workspace_mode: Option<WorkspaceMode>,
    workspace_copy: Option<CopyList>,
    nodes: Option<NodeList>,
    /// The optional fields, as sent (checked).
    rest: UpdateProject,
}

impl Checked {
    fn check(mut b: UpdateProject) -> AppResult<Checked> {
        let name = required("name", b.name.take())?
            .map(|n| validate::name("name", &n))
            .transpose()
            .map_err(AppError::validation)?;
        let folder_path = required("folder_path", b.folder_path.take())?;
        let max_sessions = required("max_sessions", b.max_sessions.take())?;
        let workspace_mode = required("workspace_mode", b.workspace_mode.take())?;
        let workspace_copy = match b.workspace_copy.take() {
            Some(list) => Some(copy_list(list.as_deref())?),
            None => None,
        };
        let nodes = match b.nodes.take() {
            Some(list) => Some(node_list(list.as_deref())?),
            None => None,
        };
        let script = b.setup_script.as_ref().and_then(|v| v.as_deref()).map(|s| s.to_string());
        let inner = |o: &Option<Option<String>>| o.as_ref().and_then(|v| v.as_deref()).map(|s| s.to_string());
        let (description, model, system, append) = (
            inner(&b.description),
            inner(&b.default_model),
            inner(&b.default_system_prompt),
            inner(&b.default_append_system_prompt),
        );
        check_defaults(&Defaults {
            description: description.as_deref(),
            default_model: model.as_deref(),
            default_permission_mode: b.default_permission_mode.flatten(),
            default_system_prompt: system.as_deref(),
            default_append_system_prompt: append.as_deref(),
            max_sessions,
            sandbox: None,
            setup_script: script.as_deref(),
            default_agent: None,
            budgets: (b.budget_daily_usd.flatten(), b.budget_monthly_usd.flatten()),
            max_running_turns: b.max_running_turns.flatten(),
            turn_inactivity_timeout_ms: b.turn_inactivity_timeout_ms.flatten(),
            session_limits: b.session_limits.as_ref().and_then(Option::as_ref),
        })?;
        Ok(Checked { name, folder_path, max_sessions, workspace_mode, workspace_copy, nodes, rest: b })
    }

    /// Everything but the folder (resolved on its own, off the executor).
    fn apply(self, project: &mut Project) {
        if let Some(name) = self.name {
            project.name = name;
        }
        let set = |field: &mut Option<String>, change: Option<Option<String>>| {
            if let Some(value) = change {
                *field = value;
            }
        };
        let b = self.rest;
        set(&mut project.description, b.description);
        set(&mut project.default_model, b.default_model);
        set(&mut project.default_permission_mode, b.default_permission_mode.map(|m| m.map(|m| m.as_str().to_string())));
        set(&mut project.default_system_prompt, b.default_system_prompt);
        set(&mut project.default_append_system_prompt, b.default_append_system_prompt);
        if let Some(n) = self.max_sessions {
            project.max_sessions = n;
        }
        if let Some(sandbox) = b.sandbox {
            project.sandbox = sandbox;
        }
        if let Some(copy) = self.workspace_copy {
            project.workspace_copy = copy;
        }
        if let Some(nodes) = self.nodes {
            project.nodes = nodes;
        }
        set(&mut project.setup_script, b.setup_script);
        if let Some(agent) = b.default_agent {
            project.default_agent = agent;
        }
        if let Some(usd) = b.budget_daily_usd {
            project.budget_daily_usd = usd;
        }
        if let Some(usd) = b.budget_monthly_usd {
            project.budget_monthly_usd = usd;
        }
        if let Some(max) = b.max_running_turns {
            project.max_running_turns = max;
        }
        if let Some(ms) = b.turn_inactivity_timeout_ms {
            project.turn_inactivity_timeout_ms = ms;
        }
        if let Some(limits) = b.session_limits {
            project.session_limits = limits.filter(|l| !l.is_empty()).map(StoredLimits::new);
        }
    }
}

/// Stores every column, unless another project holds the folder (409) or the row is gone (404).
async fn save(state: &AppState, project: &Project) -> AppResult<()> {
    let (stored, folder, id) = (project.clone(), project.folder_path.clone(), project.id.clone());
    state
        .store
        .run(move |conn| {
            if let Some(other) = db::projects::find_by_folder(conn, &stored.folder_path)? {
                if other.id != stored.id {
                    return Err(StoreError::Conflict(other.id.to_string()));
                }
            }
            db::projects::update(conn, &stored)
        })
        .await
        .map_err(|e| match e {
            StoreError::NotFound => no_project(&id),
            other => conflict_on_folder(other, &folder),
        })
}

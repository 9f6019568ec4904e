//! Scheduled agents, their executions, and the directory locks they queue on.

use actix_web::http::{header, StatusCode};
use actix_web::{web, HttpRequest, HttpResponse};
use chrono::Utc;
use serde::{Deserialize, Serialize};
use utoipa::{IntoParams, ToSchema};

use super::pagination::Page;
use super::projects::{present, required, resolve_dir_field, vanished};
use super::streams::{self, StreamQuery};
use super::AppState;
use crate::actors::agent::{AgentEdit, Change};
use crate::actors::agents::{self as registry, AgentError};
use crate::actors::locks::{LockState, Snapshot};
use crate::db::agents::{self, Agent, Execution, ExecutionSummary};
use crate::domain::agent::AgentStatus;
use crate::domain::cron::CronSchedule;
use crate::domain::ids::{AgentId, ExecutionId, ProjectId};
use crate::domain::{time, validate};
use crate::error::{AppError, AppResult, ErrorBody};

const MAX_OBJECTIVE_BYTES: usize = 100_000;
const TIMEOUT_RANGE_MS: (i64, i64) = (1_000, 86_400_000);

#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct CreateAgent {
    #[schema(min_length = 1, max_length = 200)]
    pub name: String,
    /// The one user turn each run sends.
    #[schema(min_length = 1)]
    pub objective: String,
    /// Cron: 5 fields (`minute hour day-of-month month day-of-week`, UTC), or 6/7 with
    /// seconds first.
    #[schema(min_length = 1, max_length = 200)]
    pub schedule: String,
    /// The project it belongs to; its folder is the default `cwd`.
    pub project_id: Option<String>,
    /// Folder to run in (absolute or relative to the project root); defaults to the
    /// project's folder. At most 4096 bytes (PATH_MAX), 255 per folder name.
    #[schema(max_length = 4096)]
    pub cwd: Option<String>,
    #[schema(pattern = r"^[^\s-]\S*$", max_length = 200)]
    pub model: Option<String>,
    /// Default 300000 (5 min).
    #[schema(minimum = 1000, maximum = 86400000)]
    pub timeout_ms: Option<i64>,
}

#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct UpdateAgent {
    #[serde(default, deserialize_with = "present")]
    #[schema(value_type = String, min_length = 1, max_length = 200)]
    pub name: Option<Option<String>>,
    #[serde(default, deserialize_with = "present")]
    #[schema(value_type = String, min_length = 1)]
    pub objective: Option<Option<String>>,
    #[serde(default, deserialize_with = "present")]
    #[schema(value_type = String, min_length = 1, max_length = 200)]
    pub schedule: Option<Option<String>>,
    #[serde(default, deserialize_with = "present")]
    #[schema(value_type = String, min_length = 1, max_length = 4096)]
    pub cwd: Option<Option<String>>,
    /// `null` clears it.
    #[serde(default, deserialize_with = "present")]
    #[schema(value_type = Option<String>, pattern = r"^[^\s-]\S*$", max_length = 200)]
    pub model: Option<Option<String>>,
    #[serde(default, deserialize_with = "present")]
    #[schema(value_type = i64, minimum = 1000, maximum = 86400000)]
    pub timeout_ms: Option<Option<i64>>,
}

/// An agent, with its next three fire times.
#[derive(Debug, Serialize, ToSchema)]
pub struct AgentView {
    #[serde(flatten)]
    pub agent: Agent,
    /// The schedule's next three fire times (UTC), whatever the status.
    pub next_fire_times: Vec<String>,
}

#[derive(Debug, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub struct ExecutionsQuery {
    /// How many, newest first (1-100, default 20).
    #[param(minimum = 1, maximum = 100)]
    pub limit: Option<i64>,
}

fn view(agent: Agent) -> AgentView {
    let next_fire_times = CronSchedule::parse(&agent.schedule)
        .map(|s| {
            s.upcoming(Utc::now(), 3)
                .into_iter()
                .map(|t| t.to_rfc3339_opts(chrono::SecondsFormat::Millis, true))
                .collect()
        })
        .unwrap_or_default();
    AgentView { agent, next_fire_times }
}

/// Whether a failed write failed because the agent's project was deleted meanwhile.
async fn vanishing(state: &AppState, error: &crate::db::StoreError, project_id: Option<&ProjectId>) -> bool {
    match project_id {
        Some(id) => vanished(state, error, id).await,
        None => false,
    }
}

fn agent_error(e: AgentError) -> AppError {
    match e {
        AgentError::NotFound(_) => AppError::not_found(e.to_string()),
        AgentError::Limit(_) => AppError::new(StatusCode::TOO_MANY_REQUESTS, "agent_limit_reached", e.to_string()),
        AgentError::ShuttingDown => AppError::unavailable("shutting_down", "The service is shutting down."),
        AgentError::Store(e) => e.into(),
    }
}

async fn ask<M>(state: &AppState, msg: M) -> AppResult<M::Result>
where
    M: actix::Message + Send + 'static,
    M::Result: Send,
    registry::AgentRegistry: actix::Handler<M>,
{
    state.agents.send(msg).await.map_err(|e| AppError::internal(format!("agent registry unavailable: {e}")))
}

fn check<T>(r: Result<T, String>) -> AppResult<T> {
    r.map_err(AppError::validation)
}

fn schedule(raw: &str) -> AppResult<String> {
    let trimmed = raw.trim().to_string();
    CronSchedule::parse(&trimmed).map_err(AppError::validation)?;
    Ok(trimmed)
}

fn timeout(ms: i64) -> AppResult<i64> {
    let (min, max) = TIMEOUT_RANGE_MS;
    if !(min..=max).contains(&ms) {
        return Err(AppError::validation(format!("`timeout_ms` must be from {min} to {max}, got {ms}")));
    }
    Ok(ms)
}

fn objective(raw: &str) -> AppResult<String> {
    if raw.trim().is_empty() {
        return Err(AppError::validation("`objective` must not be empty"));
    }
    check(validate::free_text("objective", raw, MAX_OBJECTIVE_BYTES))
}

/// Create a scheduled agent.
#[utoipa::path(post, path = "/api/agents", tag = "agents", request_body = CreateAgent,
    responses(
        (status = 201, description = "Created; it fires on its schedule while `active`", body = AgentView),
        (status = 400, description = "Malformed JSON", body = ErrorBody),
        (status = 403, description = "`cwd` is outside the project root", body = ErrorBody),
        (status = 404, description = "No such project", body = ErrorBody),
        (status = 415, description = "Not JSON", body = ErrorBody),
        (status = 422, description = "Validation failed (an invalid schedule says the expected form)", body = ErrorBody),
        (status = 429, description = "CONDUIT_MAX_AGENTS reached", body = ErrorBody),
    ))]
pub async fn create(state: web::Data<AppState>, body: web::Json<CreateAgent>) -> AppResult<HttpResponse> {
    let b = body.into_inner();
    let name = check(validate::name("name", &b.name))?;
    let objective = objective(&b.objective)?;
    let schedule = schedule(&b.schedule)?;
    let model =
        b.model.as_deref().map(|m| validate::identifier("model", m)).transpose().map_err(AppError::validation)?;
    let timeout_ms = timeout(b.timeout_ms.unwrap_or(300_000))?;
    let project = match &b.project_id {
        Some(raw) => {
            let id: ProjectId = raw.parse()?;
            let lookup = id.clone();
            let project = state.store.run(move |conn| crate::db::projects::find(conn, &lookup)).await?;
            Some(project.ok_or_else(|| AppError::not_found(format!("No project with id {id:?}.")))?)
        }
        None => None,
    };
    let cwd = match (b.cwd, &project) {
        (Some(raw), _) => resolve_dir_field(&state, "cwd", raw).await?,
        (None, Some(p)) => p.folder_path.clone(),
        (None, None) => return Err(AppError::validation("an agent needs a `project_id` or a `cwd` to run in")),
    };
    let now = time::now();
    let agent = Agent {
        id: AgentId::new(),
        project_id: project.map(|p| p.id),
        name,
        objective,
        schedule,
        cwd,
        model,
        timeout_ms,
        status: AgentStatus::Active,
        consecutive_failures: 0,
        next_run_at: None,
        created_at: now.clone(),
        updated_at: now,
    };
    let project_id = agent.project_id.clone();
    let created = match ask(&state, registry::Create(agent)).await? {
        Ok(created) => created,
        Err(AgentError::Store(e)) if vanishing(&state, &e, project_id.as_ref()).await => {
            let project_id = project_id.map(String::from).unwrap_or_default();
            return Err(AppError::not_found(format!("No project with id {project_id:?}.")));
        }
        Err(e) => return Err(agent_error(e)),
    };
    // The actor stores its first fire time as it starts; show the fresh row.
    let id = created.id.clone();
    let current = ask(&state, registry::Get(id.clone())).await?.unwrap_or(created);
    Ok(HttpResponse::Created().insert_header((header::LOCATION, format!("/api/agents/{id}"))).json(view(current)))
}

/// List agents, by name.
#[utoipa::path(get, path = "/api/agents", tag = "agents", params(Page),
    responses(
        (status = 200, description = "Agents", body = [AgentView]),
        (status = 400, description = "Bad query string", body = ErrorBody),
        (status = 422, description = "Bad limit or offset", body = ErrorBody),
    ))]
pub async fn list(state: web::Data<AppState>, page: web::Query<Page>) -> AppResult<HttpResponse> {
    let (limit, offset) = page.bounds()?;
    let rows = state.store.run(move |conn| agents::list(conn, limit, offset)).await?;
    let mut out = Vec::with_capacity(rows.len());
    for row in rows {
        // The actor's row is fresher (status, failures, next run) than the database's.
        let id = row.id.clone();
        out.push(view(ask(&state, registry::Get(id)).await?.unwrap_or(row)));
    }
    Ok(HttpResponse::Ok().json(out))
}

/// One agent.
#[utoipa::path(get, path = "/api/agents/{id}", tag = "agents",
    params(("id" = String, Path, description = "Agent id (UUID)")),
    responses(
        (status = 200, description = "The agent", body = AgentView),
        (status = 404, description = "No such agent", body = ErrorBody),
    ))]
pub async fn get(state: web::Data<AppState>, id: web::Path<String>) -> AppResult<HttpResponse> {
    let id: AgentId = id.parse()?;
    let agent = ask(&state, registry::Get(id)).await?.map_err(agent_error)?;
    Ok(HttpResponse::Ok().json(view(agent)))
}

/// Change an agent (partial): given fields change.
#[utoipa::path(put, path = "/api/agents/{id}", tag = "agents", request_body = UpdateAgent,
    params(("id" = String, Path, description = "Agent id (UUID)")),
    responses(
        (status = 200, description = "Updated", body = AgentView),
        (status = 400, description = "Malformed JSON", body = ErrorBody),
        (status = 403, description = "`cwd` is outside the project root", body = ErrorBody),
        (status = 404, description = "No such agent", body = ErrorBody),
        (status = 415, description = "Not JSON", body = ErrorBody),
        (status = 422, description = "Validation failed", body = ErrorBody),
    ))]
pub async fn update(
    state: web::Data<AppState>,
    id: web::Path<String>,
    body: web::Json<UpdateAgent>,
) -> AppResult<HttpResponse> {
    let id: AgentId = id.parse()?;
    let b = body.into_inner();
    let mut edit = AgentEdit::default();
    if let Some(name) = required("name", b.name)? {
        edit.name = Some(check(validate::name("name", &name))?);
    }
    if let Some(text) = required("objective", b.objective)? {
        edit.objective = Some(objective(&text)?);
    }
    if let Some(expr) = required("schedule", b.schedule)? {
        edit.schedule = Some(schedule(&expr)?);
    }
    if let Some(ms) = required("timeout_ms", b.timeout_ms)? {
        edit.timeout_ms = Some(timeout(ms)?);
    }
    edit.model = match b.model {
        Some(Some(m)) => Some(Some(check(validate::identifier("model", &m))?)),
        Some(None) => Some(None),
        None => None,
    };
    // Unknown agents are 404 before any folder is looked at.
    ask(&state, registry::Get(id.clone())).await?.map_err(agent_error)?;
    if let Some(raw) = required("cwd", b.cwd)? {
        edit.cwd = Some(resolve_dir_field(&state, "cwd", raw).await?);
    }
    let agent = ask(&state, registry::Update { id, change: Change::Edit(edit) }).await?.map_err(agent_error)?;
    Ok(HttpResponse::Ok().json(view(agent)))
}

/// Delete an agent: its runs are cancelled, its history goes with it.
#[utoipa::path(delete, path = "/api/agents/{id}", tag = "agents",
    params(("id" = String, Path, description = "Agent id (UUID)")),
    responses(
        (status = 204, description = "Deleted"),
        (status = 404, description = "No such agent", body = ErrorBody),
    ))]
pub async fn delete(state: web::Data<AppState>, id: web::Path<String>) -> AppResult<HttpResponse> {
    let id: AgentId = id.parse()?;
    ask(&state, registry::Delete(id)).await?.map_err(agent_error)?;
    Ok(HttpResponse::NoContent().finish())
}

async fn change(state: &AppState, id: &str, change: Change) -> AppResult<HttpResponse> {
    let id: AgentId = id.parse()?;
    let agent = ask(state, registry::Update { id, change }).await?.map_err(agent_error)?;
    Ok(HttpResponse::Ok().json(view(agent)))
}

/// Stop firing until resumed (runs already going finish).
#[utoipa::path(post, path = "/api/agents/{id}/pause", tag = "agents",
    params(("id" = String, Path, description = "Agent id (UUID)")),
    responses(
        (status = 200, description = "Paused", body = AgentView),
        (status = 404, description = "No such agent", body = ErrorBody),
    ))]
pub async fn pause(state: web::Data<AppState>, id: web::Path<String>) -> AppResult<HttpResponse> {
    change(&state, &id, Change::Pause).await
}

/// Fire on schedule again (also after `error`: the failure count starts over).
#[utoipa::path(post, path = "/api/agents/{id}/resume", tag = "agents",
    params(("id" = String, Path, description = "Agent id (UUID)")),
    responses(
        (status = 200, description = "Active", body = AgentView),
        (status = 404, description = "No such agent", body = ErrorBody),
    ))]
pub async fn resume(state: web::Data<AppState>, id: web::Path<String>) -> AppResult<HttpResponse> {
    change(&state, &id, Change::Resume).await
}

/// Run once now, even when paused; the stored status does not change.
#[utoipa::path(post, path = "/api/agents/{id}/trigger", tag = "agents",
    params(("id" = String, Path, description = "Agent id (UUID)")),
    responses(
        (status = 202, description = "Queued (it waits for its folder's lock, then runs)", body = ExecutionSummary),
        (status = 404, description = "No such agent", body = ErrorBody),
        (status = 503, description = "The service is shutting down", body = ErrorBody),
    ))]
pub async fn trigger(state: web::Data<AppState>, id: web::Path<String>) -> AppResult<HttpResponse> {
    let id: AgentId = id.parse()?;
    let exec = ask(&state, registry::Trigger(id)).await?.map_err(agent_error)?;
    Ok(HttpResponse::Accepted()
        .insert_header((header::LOCATION, format!("/api/executions/{}", exec.id)))
        .json(summary(exec)))
}

fn summary(e: Execution) -> ExecutionSummary {
    ExecutionSummary {
        id: e.id,
        agent_id: e.agent_id,
        trigger_kind: e.trigger_kind,
        status: e.status,
        exit_code: e.exit_code,
        started_at: e.started_at,
        finished_at: e.finished_at,
        cost_usd: e.cost_usd,
        input_tokens: e.input_tokens,
        output_tokens: e.output_tokens,
        error: e.error,
        created_at: e.created_at,
    }
}

/// An agent's executions, newest first (the latest 100 are kept), without their output.
#[utoipa::path(get, path = "/api/agents/{id}/executions", tag = "agents",
    params(("id" = String, Path, description = "Agent id (UUID)"), ExecutionsQuery),
    responses(
        (status = 200, description = "Executions", body = [ExecutionSummary]),
        (status = 400, description = "Bad query string", body = ErrorBody),
        (status = 404, description = "No such agent", body = ErrorBody),
        (status = 422, description = "Bad limit", body = ErrorBody),
    ))]
pub async fn executions(
    state: web::Data<AppState>,
    id: web::Path<String>,
    query: web::Query<ExecutionsQuery>,
) -> AppResult<HttpResponse> {
    let id: AgentId = id.parse()?;
    let limit = query.limit.unwrap_or(20);
    if !(1..=agents::HISTORY_PER_AGENT).contains(&limit) {
        return Err(AppError::validation(format!(
            "`limit` must be from 1 to {}, got {limit}",
            agents::HISTORY_PER_AGENT
        )));
    }
    let lookup = id.clone();
    if state.store.run(move |conn| agents::find(conn, &lookup)).await?.is_none() {
        return Err(AppError::not_found(format!("No agent with id {id:?}.")));
    }
    let rows = state.store.run(move |conn| agents::executions(conn, &id, limit)).await?;
    Ok(HttpResponse::Ok().json(rows))
}

async fn load_execution(state: &AppState, raw: &str) -> AppResult<Execution> {
    let id: ExecutionId = raw.parse()?;
    let lookup = id.clone();
    state
        .store
        .run(move |conn| agents::find_execution(conn, &lookup))
        .await?
        .ok_or_else(|| AppError::not_found(format!("No execution with id {id:?}.")))
}

/// One execution, with its clean output and raw stream lines.
#[utoipa::path(get, path = "/api/executions/{id}", tag = "agents",
    params(("id" = String, Path, description = "Execution id (UUID)")),
    responses(
        (status = 200, description = "The execution", body = Execution),
        (status = 404, description = "No such execution", body = ErrorBody),
    ))]
pub async fn execution(state: web::Data<AppState>, id: web::Path<String>) -> AppResult<HttpResponse> {
    Ok(HttpResponse::Ok().json(load_execution(&state, &id).await?))
}

/// An execution's live output as Server-Sent Events (`agent.execution.*`), with replay.
#[utoipa::path(get, path = "/api/executions/{id}/stream", tag = "agents",
    params(("id" = String, Path, description = "Execution id (UUID)"), StreamQuery,
        ("Last-Event-ID" = Option<String>, Header, description = "Replay events after this sequence number")),
    responses(
        (status = 200, description = "text/event-stream: `event: <name>`, `id: <sequence>`, `data: <JSON>`", content_type = "text/event-stream"),
        (status = 400, description = "Bad query string or Last-Event-ID", body = ErrorBody),
        (status = 404, description = "No such execution", body = ErrorBody),
    ))]
pub async fn execution_stream(
    state: web::Data<AppState>,
    id: web::Path<String>,
    query: web::Query<StreamQuery>,
    req: HttpRequest,
) -> AppResult<HttpResponse> {
    let exec = load_execution(&state, &id).await?;
    streams::topic_stream(&state, exec.id.into(), &req, &query).await
}

/// Cancel a queued or running execution (SIGTERM to its process group, SIGKILL after the
/// grace); it is recorded as `cancelled`.
#[utoipa::path(post, path = "/api/executions/{id}/cancel", tag = "agents",
    params(("id" = String, Path, description = "Execution id (UUID)")),
    responses(
        (status = 202, description = "Cancelling; the execution ends as `cancelled`", body = ExecutionSummary),
        (status = 404, description = "No such execution", body = ErrorBody),
        (status = 409, description = "The execution already ended", body = ErrorBody),
    ))]
pub async fn cancel(state: web::Data<AppState>, id: web::Path<String>) -> AppResult<HttpResponse> {
    let exec = load_execution(&state, &id).await?;
    let found =
        ask(&state, registry::CancelExecution { agent_id: exec.agent_id.clone(), execution_id: exec.id.clone() })
            .await?
            .unwrap_or(false);
    if !found {
        return Err(AppError::conflict(format!("The execution already ended ({}).", exec.status)));
    }
    Ok(HttpResponse::Accepted().json(summary(exec)))
}

/// Folders held by a run, and who waits for each, in order.
#[utoipa::path(get, path = "/api/locks", tag = "agents",
    responses((status = 200, description = "Directory locks", body = [LockState])))]
pub async fn locks(state: web::Data<AppState>) -> AppResult<HttpResponse> {
    let states =
        state.locks.send(Snapshot).await.map_err(|e| AppError::internal(format!("lock queue unavailable: {e}")))?;
    Ok(HttpResponse::Ok().json(states))
}

//! An agent's runs: trigger one, list them, read, follow and cancel one.

use actix_web::http::header;
use actix_web::{web, HttpRequest, HttpResponse};
use serde::Deserialize;
use utoipa::IntoParams;

use super::ask;
use crate::actors::agents as registry;
use crate::db::agents::{self, Execution, ExecutionSummary};
use crate::domain::ids::{AgentId, ExecutionId};
use crate::error::{AppError, AppResult, ErrorBody};
use crate::http::streams::{self, StreamQuery};
use crate::http::AppState;

#[derive(Debug, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub struct ExecutionsQuery {
    /// How many, newest first (1-100, default 20).
    #[param(minimum = 1, maximum = 100)]
    pub limit: Option<i64>,
}

/// Run once now, even when paused; the stored status does not change.
#[utoipa::path(post, path = "/api/agents/{id}/trigger", tag = "agents",
    params(("id" = String, Path, description = "Agent id (UUID)")),
    responses(
        (status = 202, description = "Queued (it waits for its folder's lock, then runs)", body = ExecutionSummary),
        (status = 402, description = "A budget covering it is spent (`budget_exhausted`: the message names the budget and when it resets; `Retry-After` gives the seconds)", body = ErrorBody),
        (status = 404, description = "No such agent", body = ErrorBody),
        (status = 503, description = "The service is shutting down", body = ErrorBody),
    ))]
pub async fn trigger(state: web::Data<AppState>, id: web::Path<String>) -> AppResult<HttpResponse> {
    let id: AgentId = id.parse()?;
    let agent = ask(&state, registry::Get(id.clone())).await??;
    crate::http::usage::within_budget(&state, agent.project_id).await?;
    let exec = ask(&state, registry::Trigger(id)).await??;
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
        resumes_at: e.resumes_at,
        owner_node: e.owner_node,
        fire_at: e.fire_at,
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

/// Cancel a queued, running or waiting (`waiting_for_limit`) execution (SIGTERM to its process
/// group, SIGKILL after the grace); it is recorded as `cancelled`.
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

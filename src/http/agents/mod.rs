//! Scheduled agents, their executions, and the directory locks they queue on. One file per
//! group of handlers; here, what they share: the agent as shown, asking the agent registry,
//! how its errors read over HTTP, and the checks of an agent's fields.

pub mod create;
pub mod executions;
pub mod lifecycle;
pub mod locks;
pub mod read;
pub mod update;

use actix_web::http::StatusCode;
use chrono::Utc;
use serde::Serialize;
use utoipa::ToSchema;

use super::fields::check;
use super::AppState;
use crate::actors::agents::{AgentError, AgentRegistry};
use crate::db::agents::Agent;
use crate::domain::cron::CronSchedule;
use crate::domain::ids::ProjectId;
use crate::domain::validate;
use crate::error::{AppError, AppResult};

const MAX_OBJECTIVE_BYTES: usize = 100_000;
const TIMEOUT_RANGE_MS: (i64, i64) = (1_000, 86_400_000);

/// An agent, with its next three fire times.
#[derive(Debug, Serialize, ToSchema)]
pub struct AgentView {
    #[serde(flatten)]
    pub agent: Agent,
    /// The schedule's next three fire times (UTC), whatever the status.
    pub next_fire_times: Vec<String>,
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

impl From<AgentError> for AppError {
    fn from(e: AgentError) -> Self {
        match e {
            AgentError::NotFound(_) => AppError::not_found(e.to_string()),
            AgentError::Limit(_) => AppError::new(StatusCode::TOO_MANY_REQUESTS, "agent_limit_reached", e.to_string()),
            AgentError::ShuttingDown => AppError::unavailable("shutting_down", "The service is shutting down."),
            AgentError::Store(e) => e.into(),
        }
    }
}

/// Asks the agent registry; one that cannot be asked is a failure of ours (500).
async fn ask<M>(state: &AppState, msg: M) -> AppResult<M::Result>
where
    M: actix::Message + Send + 'static,
    M::Result: Send,
    AgentRegistry: actix::Handler<M>,
{
    state.agents.send(msg).await.map_err(|e| AppError::internal(format!("agent registry unavailable: {e}")))
}

/// Whether a failed write failed because the agent's project was deleted meanwhile.
async fn vanishing(state: &AppState, error: &crate::db::StoreError, project_id: Option<&ProjectId>) -> bool {
    match project_id {
        Some(id) => super::projects::vanished(state, error, id).await,
        None => false,
    }
}

/// A cron schedule that parses (5 fields, or 6/7 with seconds first), trimmed.
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

//! `GET /api/usage`: the cost ledger summed by project, session, scheduled agent, agent kind,
//! model or day, over a window.

use actix_web::{web, HttpResponse};
use chrono::{DateTime, Duration, NaiveDate, Utc};
use serde::{Deserialize, Serialize};
use utoipa::{IntoParams, ToSchema};

use crate::actors::budgets::{CheckBudget, Reevaluate};
use crate::actors::limits::{LimitView, ListLimits};
use crate::db::usage::{self, Figures};
use crate::domain::access::Identity;
use crate::domain::ids::ProjectId;
use crate::domain::usage::{floor_hour, split, stamp, GroupBy};
use crate::error::{AppError, AppResult, ErrorBody};
use crate::http::AppState;

#[derive(Debug, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
#[serde(deny_unknown_fields)]
pub struct UsageQuery {
    /// `project` (the default), `session`, `agent` (the scheduled agent), `agent_kind`,
    /// `model` or `day` (UTC).
    #[param(pattern = "^(project|session|agent|agent_kind|model|day)$")]
    pub group_by: Option<String>,
    /// Start of the window, inclusive: RFC 3339, or a date (`YYYY-MM-DD`, midnight UTC).
    /// Absent: from the first recorded cost.
    pub from: Option<String>,
    /// End of the window, exclusive, in the same forms. Absent: up to now.
    pub to: Option<String>,
    /// Only this project's costs.
    pub project_id: Option<String>,
}

/// One group's sums.
#[derive(Debug, Serialize, ToSchema)]
pub struct UsageGroup {
    /// The project, session or agent id, agent kind, model or day; null where the grouped
    /// field is absent (runs of scheduled agents have no session, sessions no scheduled agent).
    pub key: Option<String>,
    #[serde(flatten)]
    pub figures: Figures,
}

#[derive(Debug, Serialize, ToSchema)]
pub struct UsageReport {
    #[schema(value_type = String)]
    pub group_by: GroupBy,
    /// The window read, `[from, to)`.
    pub from: String,
    pub to: String,
    /// Everything in the window.
    pub total: Figures,
    /// Largest cost first (by day: in date order).
    pub groups: Vec<UsageGroup>,
}

fn instant(field: &str, text: &str) -> Result<DateTime<Utc>, AppError> {
    if let Ok(at) = DateTime::parse_from_rfc3339(text) {
        return Ok(at.with_timezone(&Utc));
    }
    NaiveDate::parse_from_str(text, "%Y-%m-%d")
        .ok()
        .and_then(|d| d.and_hms_opt(0, 0, 0))
        .map(|d| d.and_utc())
        .ok_or_else(|| AppError::validation(format!("`{field}` must be an RFC 3339 time or a YYYY-MM-DD date")))
}

/// Costs recorded for every turn result, summed (a token bound to a project: that project's
/// costs only).
#[utoipa::path(get, path = "/api/usage", tag = "usage", params(UsageQuery),
    responses(
        (status = 200, description = "The sums, per group and in all (of the token's project, for a project-bound token)", body = UsageReport),
        (status = 400, description = "Bad query string", body = ErrorBody),
        (status = 422, description = "An unknown grouping, a bad time or an empty window", body = ErrorBody),
        (status = 503, description = "Storage is unavailable", body = ErrorBody),
    ))]
pub async fn usage(
    state: web::Data<AppState>,
    query: web::Query<UsageQuery>,
    identity: Option<web::ReqData<Identity>>,
) -> AppResult<HttpResponse> {
    let q = query.into_inner();
    let group = match q.group_by.as_deref() {
        None => GroupBy::Project,
        Some(text) => text.parse::<GroupBy>().map_err(|_| {
            AppError::validation("`group_by` must be project, session, agent, agent_kind, model or day")
        })?,
    };
    let from = match q.from.as_deref() {
        Some(text) => instant("from", text)?,
        None => DateTime::UNIX_EPOCH,
    };
    // By default up to the end of this hour: every row recorded so far, read from whole hours.
    let to = match q.to.as_deref() {
        Some(text) => instant("to", text)?,
        None => floor_hour(&Utc::now()) + Duration::hours(1),
    };
    if from >= to {
        return Err(AppError::validation("`from` must be before `to`"));
    }
    let asked = q
        .project_id
        .map(|p| ProjectId::parse(&p).map_err(|_| AppError::validation("`project_id` must be a UUID")))
        .transpose()?;
    // A token bound to a project: its own costs; another project's read as none.
    let project = match identity.as_deref() {
        Some(who) => who.project_filter(asked),
        None => Some(asked),
    };
    // Results are acknowledged before a session reads as idle again, but runs' rows are written
    // as they come: wait for what was queued before this request.
    if let Err(e) = state.writer.flush().await {
        tracing::warn!(error = %e, "could not flush the writer before reading the ledger");
    }
    let window = split(&from, &to);
    let sums = match project {
        Some(project) => {
            let project = project.map(|p| p.to_string());
            state.store.run(move |conn| usage::sum_by(conn, group, &window, project.as_deref())).await?
        }
        None => Default::default(),
    };
    let mut total = Figures::default();
    let mut groups: Vec<UsageGroup> = sums
        .into_iter()
        .map(|(key, figures)| {
            total.cost_usd += figures.cost_usd;
            total.input_tokens += figures.input_tokens;
            total.output_tokens += figures.output_tokens;
            total.turns += figures.turns;
            UsageGroup { key, figures }
        })
        .collect();
    if group != GroupBy::Day {
        groups.sort_by(|a, b| b.figures.cost_usd.total_cmp(&a.figures.cost_usd).then_with(|| a.key.cmp(&b.key)));
    }
    Ok(HttpResponse::Ok().json(UsageReport { group_by: group, from: stamp(&from), to: stamp(&to), total, groups }))
}

/// The latest usage-limit state each agent CLI reported (one account per CLI kind). A limit
/// whose reset has passed reads as `allowed`; a CLI that never reported a limit is absent.
#[utoipa::path(get, path = "/api/usage/limits", tag = "usage",
    responses(
        (status = 200, description = "One entry per agent CLI that reported its limits", body = [LimitView]),
        (status = 503, description = "The service is shutting down", body = ErrorBody),
    ))]
pub async fn limits(state: web::Data<AppState>) -> AppResult<HttpResponse> {
    let board = state
        .limits
        .send(ListLimits)
        .await
        .map_err(|_| AppError::unavailable("shutting_down", "the service is shutting down"))?;
    Ok(HttpResponse::Ok().json(board))
}

/// 402 `budget_exhausted` while a budget covering `project_id` (or the service's own) is spent.
pub async fn within_budget(state: &AppState, project_id: Option<ProjectId>) -> AppResult<()> {
    match state.budgets.send(CheckBudget { project_id }).await {
        Ok(Err(spent)) => Err(spent.into()),
        // A keeper that is gone (shutting down) refuses nothing.
        Ok(Ok(())) | Err(_) => Ok(()),
    }
}

/// A project's caps changed: its sessions are held or released before the answer goes out.
pub async fn reevaluate(state: &AppState, project_id: ProjectId) {
    if state.budgets.send(Reevaluate { project_id: Some(project_id) }).await.is_err() {
        tracing::warn!("the budget keeper is gone; budgets are read again at the next result");
    }
}

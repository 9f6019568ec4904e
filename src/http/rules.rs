//! Permission rules (per project and global) and the audit log of decisions.

use actix_web::http::header;
use actix_web::{web, HttpResponse};
use serde::{Deserialize, Deserializer, Serialize};
use serde_json::Value;
use utoipa::{IntoParams, ToSchema};

use super::pagination::Page;
use super::AppState;
use crate::actors::permissions::Reload;
use crate::db::permission_log::{Decision, LogFilter};
use crate::db::rules::RuleRow;
use crate::db::{self, StoreError};
use crate::domain::decision::Decision as Behavior;
use crate::domain::ids::{ProjectId, RuleId, SessionId};
use crate::domain::{rules, time, validate};
use crate::error::{AppError, AppResult, ErrorBody};

const MAX_RULE_CONTENT_BYTES: usize = 10_000;

/// A permission rule. `project_id` null means global.
#[derive(Debug, Serialize, ToSchema)]
pub struct Rule {
    #[schema(value_type = String)]
    pub id: RuleId,
    #[schema(value_type = Option<String>)]
    pub project_id: Option<ProjectId>,
    /// A tool name (`Bash`, `Read`, ...) or `*`.
    pub tool_name: String,
    /// Empty (any input), `word:*` (a command that is `word` or starts with `word `), or a glob.
    pub rule_content: String,
    /// `allow` or `deny`.
    pub behavior: Behavior,
    /// Higher first within a group.
    pub priority: i32,
    /// Allow rules only: merged over the tool input.
    #[schema(value_type = Option<Object>)]
    pub updated_input: Option<Value>,
    pub created_at: String,
    pub updated_at: String,
}

impl From<RuleRow> for Rule {
    fn from(r: RuleRow) -> Self {
        Rule {
            updated_input: r.updated_input.as_deref().and_then(|t| serde_json::from_str(t).ok()),
            id: r.id,
            project_id: r.project_id,
            tool_name: r.tool_name,
            rule_content: r.rule_content,
            behavior: r.behavior,
            priority: r.priority,
            created_at: r.created_at,
            updated_at: r.updated_at,
        }
    }
}

#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct CreateRule {
    #[schema(min_length = 1, max_length = 200)]
    pub tool_name: String,
    #[serde(default)]
    pub rule_content: String,
    /// `allow` or `deny`. Conduit never asks a human, so `ask` is refused.
    #[schema(pattern = "^(allow|deny)$")]
    pub behavior: String,
    #[serde(default)]
    pub priority: i32,
    #[schema(value_type = Option<Object>)]
    pub updated_input: Option<Value>,
}

fn present<'de, D: Deserializer<'de>>(d: D) -> Result<Option<Option<Value>>, D::Error> {
    Option::<Value>::deserialize(d).map(Some)
}

/// Partial update: given fields change; `updated_input: null` clears it.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct UpdateRule {
    #[schema(min_length = 1, max_length = 200)]
    pub tool_name: Option<String>,
    pub rule_content: Option<String>,
    #[schema(pattern = "^(allow|deny)$")]
    pub behavior: Option<String>,
    pub priority: Option<i32>,
    #[serde(default, deserialize_with = "present")]
    #[schema(value_type = Option<Object>)]
    pub updated_input: Option<Option<Value>>,
}

/// A rule as a request leaves it, before it is checked: `behavior` is still the client's text.
struct Draft<'a> {
    tool_name: &'a str,
    rule_content: &'a str,
    behavior: &'a str,
    has_updated_input: bool,
}

/// Checks a rule as a whole (the pattern must compile for its tool); answers its behavior.
fn check_rule(rule: &Draft<'_>) -> AppResult<Behavior> {
    let tool = rule.tool_name;
    let odd = |c: char| c.is_whitespace() || c.is_control() || validate::is_format_char(c);
    if tool.is_empty() || tool.len() > 200 || tool.chars().any(odd) {
        return Err(AppError::validation("`tool_name` must be a tool name such as Bash or Read, or *, without spaces"));
    }
    let behavior = match rule.behavior {
        "ask" => {
            return Err(AppError::validation(
                "`behavior` cannot be `ask`: Conduit never waits for a human; every tool call is decided at once. Use allow or deny.",
            ))
        }
        other => other
            .parse::<Behavior>()
            .map_err(|_| AppError::validation(format!("`behavior` must be allow or deny, got {other:?}")))?,
    };
    if rule.rule_content.len() > MAX_RULE_CONTENT_BYTES || rule.rule_content.contains('\0') {
        return Err(AppError::validation(format!(
            "`rule_content` must be at most {MAX_RULE_CONTENT_BYTES} bytes, without NUL"
        )));
    }
    rules::compile_pattern(tool, rule.rule_content).map_err(AppError::validation)?;
    if rule.has_updated_input && behavior != Behavior::Allow {
        return Err(AppError::validation("`updated_input` only applies to allow rules"));
    }
    Ok(behavior)
}

fn input_text(value: Option<Value>) -> AppResult<Option<String>> {
    match value {
        None | Some(Value::Null) => Ok(None),
        Some(v @ Value::Object(_)) => Ok(Some(v.to_string())),
        Some(_) => Err(AppError::validation("`updated_input` must be a JSON object")),
    }
}

/// After any change: the engine recompiles before the client hears back, so the very next
/// tool call sees the new rules.
async fn reload(state: &AppState) -> AppResult<()> {
    state
        .engine
        .send(Reload)
        .await
        .map_err(|e| AppError::internal(format!("permission engine unavailable: {e}")))?
        .map_err(AppError::from)?;
    Ok(())
}

async fn project_exists(state: &AppState, id: &ProjectId) -> AppResult<()> {
    let lookup = id.clone();
    match state.store.run(move |conn| db::projects::find(conn, &lookup)).await? {
        Some(_) => Ok(()),
        None => Err(AppError::not_found(format!("No project with id {id:?}."))),
    }
}

async fn create(state: &AppState, project_id: Option<ProjectId>, body: CreateRule) -> AppResult<HttpResponse> {
    let now = time::now();
    let tool_name = body.tool_name.trim().to_string();
    let updated_input = input_text(body.updated_input)?;
    let behavior = check_rule(&Draft {
        tool_name: &tool_name,
        rule_content: &body.rule_content,
        behavior: &body.behavior,
        has_updated_input: updated_input.is_some(),
    })?;
    let row = RuleRow {
        id: RuleId::new(),
        project_id,
        tool_name,
        rule_content: body.rule_content,
        behavior,
        priority: body.priority,
        updated_input,
        created_at: now.clone(),
        updated_at: now,
    };
    let stored = row.clone();
    if let Err(e) = state.store.run(move |conn| db::rules::insert(conn, &stored)).await {
        if let Some(project) = &row.project_id {
            if super::projects::vanished(state, &e, project).await {
                return Err(AppError::not_found(format!("No project with id {project:?}.")));
            }
        }
        return Err(e.into());
    }
    reload(state).await?;
    Ok(HttpResponse::Created()
        .insert_header((header::LOCATION, format!("/api/rules/{}", row.id)))
        .json(Rule::from(row)))
}

async fn list(state: &AppState, project_id: Option<ProjectId>, page: &Page) -> AppResult<HttpResponse> {
    let (limit, offset) = page.bounds()?;
    let rows = state.store.run(move |conn| db::rules::list(conn, project_id.as_ref(), limit, offset)).await?;
    Ok(HttpResponse::Ok().json(rows.into_iter().map(Rule::from).collect::<Vec<_>>()))
}

/// A project's rules, in evaluation order.
#[utoipa::path(get, path = "/api/projects/{id}/rules", tag = "rules", params(("id" = String, Path, description = "Project id (UUID)"), Page),
    responses(
        (status = 200, description = "Rules: deny before allow, higher priority first, older first", body = Vec<Rule>),
        (status = 400, description = "Bad query string", body = ErrorBody),
        (status = 404, description = "No such project", body = ErrorBody),
        (status = 422, description = "limit/offset out of range", body = ErrorBody),
    ))]
pub async fn list_project(
    state: web::Data<AppState>,
    id: web::Path<String>,
    page: web::Query<Page>,
) -> AppResult<HttpResponse> {
    let id: ProjectId = id.parse()?;
    project_exists(&state, &id).await?;
    list(&state, Some(id), &page).await
}

/// Add a rule to a project. It applies to the project's sessions' next tool call.
#[utoipa::path(post, path = "/api/projects/{id}/rules", tag = "rules", request_body = CreateRule,
    params(("id" = String, Path, description = "Project id (UUID)")),
    responses(
        (status = 201, description = "Created", body = Rule),
        (status = 400, description = "Malformed JSON", body = ErrorBody),
        (status = 404, description = "No such project", body = ErrorBody),
        (status = 413, description = "Body over 1 MiB", body = ErrorBody),
        (status = 415, description = "Not JSON", body = ErrorBody),
        (status = 422, description = "Validation failed (a bad glob, `ask`, ...)", body = ErrorBody),
    ))]
pub async fn create_project(
    state: web::Data<AppState>,
    id: web::Path<String>,
    body: web::Json<CreateRule>,
) -> AppResult<HttpResponse> {
    let id: ProjectId = id.parse()?;
    project_exists(&state, &id).await?;
    create(&state, Some(id), body.into_inner()).await
}

/// Global rules, in evaluation order.
#[utoipa::path(get, path = "/api/rules/global", tag = "rules", params(Page),
    responses(
        (status = 200, description = "Rules: deny before allow, higher priority first, older first", body = Vec<Rule>),
        (status = 400, description = "Bad query string", body = ErrorBody),
        (status = 422, description = "limit/offset out of range", body = ErrorBody),
    ))]
pub async fn list_global(state: web::Data<AppState>, page: web::Query<Page>) -> AppResult<HttpResponse> {
    list(&state, None, &page).await
}

/// Add a global rule (every project).
#[utoipa::path(post, path = "/api/rules/global", tag = "rules", request_body = CreateRule,
    responses(
        (status = 201, description = "Created", body = Rule),
        (status = 400, description = "Malformed JSON", body = ErrorBody),
        (status = 413, description = "Body over 1 MiB", body = ErrorBody),
        (status = 415, description = "Not JSON", body = ErrorBody),
        (status = 422, description = "Validation failed (a bad glob, `ask`, ...)", body = ErrorBody),
    ))]
pub async fn create_global(state: web::Data<AppState>, body: web::Json<CreateRule>) -> AppResult<HttpResponse> {
    create(&state, None, body.into_inner()).await
}

/// Change a rule (partial).
#[utoipa::path(put, path = "/api/rules/{id}", tag = "rules", request_body = UpdateRule,
    params(("id" = String, Path, description = "Rule id (UUID)")),
    responses(
        (status = 200, description = "The rule", body = Rule),
        (status = 400, description = "Malformed JSON", body = ErrorBody),
        (status = 404, description = "No such rule", body = ErrorBody),
        (status = 413, description = "Body over 1 MiB", body = ErrorBody),
        (status = 415, description = "Not JSON", body = ErrorBody),
        (status = 422, description = "Validation failed", body = ErrorBody),
    ))]
pub async fn update(
    state: web::Data<AppState>,
    id: web::Path<String>,
    body: web::Json<UpdateRule>,
) -> AppResult<HttpResponse> {
    let id: RuleId = id.parse()?;
    let b = body.into_inner();
    let lookup = id.clone();
    let mut row = state
        .store
        .run(move |conn| db::rules::find(conn, &lookup))
        .await?
        .ok_or_else(|| AppError::not_found(format!("No rule with id {id:?}.")))?;
    if let Some(t) = b.tool_name {
        row.tool_name = t.trim().to_string();
    }
    if let Some(c) = b.rule_content {
        row.rule_content = c;
    }
    if let Some(p) = b.priority {
        row.priority = p;
    }
    if let Some(u) = b.updated_input {
        row.updated_input = input_text(u)?;
    }
    row.updated_at = time::now();
    row.behavior = check_rule(&Draft {
        tool_name: &row.tool_name,
        rule_content: &row.rule_content,
        behavior: b.behavior.as_deref().unwrap_or(row.behavior.as_str()),
        has_updated_input: row.updated_input.is_some(),
    })?;
    let stored = row.clone();
    state.store.run(move |conn| db::rules::update(conn, &stored)).await.map_err(|e| match e {
        StoreError::NotFound => AppError::not_found("No such rule."),
        other => other.into(),
    })?;
    reload(&state).await?;
    Ok(HttpResponse::Ok().json(Rule::from(row)))
}

/// Delete a rule.
#[utoipa::path(delete, path = "/api/rules/{id}", tag = "rules",
    params(("id" = String, Path, description = "Rule id (UUID)")),
    responses(
        (status = 204, description = "Deleted"),
        (status = 404, description = "No such rule", body = ErrorBody),
    ))]
pub async fn delete(state: web::Data<AppState>, id: web::Path<String>) -> AppResult<HttpResponse> {
    let id: RuleId = id.parse()?;
    let target = id.clone();
    if !state.store.run(move |conn| db::rules::delete(conn, &target)).await? {
        return Err(AppError::not_found(format!("No rule with id {id:?}.")));
    }
    reload(&state).await?;
    Ok(HttpResponse::NoContent().finish())
}

#[derive(Debug, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub struct LogQuery {
    /// Only this session's decisions.
    pub session_id: Option<String>,
    /// Only this project's decisions.
    pub project_id: Option<String>,
    /// `allow` or `deny`.
    #[param(pattern = "^(allow|deny)$")]
    pub decision: Option<String>,
    #[param(minimum = 1, maximum = 1000)]
    pub limit: Option<i64>,
    #[param(minimum = 0)]
    pub offset: Option<i64>,
}

/// Permission decisions, newest first.
#[utoipa::path(get, path = "/api/permissions/log", tag = "rules", params(LogQuery),
    responses(
        (status = 200, description = "Decisions, newest first", body = Vec<Decision>),
        (status = 400, description = "Bad query string", body = ErrorBody),
        (status = 422, description = "A filter or limit/offset is invalid", body = ErrorBody),
    ))]
pub async fn log(state: web::Data<AppState>, query: web::Query<LogQuery>) -> AppResult<HttpResponse> {
    // Decisions are written behind: one already announced on the bus is stored before it is read.
    if let Err(e) = state.writer.flush().await {
        tracing::warn!(error = %e, "could not flush the writer before reading the audit");
    }
    let q = query.into_inner();
    let (limit, offset) = Page { limit: q.limit, offset: q.offset }.bounds()?;
    let must_be_uuid = |field: &str| AppError::validation(format!("`{field}` must be a UUID"));
    let decision = q
        .decision
        .map(|d| d.parse::<Behavior>().map_err(|_| AppError::validation("`decision` must be allow or deny")))
        .transpose()?;
    let filter = LogFilter {
        session_id: q.session_id.map(|s| SessionId::parse(&s).map_err(|_| must_be_uuid("session_id"))).transpose()?,
        project_id: q.project_id.map(|p| ProjectId::parse(&p).map_err(|_| must_be_uuid("project_id"))).transpose()?,
        decision,
    };
    let rows = state.store.run(move |conn| db::permission_log::list(conn, &filter, limit, offset)).await?;
    Ok(HttpResponse::Ok().json(rows))
}

//! Adding a rule, to a project or globally.

use actix_web::http::header;
use actix_web::{web, HttpResponse};
use serde::Deserialize;
use serde_json::Value;
use utoipa::ToSchema;

use super::{check_rule, input_text, project_exists, reload, tool_name, Draft, Rule};
use crate::db::{self, rules::RuleRow};
use crate::domain::ids::{ProjectId, RuleId};
use crate::domain::time;
use crate::error::{AppError, AppResult, ErrorBody};
use crate::http::changes::{announce, Change, Entity};
use crate::http::{projects, AppState};

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

async fn create(state: &AppState, project_id: Option<ProjectId>, body: CreateRule) -> AppResult<HttpResponse> {
    let now = time::now();
    let tool_name = tool_name(&body.tool_name)?;
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
            if projects::vanished(state, &e, project).await {
                return Err(AppError::not_found(format!("No project with id {project:?}.")));
            }
        }
        return Err(e.into());
    }
    reload(state).await?;
    let rule = Rule::from(row);
    announce(state, Entity::Rule, Change::Created, &rule);
    Ok(HttpResponse::Created().insert_header((header::LOCATION, format!("/api/rules/{}", rule.id))).json(rule))
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

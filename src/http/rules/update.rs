//! Changing and deleting a rule.

use actix_web::{web, HttpResponse};
use serde::Deserialize;
use serde_json::Value;
use utoipa::ToSchema;

use super::{check_rule, input_text, reload, tool_name, Draft, Rule};
use crate::db::{self, StoreError};
use crate::domain::ids::RuleId;
use crate::domain::time;
use crate::error::{AppError, AppResult, ErrorBody};
use crate::http::changes::{announce, announce_deleted, Change, Entity};
use crate::http::fields::present;
use crate::http::AppState;

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
        row.tool_name = tool_name(&t)?;
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
    let rule = Rule::from(row);
    announce(&state, Entity::Rule, Change::Updated, &rule);
    Ok(HttpResponse::Ok().json(rule))
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
    announce_deleted(&state, Entity::Rule, id.as_str());
    Ok(HttpResponse::NoContent().finish())
}

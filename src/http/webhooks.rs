//! Webhooks: register receivers for bus events, and read their delivery attempts.

use actix_web::http::header;
use actix_web::{web, HttpResponse};
use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

use super::changes::{announce, announce_deleted, Change, Entity};
use super::pagination::Page;
use super::AppState;
use crate::actors::webhooks::{DroppedCounts, ReloadWebhooks, EVENT_TYPES};
use crate::db::webhooks::{Attempt, WebhookRow};
use crate::db::{self};
use crate::domain::ids::WebhookId;
use crate::domain::{time, validate};
use crate::error::{AppError, AppResult, ErrorBody};

/// The longest receiver URL accepted (as documented in the schema).
const MAX_URL_CHARS: usize = 2000;

#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct CreateWebhook {
    #[schema(min_length = 1, max_length = 200)]
    pub name: String,
    /// An http:// or https:// URL.
    #[schema(min_length = 1, max_length = 2000)]
    pub url: String,
    /// Event types (`session.created`, `session.status`, `session.message`, `session.result`,
    /// `session.error`, `session.closed`, `stream.event`, `permission.decision`), or `["*"]`.
    #[schema(min_items = 1)]
    pub events: Vec<String>,
    /// Signs deliveries (`X-Conduit-Signature`); CONDUIT_WEBHOOK_SECRET when absent.
    #[schema(min_length = 1, max_length = 256)]
    pub secret: Option<String>,
}

/// A webhook as shown: the secret never is.
#[derive(Debug, Serialize, ToSchema)]
pub struct Webhook {
    #[schema(value_type = String)]
    pub id: WebhookId,
    pub name: String,
    pub url: String,
    pub events: Vec<String>,
    /// Deliveries are signed (with its own secret or CONDUIT_WEBHOOK_SECRET).
    pub signed: bool,
    pub active: bool,
    /// Events this webhook missed since the service started: they left the event history
    /// (`CONDUIT_STREAM_HISTORY_BYTES`) before it could deliver them (a receiver far behind).
    pub dropped_deliveries: u64,
    pub created_at: String,
    pub updated_at: String,
}

fn view(row: WebhookRow, default_secret: bool, dropped: u64) -> Webhook {
    Webhook {
        events: serde_json::from_str(&row.events).unwrap_or_default(),
        signed: row.secret.is_some() || default_secret,
        id: row.id,
        name: row.name,
        url: row.url,
        active: row.active,
        dropped_deliveries: dropped,
        created_at: row.created_at,
        updated_at: row.updated_at,
    }
}

async fn reload(state: &AppState) -> AppResult<()> {
    state
        .webhooks
        .send(ReloadWebhooks)
        .await
        .map_err(|e| AppError::internal(format!("webhook dispatcher unavailable: {e}")))?
        .map_err(AppError::from)?;
    Ok(())
}

/// Register a webhook.
#[utoipa::path(post, path = "/api/webhooks", tag = "webhooks", request_body = CreateWebhook,
    responses(
        (status = 201, description = "Created", body = Webhook),
        (status = 400, description = "Malformed JSON", body = ErrorBody),
        (status = 413, description = "Body over 1 MiB", body = ErrorBody),
        (status = 415, description = "Not JSON", body = ErrorBody),
        (status = 422, description = "Validation failed", body = ErrorBody),
    ))]
pub async fn create(state: web::Data<AppState>, body: web::Json<CreateWebhook>) -> AppResult<HttpResponse> {
    let row = new_row(body.into_inner())?;
    let stored = row.clone();
    state.store.run(move |conn| db::webhooks::insert(conn, &stored)).await?;
    reload(&state).await?;
    let id = row.id.clone();
    let hook = view(row, state.settings.webhook_secret.is_some(), 0);
    announce(&state, Entity::Webhook, Change::Created, &hook);
    Ok(HttpResponse::Created().insert_header((header::LOCATION, format!("/api/webhooks/{id}"))).json(hook))
}

/// The stored webhook a request asks for, once every field passed its check.
fn new_row(b: CreateWebhook) -> AppResult<WebhookRow> {
    let name = validate::name("name", &b.name).map_err(AppError::validation)?;
    let url_chars = b.url.chars().count();
    if url_chars > MAX_URL_CHARS {
        return Err(AppError::validation(format!("`url` must be at most {MAX_URL_CHARS} characters; got {url_chars}")));
    }
    let url =
        reqwest::Url::parse(b.url.trim()).map_err(|e| AppError::validation(format!("`url` is not a URL: {e}")))?;
    if !matches!(url.scheme(), "http" | "https") || url.host_str().is_none() {
        return Err(AppError::validation("`url` must be an http:// or https:// URL with a host"));
    }
    if b.events.is_empty() {
        return Err(AppError::validation("`events` must list at least one event type, or \"*\""));
    }
    if let Some(bad) = b.events.iter().find(|e| *e != "*" && !EVENT_TYPES.contains(&e.as_str())) {
        return Err(AppError::validation(format!("unknown event type {bad:?}; known: *, {}", EVENT_TYPES.join(", "))));
    }
    if let Some(secret) = &b.secret {
        if secret.is_empty() || secret.len() > 256 {
            return Err(AppError::validation("`secret` must be 1 to 256 bytes"));
        }
    }
    let now = time::now();
    Ok(WebhookRow {
        id: WebhookId::new(),
        name,
        url: url.to_string(),
        events: serde_json::to_string(&b.events).unwrap_or_else(|_| "[]".to_string()),
        secret: b.secret,
        active: true,
        created_at: now.clone(),
        updated_at: now,
    })
}

/// The webhooks.
#[utoipa::path(get, path = "/api/webhooks", tag = "webhooks", params(Page),
    responses(
        (status = 200, description = "Webhooks", body = Vec<Webhook>),
        (status = 400, description = "Bad query string", body = ErrorBody),
        (status = 422, description = "limit/offset out of range", body = ErrorBody),
    ))]
pub async fn list(state: web::Data<AppState>, page: web::Query<Page>) -> AppResult<HttpResponse> {
    let (limit, offset) = page.bounds()?;
    let rows = state.store.run(move |conn| db::webhooks::list(conn, limit, offset)).await?;
    let dropped = state.webhooks.send(DroppedCounts).await.unwrap_or_default();
    let default_secret = state.settings.webhook_secret.is_some();
    let body: Vec<Webhook> = rows
        .into_iter()
        .map(|r| {
            let d = dropped.get(&r.id).copied().unwrap_or(0);
            view(r, default_secret, d)
        })
        .collect();
    Ok(HttpResponse::Ok().json(body))
}

/// Delete a webhook (its attempts go with it).
#[utoipa::path(delete, path = "/api/webhooks/{id}", tag = "webhooks",
    params(("id" = String, Path, description = "Webhook id (UUID)")),
    responses(
        (status = 204, description = "Deleted"),
        (status = 404, description = "No such webhook", body = ErrorBody),
    ))]
pub async fn delete(state: web::Data<AppState>, id: web::Path<String>) -> AppResult<HttpResponse> {
    let id: WebhookId = id.parse()?;
    let target = id.clone();
    if !state.store.run(move |conn| db::webhooks::delete(conn, &target)).await? {
        return Err(AppError::not_found(format!("No webhook with id {id:?}.")));
    }
    reload(&state).await?;
    announce_deleted(&state, Entity::Webhook, id.as_str());
    Ok(HttpResponse::NoContent().finish())
}

/// A webhook's delivery attempts, newest first (kept 7 days).
#[utoipa::path(get, path = "/api/webhooks/{id}/deliveries", tag = "webhooks",
    params(("id" = String, Path, description = "Webhook id (UUID)"), Page),
    responses(
        (status = 200, description = "Attempts, newest first", body = Vec<Attempt>),
        (status = 400, description = "Bad query string", body = ErrorBody),
        (status = 404, description = "No such webhook", body = ErrorBody),
        (status = 422, description = "limit/offset out of range", body = ErrorBody),
    ))]
pub async fn deliveries(
    state: web::Data<AppState>,
    id: web::Path<String>,
    page: web::Query<Page>,
) -> AppResult<HttpResponse> {
    let id: WebhookId = id.parse()?;
    let (limit, offset) = page.bounds()?;
    let lookup = id.clone();
    let rows = state
        .store
        .run(move |conn| match db::webhooks::find(conn, &lookup)? {
            Some(_) => db::webhooks::attempts(conn, &lookup, limit, offset).map(Some),
            None => Ok(None),
        })
        .await?
        .ok_or_else(|| AppError::not_found(format!("No webhook with id {id:?}.")))?;
    Ok(HttpResponse::Ok().json(rows))
}

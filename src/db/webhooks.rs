//! Queries on `webhooks` and `webhook_deliveries`.

use diesel::prelude::*;
use serde::Serialize;
use utoipa::ToSchema;

use super::schema::{webhook_deliveries, webhooks};
use super::{DbConnection, StoreError};
use crate::domain::ids::WebhookId;

#[derive(Debug, Clone, PartialEq, Queryable, Selectable, Insertable)]
#[diesel(table_name = webhooks)]
pub struct WebhookRow {
    pub id: WebhookId,
    pub name: String,
    pub url: String,
    /// A JSON array of event types (`*` for all).
    pub events: String,
    pub secret: Option<String>,
    pub active: bool,
    pub created_at: String,
    pub updated_at: String,
}

#[derive(Debug, Clone, PartialEq, Insertable)]
#[diesel(table_name = webhook_deliveries)]
pub struct NewAttempt {
    pub delivery_id: String,
    pub webhook_id: WebhookId,
    pub event_type: String,
    pub attempt: i32,
    pub status_code: Option<i32>,
    pub duration_ms: i64,
    pub error: Option<String>,
    pub succeeded: bool,
    pub attempted_at: String,
}

/// One delivery attempt.
#[derive(Debug, Clone, Queryable, Selectable, Serialize, ToSchema)]
#[diesel(table_name = webhook_deliveries)]
pub struct Attempt {
    pub id: i64,
    /// The `X-Conduit-Delivery` header; shared by the retries of one delivery.
    pub delivery_id: String,
    #[schema(value_type = String)]
    pub webhook_id: WebhookId,
    pub event_type: String,
    /// 1 for the first try, up to 4 (three retries).
    pub attempt: i32,
    /// The receiver's HTTP status, when it answered.
    pub status_code: Option<i32>,
    pub duration_ms: i64,
    /// Why it failed (timeout, connection refused, HTTP 500, ...).
    pub error: Option<String>,
    pub succeeded: bool,
    pub attempted_at: String,
}

pub fn insert(conn: &mut DbConnection, row: &WebhookRow) -> Result<(), StoreError> {
    diesel::insert_into(webhooks::table).values(row).execute(conn)?;
    Ok(())
}

pub fn find(conn: &mut DbConnection, id: &WebhookId) -> Result<Option<WebhookRow>, StoreError> {
    Ok(webhooks::table.find(id).select(WebhookRow::as_select()).first(conn).optional()?)
}

pub fn list(conn: &mut DbConnection, limit: i64, offset: i64) -> Result<Vec<WebhookRow>, StoreError> {
    Ok(webhooks::table
        .order((webhooks::created_at.asc(), webhooks::id.asc()))
        .limit(limit)
        .offset(offset)
        .select(WebhookRow::as_select())
        .load(conn)?)
}

pub fn all_active(conn: &mut DbConnection) -> Result<Vec<WebhookRow>, StoreError> {
    Ok(webhooks::table.filter(webhooks::active.eq(true)).select(WebhookRow::as_select()).load(conn)?)
}

pub fn delete(conn: &mut DbConnection, id: &WebhookId) -> Result<bool, StoreError> {
    Ok(diesel::delete(webhooks::table.find(id)).execute(conn)? > 0)
}

pub fn insert_attempt(conn: &mut DbConnection, row: &NewAttempt) -> Result<(), StoreError> {
    diesel::insert_into(webhook_deliveries::table).values(row).execute(conn)?;
    Ok(())
}

/// A webhook's attempts, newest first.
pub fn attempts(
    conn: &mut DbConnection,
    webhook_id: &WebhookId,
    limit: i64,
    offset: i64,
) -> Result<Vec<Attempt>, StoreError> {
    Ok(webhook_deliveries::table
        .filter(webhook_deliveries::webhook_id.eq(webhook_id))
        .order(webhook_deliveries::id.desc())
        .limit(limit)
        .offset(offset)
        .select(Attempt::as_select())
        .load(conn)?)
}

/// Deletes attempts older than `before` (RFC 3339); returns how many.
pub fn prune_attempts(conn: &mut DbConnection, before: &str) -> Result<usize, StoreError> {
    Ok(diesel::delete(webhook_deliveries::table.filter(webhook_deliveries::attempted_at.lt(before))).execute(conn)?)
}

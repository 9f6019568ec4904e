//! API tokens: made, listed and revoked by an admin (see `scopes`: the routes are `admin`).
//! A token's secret is in the answer to its creation and nowhere else, ever: only its hash
//! is stored. Token changes are not announced on the event stream (read tokens follow it).

use actix_web::http::header;
use actix_web::{web, HttpResponse};
use chrono::{DateTime, SecondsFormat, Utc};
use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

use super::guard::AccessPolicy;
use super::pagination::Page;
use super::{projects, AppState};
use crate::db::accounts::{self, TokenInfo, TokenRow};
use crate::domain::access::{Identity, Scope};
use crate::domain::ids::{ProjectId, TokenId};
use crate::domain::{credentials, time, validate};
use crate::error::{AppError, AppResult, ErrorBody};

/// The longest life a token can be given: ten years.
const MAX_LIFETIME_SECONDS: i64 = 10 * 366 * 24 * 3600;

#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct CreateToken {
    /// What it is for, for people (`ci`, `grafana`, ...).
    #[schema(min_length = 1, max_length = 200)]
    pub name: String,
    pub scope: Scope,
    /// Restricts it to one project (not with scope `admin`): other projects' rows answer 404,
    /// lists spanning every project (projects, active sessions, agents, terminals, the
    /// permission log, usage) show its project's rows only, other routes spanning every
    /// project answer 403.
    pub project_id: Option<String>,
    /// When it stops working, RFC 3339 (`2027-01-31T00:00:00Z`); in the future. Not with
    /// `expires_in_seconds`. Neither: it never expires.
    pub expires_at: Option<String>,
    /// Its life from now, in seconds (at most ten years).
    #[schema(minimum = 1)]
    pub expires_in_seconds: Option<i64>,
}

/// A token just made: its secret, shown this once, and what is stored of it.
#[derive(Debug, Serialize, ToSchema)]
pub struct CreatedToken {
    /// The secret (`cdt_...`): send it as `Authorization: Bearer <token>`. It is not stored
    /// and cannot be shown again.
    pub token: String,
    #[serde(flatten)]
    pub info: TokenInfo,
}

/// Make an API token. Its secret is in this answer only.
#[utoipa::path(post, path = "/api/tokens", tag = "tokens", request_body = CreateToken,
    responses(
        (status = 201, description = "Made; `token` is shown this once", body = CreatedToken),
        (status = 400, description = "Malformed JSON", body = ErrorBody),
        (status = 403, description = "Not an admin (`insufficient_scope`)", body = ErrorBody),
        (status = 404, description = "No such project", body = ErrorBody),
        (status = 413, description = "Body over 1 MiB", body = ErrorBody),
        (status = 415, description = "Not JSON", body = ErrorBody),
        (status = 422, description = "Validation failed: unknown scope, expiry in the past, admin bound to a project", body = ErrorBody),
        (status = 503, description = "Storage unavailable", body = ErrorBody),
    ))]
pub async fn create(
    state: web::Data<AppState>,
    policy: web::Data<AccessPolicy>,
    identity: Option<web::ReqData<Identity>>,
    body: web::Json<CreateToken>,
) -> AppResult<HttpResponse> {
    let b = body.into_inner();
    let name = validate::name("name", &b.name).map_err(AppError::validation)?;
    let expires_at = expiry(b.expires_at.as_deref(), b.expires_in_seconds)?;
    if b.scope == Scope::Admin && b.project_id.is_some() {
        return Err(AppError::validation(
            "an `admin` token cannot be bound to a project: administration spans them all",
        ));
    }
    let project_id = match b.project_id {
        Some(raw) => Some(projects::load(&state, raw.parse::<ProjectId>()?).await?.id),
        None => None,
    };
    let made = credentials::new_token().map_err(AppError::internal)?;
    let row = TokenRow {
        id: TokenId::new(),
        name,
        scope: b.scope,
        project_id,
        created_by: identity.as_ref().and_then(|i| i.user().cloned()),
        token_hash: made.hash,
        created_at: time::now(),
        expires_at,
        revoked_at: None,
        last_used_at: None,
    };
    let stored = row.clone();
    state.store.run(move |conn| accounts::insert_token(conn, &stored)).await?;
    // The first credential ends the open mode at once.
    policy.auth.credentials_changed();
    let location = format!("/api/tokens/{}", row.id);
    let created = CreatedToken { token: made.secret, info: row.into() };
    let mut answer = HttpResponse::Created().insert_header((header::LOCATION, location)).json(created);
    // Since `cdt_` tokens are a kind of secret, the scrubber would mask this one too.
    answer.extensions_mut().insert(super::scrub::SecretByDesign);
    Ok(answer)
}

/// When a token being made expires, as stored: `None` for never.
fn expiry(at: Option<&str>, in_seconds: Option<i64>) -> AppResult<Option<String>> {
    let now = Utc::now();
    let when = match (at, in_seconds) {
        (Some(_), Some(_)) => {
            return Err(AppError::validation("give `expires_at` or `expires_in_seconds`, not both"));
        }
        (None, None) => return Ok(None),
        (Some(at), None) => DateTime::parse_from_rfc3339(at.trim())
            .map_err(|e| AppError::validation(format!("`expires_at` is not an RFC 3339 time: {e}")))?
            .with_timezone(&Utc),
        (None, Some(seconds)) if (1..=MAX_LIFETIME_SECONDS).contains(&seconds) => {
            now + chrono::Duration::seconds(seconds)
        }
        (None, Some(seconds)) => {
            return Err(AppError::validation(format!(
                "`expires_in_seconds` must be from 1 to {MAX_LIFETIME_SECONDS}, got {seconds}"
            )));
        }
    };
    if when <= now {
        return Err(AppError::validation("`expires_at` must be in the future"));
    }
    if when > now + chrono::Duration::seconds(MAX_LIFETIME_SECONDS) {
        return Err(AppError::validation("`expires_at` must be within ten years"));
    }
    Ok(Some(when.to_rfc3339_opts(SecondsFormat::Millis, true)))
}

/// List API tokens, newest first: revoked and expired ones too, never a secret or hash.
#[utoipa::path(get, path = "/api/tokens", tag = "tokens", params(Page),
    responses(
        (status = 200, description = "Tokens", body = Vec<TokenInfo>),
        (status = 400, description = "Bad query string", body = ErrorBody),
        (status = 403, description = "Not an admin (`insufficient_scope`)", body = ErrorBody),
        (status = 422, description = "limit/offset out of range", body = ErrorBody),
        (status = 503, description = "Storage unavailable", body = ErrorBody),
    ))]
pub async fn list(state: web::Data<AppState>, page: web::Query<Page>) -> AppResult<HttpResponse> {
    let (limit, offset) = page.bounds()?;
    let rows = state.store.run(move |conn| accounts::list_tokens(conn, limit, offset)).await?;
    Ok(HttpResponse::Ok().json(rows.into_iter().map(TokenInfo::from).collect::<Vec<_>>()))
}

/// Revoke an API token: it stops working at once. It stays listed, with `revoked_at`.
#[utoipa::path(delete, path = "/api/tokens/{id}", tag = "tokens",
    params(("id" = String, Path, description = "Token id (UUID)")),
    responses(
        (status = 204, description = "Revoked (or it already was)"),
        (status = 403, description = "Not an admin (`insufficient_scope`)", body = ErrorBody),
        (status = 404, description = "No such token", body = ErrorBody),
        (status = 503, description = "Storage unavailable", body = ErrorBody),
    ))]
pub async fn revoke(
    state: web::Data<AppState>,
    policy: web::Data<AccessPolicy>,
    id: web::Path<String>,
) -> AppResult<HttpResponse> {
    let id: TokenId = id.parse()?;
    let raw = id.to_string();
    state.store.run(move |conn| accounts::revoke_token(conn, &id, &time::now())).await.map_err(|e| match e {
        crate::db::StoreError::NotFound => AppError::not_found(format!("No token with id {raw:?}.")),
        other => other.into(),
    })?;
    policy.auth.credentials_changed();
    Ok(HttpResponse::NoContent().finish())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn expiries_are_checked() {
        assert_eq!(expiry(None, None).ok(), Some(None));
        assert!(expiry(Some("2000-01-01T00:00:00Z"), None).is_err(), "past");
        assert!(expiry(Some("tomorrow"), None).is_err());
        assert!(expiry(Some("2999-01-01T00:00:00Z"), None).is_err(), "too far");
        assert!(expiry(None, Some(0)).is_err());
        assert!(expiry(Some("2999-01-01T00:00:00Z"), Some(60)).is_err(), "both");
        let soon = expiry(None, Some(60)).ok().flatten().expect("an expiry");
        assert!(soon > time::now() && soon.ends_with('Z'), "{soon}");
    }
}

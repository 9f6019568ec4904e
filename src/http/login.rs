//! The dashboard's sign-in: a user's name and password (checked exactly as HTTP Basic is, see
//! [`Authenticator::password_login`]: same limits, same lockout) buy a random secret in an
//! `HttpOnly`, `SameSite=Strict` cookie; only its SHA-256 is stored. Then `who am I`, the
//! user's own sign-ins, and revoking them. `POST /api/auth/login` is reached without any
//! credential (the guard lets it through); the rest are within everyone's reach (see `scopes`)
//! and only ever touch the asker's own sessions.

use actix_web::http::{header, StatusCode};
use actix_web::{web, HttpMessage, HttpRequest, HttpResponse};
use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

use super::auth::{self, Authenticator, SESSION_COOKIE};
use super::guard::AccessPolicy;
use super::pagination::Page;
use super::AppState;
use crate::config::Settings;
use crate::db::login_sessions::{self, LoginSessionRow};
use crate::db::StoreError;
use crate::domain::access::{Identity, Scope};
use crate::domain::ids::{LoginSessionId, ProjectId, UserId};
use crate::domain::{credentials, time};
use crate::error::{AppError, AppResult, ErrorBody};

/// The longest User-Agent kept of a sign-in.
const MAX_USER_AGENT_CHARS: usize = 200;
/// The longest name a login may give (user names are at most 64 characters).
const MAX_NAME_CHARS: usize = 64;

#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct LoginForm {
    #[schema(min_length = 1, max_length = 64)]
    pub name: String,
    #[schema(min_length = 1, max_length = 1024)]
    pub password: String,
}

#[derive(Debug, Serialize, ToSchema)]
pub struct UserRef {
    #[schema(value_type = String)]
    pub id: UserId,
    pub name: String,
}

#[derive(Debug, Serialize, ToSchema)]
pub struct SessionRef {
    #[schema(value_type = String)]
    pub id: LoginSessionId,
    pub created_at: String,
    /// After this the cookie no longer works.
    pub expires_at: String,
}

/// A sign-in that worked (its secret is in the `Set-Cookie` header only).
#[derive(Debug, Serialize, ToSchema)]
pub struct LoggedIn {
    pub user: UserRef,
    pub session: SessionRef,
}

#[derive(Debug, Clone, Copy, Serialize, ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum IdentityKind {
    /// Open mode: no credential exists, loopback only.
    Local,
    /// `CONDUIT_AUTH_TOKEN`.
    Admin,
    /// A user (HTTP Basic or a sign-in cookie).
    User,
    /// An API token.
    Token,
    /// Another node of the cluster.
    Peer,
    /// A session, by its channel's token.
    Session,
}

/// Who is asking.
#[derive(Debug, Serialize, ToSchema)]
pub struct Me {
    pub kind: IdentityKind,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub user: Option<UserRef>,
    pub scope: Scope,
    /// The one project a bound token reaches.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(value_type = Option<String>)]
    pub project_id: Option<ProjectId>,
    /// The sign-in the request came with (a cookie); absent for Basic, tokens and the rest.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(value_type = Option<String>)]
    pub session_id: Option<LoginSessionId>,
}

/// One of the asker's live sign-ins.
#[derive(Debug, Serialize, ToSchema)]
pub struct SignIn {
    #[schema(value_type = String)]
    pub id: LoginSessionId,
    pub created_at: String,
    /// The last request with it (written at most once a minute).
    pub last_seen_at: String,
    pub expires_at: String,
    /// The client's address at sign-in.
    pub address: Option<String>,
    /// The client's User-Agent at sign-in (at most 200 characters).
    pub user_agent: Option<String>,
    /// Whether this request came with it.
    pub current: bool,
}

/// `Set-Cookie` for the sign-in cookie holding `value` for `max_age` seconds (0: remove it).
fn cookie(value: &str, max_age: u64, secure: bool) -> String {
    let secure = if secure { "; Secure" } else { "" };
    format!("{SESSION_COOKIE}={value}; HttpOnly; SameSite=Strict; Path=/; Max-Age={max_age}{secure}")
}

fn lifetime_seconds(settings: &Settings) -> u64 {
    crate::domain::time::seconds_rounded_up(settings.login_session)
}

fn bad_login() -> AppError {
    AppError::new(StatusCode::UNAUTHORIZED, "bad_login", "The name or the password is wrong.")
}

fn identity(found: Option<web::ReqData<Identity>>) -> AppResult<Identity> {
    found.map(|i| i.into_inner()).ok_or_else(|| AppError::internal("no identity in the request's extensions"))
}

/// Sign in with a user's name and password: the answer sets the `conduit_session` cookie
/// (`HttpOnly; SameSite=Strict; Path=/; Max-Age=<login_session_ms>`, and `Secure` with
/// `secure_cookies`), which then stands for the user on every `/api` route. Password attempts
/// are limited per address as for HTTP Basic. Needs no credential.
#[utoipa::path(post, path = "/api/auth/login", tag = "auth", request_body = LoginForm,
    responses(
        (status = 200, description = "Signed in; the cookie is in `Set-Cookie`", body = LoggedIn),
        (status = 400, description = "Malformed JSON", body = ErrorBody),
        (status = 401, description = "Wrong name or password (`bad_login`; which one is not said)", body = ErrorBody),
        (status = 413, description = "Body over 1 MiB", body = ErrorBody),
        (status = 415, description = "Not JSON", body = ErrorBody),
        (status = 422, description = "A field missing, empty or too long, or an unknown field", body = ErrorBody),
        (status = 429, description = "Too many password attempts from this address (`too_many_logins`, with `Retry-After`)", body = ErrorBody),
        (status = 503, description = "Storage unavailable", body = ErrorBody),
    ))]
pub async fn login(
    req: HttpRequest,
    state: web::Data<AppState>,
    policy: web::Data<AccessPolicy>,
    body: web::Json<LoginForm>,
) -> AppResult<HttpResponse> {
    let LoginForm { name, password } = body.into_inner();
    if name.is_empty() || name.chars().count() > MAX_NAME_CHARS {
        return Err(AppError::validation(format!("`name` must be 1 to {MAX_NAME_CHARS} characters")));
    }
    if password.is_empty() || password.len() > credentials::MAX_PASSWORD_BYTES {
        return Err(AppError::validation(format!("`password` must be 1 to {} bytes", credentials::MAX_PASSWORD_BYTES)));
    }
    let authenticator: &Authenticator = &policy.auth;
    let address = auth::client(req.peer_addr());
    let user_id = authenticator.password_login(&state.store, address, name.clone(), password).await?;
    let Some(user_id) = user_id else { return Err(bad_login()) };

    let made = credentials::new_session_secret().map_err(AppError::internal)?;
    let now = time::now();
    let row = LoginSessionRow {
        id: LoginSessionId::new(),
        user_id: user_id.clone(),
        secret_hash: made.hash,
        created_at: now.clone(),
        last_seen_at: now,
        expires_at: time::after(state.settings.login_session),
        revoked_at: None,
        address: req.peer_addr().map(|a| a.ip().to_string()),
        user_agent: req
            .headers()
            .get(header::USER_AGENT)
            .map(|v| String::from_utf8_lossy(v.as_bytes()).chars().take(MAX_USER_AGENT_CHARS).collect()),
    };
    let stored = row.clone();
    state.store.run(move |conn| login_sessions::insert(conn, &stored)).await?;
    // Whoever came in, it is this user now (an audit of the request sees who signed in).
    req.extensions_mut().insert(Identity::User { id: user_id.clone(), session: Some(row.id.clone()) });
    let set = cookie(&made.secret, lifetime_seconds(&state.settings), state.settings.secure_cookies);
    Ok(HttpResponse::Ok().insert_header((header::SET_COOKIE, set)).json(LoggedIn {
        user: UserRef { id: user_id, name },
        session: SessionRef { id: row.id, created_at: row.created_at, expires_at: row.expires_at },
    }))
}

/// Sign out: the sign-in of the request's cookie is revoked (its cookie stops working at once,
/// everywhere) and the cookie removed. A request with another credential (a token, Basic)
/// changes nothing and gets 204 too.
#[utoipa::path(post, path = "/api/auth/logout", tag = "auth",
    responses(
        (status = 204, description = "Signed out (or there was no sign-in to end); the cookie is removed"),
        (status = 401, description = "No valid credential", body = ErrorBody),
        (status = 403, description = "A `read` token (`insufficient_scope`)", body = ErrorBody),
        (status = 503, description = "Storage unavailable", body = ErrorBody),
    ))]
pub async fn logout(state: web::Data<AppState>, who: Option<web::ReqData<Identity>>) -> AppResult<HttpResponse> {
    let who = identity(who)?;
    if let (Some(user), Some(session)) = (who.user().cloned(), who.login_session().cloned()) {
        let revoked =
            state.store.run(move |conn| login_sessions::revoke_own(conn, &session, &user, &time::now())).await;
        match revoked {
            // Gone meanwhile (its user deleted): signed out all the same.
            Ok(()) | Err(StoreError::NotFound) => {}
            Err(e) => return Err(e.into()),
        }
    }
    let clear = cookie("", 0, state.settings.secure_cookies);
    Ok(HttpResponse::NoContent().insert_header((header::SET_COOKIE, clear)).finish())
}

/// Who is asking: what the dashboard asks first, to know whether to show its login page.
#[utoipa::path(get, path = "/api/auth/me", tag = "auth",
    responses(
        (status = 200, description = "The identity of the request", body = Me),
        (status = 401, description = "No valid credential", body = ErrorBody),
        (status = 503, description = "Storage unavailable", body = ErrorBody),
    ))]
pub async fn me(state: web::Data<AppState>, who: Option<web::ReqData<Identity>>) -> AppResult<HttpResponse> {
    let who = identity(who)?;
    let kind = match &who {
        Identity::Local => IdentityKind::Local,
        Identity::Admin => IdentityKind::Admin,
        Identity::User { .. } => IdentityKind::User,
        Identity::Token { .. } => IdentityKind::Token,
        Identity::Peer => IdentityKind::Peer,
        Identity::Session { .. } => IdentityKind::Session,
    };
    let user = match who.user().cloned() {
        Some(id) => {
            let lookup = id.clone();
            let name = state.store.run(move |conn| login_sessions::user_name(conn, &lookup)).await?;
            // Deleted since the guard let the request in: nobody, then.
            Some(UserRef { id, name: name.ok_or_else(auth::unauthorized)? })
        }
        None => None,
    };
    Ok(HttpResponse::Ok().json(Me {
        kind,
        user,
        scope: who.scope(),
        project_id: who.project().cloned(),
        session_id: who.login_session().cloned(),
    }))
}

/// The asker's live sign-ins, most recently used first, the one of this request marked
/// `current`. Empty for anyone but a user.
#[utoipa::path(get, path = "/api/auth/sessions", tag = "auth", params(Page),
    responses(
        (status = 200, description = "Live sign-ins", body = Vec<SignIn>),
        (status = 400, description = "Bad query string", body = ErrorBody),
        (status = 401, description = "No valid credential", body = ErrorBody),
        (status = 422, description = "limit/offset out of range", body = ErrorBody),
        (status = 503, description = "Storage unavailable", body = ErrorBody),
    ))]
pub async fn sessions(
    state: web::Data<AppState>,
    who: Option<web::ReqData<Identity>>,
    page: web::Query<Page>,
) -> AppResult<HttpResponse> {
    let (limit, offset) = page.bounds()?;
    let who = identity(who)?;
    let Some(user) = who.user().cloned() else {
        return Ok(HttpResponse::Ok().json(Vec::<SignIn>::new()));
    };
    let rows =
        state.store.run(move |conn| login_sessions::live_of_user(conn, &user, &time::now(), limit, offset)).await?;
    let current = who.login_session();
    let list: Vec<SignIn> = rows
        .into_iter()
        .map(|row| SignIn {
            current: current == Some(&row.id),
            id: row.id,
            created_at: row.created_at,
            last_seen_at: row.last_seen_at,
            expires_at: row.expires_at,
            address: row.address,
            user_agent: row.user_agent,
        })
        .collect();
    Ok(HttpResponse::Ok().json(list))
}

/// Revoke one of the asker's own sign-ins: its cookie stops working at once.
#[utoipa::path(delete, path = "/api/auth/sessions/{id}", tag = "auth",
    params(("id" = String, Path, description = "Sign-in id (UUID)")),
    responses(
        (status = 204, description = "Revoked (or it already was)"),
        (status = 401, description = "No valid credential", body = ErrorBody),
        (status = 403, description = "A `read` token (`insufficient_scope`)", body = ErrorBody),
        (status = 404, description = "No such sign-in of the asker's (another user's is not told apart)", body = ErrorBody),
        (status = 503, description = "Storage unavailable", body = ErrorBody),
    ))]
pub async fn revoke(
    state: web::Data<AppState>,
    who: Option<web::ReqData<Identity>>,
    id: web::Path<String>,
) -> AppResult<HttpResponse> {
    let id: LoginSessionId = id.parse()?;
    let who = identity(who)?;
    let missing = || AppError::not_found(format!("No sign-in with id {:?}.", id.as_str()));
    let Some(user) = who.user().cloned() else { return Err(missing()) };
    let target = id.clone();
    match state.store.run(move |conn| login_sessions::revoke_own(conn, &target, &user, &time::now())).await {
        Ok(()) => Ok(HttpResponse::NoContent().finish()),
        Err(StoreError::NotFound) => Err(missing()),
        Err(e) => Err(e.into()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_cookie_is_http_only_strict_and_secure_on_request() {
        assert_eq!(cookie("s3", 60, false), "conduit_session=s3; HttpOnly; SameSite=Strict; Path=/; Max-Age=60");
        assert!(cookie("", 0, true).ends_with("; Max-Age=0; Secure"));
    }
}

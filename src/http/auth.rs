//! Who a request comes from: the credentials it presents, checked against the configured
//! `CONDUIT_AUTH_TOKEN`, the stored API tokens and the users (see [`Identity`]).
//!
//! - A session channel's token (`cst_...`, a session's processes): [`Identity::Session`], which
//!   reaches its own session's reads only (see [`super::channel`]).
//! - `Authorization: Bearer <token>` (or `?token=` on a WebSocket or SSE path, which browsers
//!   cannot give headers), see [`super::auth_bearer`]: the configured token, compared in
//!   constant time, else a stored token, found by its SHA-256 (not revoked, not expired). No
//!   lookup is cached, so a revocation takes effect at once, on every node of a cluster (they
//!   share the database). The configured token is a secret a person chose, like a password: a
//!   bearer that could only be it (not shaped like a stored token, `cdt_` and 64 hex digits)
//!   is a guess the [`LoginGuard`] counts with the address's password attempts (same limit,
//!   same lockout, 429 `too_many_logins`), and the right one is remembered for a minute like
//!   a password that passed. Token-shaped bearers and cookies are random, 256-bit secrets:
//!   guessing them is hopeless, so they are never counted (a revoked or expired one locks
//!   nobody out). With no configured token, no other bearer can match anything: not counted.
//! - The cookie `conduit_session` of a dashboard sign-in (`POST /api/auth/login`): a live
//!   session, found by the SHA-256 of its secret (not revoked, not expired, its user still
//!   there), uncached like tokens.
//! - `Authorization: Basic <name:password>`: a user (every user is an admin for now). The
//!   argon2id check is slow on purpose; it runs on the blocking pool, at most
//!   [`PASSWORD_CHECKS`] at once, so guessing cannot take the machine. The [`LoginGuard`]
//!   decides first whether the client's address may try (429 with `Retry-After` otherwise),
//!   and a credential that passed is taken without a new check for a minute.
//! - Nothing valid: 401, unless no credential exists at all (no `CONDUIT_AUTH_TOKEN`, no user,
//!   no live token): then the local-first open mode of a fresh install stays ([`Identity::Local`],
//!   on loopback only; startup refuses other addresses without a token).

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use actix::Addr;
use actix_web::dev::ServiceRequest;
use actix_web::http::{header, StatusCode};
use actix_web::web;
use sha2::{Digest, Sha256};
use tokio::sync::Semaphore;

use crate::actors::login_guard::LoginGuard;

use crate::db::{accounts, login_sessions, Store};
use crate::domain::access::Identity;
use crate::domain::{credentials, time};
use crate::error::AppError;

/// Password checks running at once (each takes tens of milliseconds and 19 MiB).
pub const PASSWORD_CHECKS: usize = 2;
/// How long "does any credential exist" is remembered before it is asked again. A credential
/// made on this node is seen at once (see [`Authenticator::credentials_changed`]); one made
/// elsewhere (`conduit user add`, another node) within this time.
const KNOWN_FOR: Duration = Duration::from_secs(2);
/// A token's `last_used_at` is written at most this often.
pub(super) const TOUCH_EVERY: Duration = Duration::from_secs(60);

/// The cookie a dashboard sign-in is kept in.
pub const SESSION_COOKIE: &str = "conduit_session";

/// The credentials a request presents.
#[derive(Default)]
struct Presented {
    bearers: Vec<String>,
    cookie: Option<String>,
    basic: Option<(String, String)>,
}

/// The value of the sign-in cookie among the `Cookie` headers, if one is sent.
pub fn session_cookie(headers: &header::HeaderMap) -> Option<String> {
    headers
        .get_all(header::COOKIE)
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(';'))
        .filter_map(|pair| pair.trim().split_once('='))
        .find(|(name, _)| *name == SESSION_COOKIE)
        .map(|(_, value)| value.trim().trim_matches('"').to_string())
}

fn presented(req: &ServiceRequest) -> Presented {
    let mut found = Presented::default();
    let authorization = req.headers().get(header::AUTHORIZATION).and_then(|v| v.to_str().ok());
    if let Some(value) = authorization {
        if let Some(token) = value.strip_prefix("Bearer ").or_else(|| value.strip_prefix("bearer ")) {
            found.bearers.push(token.trim().to_string());
        } else if let Some(encoded) = value.strip_prefix("Basic ").or_else(|| value.strip_prefix("basic ")) {
            found.basic = decode_basic(encoded.trim());
        }
    }
    found.cookie = session_cookie(req.headers());
    let is_stream = req.path().ends_with("/ws") || req.path().ends_with("/stream");
    if is_stream {
        let query = web::Query::<std::collections::HashMap<String, String>>::from_query(req.query_string());
        if let Some(token) = query.ok().and_then(|q| q.get("token").cloned()) {
            found.bearers.push(token);
        }
    }
    found
}

/// The bearers `req` presents (`Authorization: Bearer`, and `?token=` on a stream path).
pub fn bearers(req: &ServiceRequest) -> Vec<String> {
    presented(req).bearers
}

/// `name:password` from a Basic credential; `None` when it is not one.
fn decode_basic(encoded: &str) -> Option<(String, String)> {
    use base64::Engine;
    let bytes = base64::engine::general_purpose::STANDARD.decode(encoded).ok()?;
    let text = String::from_utf8(bytes).ok()?;
    let (name, password) = text.split_once(':')?;
    Some((name.to_string(), password.to_string()))
}

/// Checks credentials. Shared by every worker (it sits in the access policy).
#[derive(Debug)]
pub struct Authenticator {
    pub(super) configured: Option<String>,
    /// Whether any credential was stored, and when that was last asked (`None`: to be asked
    /// again, the answer kept for when the database cannot give one).
    known: Mutex<Option<(Option<Instant>, bool)>>,
    pub(super) password_checks: Arc<Semaphore>,
    /// Who may try a password or guess the configured token now (see [`LoginGuard`]).
    pub(super) logins: Addr<LoginGuard>,
    /// Keys the hash a passed credential is remembered by: random, this process's own.
    remember_key: [u8; 32],
    /// In cluster mode, the lockout shared with the other nodes (see `auth_shared`).
    pub(super) shared: Option<crate::config::LoginLimits>,
}

impl Authenticator {
    /// `shared`: in cluster mode, the login limits, whose lockout the nodes share.
    pub fn new(
        configured: Option<String>,
        logins: Addr<LoginGuard>,
        shared: Option<crate::config::LoginLimits>,
    ) -> Self {
        let mut remember_key = [0u8; 32];
        if let Err(e) = getrandom::getrandom(&mut remember_key) {
            // Without randomness the key is only less secret: a hash of a password stays in
            // memory either way, never stored or sent.
            tracing::warn!(error = %e, "no randomness for the key of remembered logins");
        }
        Authenticator {
            configured,
            known: Mutex::new(None),
            password_checks: Arc::new(Semaphore::new(PASSWORD_CHECKS)),
            logins,
            remember_key,
            shared,
        }
    }

    /// A credential was made or revoked on this node: ask the database again next time.
    pub fn credentials_changed(&self) {
        if let Ok(mut known) = self.known.lock() {
            // Stale, not forgotten: it stays the answer while the database cannot give one.
            if let Some((at, _)) = known.as_mut() {
                *at = None;
            }
        }
    }

    /// The identity of an `/api` request; `Err` with the answer (401, 429 when the address
    /// may not try a password or guess the configured token now, or 503 when the database
    /// cannot say).
    pub async fn identify(&self, req: &ServiceRequest, store: Option<&Store>) -> Result<Identity, AppError> {
        let given = presented(req);
        let address = client(req.peer_addr());
        // A session's own token (its channel's) is nothing else's, and never a guess.
        if let Some(identity) = super::channel::session_identity(req, &given.bearers).await? {
            return Ok(identity);
        }
        if let Some(identity) = self.bearer(&given.bearers, address, store).await? {
            return Ok(identity);
        }
        if let Some(store) = store {
            if let Some(secret) = given.cookie.filter(|c| credentials::looks_like_session_secret(c)) {
                if let Some(identity) = signed_in(store, &secret).await? {
                    return Ok(identity);
                }
            }
            if let Some((name, password)) = given.basic {
                if let Some(id) = self.password_login(store, address, name, password).await? {
                    return Ok(Identity::User { id, session: None });
                }
            }
        }
        if self.configured.is_none() && !self.any_credential(store).await? {
            return Ok(Identity::Local);
        }
        Err(unauthorized())
    }

    async fn any_credential(&self, store: Option<&Store>) -> Result<bool, AppError> {
        let Some(store) = store else { return Ok(false) };
        if let Ok(known) = self.known.lock() {
            if let Some((Some(at), any)) = *known {
                if at.elapsed() < KNOWN_FOR {
                    return Ok(any);
                }
            }
        }
        match store.run(|conn| accounts::any_credential(conn, &time::now())).await {
            Ok(any) => {
                self.remember(any);
                Ok(any)
            }
            // The database cannot say right now: what it last said stands (known since startup,
            // see `remember`), so `/api/health` still answers in open mode and a closed
            // service never opens for want of a database.
            Err(e) => match self.known.lock().ok().and_then(|known| *known) {
                Some((_, any)) => Ok(any),
                None => Err(e.into()),
            },
        }
    }

    /// Records whether any credential is stored (at startup, and after each look).
    pub fn remember(&self, any: bool) {
        if let Ok(mut known) = self.known.lock() {
            *known = Some((Some(Instant::now()), any));
        }
    }

    /// A hash keyed with this process's key, for credentials of one `domain` (each ends in a
    /// NUL and holds no other, so no kind of credential hashes like another).
    pub(super) fn keyed(&self, domain: &[u8]) -> Sha256 {
        let mut hash = Sha256::new();
        hash.update(self.remember_key);
        hash.update(domain);
        hash
    }
}

/// The address a client's password attempts and token guesses are counted by: its IPv4
/// address, or the /64 an IPv6 address is in (one host usually has a whole /64 to pick
/// addresses from). The peer's address, never a forwarding header a client could write.
pub fn client(peer: Option<SocketAddr>) -> IpAddr {
    match peer.map(|a| a.ip()) {
        Some(IpAddr::V6(v6)) => match v6.to_ipv4_mapped() {
            Some(v4) => IpAddr::V4(v4),
            None => IpAddr::V6(Ipv6Addr::from(u128::from(v6) & !((1u128 << 64) - 1))),
        },
        Some(v4) => v4,
        None => IpAddr::V4(Ipv4Addr::UNSPECIFIED),
    }
}

/// 429 `too_many_logins` with `Retry-After`: one code for passwords and guesses at the
/// configured token, which share their limits and lockout.
pub(super) fn too_many_logins(wait: std::time::Duration) -> AppError {
    let seconds = time::seconds_rounded_up(wait);
    let mut refusal = AppError::new(
        StatusCode::TOO_MANY_REQUESTS,
        "too_many_logins",
        format!("Too many password or token attempts from this address: try again in {seconds} s."),
    );
    refusal.retry_after = Some(seconds.max(1) as i64);
    refusal
}

/// The user of the live sign-in whose cookie holds `secret`; its use is recorded like a
/// token's (at most once a minute, in the background).
async fn signed_in(store: &Store, secret: &str) -> Result<Option<Identity>, AppError> {
    let hash = credentials::token_hash(secret);
    let Some(row) = store.run(move |conn| login_sessions::live_by_hash(conn, &hash, &time::now())).await? else {
        return Ok(None);
    };
    if *row.last_seen_at < *time::ago(TOUCH_EVERY) {
        let (store, id) = (store.clone(), row.id.clone());
        actix_web::rt::spawn(async move {
            if let Err(e) = store.run(move |conn| login_sessions::touch(conn, &id, &time::now())).await {
                tracing::debug!(error = %e, "a sign-in's last use was not recorded");
            }
        });
    }
    Ok(Some(Identity::User { id: row.user_id, session: Some(row.id) }))
}

pub fn unauthorized() -> AppError {
    AppError::new(
        StatusCode::UNAUTHORIZED,
        "unauthorized",
        "A valid token is required: send `Authorization: Bearer <token>` (CONDUIT_AUTH_TOKEN or an API token).",
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn basic_credentials_are_decoded() {
        assert_eq!(decode_basic("YWRhOnB3OndpdGg6Y29sb25z"), Some(("ada".into(), "pw:with:colons".into())));
        assert_eq!(decode_basic("c2VjcmV0LXRva2Vu"), None, "no colon");
        assert_eq!(decode_basic("%%%"), None);
    }

    #[test]
    fn the_session_cookie_is_found_among_others() {
        let mut headers = header::HeaderMap::new();
        headers.append(header::COOKIE, header::HeaderValue::from_static("a=1; conduit_session=abc ; b=2"));
        assert_eq!(session_cookie(&headers), Some("abc".into()));
        let mut other = header::HeaderMap::new();
        other.append(header::COOKIE, header::HeaderValue::from_static("xconduit_session=abc; c"));
        assert_eq!(session_cookie(&other), None);
    }
}

//! Local-first access control, applied to every request before routing.
//!
//! Whoever drives this API runs commands on the machine, so:
//! - `Host` must be a loopback name/address, the bound address, or a configured allowed host.
//!   This defeats DNS rebinding, where a web page's own host name resolves to 127.0.0.1.
//! - State-changing requests and WebSocket upgrades that carry an `Origin` must come from the
//!   service's own origin or a configured one: a web page cannot drive the API. Requests without
//!   `Origin` (curl, scripts) pass; browsers always send it on cross-site writes.
//! - Once a credential exists (`CONDUIT_AUTH_TOKEN`, a user, an API token), every `/api`
//!   request must carry one (see [`super::auth`]); the identity it resolves to is put in the
//!   request's extensions ([`Identity`]), and the route must be within its scope and, for a
//!   token bound to a project, about that project (see [`super::scopes`]).
//!
//! - In cluster mode, a request carrying the cluster secret comes from another node forwarding
//!   an action (see [`super::forward`]): with the right secret it is trusted as such; a wrong
//!   one (or any, outside cluster mode) is refused.
//!
//! - Writes per client address and live streams per credential are limited (see
//!   [`super::request_limits`]).
//!
//! No CORS headers are ever sent, so other origins cannot read responses either.

use actix_web::body::{BoxBody, MessageBody};
use actix_web::dev::{ServiceRequest, ServiceResponse};
use actix_web::http::{header, Method, StatusCode};
use actix_web::middleware::Next;
use actix_web::{web, Error, HttpMessage, ResponseError};
use subtle::ConstantTimeEq;

use super::auth::Authenticator;
use super::channel;
use super::request_limits::{Held, Limits};
use super::scopes::{RouteIndex, Subject};
use super::{errors, AppState};
use crate::actors::login_guard::LoginGuard;
use crate::actors::request_limits::RequestLimits;
use crate::config::{is_loopback_host, Settings};
use crate::domain::access::Identity;
use crate::error::AppError;

#[derive(Debug, Clone)]
pub struct AccessPolicy {
    allowed_hosts: Vec<String>,
    allowed_origins: Vec<String>,
    cluster_secret: Option<String>,
    /// Shared by every worker: it remembers whether credentials exist.
    pub auth: std::sync::Arc<Authenticator>,
    routes: std::sync::Arc<RouteIndex>,
    limits: Limits,
}

/// Splits `host[:port]` (IPv6 in brackets) into the lower-cased host and the optional port.
fn split_host_port(value: &str) -> (String, Option<&str>) {
    let value = value.trim();
    if let Some(rest) = value.strip_prefix('[') {
        if let Some(end) = rest.find(']') {
            let port = rest[end + 1..].strip_prefix(':');
            return (format!("[{}]", &rest[..end]).to_ascii_lowercase(), port);
        }
    }
    match value.rsplit_once(':') {
        Some((h, p)) if !h.contains(':') => (h.to_ascii_lowercase(), Some(p)),
        _ => (value.to_ascii_lowercase(), None),
    }
}

impl AccessPolicy {
    /// The policy `settings` ask for; password attempts are counted by `logins`, writes and
    /// streams by `limits`.
    pub fn from_settings(
        settings: &Settings,
        logins: actix::Addr<LoginGuard>,
        limits: actix::Addr<RequestLimits>,
    ) -> Self {
        let mut allowed_hosts = settings.allowed_hosts.clone();
        // The address the service is bound to is its own name, unless it is a wildcard.
        let bound = settings.host.to_ascii_lowercase();
        if bound != "0.0.0.0" && bound != "::" && bound != "[::]" {
            allowed_hosts.push(bound);
        }
        AccessPolicy {
            allowed_hosts,
            allowed_origins: settings.allowed_origins.clone(),
            cluster_secret: settings.cluster.as_ref().map(|c| c.secret.clone()),
            auth: std::sync::Arc::new(Authenticator::new(
                settings.auth_token.clone(),
                logins,
                settings.cluster.is_some().then_some(settings.login_limits),
            )),
            routes: std::sync::Arc::new(RouteIndex::default()),
            limits: Limits { actor: limits, limit_loopback: settings.request_limits.limit_loopback },
        }
    }

    fn host_allowed(&self, host_header: &str) -> bool {
        let (host, port) = split_host_port(host_header);
        if is_loopback_host(&host) {
            return true;
        }
        let full = match port {
            Some(p) => format!("{host}:{p}"),
            None => host.clone(),
        };
        self.allowed_hosts.iter().any(|a| *a == host || *a == full)
    }

    fn origin_allowed(&self, origin: &str, host_header: Option<&str>) -> bool {
        let origin = origin.trim().trim_end_matches('/').to_ascii_lowercase();
        if self.allowed_origins.contains(&origin) {
            return true;
        }
        // Same origin: the page was served by this very host:port.
        let Some(host) = host_header else {
            return false;
        };
        let host = host.trim().to_ascii_lowercase();
        origin == format!("http://{host}") || origin == format!("https://{host}")
    }

    /// The checks that need no database: the cluster secret, Host and Origin. `Ok(true)` for a
    /// request another node forwards (trusted as it is), `Err` with the response to send when
    /// the request is refused.
    pub fn check(&self, req: &ServiceRequest) -> Result<bool, AppError> {
        if let Some(given) = req.headers().get(super::peers::SECRET_HEADER) {
            return match &self.cluster_secret {
                Some(secret) if bool::from(given.as_bytes().ct_eq(secret.as_bytes())) => Ok(true),
                _ => Err(AppError::new(
                    StatusCode::UNAUTHORIZED,
                    "bad_cluster_secret",
                    "The cluster secret is wrong: every node must have the same CONDUIT_CLUSTER_SECRET.",
                )),
            };
        }
        let host = req.headers().get(header::HOST).map(|v| v.to_str().unwrap_or("\u{fffd}"));
        if let Some(host) = host {
            if !self.host_allowed(host) {
                return Err(AppError::forbidden(
                    "host_not_allowed",
                    format!(
                        "Host {host:?} is not allowed. Use a loopback address, or add it to CONDUIT_ALLOWED_HOSTS."
                    ),
                ));
            }
        }

        let upgrading = req
            .headers()
            .get(header::UPGRADE)
            .and_then(|v| v.to_str().ok())
            .is_some_and(|v| v.eq_ignore_ascii_case("websocket"));
        let changes_state = !matches!(*req.method(), Method::GET | Method::HEAD | Method::OPTIONS);
        if changes_state || upgrading {
            if let Some(origin) = req.headers().get(header::ORIGIN) {
                let origin = origin.to_str().unwrap_or("\u{fffd}");
                if !self.origin_allowed(origin, host) {
                    return Err(AppError::forbidden(
                        "origin_not_allowed",
                        format!("Requests from origin {origin:?} are not allowed. Add it to CONDUIT_ALLOWED_ORIGINS to permit it."),
                    ));
                }
            }
        }

        Ok(false)
    }

    /// Who sends an `/api` request, once they may send it: `Err` with the answer otherwise
    /// (401 without a valid credential, 403 `insufficient_scope` beyond the credential's
    /// scope, 404 for another project's row).
    async fn admit(&self, req: &ServiceRequest) -> Result<Identity, AppError> {
        let state = req.app_data::<web::Data<AppState>>();
        let identity = self.auth.identify(req, state.map(|s| &s.store)).await?;
        // Known from here on, even when the route refuses it: the audit names who was refused.
        req.extensions_mut().insert(identity.clone());
        let Some((pattern, needed)) = self.routes.find(req.method(), req.path()) else {
            // No route answers: the router says 404 or 405, and nothing happens.
            return Ok(identity);
        };
        // A session's token reaches the session's own rows, whichever way it came.
        channel::allow(&identity, req.method(), pattern, super::scopes::row_id(req.path()))?;
        if !identity.scope().allows(needed.scope) {
            return Err(insufficient_scope(format!(
                "{} {} needs a token with scope `{}`; this one has `{}`.",
                req.method(),
                req.path(),
                needed.scope,
                identity.scope()
            )));
        }
        let Some(project) = identity.project() else { return Ok(identity) };
        match needed.subject {
            Subject::Open | Subject::FilteredList => Ok(identity),
            Subject::Global => Err(insufficient_scope(format!(
                "{} {} spans every project; this token is bound to project {project}.",
                req.method(),
                req.path()
            ))),
            Subject::Row(kind) => {
                let state = state.ok_or_else(|| AppError::internal("app state missing from app data"))?;
                super::owners::check(state, kind, req.path(), project).await?;
                Ok(identity)
            }
        }
    }
}

fn insufficient_scope(message: String) -> AppError {
    AppError::forbidden("insufficient_scope", message)
}

/// The middleware: refuse early, or pass the request on.
pub async fn enforce(
    req: ServiceRequest,
    next: Next<impl MessageBody + 'static>,
) -> Result<ServiceResponse<BoxBody>, Error> {
    let Some(policy) = req.app_data::<web::Data<AccessPolicy>>().cloned() else {
        return Ok(refuse(req, AppError::internal("access policy missing from app data")));
    };
    let identity = match policy.verdict(&req).await {
        Ok(identity) => identity,
        Err(refusal) => return Ok(refuse(req, refusal)),
    };
    let slot = match &identity {
        Some(identity) => match policy.limits.open_stream(&req, identity).await {
            Ok(slot) => slot,
            Err(refusal) => return Ok(refuse(req, refusal)),
        },
        None => None,
    };
    if let Some(identity) = identity {
        req.extensions_mut().insert(identity);
    }
    let response = next.call(req).await?.map_into_boxed_body();
    Ok(match slot {
        // The stream stays counted as long as its body is being sent.
        Some(slot) => response.map_body(|_, body| BoxBody::new(Held::new(body, slot))),
        None => response,
    })
}

impl AccessPolicy {
    /// Who may send `req`: `Some` identity for an `/api` request that passed, `None` for a
    /// request that needs none, `Err` with the refusal.
    async fn verdict(&self, req: &ServiceRequest) -> Result<Option<Identity>, AppError> {
        if channel::over_channel(req) {
            return self.admit_channel(req).await.map(Some);
        }
        if self.check(req)? {
            return Ok(Some(Identity::Peer));
        }
        // Signing in needs no credential (it is how one gets one): the handler puts the
        // identity it proves in the extensions. Host and Origin were checked all the same,
        // and its own limits are the login guard's.
        if is_login(req) || !(req.path().starts_with("/api") || req.path() == "/metrics") {
            return Ok(None);
        }
        self.limits.check_write(req).await?;
        self.admit(req).await.map(Some)
    }
}

impl AccessPolicy {
    /// A request over the session channel's socket: a session's token, on a route a session
    /// may reach, and nothing else (no open mode, no other credential, no cluster secret, no
    /// dashboard). Host and Origin need no check: no browser reaches a Unix socket.
    async fn admit_channel(&self, req: &ServiceRequest) -> Result<Identity, AppError> {
        let Some(identity) = channel::session_identity(req, &super::auth::bearers(req)).await? else {
            return Err(AppError::new(
                StatusCode::UNAUTHORIZED,
                "unauthorized",
                "The session channel answers a session's own token only: send `Authorization: Bearer $CONDUIT_SESSION_TOKEN`.",
            ));
        };
        req.extensions_mut().insert(identity.clone());
        match self.routes.find(req.method(), req.path()) {
            Some((pattern, _)) => channel::allow(&identity, req.method(), pattern, super::scopes::row_id(req.path()))?,
            None => return Err(channel::not_for_the_channel(req)),
        }
        Ok(identity)
    }
}

/// Whether `req` is the sign-in itself (`POST /api/auth/login`).
fn is_login(req: &ServiceRequest) -> bool {
    req.method() == Method::POST && req.path() == "/api/auth/login"
}

/// The answer to a refused request.
fn refuse(req: ServiceRequest, refusal: AppError) -> ServiceResponse<BoxBody> {
    let mut response = refusal.error_response();
    if refusal.status == StatusCode::UNAUTHORIZED {
        response.headers_mut().insert(header::WWW_AUTHENTICATE, header::HeaderValue::from_static("Bearer"));
    }
    // A refused request's body is never read: its connection ends with the answer rather
    // than after actix has drained whatever the client still sends.
    if errors::has_body(req.headers()) {
        let mut req = req;
        let unread = req.take_payload();
        return errors::closing(req.into_response(response), unread);
    }
    req.into_response(response)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn host_port_splitting() {
        assert_eq!(split_host_port("127.0.0.1:3100"), ("127.0.0.1".to_string(), Some("3100")));
        assert_eq!(split_host_port("[::1]:80"), ("[::1]".to_string(), Some("80")));
        assert_eq!(split_host_port("LocalHost"), ("localhost".to_string(), None));
        assert_eq!(split_host_port("::1"), ("::1".to_string(), None));
    }

    #[actix_rt::test]
    async fn hosts_and_origins() {
        use crate::config::RequestLimitSettings;
        use actix::Actor;
        let limits = crate::config::LoginLimits {
            per_minute: 10,
            lockout_after: 5,
            lockout: std::time::Duration::from_secs(60),
        };
        let p = AccessPolicy {
            allowed_hosts: vec!["box.lan".into(), "other.lan:8080".into()],
            allowed_origins: vec!["http://localhost:5173".into()],
            cluster_secret: None,
            auth: std::sync::Arc::new(Authenticator::new(None, LoginGuard::new(limits).start(), None)),
            routes: std::sync::Arc::new(RouteIndex::default()),
            limits: Limits {
                actor: RequestLimits::new(RequestLimitSettings::default()).start(),
                limit_loopback: false,
            },
        };
        for ok in ["127.0.0.1:3100", "localhost", "[::1]:3100", "box.lan:1234", "other.lan:8080"] {
            assert!(p.host_allowed(ok), "{ok}");
        }
        for bad in ["evil.com", "evil.com:3100", "other.lan:9090", "127.0.0.1.evil.com", "localhost.evil.com:80"] {
            assert!(!p.host_allowed(bad), "{bad}");
        }
        assert!(p.origin_allowed("http://127.0.0.1:3100", Some("127.0.0.1:3100")));
        assert!(p.origin_allowed("http://localhost:5173/", Some("127.0.0.1:3100")));
        assert!(!p.origin_allowed("http://evil.com", Some("127.0.0.1:3100")));
        assert!(!p.origin_allowed("null", Some("127.0.0.1:3100")));
        assert!(!p.origin_allowed("http://127.0.0.1:3101", Some("127.0.0.1:3100")));
    }
}

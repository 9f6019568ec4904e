//! The access audit's vocabulary: what happened ([`AuditEvent`]), who did it ([`ActorKind`]),
//! and which requests are recorded at all ([`classify`]). Plain data; the middleware
//! (`http::audit`) records, the `Auditor` actor writes.

use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

use super::access::Identity;

/// What an audit row records.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum AuditEvent {
    /// A password login that opened a session (`POST /api/auth/login`).
    Login,
    /// A password login that was refused (wrong name or password, locked out, bad input).
    LoginFailed,
    /// A sign-in session ended by its owner (`POST /api/auth/logout`).
    Logout,
    /// A sign-in session revoked from another (`DELETE /api/auth/sessions/{id}`).
    SessionRevoked,
    /// An API token made (`POST /api/tokens`); the target is the new token's id.
    TokenCreated,
    /// An API token revoked (`DELETE /api/tokens/{id}`).
    TokenRevoked,
    /// A credential was presented and refused (401), or its address was over the limit (429).
    AuthFailed,
    /// A request refused for its scope, project, host or origin (403).
    Denied,
    /// Any other state-changing request (`POST`, `PUT`, `PATCH`, `DELETE`), whatever its result.
    Request,
}

text_enum!(AuditEvent, "audit event", {
    Login => "login",
    LoginFailed => "login_failed",
    Logout => "logout",
    SessionRevoked => "session_revoked",
    TokenCreated => "token_created",
    TokenRevoked => "token_revoked",
    AuthFailed => "auth_failed",
    Denied => "denied",
    Request => "request",
});

/// Who acted, as the access guard resolved it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum ActorKind {
    /// No credential was accepted (none given, or a refused one).
    Anonymous,
    /// Open mode: no credential exists, the request came over loopback.
    Local,
    /// The configured `CONDUIT_AUTH_TOKEN`.
    Admin,
    /// A user (password or sign-in session); `actor_id` is the user's id.
    User,
    /// An API token; `actor_id` is the token's id.
    Token,
    /// A session's processes through its channel; `actor_id` is the session's id.
    Session,
}

text_enum!(ActorKind, "audit actor", {
    Anonymous => "anonymous",
    Local => "local",
    Admin => "admin",
    User => "user",
    Token => "token",
    Session => "session",
});

/// The actor of a request and its id (a user's or a token's); `None` for a request another
/// node forwarded, which that node records.
pub fn actor(identity: Option<&Identity>) -> Option<(ActorKind, Option<String>)> {
    Some(match identity {
        None => (ActorKind::Anonymous, None),
        Some(Identity::Local) => (ActorKind::Local, None),
        Some(Identity::Admin) => (ActorKind::Admin, None),
        Some(Identity::User { id, .. }) => (ActorKind::User, Some(id.to_string())),
        Some(Identity::Token { id, .. }) => (ActorKind::Token, Some(id.to_string())),
        Some(Identity::Session { session, .. }) => (ActorKind::Session, Some(session.to_string())),
        Some(Identity::Peer) => return None,
    })
}

/// The routes whose requests are sign-ins and sign-outs.
const LOGIN_ROUTE: &str = "/api/auth/login";
const LOGOUT_ROUTE: &str = "/api/auth/logout";
const SESSION_ROUTE: &str = "/api/auth/sessions/{id}";
const TOKENS_ROUTE: &str = "/api/tokens";
const TOKEN_ROUTE: &str = "/api/tokens/{id}";

/// What a finished request is in the audit, if it is recorded: every state-changing request,
/// and reads refused for their credential (when one was presented: a page that has not signed
/// in yet is not an attack) or their scope.
pub fn classify(changes_state: bool, route: &str, status: u16, presented_credential: bool) -> Option<AuditEvent> {
    let succeeded = (200..300).contains(&status);
    if changes_state {
        let specific = match route {
            LOGIN_ROUTE => Some(if succeeded { AuditEvent::Login } else { AuditEvent::LoginFailed }),
            LOGOUT_ROUTE if succeeded => Some(AuditEvent::Logout),
            SESSION_ROUTE if succeeded => Some(AuditEvent::SessionRevoked),
            TOKENS_ROUTE if succeeded => Some(AuditEvent::TokenCreated),
            TOKEN_ROUTE if succeeded => Some(AuditEvent::TokenRevoked),
            _ => None,
        };
        if let Some(event) = specific {
            return Some(event);
        }
    }
    match status {
        401 | 429 if changes_state || presented_credential => Some(AuditEvent::AuthFailed),
        403 => Some(AuditEvent::Denied),
        _ if changes_state => Some(AuditEvent::Request),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::domain::check_text_enum;

    #[test]
    fn texts() {
        check_text_enum(
            AuditEvent::ALL,
            &[
                "login",
                "login_failed",
                "logout",
                "session_revoked",
                "token_created",
                "token_revoked",
                "auth_failed",
                "denied",
                "request",
            ],
        );
        check_text_enum(ActorKind::ALL, &["anonymous", "local", "admin", "user", "token", "session"]);
    }

    #[test]
    fn what_is_recorded() {
        use AuditEvent::*;
        assert_eq!(classify(true, LOGIN_ROUTE, 200, false), Some(Login));
        assert_eq!(classify(true, LOGIN_ROUTE, 401, false), Some(LoginFailed));
        assert_eq!(classify(true, LOGIN_ROUTE, 429, false), Some(LoginFailed));
        assert_eq!(classify(true, LOGOUT_ROUTE, 204, true), Some(Logout));
        assert_eq!(classify(true, TOKENS_ROUTE, 201, true), Some(TokenCreated));
        assert_eq!(classify(true, TOKENS_ROUTE, 422, true), Some(Request), "a refused creation is a request");
        assert_eq!(classify(true, TOKENS_ROUTE, 403, true), Some(Denied));
        assert_eq!(classify(true, TOKEN_ROUTE, 204, true), Some(TokenRevoked));
        assert_eq!(classify(true, SESSION_ROUTE, 204, true), Some(SessionRevoked));
        assert_eq!(classify(true, "/api/projects", 401, false), Some(AuthFailed));
        assert_eq!(classify(true, "/api/projects", 201, true), Some(Request));
        assert_eq!(classify(true, "/api/projects", 503, true), Some(Request));
        assert_eq!(classify(false, "/api/projects", 200, true), None, "reads are not recorded");
        assert_eq!(classify(false, "/api/projects", 401, false), None, "no credential, nothing refused");
        assert_eq!(classify(false, "/api/projects", 401, true), Some(AuthFailed));
        assert_eq!(classify(false, "/api/projects", 429, true), Some(AuthFailed));
        assert_eq!(classify(false, "/api/usage", 403, true), Some(Denied));
        assert_eq!(classify(false, "/api/projects/{id}", 404, true), None);
    }

    #[test]
    fn actors() {
        use crate::domain::ids::{TokenId, UserId};
        let user = UserId::new();
        assert_eq!(
            actor(Some(&Identity::User { id: user.clone(), session: None })),
            Some((ActorKind::User, Some(user.to_string())))
        );
        let token = TokenId::new();
        let bound = Identity::Token { id: token.clone(), scope: crate::domain::access::Scope::Read, project: None };
        assert_eq!(actor(Some(&bound)), Some((ActorKind::Token, Some(token.to_string()))));
        assert_eq!(actor(None), Some((ActorKind::Anonymous, None)));
        assert_eq!(actor(Some(&Identity::Peer)), None, "the node it came from records it");
    }
}

//! What each route requires of an API token: its scope, and for a token bound to one project,
//! whether the route names something of that project.
//!
//! Scopes (see [`Scope`]):
//! - `admin`: configuration. The token API, the access audit and webhooks (any method: a
//!   webhook can send every event anywhere), and changes to projects (create, import, update, delete: folder,
//!   sandbox, setup script) and to permission rules (they bound what sessions and commands
//!   may do).
//! - `operate`: every other state-changing request (`POST`, `PUT`, `PATCH`, `DELETE`), and the
//!   two WebSockets that take input (a session's, which sends messages and controls, and a
//!   terminal's, which types into a shell) whatever the method.
//! - `read`: everything else (`GET`: lists, reads, SSE streams).
//!
//! A token bound to a project reaches a route that names a row by id (`/api/projects/{id}`,
//! `/api/sessions/{id}/...`, rules, agents, executions, terminals) only when the row belongs
//! to its project; otherwise the answer is 404, as for a row that does not exist.
//!
//! Lists that span every project answer such a token with its project's rows only (see
//! [`FILTERED_LISTS`]): `GET /api/projects`, `/api/sessions/active`, `/api/agents`,
//! `/api/terminals` (this node's only: a bound token reaches the terminals of the node it
//! talks to), `/api/permissions/log`, `/api/usage`, and the global event stream
//! `/api/events/stream` (its project's events only, see `stream_filter`). A list filter
//! naming another project (`?project_id=`) reads as a project that does not exist: no rows.
//!
//! Every other route without a row id is refused (403 `insufficient_scope`; `/metrics` too, which
//! is guarded as part of the API and spans every project), but the service's own
//! (`/api/health`, `/api/openapi.json`, sign-in):
//! - `/api/locks`: a lock names a folder and a free-text holder, not a project, and one folder
//!   can be waited on by agents of several projects;
//! - `/api/usage/limits`: the agent CLIs' accounts, shared by every project;
//! - folders, discovery, cluster and global rules: the service's configuration, not a
//!   project's rows.

use actix_web::dev::ResourceDef;
use actix_web::http::Method;

use super::route_table;
use crate::domain::access::Scope;

/// Routes configuring the service, for `admin` tokens only: (method, pattern). `None`: any
/// method.
const ADMIN_ROUTES: &[(Option<Method>, &str)] = &[
    (None, "/api/tokens"),
    (None, "/api/tokens/{id}"),
    (None, "/api/audit"),
    (None, "/api/webhooks"),
    (None, "/api/webhooks/{id}"),
    (None, "/api/webhooks/{id}/deliveries"),
    (Some(Method::POST), "/api/projects"),
    (Some(Method::POST), "/api/projects/import"),
    (Some(Method::PUT), "/api/projects/{id}"),
    (Some(Method::DELETE), "/api/projects/{id}"),
    (Some(Method::POST), "/api/projects/{id}/rules"),
    (Some(Method::POST), "/api/rules/global"),
    (Some(Method::PUT), "/api/rules/{id}"),
    (Some(Method::DELETE), "/api/rules/{id}"),
];

/// WebSockets that take input: `operate`, though they open with a `GET`.
const WRITING_SOCKETS: &[&str] = &["/api/sessions/{id}/ws", "/api/terminals/{id}/ws"];

/// Routes every identity may reach, project-bound tokens included: the service's own, and the
/// sign-in routes, which only ever touch the asker's own sign-ins (`POST /api/auth/login` is
/// reached without any credential at all, see `guard`).
const OPEN_ROUTES: &[&str] = &[
    "/api/health",
    "/api/openapi.json",
    "/api/auth/login",
    "/api/auth/logout",
    "/api/auth/me",
    "/api/auth/sessions",
    "/api/auth/sessions/{id}",
];

/// `GET` lists spanning every project that a bound token may read: the handler lists only the
/// token's project's rows (`Identity::project_filter`).
const FILTERED_LISTS: &[&str] = &[
    "/api/projects",
    "/api/sessions/active",
    "/api/agents",
    "/api/terminals",
    "/api/permissions/log",
    "/api/usage",
    "/api/events/stream",
];

/// The kinds of row a route can name by id, by the path's second segment.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RowKind {
    Project,
    Session,
    Rule,
    Agent,
    Execution,
    Terminal,
}

/// What a route is about, for a token bound to one project.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Subject {
    /// The service itself: allowed.
    Open,
    /// A list spanning every project ([`FILTERED_LISTS`]): allowed; the handler lists only the
    /// token's project's rows.
    FilteredList,
    /// Spans every project: refused.
    Global,
    /// One row, by the id in the path's third segment (`/api/<kind>/{id}/...`).
    Row(RowKind),
}

/// What one route requires.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Requirement {
    pub scope: Scope,
    pub subject: Subject,
}

fn state_changing(method: &Method) -> bool {
    !matches!(*method, Method::GET | Method::HEAD | Method::OPTIONS)
}

/// The requirement of the route `pattern` (as in the route table) for `method`.
pub fn requirement(method: &Method, pattern: &str) -> Requirement {
    let admin = ADMIN_ROUTES.iter().any(|(m, p)| *p == pattern && m.as_ref().is_none_or(|m| m == method));
    let scope = if admin {
        Scope::Admin
    } else if state_changing(method) || WRITING_SOCKETS.contains(&pattern) {
        Scope::Operate
    } else {
        Scope::Read
    };
    Requirement { scope, subject: subject(method, pattern) }
}

fn subject(method: &Method, pattern: &str) -> Subject {
    if OPEN_ROUTES.contains(&pattern) {
        return Subject::Open;
    }
    if method == Method::GET && FILTERED_LISTS.contains(&pattern) {
        return Subject::FilteredList;
    }
    let segments: Vec<&str> = pattern.split('/').collect();
    if segments.get(3) != Some(&"{id}") {
        return Subject::Global;
    }
    let kind = match segments.get(2) {
        Some(&"projects") => RowKind::Project,
        Some(&"sessions") => RowKind::Session,
        Some(&"rules") => RowKind::Rule,
        Some(&"agents") => RowKind::Agent,
        Some(&"executions") => RowKind::Execution,
        Some(&"terminals") => RowKind::Terminal,
        // Webhooks and tokens: admin routes, which no project-bound token has.
        _ => return Subject::Global,
    };
    Subject::Row(kind)
}

/// The id a `Row` route names: the path's third segment.
pub fn row_id(path: &str) -> Option<&str> {
    path.split('/').nth(3).filter(|s| !s.is_empty())
}

/// Every route's pattern, matched as the router matches them: the first path that matches,
/// then the method among that path's routes.
#[derive(Debug)]
pub struct RouteIndex {
    routes: Vec<(Method, &'static str, ResourceDef)>,
}

impl Default for RouteIndex {
    fn default() -> Self {
        let routes =
            route_table().into_iter().map(|spec| (spec.method, spec.path, ResourceDef::new(spec.path))).collect();
        RouteIndex { routes }
    }
}

impl RouteIndex {
    /// The route that will answer `method` on `path` and its requirement; `None` when none
    /// does (the router answers 404 or 405, and nothing happens).
    pub fn find(&self, method: &Method, path: &str) -> Option<(&'static str, Requirement)> {
        let (_, pattern, _) = self.routes.iter().find(|(_, _, def)| def.is_match(path))?;
        let served = self.routes.iter().any(|(m, p, _)| p == pattern && m == method);
        served.then(|| (*pattern, requirement(method, pattern)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_route_is_classified_and_admin_routes_exist() {
        let table = route_table();
        let sockets: Vec<(Option<Method>, &str)> = WRITING_SOCKETS.iter().map(|p| (None, *p)).collect();
        for (m, p) in ADMIN_ROUTES.iter().chain(sockets.iter()) {
            let served = table.iter().any(|s| s.path == *p && m.as_ref().is_none_or(|m| *m == s.method));
            assert!(served, "{m:?} {p} is a route");
        }
        for p in FILTERED_LISTS {
            assert!(table.iter().any(|s| s.path == *p && s.method == Method::GET), "GET {p} is a route");
        }
        for spec in &table {
            let r = requirement(&spec.method, spec.path);
            if state_changing(&spec.method) {
                assert_ne!(r.scope, Scope::Read, "{} {} changes state", spec.method, spec.path);
            }
        }
    }

    #[test]
    fn routes_are_found_as_the_router_finds_them() {
        let index = RouteIndex::default();
        let id = "5b0f7c1e-6d7a-4f47-9e31-2c8f1f0b9a11";
        let find = |m: Method, p: &str| index.find(&m, p).map(|(_, r)| r);
        assert_eq!(find(Method::GET, "/api/sessions/active").map(|r| r.subject), Some(Subject::FilteredList));
        assert_eq!(find(Method::GET, "/api/events/stream").map(|r| r.subject), Some(Subject::FilteredList));
        assert_eq!(find(Method::GET, "/api/locks").map(|r| r.subject), Some(Subject::Global));
        assert_eq!(find(Method::GET, "/api/usage/limits").map(|r| r.subject), Some(Subject::Global));
        assert_eq!(find(Method::POST, "/api/agents").map(|r| r.subject), Some(Subject::Global));
        let session = find(Method::POST, &format!("/api/sessions/{id}/message")).expect("a route");
        assert_eq!((session.scope, session.subject), (Scope::Operate, Subject::Row(RowKind::Session)));
        let discover = find(Method::GET, "/api/projects/discover").expect("a route");
        assert_eq!(discover.subject, Subject::Global, "a literal segment is not an id");
        assert_eq!(find(Method::POST, "/api/projects/discover"), None, "405: no route");
        assert_eq!(find(Method::GET, "/api/nope"), None);
        assert_eq!(find(Method::GET, &format!("/api/terminals/{id}/ws")).map(|r| r.scope), Some(Scope::Operate));
        assert_eq!(find(Method::GET, "/api/webhooks").map(|r| r.scope), Some(Scope::Admin));
        assert_eq!(find(Method::GET, "/api/projects").map(|r| r.subject), Some(Subject::FilteredList));
        assert_eq!(find(Method::POST, "/api/projects").map(|r| r.scope), Some(Scope::Admin));
        assert_eq!(row_id(&format!("/api/sessions/{id}/processes/x")), Some(id));
    }
}

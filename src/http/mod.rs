//! The HTTP surface: one route table, one module per area. The larger areas (`projects`,
//! `sessions`, `agents`, `rules`) are folders with one file per group of handlers and what
//! they share in their `mod.rs`. Handlers only translate between HTTP and the rest of the
//! service: ids are parsed at the edge (`SessionId::parse`, ...), errors become an
//! [`AppError`](crate::error::AppError) through `From`, and file system work runs on the
//! blocking pool.

pub mod agents;
pub mod audit;
pub mod auth;
mod auth_bearer;
mod auth_password;
mod auth_shared;
pub mod changes;
pub mod channel;
pub mod cluster;
pub mod cluster_feed;
pub mod dashboard;
pub mod errors;
pub mod fields;
pub mod folders;
pub mod forward;
pub mod guard;
pub mod health;
pub mod login;
pub mod metrics;
pub mod openapi;
mod owners;
pub mod pagination;
mod peers;
mod placement;
pub mod processes;
pub mod projects;
mod request_limits;
pub mod rules;
pub mod scopes;
pub mod scrub;
pub mod sessions;
mod stream_filter;
pub mod streams;
pub mod terminals;
mod terminals_across;
pub mod tokens;
pub mod usage;
pub mod webhooks;
mod ws_proxy;

use std::sync::Arc;
use std::time::Instant;

use actix::Addr;
use actix_web::http::Method;
use actix_web::{web, Route};

use crate::actors::agents::AgentRegistry;
use crate::actors::bus::EventBus;
use crate::actors::locks::DirLockQueue;
use crate::actors::permissions::PermissionEngine;
use crate::actors::registry::SessionRegistry;
use crate::actors::webhooks::WebhookDispatcher;
use crate::config::Settings;
use crate::db::writer::Writer;
use crate::db::Store;
use crate::domain::folders::ProjectRoot;
use health::ContainmentReport;

/// What every handler can reach. Built once, outside `HttpServer::new`.
pub struct AppState {
    pub settings: Arc<Settings>,
    pub store: Store,
    pub root: ProjectRoot,
    pub started: Instant,
    pub registry: Addr<SessionRegistry>,
    pub engine: Addr<PermissionEngine>,
    pub bus: Addr<EventBus>,
    pub webhooks: Addr<WebhookDispatcher>,
    pub writer: Writer,
    pub agents: Addr<AgentRegistry>,
    pub locks: Addr<DirLockQueue>,
    /// How CLIs' process trees are contained (health reports it).
    pub containment: ContainmentReport,
    /// How sessions' kernel limits are applied (settled at startup).
    pub session_limits: health::LimitsReport,
    /// HTTP requests answered, by route and status (for `/metrics`).
    pub http_counts: metrics::HttpCounts,
    /// What this machine offers for sandboxing CLIs (health reports it).
    pub sandbox: std::sync::Arc<crate::sandbox::SandboxSupport>,
    /// The cgroup and sandbox of whatever starts in a workspace (exec, processes, terminals).
    pub encloser: crate::sandbox::enclosure::Encloser,
    pub terminals: Addr<crate::actors::terminal::TerminalRegistry>,
    /// Commands and background processes started through the API.
    pub workbench: Addr<crate::actors::workbench::Workbench>,
    pub limits: Addr<crate::actors::limits::LimitBoard>,
    pub budgets: Addr<crate::actors::budgets::BudgetKeeper>,
    /// The work-in-progress limit: turns running and waiting per project.
    pub turn_gate: Addr<crate::actors::turn_gate::TurnGate>,
    /// Cluster mode: this node's membership.
    pub cluster: Option<Addr<crate::actors::cluster::ClusterNode>>,
    /// The clients that call this node's peers (public roots and `cluster_ca`).
    pub peers: crate::peer_tls::PeerClients,
    /// Writes the access audit.
    pub audit: Addr<crate::actors::audit::Auditor>,
    /// The session channel: its tokens are verified with its key.
    pub channel: std::sync::Arc<crate::sandbox::channel::SessionChannel>,
}

/// One row of the route table.
pub struct RouteSpec {
    pub method: Method,
    /// actix path pattern; the same text is the OpenAPI path.
    pub path: &'static str,
    pub route: fn() -> Route,
}

macro_rules! route {
    ($method:ident, $path:expr, $handler:path) => {
        RouteSpec { method: Method::$method, path: $path, route: || web::method(Method::$method).to($handler) }
    };
}

/// Every API route. Order matters where patterns overlap: literal segments
/// (`/api/projects/discover`) come before `{id}`.
pub fn route_table() -> Vec<RouteSpec> {
    vec![
        route!(GET, "/api/health", health::health),
        route!(GET, "/api/cluster", cluster::cluster),
        route!(GET, "/api/cluster/feed", cluster_feed::feed),
        route!(GET, "/api/openapi.json", openapi::document),
        route!(GET, "/metrics", metrics::metrics),
        route!(GET, "/api/projects/discover", projects::discover::discover),
        route!(POST, "/api/projects/import", projects::create::import),
        route!(GET, "/api/projects", projects::read::list),
        route!(POST, "/api/projects", projects::create::create),
        route!(GET, "/api/projects/{id}", projects::read::get),
        route!(PUT, "/api/projects/{id}", projects::update::update),
        route!(DELETE, "/api/projects/{id}", projects::delete::delete),
        route!(GET, "/api/folders/browse", folders::browse),
        route!(POST, "/api/projects/{id}/sessions", sessions::launch::launch),
        route!(GET, "/api/projects/{id}/sessions", sessions::read::list_for_project),
        route!(GET, "/api/projects/{id}/turns", projects::read::turns),
        route!(GET, "/api/sessions/active", sessions::read::list_active),
        route!(GET, "/api/sessions/{id}", sessions::read::get),
        route!(DELETE, "/api/sessions/{id}", sessions::control::close),
        route!(GET, "/api/sessions/{id}/messages", sessions::read::messages),
        route!(GET, "/api/sessions/{id}/options", sessions::offers::options),
        route!(POST, "/api/sessions/{id}/message", sessions::turns::send_message),
        route!(POST, "/api/sessions/{id}/resume", sessions::control::resume),
        route!(POST, "/api/sessions/{id}/interrupt", sessions::control::interrupt),
        route!(POST, "/api/sessions/{id}/pause", sessions::pause::pause),
        route!(POST, "/api/sessions/{id}/unpause", sessions::pause::unpause),
        route!(POST, "/api/sessions/{id}/model", sessions::control::set_model),
        route!(POST, "/api/sessions/{id}/permission-mode", sessions::control::set_permission_mode),
        route!(GET, "/api/sessions/{id}/diff", sessions::review::diff),
        route!(POST, "/api/sessions/{id}/commit", sessions::review::commit),
        route!(POST, "/api/sessions/{id}/merge", sessions::review::merge),
        route!(GET, "/api/projects/{id}/rules", rules::read::list_project),
        route!(POST, "/api/projects/{id}/rules", rules::create::create_project),
        route!(GET, "/api/rules/global", rules::read::list_global),
        route!(POST, "/api/rules/global", rules::create::create_global),
        route!(PUT, "/api/rules/{id}", rules::update::update),
        route!(DELETE, "/api/rules/{id}", rules::update::delete),
        route!(GET, "/api/permissions/log", rules::log::log),
        route!(GET, "/api/sessions/{id}/stream", streams::session_stream),
        route!(GET, "/api/sessions/{id}/ws", streams::session_ws),
        route!(GET, "/api/events/stream", streams::events_stream),
        route!(GET, "/api/webhooks", webhooks::list),
        route!(POST, "/api/webhooks", webhooks::create),
        route!(DELETE, "/api/webhooks/{id}", webhooks::delete),
        route!(GET, "/api/webhooks/{id}/deliveries", webhooks::deliveries),
        route!(GET, "/api/agents", agents::read::list),
        route!(POST, "/api/agents", agents::create::create),
        route!(GET, "/api/agents/{id}", agents::read::get),
        route!(PUT, "/api/agents/{id}", agents::update::update),
        route!(DELETE, "/api/agents/{id}", agents::lifecycle::delete),
        route!(POST, "/api/agents/{id}/pause", agents::lifecycle::pause),
        route!(POST, "/api/agents/{id}/resume", agents::lifecycle::resume),
        route!(POST, "/api/agents/{id}/trigger", agents::executions::trigger),
        route!(GET, "/api/agents/{id}/executions", agents::executions::executions),
        route!(GET, "/api/executions/{id}", agents::executions::execution),
        route!(GET, "/api/executions/{id}/stream", agents::executions::execution_stream),
        route!(POST, "/api/executions/{id}/cancel", agents::executions::cancel),
        route!(GET, "/api/locks", agents::locks::locks),
        route!(GET, "/api/usage", usage::usage),
        route!(GET, "/api/usage/limits", usage::limits),
        route!(POST, "/api/auth/login", login::login),
        route!(POST, "/api/auth/logout", login::logout),
        route!(GET, "/api/auth/me", login::me),
        route!(GET, "/api/auth/sessions", login::sessions),
        route!(DELETE, "/api/auth/sessions/{id}", login::revoke),
        route!(GET, "/api/tokens", tokens::list),
        route!(POST, "/api/tokens", tokens::create),
        route!(DELETE, "/api/tokens/{id}", tokens::revoke),
        route!(GET, "/api/audit", audit::list),
        route!(POST, "/api/sessions/{id}/terminals", terminals::start_for_session),
        route!(POST, "/api/projects/{id}/terminals", terminals::start_for_project),
        route!(GET, "/api/terminals", terminals::list),
        route!(GET, "/api/terminals/{id}", terminals::get),
        route!(DELETE, "/api/terminals/{id}", terminals::delete),
        route!(GET, "/api/terminals/{id}/ws", terminals::ws),
        route!(POST, "/api/sessions/{id}/exec", processes::exec::exec_session),
        route!(POST, "/api/sessions/{id}/exec/stream", processes::exec::stream_session),
        route!(POST, "/api/sessions/{id}/processes/kill-all", processes::background::kill_all_session),
        route!(POST, "/api/sessions/{id}/processes/cleanup", processes::background::cleanup_session),
        route!(POST, "/api/sessions/{id}/processes", processes::background::start_session),
        route!(GET, "/api/sessions/{id}/processes", processes::background::list_session),
        route!(GET, "/api/sessions/{id}/processes/{process_id}", processes::background::get_session),
        route!(POST, "/api/sessions/{id}/processes/{process_id}/kill", processes::background::kill_session),
        route!(GET, "/api/sessions/{id}/processes/{process_id}/logs", processes::logs::logs_session),
        route!(GET, "/api/sessions/{id}/processes/{process_id}/logs/stream", processes::logs::stream_session),
        route!(POST, "/api/projects/{id}/exec", processes::exec::exec_project),
        route!(POST, "/api/projects/{id}/exec/stream", processes::exec::stream_project),
        route!(POST, "/api/projects/{id}/processes/kill-all", processes::background::kill_all_project),
        route!(POST, "/api/projects/{id}/processes/cleanup", processes::background::cleanup_project),
        route!(POST, "/api/projects/{id}/processes", processes::background::start_project),
        route!(GET, "/api/projects/{id}/processes", processes::background::list_project),
        route!(GET, "/api/projects/{id}/processes/{process_id}", processes::background::get_project),
        route!(POST, "/api/projects/{id}/processes/{process_id}/kill", processes::background::kill_project),
        route!(GET, "/api/projects/{id}/processes/{process_id}/logs", processes::logs::logs_project),
        route!(GET, "/api/projects/{id}/processes/{process_id}/logs/stream", processes::logs::stream_project),
    ]
}

/// Registers the table: one resource per path holding all its methods, so a known path with
/// an unknown method answers 405 (with `Allow`) rather than 404.
pub fn configure(cfg: &mut web::ServiceConfig) {
    let table = route_table();
    let mut paths: Vec<&'static str> = Vec::new();
    for spec in &table {
        if !paths.contains(&spec.path) {
            paths.push(spec.path);
        }
    }
    for path in paths {
        let specs: Vec<&RouteSpec> = table.iter().filter(|s| s.path == path).collect();
        let allowed = specs.iter().map(|s| s.method.as_str()).collect::<Vec<_>>().join(", ");
        let mut resource = web::resource(path);
        for spec in specs {
            resource = resource.route((spec.route)());
        }
        cfg.service(resource.default_service(web::to(errors::method_not_allowed(allowed))));
    }
}

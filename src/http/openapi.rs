//! The OpenAPI 3.1 document, generated from the handlers' annotations.

use actix_web::HttpResponse;
use utoipa::openapi::security::{HttpAuthScheme, HttpBuilder, SecurityScheme};
use utoipa::{Modify, OpenApi};

use super::{
    agents, cluster, cluster_feed, folders, health, login, metrics, processes, projects, rules, sessions, streams,
    terminals, tokens, usage, webhooks,
};
use crate::db::projects::Project;
use crate::error::{ErrorBody, ErrorDetail};

struct BearerToken;

impl Modify for BearerToken {
    fn modify(&self, openapi: &mut utoipa::openapi::OpenApi) {
        if let Some(components) = openapi.components.as_mut() {
            components.add_security_scheme(
                "bearer",
                SecurityScheme::Http(HttpBuilder::new().scheme(HttpAuthScheme::Bearer).build()),
            );
        }
    }
}

#[derive(OpenApi)]
#[openapi(
    info(
        title = "Conduit",
        description = "Orchestration service for coding-agent CLIs. Errors are always \
            `{\"error\":{\"code\",\"message\"}}`. Once a credential exists (CONDUIT_AUTH_TOKEN, a user, an \
            API token) every /api request needs `Authorization: Bearer <token>` (401 otherwise); a token \
            whose scope does not cover the route gets 403 `insufficient_scope` (`read`: GETs only; \
            `operate`: no configuration; `admin`: everything), a token bound to a project 404 for other \
            projects' rows, only its project's rows in the lists spanning every project (projects, active \
            sessions, agents, terminals, the permission log, usage, and the global event stream) and 403 \
            `insufficient_scope` on the other routes spanning every project. The dashboard signs in with POST \
            /api/auth/login (no credential needed) and then sends the `conduit_session` cookie instead. A foreign \
            Host or Origin gets 403. Any /api request can get 429 with `Retry-After`: `too_many_logins` from an \
            address locked out for wrong passwords or wrong guesses at CONDUIT_AUTH_TOKEN (the right ones \
            included), `too_many_writes` past the writes per minute of an address, `too_many_streams` past \
            the open streams of a credential."
    ),
    paths(
        health::health,
        metrics::metrics,
        cluster::cluster,
        cluster_feed::feed,
        document,
        projects::discover::discover,
        projects::create::import,
        projects::read::list,
        projects::create::create,
        projects::read::get,
        projects::read::turns,
        projects::update::update,
        projects::delete::delete,
        folders::browse,
        sessions::launch::launch,
        sessions::read::list_for_project,
        sessions::read::list_active,
        sessions::read::get,
        sessions::control::close,
        sessions::read::messages,
        sessions::offers::options,
        sessions::turns::send_message,
        sessions::control::resume,
        sessions::control::interrupt,
        sessions::pause::pause,
        sessions::pause::unpause,
        sessions::control::set_model,
        sessions::control::set_permission_mode,
        sessions::review::diff,
        sessions::review::commit,
        sessions::review::merge,
        rules::read::list_project,
        rules::create::create_project,
        rules::read::list_global,
        rules::create::create_global,
        rules::update::update,
        rules::update::delete,
        rules::log::log,
        streams::session_stream,
        streams::session_ws,
        streams::events_stream,
        webhooks::list,
        webhooks::create,
        webhooks::delete,
        webhooks::deliveries,
        agents::read::list,
        agents::create::create,
        agents::read::get,
        agents::update::update,
        agents::lifecycle::delete,
        agents::lifecycle::pause,
        agents::lifecycle::resume,
        agents::executions::trigger,
        agents::executions::executions,
        agents::executions::execution,
        agents::executions::execution_stream,
        agents::executions::cancel,
        agents::locks::locks,
        terminals::start_for_session,
        terminals::start_for_project,
        terminals::list,
        terminals::get,
        terminals::delete,
        terminals::ws,
        processes::exec::exec_session,
        processes::exec::stream_session,
        processes::background::kill_all_session,
        processes::background::cleanup_session,
        processes::background::start_session,
        processes::background::list_session,
        processes::background::get_session,
        processes::background::kill_session,
        processes::logs::logs_session,
        processes::logs::stream_session,
        processes::exec::exec_project,
        processes::exec::stream_project,
        processes::background::kill_all_project,
        processes::background::cleanup_project,
        processes::background::start_project,
        processes::background::list_project,
        processes::background::get_project,
        processes::background::kill_project,
        processes::logs::logs_project,
        processes::logs::stream_project,
        login::login,
        login::logout,
        login::me,
        login::sessions,
        login::revoke,
        usage::usage,
        usage::limits,
        tokens::list,
        tokens::create,
        tokens::revoke,
        super::audit::list,
    ),
    components(schemas(
        ErrorBody, ErrorDetail, Project, projects::create::CreateProject, projects::create::ImportProject, projects::update::UpdateProject,
        projects::discover::DiscoveredProject, folders::FolderListing, folders::FolderEntry, health::Health,
        cluster::ClusterReport, cluster::NodeReport, crate::actors::cluster::ClusterHealth, crate::actors::cluster::PeerHealth,
        crate::domain::cluster::NodeState, crate::domain::cluster::NodeRole,
        health::HealthChecks, health::HealthStatus, crate::domain::validate::PermissionMode, crate::domain::validate::Transport,
        crate::db::sessions::Session, crate::db::messages::Message, crate::domain::offers::Offers, crate::domain::offers::ModelChoice, crate::domain::offers::OffersSource, sessions::launch::LaunchSession, sessions::turns::SendMessage,
        sessions::control::SetModel, sessions::control::SetPermissionMode, crate::actors::session::SendOutcome,
        rules::Rule, rules::create::CreateRule, rules::update::UpdateRule, crate::db::permission_log::Decision, crate::domain::rules::CommandReading,
        webhooks::Webhook, webhooks::CreateWebhook, crate::db::webhooks::Attempt,
        agents::AgentView, agents::create::CreateAgent, agents::update::UpdateAgent, crate::db::agents::Agent,
        crate::db::agents::Execution, crate::db::agents::ExecutionSummary, crate::actors::locks::LockState,
        crate::actors::locks::LockEntry,
        terminals::StartTerminalBody, crate::actors::terminal::TerminalView, crate::domain::terminal::TerminalStatus,
        processes::CommandSpec, processes::exec::ExecRequest, processes::exec::ExecResult,
        processes::background::KillRequest, processes::background::KillSignal, processes::background::Count,
        processes::across::Spread, processes::across::NodePart, processes::across::Unreached,
        processes::logs::LogPage, crate::actors::workbench::Stream, crate::db::processes::ProcessRow,
        crate::domain::process::ProcessKind, crate::domain::process::ProcessStatus,
        crate::domain::workspace::WorkspaceMode, sessions::review::SessionDiff, crate::workspace::review::FileChange,
        sessions::review::CommitRequest, sessions::review::Committed, sessions::review::MergeRequest,
        sessions::review::MergeResult, sessions::review::MergeConflict, crate::workspace::review::MergeStrategy,
        usage::UsageReport, usage::UsageGroup, crate::db::usage::Figures, crate::actors::limits::LimitView, crate::actors::limits::LimitStatus,
        crate::actors::turn_gate::TurnQueue, crate::actors::turn_gate::TurnSlot,
        tokens::CreateToken, tokens::CreatedToken, crate::db::accounts::TokenInfo, crate::domain::access::Scope,
        crate::db::audit::AuditEntry, crate::domain::audit::AuditEvent, crate::domain::audit::ActorKind,
        login::LoginForm, login::LoggedIn, login::UserRef, login::SessionRef, login::Me, login::IdentityKind, login::SignIn,
    )),
    modifiers(&BearerToken),
    tags(
        (name = "health", description = "Service status"),
        (name = "projects", description = "Folders on disk where sessions run"),
        (name = "folders", description = "Browsing folders inside the project root"),
        (name = "sessions", description = "Supervised Claude Code CLI processes"),
        (name = "rules", description = "Allow/deny rules on tool calls, and the audit log of decisions"),
        (name = "streams", description = "Live events: Server-Sent Events and WebSocket"),
        (name = "webhooks", description = "Signed HTTP callbacks for events"),
        (name = "agents", description = "Scheduled agents, their runs, and the folder locks they queue on"),
        (name = "terminals", description = "Shells in a PTY in a workspace, over a WebSocket"),
        (name = "processes", description = "Commands (exec) and background processes in a session's workspace or a project's folder, under the permission rules and the sandbox"),
        (name = "usage", description = "The cost ledger: what every turn cost, summed; budgets and usage limits"),
        (name = "review", description = "A worktree session's changes: diff against its base, commit, merge into the base branch"),
        (name = "audit", description = "The access audit: logins, token changes, every state-changing request; admin only"),
        (name = "auth", description = "The dashboard's sign-in: a user's name and password for an HttpOnly session cookie; who is asking; one's own sign-ins"),
        (name = "tokens", description = "API tokens with a scope (read, operate, admin), an optional project and expiry; admin only"),
    )
)]
pub struct ApiDoc;

/// This document.
#[utoipa::path(get, path = "/api/openapi.json", tag = "health",
    responses((status = 200, description = "The OpenAPI 3.1 document", content_type = "application/json")))]
pub async fn document() -> HttpResponse {
    HttpResponse::Ok().json(ApiDoc::openapi())
}

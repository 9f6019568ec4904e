//! `GET /api/health`: is the service usable, and how full is it.

use actix_web::{web, HttpResponse};
use serde::Serialize;
use utoipa::ToSchema;

use super::AppState;
use std::sync::atomic::Ordering;

use crate::actors::bus::{HistoryBytes, SubscriberCount};
use crate::actors::registry::LiveCount;
use crate::db;
use crate::domain::sandbox::SandboxMode;
use crate::error::AppResult;
use crate::sandbox::SandboxSupport;

/// How CLIs' process trees are contained, as health reports it. Containment is settled once,
/// at startup, which builds this from it: the HTTP layer needs nothing of the process layer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ContainmentReport {
    /// `cgroup` or `process_group`.
    pub kind: String,
    /// Why cgroups are not used, on the fallback.
    pub note: Option<String>,
}

/// How sessions' kernel limits are applied here, as health reports it (settled at startup).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, ToSchema)]
pub struct LimitsReport {
    /// `cgroup_v2`, `cgroup_v1` (a hybrid host's v1 hierarchies) or `none`.
    pub mechanism: crate::domain::resources::Mechanism,
    /// The limits that can be applied: `memory`, `pids`, `cpu`.
    pub controllers: Vec<crate::domain::resources::LimitKind>,
    /// Why a controller (or every one) is not available, or which hierarchies are used.
    pub note: Option<String>,
    /// Set when the `session_*` settings ask for a limit that cannot be applied: every launch
    /// that takes it is refused (503 `limits_unavailable`) and the service is `degraded`.
    pub settings_problem: Option<String>,
}

#[derive(Debug, Serialize, ToSchema, PartialEq, Eq)]
#[serde(rename_all = "lowercase")]
pub enum HealthStatus {
    /// Everything works.
    Healthy,
    /// Usable, but sessions cannot start (the CLI is missing, the sandbox the `sandbox`
    /// setting asks for is not available, or the `session_*` limits cannot be applied), or storage is failing (writes are kept and retried;
    /// `checks` says how many wait).
    Degraded,
    /// The database does not answer.
    Unhealthy,
}

#[derive(Debug, Serialize, ToSchema)]
pub struct HealthChecks {
    /// The configured CLI path resolves to an executable file.
    pub cli_available: bool,
    /// A query against the database succeeded.
    pub database_ok: bool,
    /// Writes succeed (false while storage fails, and until everything that waited meanwhile
    /// is written).
    pub storage_writable: bool,
    /// The last storage error, while writes fail.
    pub storage_error: Option<String>,
    /// Session lines read and relayed but not yet stored (the write backlog). Nothing is
    /// dropped: they are retried until stored.
    pub unstored_lines: u64,
    /// Writes the database refused for good since the service started (a line of a session
    /// deleted meanwhile, for example).
    pub rejected_writes: u64,
    /// How CLI process trees are contained: `cgroup` (a cgroup v2 each, ended with
    /// `cgroup.kill`) or `process_group` (process groups and an environment marker).
    pub process_containment: String,
    /// Why cgroups are not used, on the fallback.
    pub containment_note: Option<String>,
    /// Bytes of recent events held for replay, across every stream.
    pub stream_history_bytes: u64,
    /// The OS sandbox CLIs run in.
    pub sandbox: SandboxHealth,
    /// How sessions' kernel limits (memory, processes, CPU weight) are applied, and their
    /// resource readings taken.
    pub session_limits: LimitsReport,
    /// Each agent CLI: whether it is installed, its version and the setting that names it.
    pub agents: Vec<crate::supervisor::catalog::AgentHealth>,
}

/// The OS sandbox, as health reports it. When the `sandbox` setting asks for one and this
/// machine cannot provide it, the service is `degraded` (launches that need it are refused).
#[derive(Debug, Serialize, ToSchema)]
pub struct SandboxHealth {
    /// The `sandbox` setting: what a project that chooses none gets (`off`, `workspace`, `strict`).
    pub default_mode: SandboxMode,
    #[serde(flatten)]
    pub support: SandboxSupport,
    /// Whether `strict` mode's network limit can be enforced (Landlock ABI 4+).
    pub network_limit_available: bool,
}

impl SandboxHealth {
    fn of(default_mode: SandboxMode, support: &SandboxSupport) -> SandboxHealth {
        SandboxHealth { default_mode, support: support.clone(), network_limit_available: support.limits_network() }
    }

    /// The default mode can be provided here (with the network `sandbox_network` asks for).
    fn usable(&self) -> bool {
        match self.default_mode {
            SandboxMode::Off => true,
            SandboxMode::Workspace => self.support.usable(),
            SandboxMode::Strict => self.support.usable() && self.network_limit_available,
        }
    }
}

#[derive(Debug, Serialize, ToSchema)]
pub struct Health {
    pub status: HealthStatus,
    pub checks: HealthChecks,
    pub uptime_seconds: u64,
    /// active_sessions as a percentage of max_sessions.
    pub session_capacity_pct: f64,
    pub active_sessions: i64,
    pub max_sessions: u32,
    pub projects: i64,
    /// Live WebSocket/SSE subscribers.
    pub event_subscribers: u64,
    pub version: String,
    /// Cluster mode: this node, its role and the nodes it knows; null on a single service.
    pub cluster: Option<crate::actors::cluster::ClusterHealth>,
}

/// Service health. 200 when healthy or degraded, 503 when unhealthy.
#[utoipa::path(get, path = "/api/health", tag = "health",
    responses(
        (status = 200, description = "Healthy or degraded", body = Health),
        (status = 503, description = "Unhealthy: the database does not answer", body = Health),
    ))]
pub async fn health(state: web::Data<AppState>) -> AppResult<HttpResponse> {
    let cli = state.settings.cli_path.clone();
    let cli_available = web::block(move || crate::process::executable::resolve(&cli).is_some()).await.unwrap_or(false);
    let counted = state.store.run(db::projects::count).await;
    let database_ok = counted.is_ok();
    let projects = counted.unwrap_or(0);
    let active_sessions = state.registry.send(LiveCount).await.unwrap_or(0) as i64;
    let checks = checks(&state, cli_available, database_ok).await;
    let max_sessions = state.settings.max_sessions_global;
    let usable = checks.sandbox.usable() && checks.session_limits.settings_problem.is_none();
    let status = match (database_ok, cli_available && checks.storage_writable && usable) {
        (false, _) => HealthStatus::Unhealthy,
        (true, false) => HealthStatus::Degraded,
        (true, true) => HealthStatus::Healthy,
    };
    let body = Health {
        checks,
        uptime_seconds: state.started.elapsed().as_secs(),
        session_capacity_pct: ((active_sessions as f64 / max_sessions as f64) * 1000.0).round() / 10.0,
        active_sessions,
        max_sessions,
        projects,
        event_subscribers: state.bus.send(SubscriberCount).await.unwrap_or(0) as u64,
        version: env!("CARGO_PKG_VERSION").to_string(),
        cluster: match &state.cluster {
            Some(node) => node.send(crate::actors::cluster::Health).await.ok(),
            None => None,
        },
        status,
    };
    Ok(if body.status == HealthStatus::Unhealthy {
        HttpResponse::ServiceUnavailable().json(body)
    } else {
        HttpResponse::Ok().json(body)
    })
}

/// The checks: what was just probed, the writer's counters, containment, the bus's history.
async fn checks(state: &AppState, cli_available: bool, database_ok: bool) -> HealthChecks {
    let stats = &state.writer.stats;
    let writes_failing = stats.failing.load(Ordering::Relaxed);
    let settings = state.settings.clone();
    let agents = web::block(move || crate::supervisor::catalog::health(&settings)).await.unwrap_or_default();
    HealthChecks {
        agents,
        cli_available,
        database_ok,
        storage_writable: !writes_failing,
        storage_error: if writes_failing { stats.last_error() } else { None },
        unstored_lines: stats.pending.load(Ordering::Relaxed),
        rejected_writes: stats.rejected.load(Ordering::Relaxed),
        process_containment: state.containment.kind.clone(),
        containment_note: state.containment.note.clone(),
        stream_history_bytes: state.bus.send(HistoryBytes).await.unwrap_or(0) as u64,
        sandbox: SandboxHealth::of(state.settings.sandbox.default_mode, &state.sandbox),
        session_limits: state.session_limits.clone(),
    }
}

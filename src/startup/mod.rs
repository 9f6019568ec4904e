//! Builds the application: database, shared state, HTTP server (HTTPS only when `tls_cert` and
//! `tls_key` are set; see [`tls`]). Tests call [`Application::build`] with port 0 and read the
//! bound port back.

use std::net::TcpListener;
use std::sync::Arc;
use std::time::Instant;

use actix::{Actor, Addr};
use actix_web::dev::Server;
use actix_web::web;

use crate::actors::agent::RunDeps;
use crate::actors::agents::{AgentRegistry, Restore};
use crate::actors::bus::EventBus;
use crate::actors::cluster::folders::ClusterFolders;
use crate::actors::janitor::{Janitor, Tidies};
use crate::actors::locks::DirLockQueue;
use crate::actors::permissions::{PermissionEngine, Reload};
use crate::actors::recovery::recover_after_restart;
use crate::actors::registry::{SessionRegistry, WatchEnds};
use crate::actors::terminal::{SessionLink, TerminalRegistry};
use crate::actors::webhooks::{ReloadWebhooks, WebhookDispatcher};
use crate::actors::workbench::{self, Workbench};
use crate::config::Settings;
use crate::db::lock::{InstanceLock, LockError};
use crate::db::writer::{Writer, WriterSetup};
use crate::db::Store;
use crate::domain::folders::ProjectRoot;
use crate::http::{guard::AccessPolicy, AppState};
use crate::process::cgroup::Containment;
use crate::sandbox::enclosure::Encloser;
use keepers::{keepers, keepers_cgroup, reattach};

mod channel;
mod cluster;
mod exposure;
mod keepers;
mod machine;
mod server;
mod shutdown;
mod tls;
use machine::{claim_database, limits_report, probe_sandbox, report};

#[derive(Debug, thiserror::Error)]
pub enum StartupError {
    #[error("refusing to listen on {0} without CONDUIT_AUTH_TOKEN: anyone who can reach it could run commands on this machine. Set CONDUIT_AUTH_TOKEN, or pass --insecure if the network is trusted")]
    TokenRequired(String),
    #[error("cannot listen on {addr}: {source}")]
    Bind { addr: String, source: std::io::Error },
    #[error("{0}")]
    Database(#[from] crate::db::StoreError),
    #[error("{0}")]
    Locked(#[from] LockError),
    #[error("{0}")]
    Claimed(#[from] crate::db::claim::ClaimError),
    #[error("cannot create the first user: {0}")]
    FirstUser(#[from] crate::accounts::AccountError),
    /// A TLS file that cannot be used; the message names the setting and the file.
    #[error("TLS: {0}")]
    Tls(String),
    /// The session channel's key or socket cannot be set up.
    #[error("the session channel: {0}")]
    Channel(String),
}

/// Options that come from the command line rather than settings.
#[derive(Debug, Clone, Default)]
pub struct ServeOptions {
    /// Allow a non-loopback address without a token.
    pub insecure: bool,
    /// The process was made a child subreaper (the binary does this; in-process tests do not),
    /// so orphaned descendants of CLIs are re-parented here and must be reaped here.
    pub subreaper: bool,
    /// The user created at start when no user exists (`CONDUIT_ADMIN_USER` and
    /// `CONDUIT_ADMIN_PASSWORD`, read by the binary).
    pub first_user: Option<Arc<crate::accounts::NewUser>>,
    /// The `conduit` executable that sets up sandboxes' networks (`conduit sandbox-net`);
    /// `None`: this process's own (in-process tests name the built binary).
    pub launcher: Option<std::path::PathBuf>,
}

pub struct Application {
    port: u16,
    server: Server,
    registry: Addr<SessionRegistry>,
    agents: Addr<AgentRegistry>,
    workbench: Addr<Workbench>,
    janitor: Addr<Janitor>,
    terminals: Addr<TerminalRegistry>,
    bus: Addr<EventBus>,
    writer: Writer,
    /// Writes the access audit (flushed last at shutdown).
    audit: Addr<crate::actors::audit::Auditor>,
    containment: Arc<Containment>,
    /// Which cgroup controllers limit sessions (their v1 folders are cleared at shutdown).
    controllers: Arc<crate::process::limits::Controllers>,
    /// What a stop does with live sessions.
    on_shutdown: crate::domain::session::OnShutdown,
    /// Cluster mode: this node's membership (it leaves at a clean shutdown).
    cluster: Option<Addr<crate::actors::cluster::ClusterNode>>,
    /// Cluster mode: the other nodes' session events, relayed to this node's bus.
    _relay: Option<cluster::Relay>,
    /// One service per database, for as long as this one runs.
    _lock: InstanceLock,
    /// On PostgreSQL: one service per database, for as long as this one runs.
    _postgres_claim: Option<crate::db::claim::PostgresClaim>,
}

impl Application {
    pub async fn build(settings: Settings, options: ServeOptions) -> Result<Application, StartupError> {
        let addr = format!("{}:{}", settings.host, settings.port);
        // Before anything starts, so a refusal or a bad TLS file leaves nothing to undo.
        let tls = exposure::checked(&settings, &options, &addr)?;
        let peers = tls::peer_clients(&settings)?;

        // Before anything touches the database or a process: one service per database.
        let claimed = claim_database(&settings).await?;
        let (containment, controllers) = (claimed.containment.clone(), claimed.controllers.clone());
        let started = Self::start_on(settings, options, addr, (tls, peers), claimed).await;
        if started.is_err() {
            // Nothing ran in them: the cgroup folders made for this service go with it.
            machine::release(containment, controllers).await;
        }
        started
    }

    /// Everything after the database is claimed: recovery, the actors, the HTTP server.
    async fn start_on(
        settings: Settings,
        options: ServeOptions,
        addr: String,
        (tls, peers): (Option<rustls::ServerConfig>, crate::peer_tls::PeerClients),
        claimed: machine::Claimed,
    ) -> Result<Application, StartupError> {
        let machine::Claimed { lock, postgres, containment, controllers } = claimed;
        let on_shutdown = settings.on_shutdown;
        let store =
            Store::open_blocking(settings.database.clone(), settings.db_pool_size, settings.db_busy_timeout_ms).await?;
        if let Some(user) = &options.first_user {
            if crate::accounts::add_first(&store, user).await? {
                tracing::info!(user = user.name(), "the first user was created from CONDUIT_ADMIN_USER");
            }
        }
        let scope = cluster::node_scope(&settings, &store).await?;
        let launcher = options.launcher.clone().unwrap_or_else(|| crate::sandbox::network::OWN_EXECUTABLE.into());
        let mut keepers = keepers(&settings, &launcher);
        let (recovered, found) =
            recover_after_restart(&store, (&containment, &controllers), lock.previous(), scope, Some(&keepers)).await?;
        keepers.cgroup = keepers_cgroup(&containment);
        if recovered.sessions > 0 || recovered.executions > 0 || recovered.commands > 0 {
            tracing::warn!(
                sessions = recovered.sessions,
                executions = recovered.executions,
                processes = recovered.commands,
                "sessions and agent runs left live by a previous run were marked as ended"
            );
        }
        let listener = TcpListener::bind(&addr).map_err(|source| StartupError::Bind { addr: addr.clone(), source })?;
        let port = listener.local_addr().map_err(|source| StartupError::Bind { addr: addr.clone(), source })?.port();

        let logins = crate::actors::login_guard::LoginGuard::new(settings.login_limits).start();
        let limits = crate::actors::request_limits::RequestLimits::new(settings.request_limits).start();
        let policy = web::Data::new(AccessPolicy::from_settings(&settings, logins, limits));
        let credentials =
            store.run(|conn| crate::db::accounts::any_credential(conn, &crate::domain::time::now())).await?;
        policy.auth.remember(credentials);
        let root = ProjectRoot::new(&settings.project_root);
        if !root.path().is_dir() {
            tracing::warn!(root = %root.path().display(), "the project root does not exist; browsing and projects will fail until it does");
        }
        let cluster = cluster::join(&settings, &store).await?;
        let node_name = cluster.as_ref().map(|(_, view)| view.name.clone());
        let settings = Arc::new(settings);
        let setup = WriterSetup { notify_as: node_name.clone(), redact_at_rest: settings.redaction.at_rest() };
        let (writer, _writer_thread) = Writer::start_with(store.clone(), setup);
        let bus = EventBus::new(settings.stream_history_bytes);
        let bus = if settings.redaction.in_flight() { bus } else { bus.without_redaction() }.start();
        let relay = cluster::relay(&settings, &store, &bus, &peers.trust);
        let engine = PermissionEngine::new(store.clone(), writer.clone(), Some(bus.clone().recipient()))
            .with_shell_analysis(settings.shell_analysis)
            .start();
        let rules = engine
            .send(Reload)
            .await
            .map_err(|e| crate::db::StoreError::Other(format!("the permission engine did not start: {e}")))??;
        tracing::info!(rules, "permission rules loaded");
        let sandbox = probe_sandbox(&settings, launcher.clone()).await;
        let (channel, channel_listener) = channel::open(&settings).await?;
        // Networks made ahead of time, when sandboxes get their own (launches then skip
        // pasta's start).
        let pool = sandbox.network.plan.as_ref().map(|plan| {
            crate::actors::network_pool::NetworkPool::new(launcher.clone(), plan.pasta().to_path_buf())
                .start()
                .recipient()
        });
        let encloser = Encloser::new(
            settings.clone(),
            store.clone(),
            (containment.clone(), controllers.clone()),
            sandbox.clone(),
            channel.clone(),
            port,
            pool,
        );
        let limits = crate::actors::limits::LimitBoard::default().start();
        let global_caps =
            crate::domain::budget::Caps { daily: settings.budget_daily_usd, monthly: settings.budget_monthly_usd };
        let budgets =
            crate::actors::budgets::BudgetKeeper::new(store.clone(), global_caps, bus.clone().recipient()).start();
        let caps = store.run(crate::db::projects::turn_caps).await?;
        let turn_gate = crate::actors::turn_gate::TurnGate::new(
            caps.into_iter().filter_map(|(project, max)| Some((project, u32::try_from(max).ok()?))),
        )
        .start();
        let registry = SessionRegistry::new(
            settings.clone(),
            store.clone(),
            writer.clone(),
            engine.clone().recipient(),
            bus.clone().recipient(),
            crate::actors::registry::Spawning {
                encloser: encloser.clone(),
                keepers: settings.keepers.then_some(keepers),
                reap_orphans: options.subreaper,
            },
            crate::actors::registry::TurnPeers {
                limit_board: limits.clone().recipient(),
                gate: turn_gate.clone().recipient(),
            },
            &budgets,
        )
        .start();
        budgets.do_send(crate::actors::budgets::Connect(registry.clone().recipient()));
        let terminals = TerminalRegistry::new(
            settings.terminal,
            encloser.clone(),
            bus.clone().recipient(),
            SessionLink {
                find: registry.clone().recipient(),
                adopt: registry.clone().recipient(),
                gone: registry.clone().recipient(),
            },
        )
        .start();
        // Before any session can start: a session's terminals end with it.
        registry.do_send(WatchEnds(terminals.clone().recipient()));
        let workbench = Workbench::new(workbench::Deps {
            settings: Arc::new(settings.processes.clone()),
            dir: settings.process_dir(),
            store: store.clone(),
            encloser: encloser.clone(),
            engine: engine.clone().recipient(),
            bus: bus.clone().recipient(),
            spawner: registry.clone().recipient(),
            gone: registry.clone().recipient(),
            node: node_name.clone(),
            redaction: settings.redaction,
        })
        .start();
        registry.do_send(WatchEnds(workbench.clone().recipient()));
        reattach(&registry, &writer, found).await;
        let webhooks = WebhookDispatcher::new(
            store.clone(),
            writer.clone(),
            bus.clone(),
            settings.webhook_secret.clone(),
            std::time::Duration::from_millis(settings.webhook_retry_base_ms),
        )
        .start();
        webhooks
            .send(ReloadWebhooks)
            .await
            .map_err(|e| crate::db::StoreError::Other(format!("the webhook dispatcher did not start: {e}")))??;
        let locks = match (&settings.cluster, &settings.database) {
            (Some(_), crate::db::Database::Postgres(url)) => {
                DirLockQueue::across(ClusterFolders { url: url.clone(), busy_timeout_ms: settings.db_busy_timeout_ms })
            }
            _ => DirLockQueue::default(),
        }
        .start();
        let run_deps = RunDeps {
            store: store.clone(),
            bus: bus.clone().recipient(),
            locks: locks.clone().recipient(),
            registry: registry.clone().recipient(),
            budgets: budgets.clone().recipient(),
            node: cluster.as_ref().map(|(_, view)| view.clone()),
            redact_at_rest: settings.redaction.at_rest(),
        };
        let agents = AgentRegistry::new(run_deps, settings.max_agents).start();
        // Sessions parked at a usage limit when the service stopped wait out their reset again.
        let revived = crate::actors::registry::revive_parked(&store, &registry).await;
        if revived > 0 {
            tracing::info!(sessions = revived, "sessions parked at a usage limit were brought back");
        }
        let restored = agents
            .send(Restore)
            .await
            .map_err(|e| crate::db::StoreError::Other(format!("the agent registry did not start: {e}")))??;
        tracing::info!(agents = restored, "scheduled agents restored");
        let janitor = Janitor::new(
            std::time::Duration::from_millis(settings.janitor_interval_ms),
            std::time::Duration::from_millis(settings.session_idle_timeout_ms),
            store.clone(),
            registry.clone().recipient(),
            bus.clone().recipient(),
            Tidies {
                agents: agents.clone().recipient(),
                locks: locks.clone().recipient(),
                grace: std::time::Duration::from_millis(settings.agent_kill_grace_ms),
                processes: workbench.clone().recipient(),
                process_retention: std::time::Duration::from_millis(settings.processes.retention_ms),
                workspaces: settings.workspaces(),
                node: node_name,
            },
        )
        .start();
        let cluster = cluster.map(|(addr, _)| addr);
        if let Some(node) = &cluster {
            node.do_send(crate::actors::cluster::FenceWith(registry.clone().recipient()));
        }
        let audit = crate::actors::audit::Auditor::new(store.clone(), settings.audit_retention).start();
        let session_limits = limits_report(&controllers, &settings);
        let state = web::Data::new(AppState {
            settings,
            store,
            root,
            started: Instant::now(),
            registry: registry.clone(),
            engine,
            bus: bus.clone(),
            webhooks,
            writer: writer.clone(),
            agents: agents.clone(),
            locks,
            containment: report(&containment),
            session_limits,
            http_counts: Default::default(),
            sandbox,
            encloser,
            terminals: terminals.clone(),
            workbench: workbench.clone(),
            limits,
            budgets,
            turn_gate,
            cluster: cluster.clone(),
            peers,
            audit: audit.clone(),
            channel,
        });

        let scheme = if tls.is_some() { "https" } else { "http" };
        let server = server::http(state, policy, (listener, channel_listener), tls, &addr)?;
        tracing::info!(%addr, port, scheme, "conduit listening on {scheme}://{addr}");
        Ok(Application {
            port,
            server,
            registry,
            agents,
            workbench,
            janitor,
            terminals,
            bus,
            writer,
            audit,
            containment,
            controllers,
            on_shutdown,
            cluster,
            _relay: relay,
            _lock: lock,
            _postgres_claim: postgres,
        })
    }

    pub fn port(&self) -> u16 {
        self.port
    }

    /// Counters of the session writer (lines stored, lines lost), for embedding and benchmarks.
    pub fn writer_stats(&self) -> std::sync::Arc<crate::db::writer::WriterStats> {
        self.writer.stats.clone()
    }

    pub fn server_handle(&self) -> actix_web::dev::ServerHandle {
        self.server.handle()
    }

    /// How this service contains its CLIs' process trees.
    pub fn containment(&self) -> Arc<Containment> {
        self.containment.clone()
    }

    /// Which cgroup controllers limit its sessions (and where their v1 folders are).
    pub fn controllers(&self) -> Arc<crate::process::limits::Controllers> {
        self.controllers.clone()
    }
}

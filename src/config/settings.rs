//! The settings every part of the service reads, and what they say about the bind address.

use std::fmt;
use std::net::IpAddr;
use std::path::PathBuf;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LogFormat {
    Pretty,
    Json,
}

#[derive(Clone)]
pub struct Settings {
    pub host: String,
    pub port: u16,
    /// Never printed: `Debug` is implemented by hand below.
    pub auth_token: Option<String>,
    pub allowed_hosts: Vec<String>,
    pub allowed_origins: Vec<String>,
    /// The SQLite file, or on PostgreSQL the anchor of this machine's own state: the instance
    /// lock file is `<db_path>.lock`, and processes' logs and workspaces default to its folder.
    pub db_path: PathBuf,
    /// Where the data lives (`database_url`, else the SQLite file `db_path`).
    pub database: crate::db::Database,
    /// Cluster mode: this node's name, address, the shared secret and the lease.
    pub cluster: Option<super::ClusterSettings>,
    pub db_pool_size: u32,
    pub db_busy_timeout_ms: u64,
    pub cli_path: String,
    /// The other agent CLIs: Codex, Gemini CLI, configured ACP agents.
    pub agents: super::AgentSettings,
    /// Passed to every CLI as CLAUDE_CODE_SESSION_ACCESS_TOKEN; never shown by any endpoint.
    pub cli_session_access_token: Option<String>,
    /// What children get of the service's environment (`agent_env_passthrough`, and the
    /// environment the settings were read from, without its `CONDUIT_*` variables).
    pub environment: crate::sandbox::environment::ChildEnvironment,
    pub ws_port_range_start: u16,
    pub ws_port_range_end: u16,
    /// The transport of a launch that names none.
    pub transport: crate::domain::validate::Transport,
    pub max_sessions_global: u32,
    pub session_idle_timeout_ms: u64,
    /// A turn with no output from its CLI and nothing waiting for a decision this long is
    /// stalled (interrupted, then stopped); 0: never. A project may set its own.
    pub turn_inactivity_timeout_ms: u64,
    /// Sessions' CLIs run under keepers (and so can outlive the service); false: they are the
    /// service's own children and end with it.
    pub keepers: bool,
    /// What a stop of the service does with live sessions: leave their CLIs to their keepers
    /// (`detach`), or end them (`stop`).
    pub on_shutdown: crate::domain::session::OnShutdown,
    /// Bytes of a session's output its keeper holds while no service stores them; then the CLI
    /// waits.
    pub keeper_buffer_bytes: usize,
    /// Kernel limits on every session's CLI where neither its launch nor its project sets one
    /// (`session_memory_max_mb`, `session_pids_max`, `session_cpu_weight`; 0: none).
    pub session_limits: crate::domain::resources::SessionLimits,
    /// Between two sweeps of the janitor.
    pub janitor_interval_ms: u64,
    pub project_root: PathBuf,
    pub scan_depth: u32,
    pub webhook_secret: Option<String>,
    pub webhook_retry_base_ms: u64,
    /// Events a stream subscriber may have waiting before it catches up from the history.
    pub subscriber_outbox: usize,
    /// Bytes of recent events kept in memory for every stream together.
    pub stream_history_bytes: usize,
    /// Bytes of a session's lines read but not yet stored before its CLI is no longer read.
    pub session_backlog_bytes: usize,
    /// Scheduled agents allowed at once.
    pub max_agents: u32,
    /// Between SIGTERM and SIGKILL when an agent run times out or is cancelled (5-60 s).
    pub agent_kill_grace_ms: u64,
    /// Where sessions' git worktrees are made; `None`: `workspaces` beside the database.
    pub workspaces_dir: Option<PathBuf>,
    /// How long a project's `setup_script` may run in a new worktree.
    pub setup_timeout_ms: u64,
    /// Up to this much random delay after a usage limit's reset before queued turns go.
    pub limit_jitter_ms: u64,
    /// The wait after a limit the CLI gave no reset time for.
    pub limit_retry_ms: u64,
    /// Caps on what everything together may spend per UTC day and month, in USD.
    pub budget_daily_usd: Option<f64>,
    pub budget_monthly_usd: Option<f64>,
    /// A turn running when a budget runs out is interrupted (else it finishes).
    pub budget_interrupts: bool,
    /// What tokens cost by model, for agents whose CLI reports no cost.
    pub model_prices: crate::domain::prices::PriceTable,
    /// The OS sandbox of a project that chooses none, and what it needs.
    pub sandbox: SandboxSettings,
    /// Terminals: idle timeout, scrollback, how many per workspace.
    pub terminal: TerminalSettings,
    /// Commands and background processes started through the API (the exec API).
    pub processes: ProcessSettings,
    /// What a Bash part that cannot be analyzed means under a deny rule.
    pub shell_analysis: crate::domain::rules::ShellAnalysis,
    /// Whether secrets are also kept out of the store, or only out of what leaves it.
    pub redaction: crate::secrets::RedactionMode,
    /// How long access audit rows are kept; `None`: forever.
    pub audit_retention: Option<std::time::Duration>,
    /// How often one address may try a password or guess `CONDUIT_AUTH_TOKEN`, and the lockout
    /// after failures.
    pub login_limits: LoginLimits,
    /// How many writes one address may send a minute, and streams one credential may hold.
    pub request_limits: RequestLimitSettings,
    /// How long a dashboard sign-in (a cookie session) lasts from its login.
    pub login_session: std::time::Duration,
    /// Whether the sign-in cookie is marked `Secure` (sent over HTTPS only): on behind a TLS
    /// proxy, and always when Conduit serves TLS itself (`tls`); off by default.
    pub secure_cookies: bool,
    /// The `tls_cert` and `tls_key` settings: with them, the service serves HTTPS only.
    pub tls: Option<TlsFiles>,
    pub log_level: String,
    pub log_format: LogFormat,
    /// HOME of the environment the settings came from (where the CLI keeps its transcripts).
    /// Not a setting of its own.
    pub home: Option<PathBuf>,
    /// The config file the settings were read from (`--config`, `CONDUIT_CONFIG`), hidden from
    /// sandboxes. Not a setting of its own.
    pub config_file: Option<PathBuf>,
}

/// The `login_attempts_per_minute`, `login_lockout_failures` and `login_lockout_ms` settings
/// (see `actors::login_guard`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LoginLimits {
    /// Password checks and configured-token guesses one address may have in a sliding minute.
    pub per_minute: u32,
    /// Failed checks (wrong passwords and tokens together) within `lockout` that lock the
    /// address out.
    pub lockout_after: u32,
    pub lockout: std::time::Duration,
}

/// The `writes_per_minute`, `streams_per_credential` and `limit_loopback` settings (see
/// `actors::request_limits`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct RequestLimitSettings {
    /// State-changing `/api` requests one client address may send in a sliding minute (0: no limit).
    pub writes_per_minute: u32,
    /// WebSocket connections and SSE streams one credential may hold open at once (0: no limit).
    pub streams_per_credential: u32,
    /// Whether the write limit also holds for loopback clients (the machine's own user and
    /// scripts are trusted with it otherwise).
    pub limit_loopback: bool,
}

/// The `tls_cert` and `tls_key` settings: PEM files, set together or not at all. Only their
/// paths are checked when settings load; startup reads them (`startup::tls`), so a bad file
/// stops the service before it touches the database.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TlsFiles {
    /// The certificate chain, the server's own certificate first.
    pub cert: PathBuf,
    /// The private key of that certificate (PKCS#8, PKCS#1 or SEC1).
    pub key: PathBuf,
}

/// The `sandbox*`, `bwrap_path` and `pasta_path` settings.
#[derive(Debug, Clone)]
pub struct SandboxSettings {
    pub default_mode: crate::domain::sandbox::SandboxMode,
    pub bwrap_path: String,
    /// Absolute paths (`~` expanded), hidden from sandboxed CLIs where they exist.
    pub hidden: Vec<PathBuf>,
    /// Absolute paths (`~` expanded), writable for sandboxed CLIs where they exist (build caches).
    pub writable: Vec<PathBuf>,
    /// Absolute paths (`~` expanded), read-only for sandboxed CLIs where they exist.
    pub readable: Vec<PathBuf>,
    /// A network namespace of its own, or the machine's network.
    pub network: crate::domain::sandbox::SandboxNetwork,
    pub pasta_path: String,
    /// Loopback ports sandboxed processes may reach besides the ones found on their own.
    pub host_ports: Vec<u16>,
}

/// The `terminal_idle_timeout_ms`, `terminal_scrollback_bytes` and `max_terminals` settings.
#[derive(Debug, Clone, Copy)]
pub struct TerminalSettings {
    /// No input and no attached client for this long ends a terminal.
    pub idle_timeout: std::time::Duration,
    /// Bytes of recent output kept to repaint a client that connects.
    pub scrollback_bytes: usize,
    /// Terminals one session or one project may have at once.
    pub max_per_workspace: usize,
}

/// The `process_*`, `exec_*` and `max_processes_*` settings.
#[derive(Debug, Clone)]
pub struct ProcessSettings {
    /// Where background processes' logs and exec contexts' state are kept (`None`: beside the
    /// database, see [`Settings::process_dir`]).
    pub dir: Option<PathBuf>,
    /// Bytes of each stream (stdout, stderr) of a background process kept in its log.
    pub log_bytes: u64,
    /// Bytes of each stream of an exec command sent back.
    pub exec_output_bytes: u64,
    pub exec_timeout_ms: u64,
    pub exec_max_timeout_ms: u64,
    /// Commands and processes running at once in one session's workspace.
    pub max_per_session: usize,
    /// ... in one project (its folder's and its sessions' together).
    pub max_per_project: usize,
    /// Exec contexts one session or project may keep.
    pub max_contexts: usize,
    /// Between a kill's signal and SIGKILL when the request names no grace.
    pub kill_grace_ms: u64,
    /// How long ended processes (rows and logs) are kept before the janitor removes them.
    pub retention_ms: u64,
}

impl fmt::Debug for Settings {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let redact = |s: &Option<String>| s.as_ref().map(|_| "<set>").unwrap_or("<none>");
        f.debug_struct("Settings")
            .field("host", &self.host)
            .field("port", &self.port)
            .field("auth_token", &redact(&self.auth_token))
            .field("allowed_hosts", &self.allowed_hosts)
            .field("allowed_origins", &self.allowed_origins)
            .field("db_path", &self.db_path)
            .field("database", &self.database)
            .field("cluster", &self.cluster)
            .field("db_pool_size", &self.db_pool_size)
            .field("cli_path", &self.cli_path)
            .field("cli_session_access_token", &redact(&self.cli_session_access_token))
            .field("max_sessions_global", &self.max_sessions_global)
            .field("project_root", &self.project_root)
            .field("scan_depth", &self.scan_depth)
            .field("webhook_secret", &redact(&self.webhook_secret))
            .field("tls", &self.tls)
            .field("log_level", &self.log_level)
            .field("log_format", &self.log_format)
            .finish_non_exhaustive()
    }
}

impl Settings {
    /// Where background processes' logs and exec contexts' state are kept: the `process_dir`
    /// setting, or a `processes` folder beside the database (what it records and what it keeps
    /// on disk go together).
    pub fn process_dir(&self) -> PathBuf {
        self.processes.dir.clone().unwrap_or_else(|| match self.db_path.parent() {
            Some(parent) => parent.join("processes"),
            None => PathBuf::from("processes"),
        })
    }

    /// The folder sessions' worktrees are made in: `workspaces_dir`, or `workspaces` beside
    /// the database.
    pub fn workspaces(&self) -> PathBuf {
        match &self.workspaces_dir {
            Some(dir) => dir.clone(),
            None => self.db_path.parent().map(|p| p.join("workspaces")).unwrap_or_else(|| PathBuf::from("workspaces")),
        }
    }

    /// True when `host` is a loopback address or name: then no token is required.
    pub fn binds_loopback(&self) -> bool {
        is_loopback_host(&self.host)
    }
}

/// `localhost`, `*.localhost`, 127.0.0.0/8 and ::1 (brackets allowed).
pub fn is_loopback_host(host: &str) -> bool {
    let h = host.trim_start_matches('[').trim_end_matches(']').to_ascii_lowercase();
    if h == "localhost" || h.ends_with(".localhost") {
        return true;
    }
    h.parse::<IpAddr>().map(|ip| ip.is_loopback()).unwrap_or(false)
}

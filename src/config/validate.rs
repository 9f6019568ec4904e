//! Turning the merged layers into [`Settings`], checking every key once.

use std::path::{Path, PathBuf};

use super::layers::Layers;
use super::{
    ConfigError, LogFormat, LoginLimits, ProcessSettings, RequestLimitSettings, SandboxSettings, Settings,
    TerminalSettings, TlsFiles,
};
use crate::domain::rules::ShellAnalysis;
use crate::secrets::RedactionMode;

impl Settings {
    pub(super) fn from_layers(l: &Layers, home: Option<&str>) -> Result<Settings, ConfigError> {
        let host = l.string("host")?.trim().to_string();
        if host.is_empty() || host.contains(char::is_whitespace) {
            return Err(l.err("host", "expected an IP address or host name such as 127.0.0.1"));
        }
        let log_level = l.string("log_level")?;
        if tracing_subscriber::EnvFilter::try_new(&log_level).is_err() || log_level.trim().is_empty() {
            return Err(l.err(
                "log_level",
                format!("expected one of trace, debug, info, warn, error, or a tracing directive, got {log_level:?}"),
            ));
        }
        let log_format = match l.string("log_format")?.as_str() {
            "pretty" => LogFormat::Pretty,
            "json" => LogFormat::Json,
            other => return Err(l.err("log_format", format!("expected one of pretty, json, got {other:?}"))),
        };
        let ws_port_range_start = l.integer("ws_port_range_start", 1, 65535)? as u16;
        let ws_port_range_end = l.integer("ws_port_range_end", 1, 65535)? as u16;
        if ws_port_range_end < ws_port_range_start {
            return Err(l.err(
                "ws_port_range_end",
                format!("must be at least ws_port_range_start ({ws_port_range_start}), got {ws_port_range_end}"),
            ));
        }
        let transport = l.string("transport")?;
        let transport = crate::domain::validate::Transport::parse(&transport).ok_or_else(|| {
            l.err(
                "transport",
                format!("expected one of {}, got {transport:?}", crate::domain::validate::Transport::ALL.join(", ")),
            )
        })?;
        let shell_analysis = l.string("shell_analysis")?;
        let shell_analysis = ShellAnalysis::parse(&shell_analysis).ok_or_else(|| {
            l.err(
                "shell_analysis",
                format!("expected one of {}, got {shell_analysis:?}", ShellAnalysis::ALL.join(", ")),
            )
        })?;
        let redaction = l.string("redaction")?;
        let redaction = RedactionMode::parse(&redaction).ok_or_else(|| {
            l.err("redaction", format!("expected one of {}, got {redaction:?}", RedactionMode::ALL.join(", ")))
        })?;
        let on_shutdown = l.string("on_shutdown")?;
        let on_shutdown: crate::domain::session::OnShutdown = on_shutdown
            .parse()
            .map_err(|_| l.err("on_shutdown", format!("expected one of detach, stop, got {on_shutdown:?}")))?;
        let db_path = l.string("db_path")?;
        if db_path.trim().is_empty() || db_path.contains('\0') {
            return Err(l.err("db_path", "expected a file path"));
        }
        let database = crate::db::Database::from_setting(&l.string("database_url")?, Path::new(&db_path))
            .map_err(|e| l.err("database_url", e))?;
        let cluster = super::cluster::cluster_settings(l, &database, home)?;
        let tls = tls_files(l, home)?;
        if let (Some(_), Some(cluster)) = (&tls, &cluster) {
            // This node then answers HTTPS only: the others could never reach it over http://.
            if cluster.address.starts_with("http://") {
                return Err(l.err("node_address", "expected an https:// URL: this node serves TLS (tls_cert)"));
            }
        }
        let cli_path = l.string("cli_path")?;
        if cli_path.trim().is_empty() || cli_path.contains('\0') {
            return Err(l.err("cli_path", "expected an executable name or path"));
        }
        let allowed_origins = l.list("allowed_origins")?;
        if let Some(bad) = allowed_origins.iter().find(|o| !(o.starts_with("http://") || o.starts_with("https://"))) {
            return Err(
                l.err("allowed_origins", format!("expected origins such as http://localhost:5173, got {bad:?}"))
            );
        }
        let sandbox = sandbox_settings(l, home)?;
        let processes = process_settings(l, home)?;
        let workspaces_dir = match l.string("workspaces_dir")?.trim() {
            "" => None,
            raw => Some(expand_home(raw, home).map_err(|p| l.err("workspaces_dir", p))?),
        };
        Ok(Settings {
            host,
            port: l.integer("port", 0, 65535)? as u16,
            auth_token: l.optional_string("auth_token")?,
            allowed_hosts: l.list("allowed_hosts")?.into_iter().map(|h| h.to_ascii_lowercase()).collect(),
            allowed_origins: allowed_origins
                .into_iter()
                .map(|o| o.trim_end_matches('/').to_ascii_lowercase())
                .collect(),
            db_path: match &database {
                crate::db::Database::Sqlite(path) => path.clone(),
                crate::db::Database::Postgres(_) => PathBuf::from(db_path),
            },
            database,
            cluster,
            db_pool_size: l.integer("db_pool_size", 1, 64)? as u32,
            db_busy_timeout_ms: l.integer("db_busy_timeout_ms", 0, 600_000)? as u64,
            cli_path,
            agents: super::agents::agent_settings(l)?,
            cli_session_access_token: l.optional_string("cli_session_access_token")?,
            environment: crate::sandbox::environment::ChildEnvironment {
                inherited: Default::default(),
                passthrough: passthrough(l)?,
            },
            ws_port_range_start,
            ws_port_range_end,
            transport,
            max_sessions_global: l.integer("max_sessions_global", 1, 100_000)? as u32,
            session_idle_timeout_ms: l.integer("session_idle_timeout_ms", 1_000, i64::MAX)? as u64,
            turn_inactivity_timeout_ms: crate::domain::validate::turn_inactivity(l.integer(
                "turn_inactivity_timeout_ms",
                0,
                i64::MAX,
            )?)
            .map_err(|why| l.err("turn_inactivity_timeout_ms", why))? as u64,
            on_shutdown,
            keepers: l.flag("keepers")?,
            keeper_buffer_bytes: l.integer("keeper_buffer_bytes", 64 << 10, 1 << 30)? as usize,
            session_limits: session_limits(l)?,
            janitor_interval_ms: l.integer("janitor_interval_ms", 50, 86_400_000)? as u64,
            project_root: expand_home(&l.string("project_root")?, home).map_err(|p| l.err("project_root", p))?,
            scan_depth: l.integer("scan_depth", 0, 10)? as u32,
            webhook_secret: l.optional_string("webhook_secret")?,
            webhook_retry_base_ms: l.integer("webhook_retry_base_ms", 1, 600_000)? as u64,
            subscriber_outbox: l.integer("subscriber_outbox", 1, 1_000_000)? as usize,
            stream_history_bytes: l.integer("stream_history_bytes", 1 << 20, 64 << 30)? as usize,
            session_backlog_bytes: l.integer("session_backlog_bytes", 64 << 10, 1 << 30)? as usize,
            max_agents: l.integer("max_agents", 0, 100_000)? as u32,
            // Clamped rather than refused: the grace only has to stay within sane bounds.
            agent_kill_grace_ms: l.integer("agent_kill_grace_ms", 0, i64::MAX)?.clamp(5_000, 60_000) as u64,
            workspaces_dir,
            setup_timeout_ms: l.integer("setup_timeout_ms", 1_000, 86_400_000)? as u64,
            limit_jitter_ms: l.integer("limit_jitter_ms", 0, 600_000)? as u64,
            limit_retry_ms: l.integer("limit_retry_ms", 100, 86_400_000)? as u64,
            budget_daily_usd: l.optional_usd("budget_daily_usd")?,
            budget_monthly_usd: l.optional_usd("budget_monthly_usd")?,
            model_prices: super::prices::model_prices(l)?,
            budget_interrupts: match l.string("budget_running_turn")?.as_str() {
                "finish" => false,
                "interrupt" => true,
                other => {
                    return Err(l.err("budget_running_turn", format!("expected finish or interrupt, got {other:?}")))
                }
            },
            sandbox,
            terminal: TerminalSettings {
                idle_timeout: std::time::Duration::from_millis(l.integer(
                    "terminal_idle_timeout_ms",
                    1_000,
                    31_536_000_000,
                )? as u64),
                scrollback_bytes: l.integer("terminal_scrollback_bytes", 4 << 10, 64 << 20)? as usize,
                max_per_workspace: l.integer("max_terminals", 1, 1_000)? as usize,
            },
            processes,
            shell_analysis,
            redaction,
            audit_retention: match l.integer("audit_retention_days", 0, 36_500)? {
                0 => None,
                days => Some(std::time::Duration::from_secs(days as u64 * 86_400)),
            },
            login_limits: LoginLimits {
                per_minute: l.integer("login_attempts_per_minute", 1, 100_000)? as u32,
                lockout_after: l.integer("login_lockout_failures", 1, 100_000)? as u32,
                lockout: std::time::Duration::from_millis(l.integer("login_lockout_ms", 1_000, 86_400_000)? as u64),
            },
            request_limits: RequestLimitSettings {
                writes_per_minute: l.integer("writes_per_minute", 0, 1_000_000)? as u32,
                streams_per_credential: l.integer("streams_per_credential", 0, 1_000_000)? as u32,
                limit_loopback: l.flag("limit_loopback")?,
            },
            login_session: std::time::Duration::from_millis(
                l.integer("login_session_ms", 60_000, 31_622_400_000)? as u64
            ),
            // A cookie set over TLS is marked Secure whatever the setting says: no sign-in made
            // over HTTPS is ever sent back in clear.
            secure_cookies: l.flag("secure_cookies")? || tls.is_some(),
            tls,
            log_level,
            log_format,
            home: home.filter(|h| !h.is_empty()).map(PathBuf::from),
            config_file: None,
        })
    }
}

/// `session_memory_max_mb`, `session_pids_max` and `session_cpu_weight`: 0 is none, anything
/// else in the range a launch may ask for.
fn session_limits(l: &Layers) -> Result<crate::domain::resources::SessionLimits, ConfigError> {
    use crate::domain::resources as r;
    let limit = |key: &str, min: u64, max: u64| -> Result<Option<u64>, ConfigError> {
        match l.integer(key, 0, max as i64)? as u64 {
            0 => Ok(None),
            n if n < min => Err(l.err(key, format!("expected 0 (none) or from {min} to {max}, got {n}"))),
            n => Ok(Some(n)),
        }
    };
    Ok(r::SessionLimits {
        memory_max_mb: limit("session_memory_max_mb", r::MIN_MEMORY_MB, r::MAX_MEMORY_MB)?,
        pids_max: limit("session_pids_max", r::MIN_PIDS, r::MAX_PIDS)?,
        cpu_weight: limit("session_cpu_weight", *r::CPU_WEIGHTS.start(), *r::CPU_WEIGHTS.end())?,
    })
}

/// `agent_env_passthrough`: names and `PREFIX*` patterns, never a `CONDUIT_*` one.
fn passthrough(l: &Layers) -> Result<Vec<crate::sandbox::environment::NamePattern>, ConfigError> {
    l.list("agent_env_passthrough")?
        .iter()
        .map(|raw| crate::sandbox::environment::NamePattern::parse(raw).map_err(|e| l.err("agent_env_passthrough", e)))
        .collect()
}

/// `tls_cert` and `tls_key`: both paths (`~` expanded), or neither.
fn tls_files(l: &Layers, home: Option<&str>) -> Result<Option<TlsFiles>, ConfigError> {
    let path = |key: &str| -> Result<Option<PathBuf>, ConfigError> {
        match l.optional_string(key)? {
            Some(raw) => Ok(Some(expand_home(&raw, home).map_err(|e| l.err(key, format!("{raw:?}: {e}")))?)),
            None => Ok(None),
        }
    };
    match (path("tls_cert")?, path("tls_key")?) {
        (Some(cert), Some(key)) => Ok(Some(TlsFiles { cert, key })),
        (None, None) => Ok(None),
        (Some(_), None) => Err(l.err("tls_cert", "tls_key must be set too: TLS needs the certificate and its key")),
        (None, Some(_)) => Err(l.err("tls_key", "tls_cert must be set too: TLS needs the certificate and its key")),
    }
}

fn process_settings(l: &Layers, home: Option<&str>) -> Result<ProcessSettings, ConfigError> {
    let dir = match l.optional_string("process_dir")? {
        Some(raw) => Some(expand_home(&raw, home).map_err(|e| l.err("process_dir", e))?),
        None => None,
    };
    let exec_max_timeout_ms = l.integer("exec_max_timeout_ms", 1_000, 86_400_000)? as u64;
    let exec_timeout_ms = l.integer("exec_timeout_ms", 100, 86_400_000)? as u64;
    if exec_timeout_ms > exec_max_timeout_ms {
        return Err(l.err("exec_timeout_ms", format!("must be at most exec_max_timeout_ms ({exec_max_timeout_ms})")));
    }
    Ok(ProcessSettings {
        dir,
        log_bytes: l.integer("process_log_bytes", 4096, 1 << 40)? as u64,
        exec_output_bytes: l.integer("exec_output_bytes", 1024, 1 << 30)? as u64,
        exec_timeout_ms,
        exec_max_timeout_ms,
        max_per_session: l.integer("max_processes_per_session", 1, 10_000)? as usize,
        max_per_project: l.integer("max_processes_per_project", 1, 100_000)? as usize,
        max_contexts: l.integer("max_exec_contexts", 1, 10_000)? as usize,
        kill_grace_ms: l.integer("process_kill_grace_ms", 0, 600_000)? as u64,
        retention_ms: l.integer("process_retention_ms", 1_000, i64::MAX)? as u64,
    })
}

fn sandbox_settings(l: &Layers, home: Option<&str>) -> Result<SandboxSettings, ConfigError> {
    use crate::domain::sandbox::{SandboxMode, SandboxNetwork};
    let mode = l.string("sandbox")?;
    let default_mode = mode.trim().parse::<SandboxMode>().map_err(|_| {
        let all: Vec<&str> = SandboxMode::ALL.iter().map(|m| m.as_str()).collect();
        l.err("sandbox", format!("expected one of {}, got {mode:?}", all.join(", ")))
    })?;
    let bwrap_path = l.string("bwrap_path")?;
    if bwrap_path.trim().is_empty() || bwrap_path.contains('\0') {
        return Err(l.err("bwrap_path", "expected an executable name or path"));
    }
    let paths = |key: &str| -> Result<Vec<PathBuf>, ConfigError> {
        let mut paths = Vec::new();
        for raw in l.list(key)? {
            let path = expand_home(&raw, home).map_err(|e| l.err(key, format!("{raw:?}: {e}")))?;
            if !path.is_absolute() {
                return Err(l.err(key, format!("expected absolute paths or ~/..., got {raw:?}")));
            }
            paths.push(path);
        }
        Ok(paths)
    };
    let network = l.string("sandbox_network")?;
    let network = network.trim().parse::<SandboxNetwork>().map_err(|_| {
        let all: Vec<&str> = SandboxNetwork::ALL.iter().map(|m| m.as_str()).collect();
        l.err("sandbox_network", format!("expected one of {}, got {network:?}", all.join(", ")))
    })?;
    let pasta_path = l.string("pasta_path")?;
    if pasta_path.trim().is_empty() || pasta_path.contains('\0') {
        return Err(l.err("pasta_path", "expected an executable name or path"));
    }
    let host_ports = l.ports("sandbox_host_ports")?;
    Ok(SandboxSettings {
        default_mode,
        bwrap_path,
        hidden: paths("sandbox_hidden")?,
        writable: paths("sandbox_writable")?,
        readable: paths("sandbox_readable")?,
        network,
        pasta_path,
        host_ports,
    })
}

/// `~` and `~/...` mean the home folder of the environment the settings were read from.
pub(super) fn expand_home(raw: &str, home: Option<&str>) -> Result<PathBuf, String> {
    let raw = raw.trim();
    if raw.is_empty() || raw.contains('\0') {
        return Err("expected a folder path".to_string());
    }
    let rest = if raw == "~" { Some("") } else { raw.strip_prefix("~/") };
    match rest {
        Some(rest) => {
            let home =
                home.filter(|h| !h.is_empty()).ok_or("\"~\" needs HOME to be set; give an absolute path instead")?;
            let home = PathBuf::from(home);
            Ok(if rest.is_empty() { home } else { home.join(rest) })
        }
        None => Ok(PathBuf::from(raw)),
    }
}

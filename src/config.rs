//! Typed settings, layered: the compiled-in `config/default.toml`, then an optional TOML file,
//! then environment variables. Every key is validated here, once, so the rest of the service
//! never sees a bad value; a bad one stops startup with a single line naming the key, the
//! variable that set it and what is allowed.

use std::collections::BTreeMap;
use std::fmt;
use std::net::IpAddr;
use std::path::{Path, PathBuf};

use toml::Value;

/// The defaults, compiled in so the binary runs from any folder.
pub const DEFAULT_TOML: &str = include_str!("../config/default.toml");

/// Environment variable naming an extra TOML file layered over the defaults.
pub const CONFIG_FILE_ENV: &str = "CONDUIT_CONFIG";

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
    pub db_path: PathBuf,
    pub db_pool_size: u32,
    pub db_busy_timeout_ms: u64,
    pub cli_path: String,
    /// Passed to every CLI as CLAUDE_CODE_SESSION_ACCESS_TOKEN; never shown by any endpoint.
    pub cli_session_access_token: Option<String>,
    pub ws_port_range_start: u16,
    pub ws_port_range_end: u16,
    /// The transport of a launch that names none.
    pub transport: crate::domain::validate::Transport,
    pub max_sessions_global: u32,
    pub session_idle_timeout_ms: u64,
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
    pub log_level: String,
    pub log_format: LogFormat,
    /// HOME of the environment the settings came from (where the CLI keeps its transcripts).
    /// Not a setting of its own.
    pub home: Option<PathBuf>,
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
            .field("db_pool_size", &self.db_pool_size)
            .field("cli_path", &self.cli_path)
            .field("cli_session_access_token", &redact(&self.cli_session_access_token))
            .field("max_sessions_global", &self.max_sessions_global)
            .field("project_root", &self.project_root)
            .field("scan_depth", &self.scan_depth)
            .field("webhook_secret", &redact(&self.webhook_secret))
            .field("log_level", &self.log_level)
            .field("log_format", &self.log_format)
            .finish_non_exhaustive()
    }
}

/// One bad setting. `Display` is the single line printed at startup.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ConfigError {
    pub key: String,
    /// Where the value came from: an environment variable, a file, or the defaults.
    pub origin: String,
    pub problem: String,
}

impl fmt::Display for ConfigError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "invalid setting `{}` (from {}): {}", self.key, self.origin, self.problem)
    }
}

impl std::error::Error for ConfigError {}

/// Environment variable for a key: `CONDUIT_<KEY>`, except the two logging keys.
pub fn env_name(key: &str) -> String {
    match key {
        "log_level" => "LOG_LEVEL".to_string(),
        "log_format" => "LOG_FORMAT".to_string(),
        _ => format!("CONDUIT_{}", key.to_ascii_uppercase()),
    }
}

/// A value plus where it came from, so errors can say which layer to fix.
struct Entry {
    value: Value,
    origin: String,
}

struct Layers {
    entries: BTreeMap<String, Entry>,
}

impl Layers {
    fn take(&self, key: &str) -> &Entry {
        // Every key has a default: `load` fails early if the compiled-in file lost one.
        &self.entries[key]
    }

    fn err(&self, key: &str, problem: impl Into<String>) -> ConfigError {
        ConfigError { key: key.to_string(), origin: self.take(key).origin.clone(), problem: problem.into() }
    }

    fn string(&self, key: &str) -> Result<String, ConfigError> {
        match &self.take(key).value {
            Value::String(s) => Ok(s.clone()),
            other => Err(self.err(key, format!("expected a string, got {other}"))),
        }
    }

    fn optional_string(&self, key: &str) -> Result<Option<String>, ConfigError> {
        let s = self.string(key)?;
        Ok(if s.is_empty() { None } else { Some(s) })
    }

    fn integer(&self, key: &str, min: i64, max: i64) -> Result<i64, ConfigError> {
        let allowed = format!("expected an integer from {min} to {max}");
        let n = match &self.take(key).value {
            Value::Integer(n) => *n,
            Value::String(s) => s.trim().parse::<i64>().map_err(|_| self.err(key, format!("{allowed}, got {s:?}")))?,
            other => return Err(self.err(key, format!("{allowed}, got {other}"))),
        };
        if n < min || n > max {
            return Err(self.err(key, format!("{allowed}, got {n}")));
        }
        Ok(n)
    }

    fn list(&self, key: &str) -> Result<Vec<String>, ConfigError> {
        match &self.take(key).value {
            // The environment carries lists comma separated.
            Value::String(s) => Ok(s.split(',').map(str::trim).filter(|s| !s.is_empty()).map(String::from).collect()),
            Value::Array(items) => items
                .iter()
                .map(|v| match v {
                    Value::String(s) => Ok(s.trim().to_string()),
                    other => Err(self.err(key, format!("expected a list of strings, got {other}"))),
                })
                .collect(),
            other => Err(self.err(key, format!("expected a list of strings, got {other}"))),
        }
    }
}

fn parse_toml(text: &str, origin: &str) -> Result<toml::Table, ConfigError> {
    text.parse::<toml::Table>().map_err(|e| ConfigError {
        key: "(file)".to_string(),
        origin: origin.to_string(),
        problem: format!("not valid TOML: {}", e.message()),
    })
}

impl Settings {
    /// Defaults, then `file` (if any), then the process environment.
    pub fn load(file: Option<&Path>) -> Result<Settings, ConfigError> {
        let env: BTreeMap<String, String> = std::env::vars().collect();
        Self::load_from(file, &env)
    }

    /// Same as [`Settings::load`] with an explicit environment, for tests.
    pub fn load_from(file: Option<&Path>, env: &BTreeMap<String, String>) -> Result<Settings, ConfigError> {
        let defaults = parse_toml(DEFAULT_TOML, "compiled-in defaults")?;
        let known: Vec<String> = defaults.keys().cloned().collect();
        let mut entries: BTreeMap<String, Entry> = defaults
            .into_iter()
            .map(|(k, value)| (k, Entry { value, origin: "config/default.toml".to_string() }))
            .collect();

        let file = file
            .map(Path::to_path_buf)
            .or_else(|| env.get(CONFIG_FILE_ENV).filter(|s| !s.is_empty()).map(PathBuf::from));
        if let Some(path) = file {
            let origin = path.display().to_string();
            let text = std::fs::read_to_string(&path).map_err(|e| ConfigError {
                key: "(file)".to_string(),
                origin: origin.clone(),
                problem: format!("cannot read the config file: {e}"),
            })?;
            for (key, value) in parse_toml(&text, &origin)? {
                if !known.contains(&key) {
                    return Err(ConfigError {
                        key,
                        origin,
                        problem: format!("unknown key; allowed keys: {}", known.join(", ")),
                    });
                }
                entries.insert(key, Entry { value, origin: origin.clone() });
            }
        }

        for key in &known {
            let var = env_name(key);
            if let Some(value) = env.get(&var) {
                entries.insert(
                    key.clone(),
                    Entry { value: Value::String(value.clone()), origin: format!("environment {var}") },
                );
            }
        }

        Self::from_layers(&Layers { entries }, env.get("HOME").map(String::as_str))
    }

    fn from_layers(l: &Layers, home: Option<&str>) -> Result<Settings, ConfigError> {
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
        let db_path = l.string("db_path")?;
        if db_path.trim().is_empty() || db_path.contains('\0') {
            return Err(l.err("db_path", "expected a file path"));
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
        Ok(Settings {
            host,
            port: l.integer("port", 0, 65535)? as u16,
            auth_token: l.optional_string("auth_token")?,
            allowed_hosts: l.list("allowed_hosts")?.into_iter().map(|h| h.to_ascii_lowercase()).collect(),
            allowed_origins: allowed_origins
                .into_iter()
                .map(|o| o.trim_end_matches('/').to_ascii_lowercase())
                .collect(),
            db_path: PathBuf::from(db_path),
            db_pool_size: l.integer("db_pool_size", 1, 64)? as u32,
            db_busy_timeout_ms: l.integer("db_busy_timeout_ms", 0, 600_000)? as u64,
            cli_path,
            cli_session_access_token: l.optional_string("cli_session_access_token")?,
            ws_port_range_start,
            ws_port_range_end,
            transport,
            max_sessions_global: l.integer("max_sessions_global", 1, 100_000)? as u32,
            session_idle_timeout_ms: l.integer("session_idle_timeout_ms", 1_000, i64::MAX)? as u64,
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
            log_level,
            log_format,
            home: home.filter(|h| !h.is_empty()).map(PathBuf::from),
        })
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

/// `~` and `~/...` mean the home folder of the environment the settings were read from.
fn expand_home(raw: &str, home: Option<&str>) -> Result<PathBuf, String> {
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

#[cfg(test)]
mod tests {
    use super::*;

    /// An environment with HOME=/h unless the pairs set it.
    fn env(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
        let mut env: BTreeMap<String, String> = [("HOME".to_string(), "/h".to_string())].into();
        env.extend(pairs.iter().map(|(k, v)| (k.to_string(), v.to_string())));
        env
    }

    #[test]
    fn defaults_match_the_documented_values() {
        let s = Settings::load_from(None, &env(&[("HOME", "/home/x")])).expect("defaults are valid");
        assert_eq!(s.port, 3100);
        assert_eq!(s.host, "127.0.0.1");
        assert_eq!(s.db_path, PathBuf::from("./data/conduit.db"));
        assert_eq!(s.cli_path, "claude");
        assert_eq!((s.ws_port_range_start, s.ws_port_range_end), (9000, 9100));
        assert_eq!(s.transport, crate::domain::validate::Transport::Stdio);
        assert_eq!((s.max_agents, s.agent_kill_grace_ms), (10, 15_000));
        let short = Settings::load_from(None, &env(&[("CONDUIT_AGENT_KILL_GRACE_MS", "100")])).expect("valid");
        assert_eq!(short.agent_kill_grace_ms, 5_000, "clamped to 5 s");
        let long = Settings::load_from(None, &env(&[("CONDUIT_AGENT_KILL_GRACE_MS", "600000")])).expect("valid");
        assert_eq!(long.agent_kill_grace_ms, 60_000, "clamped to 60 s");
        assert_eq!(s.max_sessions_global, 20);
        assert_eq!(s.session_idle_timeout_ms, 3_600_000);
        assert_eq!(s.janitor_interval_ms, 60_000);
        assert_eq!(s.project_root, PathBuf::from("/home/x"));
        assert_eq!(s.scan_depth, 2);
        assert_eq!(s.webhook_secret, None);
        assert_eq!(s.auth_token, None);
        assert_eq!(s.log_level, "info");
        assert_eq!(s.log_format, LogFormat::Pretty);
    }

    #[test]
    fn environment_overrides_defaults() {
        let s = Settings::load_from(
            None,
            &env(&[
                ("CONDUIT_PORT", "4000"),
                ("CONDUIT_SCAN_DEPTH", "5"),
                ("CONDUIT_ALLOWED_HOSTS", "a.lan, B.lan:80"),
                ("CONDUIT_PROJECT_ROOT", "/srv/p"),
                ("LOG_FORMAT", "json"),
                ("CONDUIT_WEBHOOK_SECRET", "s3"),
                ("CONDUIT_JANITOR_INTERVAL_MS", "200"),
                ("CONDUIT_SESSION_IDLE_TIMEOUT_MS", "1500"),
            ]),
        )
        .expect("valid");
        assert_eq!((s.janitor_interval_ms, s.session_idle_timeout_ms), (200, 1500));
        assert_eq!(s.port, 4000);
        assert_eq!(s.scan_depth, 5);
        assert_eq!(s.allowed_hosts, vec!["a.lan", "b.lan:80"]);
        assert_eq!(s.project_root, PathBuf::from("/srv/p"));
        assert_eq!(s.log_format, LogFormat::Json);
        assert_eq!(s.webhook_secret.as_deref(), Some("s3"));
        let s = Settings::load_from(None, &env(&[("HOME", "/h"), ("CONDUIT_PROJECT_ROOT", "~/code")])).expect("valid");
        assert_eq!(s.project_root, PathBuf::from("/h/code"));
    }

    #[test]
    fn bad_values_name_the_key_and_the_allowed_values() {
        let cases = [
            ("CONDUIT_PORT", "99999", "`port`", "0 to 65535"),
            ("CONDUIT_SCAN_DEPTH", "-1", "`scan_depth`", "0 to 10"),
            ("CONDUIT_PORT", "abc", "`port`", "integer"),
            ("LOG_FORMAT", "xml", "`log_format`", "pretty, json"),
            ("LOG_LEVEL", "loud[", "`log_level`", "trace, debug"),
            ("CONDUIT_WS_PORT_RANGE_END", "10", "`ws_port_range_end`", "at least"),
            ("CONDUIT_ALLOWED_ORIGINS", "evil.com", "`allowed_origins`", "http://"),
            ("CONDUIT_TRANSPORT", "tcp", "`transport`", "stdio, websocket, auto"),
            ("CONDUIT_JANITOR_INTERVAL_MS", "10", "`janitor_interval_ms`", "50 to 86400000"),
            ("CONDUIT_JANITOR_INTERVAL_MS", "soon", "`janitor_interval_ms`", "integer"),
            ("CONDUIT_SESSION_IDLE_TIMEOUT_MS", "999", "`session_idle_timeout_ms`", "from 1000"),
        ];
        for (var, value, key, allowed) in cases {
            let err = Settings::load_from(None, &env(&[(var, value)])).expect_err(var).to_string();
            assert!(err.contains(key) && err.contains(allowed) && err.contains(var), "{var}={value}: {err}");
            assert!(!err.contains('\n'), "one line: {err}");
        }
    }

    #[test]
    fn unknown_key_in_a_file_is_rejected() {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("c.toml");
        std::fs::write(&path, "port = 5000\nprot = 1\n").expect("write");
        let err = Settings::load_from(Some(&path), &env(&[])).expect_err("unknown key").to_string();
        assert!(err.contains("`prot`") && err.contains("unknown key") && err.contains("port"), "{err}");

        std::fs::write(&path, "port = 5000\n").expect("write");
        let s = Settings::load_from(Some(&path), &env(&[("HOME", "/h")])).expect("valid file");
        assert_eq!(s.port, 5000);
    }

    #[test]
    fn debug_output_hides_secrets() {
        let s = Settings::load_from(None, &env(&[("CONDUIT_AUTH_TOKEN", "hunter2"), ("HOME", "/h")])).expect("valid");
        assert!(!format!("{s:?}").contains("hunter2"));
    }

    #[test]
    fn loopback_detection() {
        for h in ["127.0.0.1", "127.1.2.3", "localhost", "app.localhost", "::1", "[::1]"] {
            assert!(is_loopback_host(h), "{h}");
        }
        for h in ["0.0.0.0", "192.168.1.4", "example.com", "localhost.evil.com"] {
            assert!(!is_loopback_host(h), "{h}");
        }
    }
}

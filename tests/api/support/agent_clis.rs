//! The other agent CLIs, pinned and installed by `scripts/test-setup.sh`, with their quiet
//! configuration (no telemetry, no update checks) pointed at a local fake model API, and a
//! reader of the normalized events every agent's session publishes.

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use serde_json::{json, Value};

use super::fake_models::{Dialect, FakeModel};
use super::service::{real_cli, test_cache, ServiceConfig, TestService};

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Cli {
    Codex,
    Gemini,
}

impl Cli {
    pub fn name(self) -> &'static str {
        match self {
            Cli::Codex => "codex",
            Cli::Gemini => "gemini",
        }
    }

    pub fn dialect(self) -> Dialect {
        match self {
            Cli::Codex => Dialect::OpenAi,
            Cli::Gemini => Dialect::Gemini,
        }
    }

    /// The npm wrapper: Conduit starts the native binary it ships (Codex) or the bundle.
    pub fn path(self) -> PathBuf {
        let path = match self {
            Cli::Codex => test_cache().join("codex-0.169.0/node_modules/.bin/codex"),
            Cli::Gemini => test_cache().join("gemini-cli-0.61.0/node_modules/.bin/gemini"),
        };
        assert!(path.exists(), "{} is not installed at {}; run scripts/test-setup.sh", self.name(), path.display());
        path
    }

    /// What a launch of this agent names (Gemini: always a model, or it asks a router first).
    pub fn launch(self) -> Value {
        match self {
            Cli::Codex => json!({"agent": "codex"}),
            Cli::Gemini => json!({"agent": "gemini", "model": "gemini-2.5-flash"}),
        }
    }

    /// The decision point its tool calls are audited at.
    pub fn decision_point(self) -> &'static str {
        match self {
            Cli::Codex => "codex_command_approval",
            Cli::Gemini => "acp_permission",
        }
    }

    /// What the CLI tells its model when a command was refused.
    pub fn refusal(self) -> &'static str {
        match self {
            Cli::Codex => "rejected by user",
            Cli::Gemini => "was canceled by the user",
        }
    }
}

/// Writes the CLI's quiet configuration into `home`, pointed at `model`.
pub fn quiet_home(home: &Path, cli: Cli, model: &FakeModel) {
    match cli {
        Cli::Codex => {
            let dir = home.join(".codex");
            std::fs::create_dir_all(&dir).expect("codex home");
            let config = format!(
                r#"model = "gpt-5.1-codex"
model_provider = "fake"
check_for_update_on_startup = false
[model_providers.fake]
name = "fake"
base_url = "{}/v1"
wire_api = "responses"
env_key = "FAKE_OPENAI_KEY"
request_max_retries = 0
stream_max_retries = 0
[features]
plugins = false
apps = false
remote_plugin = false
shell_snapshot = false
[analytics]
enabled = false
[feedback]
enabled = false
"#,
                model.base_url
            );
            std::fs::write(dir.join("config.toml"), config).expect("codex config");
        }
        Cli::Gemini => {
            let dir = home.join(".gemini");
            std::fs::create_dir_all(&dir).expect("gemini home");
            let settings = json!({
                "privacy": {"usageStatisticsEnabled": false},
                "telemetry": {"enabled": false},
                "general": {"enableAutoUpdate": false, "enableAutoUpdateNotification": false},
                "security": {"folderTrust": {"enabled": false}, "auth": {"selectedType": "gemini-api-key"}},
            });
            std::fs::write(dir.join("settings.json"), settings.to_string()).expect("gemini settings");
        }
    }
}

/// The service's configuration for every agent: both CLIs, their keys and the fake's address.
/// The `transport` setting is `websocket`: it is Claude Code's, and the others ignore it. Codex
/// reads the fake's address from its config.toml, which no variable names: its port is let
/// through the sandbox's network by `sandbox_host_ports`; its key's variable (and the quiet
/// switches that are no agent's own) by `agent_env_passthrough`.
pub fn config(model: &FakeModel) -> ServiceConfig {
    let port = model.base_url.rsplit(':').next().unwrap_or_default().to_string();
    ServiceConfig::new(real_cli())
        .env("CONDUIT_SANDBOX_HOST_PORTS", &port)
        .env("CONDUIT_AGENT_ENV_PASSTHROUGH", "FAKE_OPENAI_KEY,RUST_LOG,NO_COLOR")
        .env("CONDUIT_TRANSPORT", "websocket")
        .env("CONDUIT_CODEX_PATH", &Cli::Codex.path().to_string_lossy())
        .env("CONDUIT_GEMINI_PATH", &Cli::Gemini.path().to_string_lossy())
        .env("FAKE_OPENAI_KEY", "sk-fake")
        .env("RUST_LOG", "warn")
        .env("GEMINI_API_KEY", "fake")
        .env("GOOGLE_GEMINI_BASE_URL", &model.base_url)
        .env("GEMINI_TELEMETRY_ENABLED", "false")
        .env("NO_COLOR", "1")
}

/// A service whose HOME has `cli`'s quiet configuration, and the fake model it talks to.
pub async fn start(cli: Cli) -> (TestService, FakeModel) {
    start_with(cli, &[]).await
}

/// The same, with more settings in the service's environment.
pub async fn start_with(cli: Cli, env: &[(&str, &str)]) -> (TestService, FakeModel) {
    let model = FakeModel::start(cli.dialect()).await;
    let dir = tempfile::tempdir().expect("tempdir");
    quiet_home(&dir.path().join("home"), cli, &model);
    let config = env.iter().fold(config(&model), |config, (key, value)| config.env(key, value));
    (TestService::start_in(dir, config), model)
}

/// The normalized event names.
pub const NORMALIZED: [&str; 6] =
    ["assistant_delta", "assistant_message", "tool_started", "tool_finished", "turn_result", "turn_error"];

/// Reads a session's stream from its start (SSE, as a dashboard would) and keeps its
/// normalized events, until `done` holds for them. The same code for every agent.
pub async fn normalized_events(
    service: &TestService,
    session: &str,
    within: Duration,
    done: impl Fn(&[(String, Value)]) -> bool,
) -> Vec<(String, Value)> {
    let mut res = service.get(&format!("/api/sessions/{session}/stream?since=0")).await;
    assert_eq!(res.status().as_u16(), 200, "stream");
    let deadline = Instant::now() + within;
    let (mut buffer, mut events) = (String::new(), Vec::new());
    loop {
        while let Some(end) = buffer.find("\n\n") {
            let frame: String = buffer.drain(..end + 2).collect();
            let event = frame.lines().find_map(|l| l.strip_prefix("event: ")).unwrap_or("");
            let data = frame.lines().find_map(|l| l.strip_prefix("data: ")).unwrap_or("null");
            if NORMALIZED.contains(&event) {
                let frame: Value = serde_json::from_str(data).expect("an event is JSON");
                events.push((event.to_string(), frame["data"].clone()));
            }
        }
        if done(&events) {
            return events;
        }
        let left = deadline.saturating_duration_since(Instant::now());
        match tokio::time::timeout(left, res.chunk()).await {
            Ok(Ok(Some(chunk))) => buffer.push_str(&String::from_utf8_lossy(&chunk)),
            _ => panic!("the stream ended or timed out; normalized events so far: {events:?}\n{}", service.log()),
        }
    }
}

/// How many `turn_result` events there are.
pub fn results(events: &[(String, Value)]) -> Vec<&Value> {
    events.iter().filter(|(name, _)| name == "turn_result").map(|(_, data)| data).collect()
}

//! Agent benchmarks: `scripts/bench.sh agents`, with the real pinned Codex and Gemini CLIs
//! (installed by `scripts/test-setup.sh`) against the fake model APIs of the tests.
//!
//! 1. Launch overhead per agent: POST a session until it is idle, against a bare spawn of the
//!    same CLI plus its handshake (Codex: `initialize`, `initialized`, `thread/start`; Gemini:
//!    `initialize`, `session/new`) in the same run, interleaved; medians of BENCH_LAUNCHES
//!    (default 10). Both without a sandbox (its cost is the sessions benchmark's).
//! 2. Relay of one turn of BENCH_DELTAS (default 10,000) text deltas per agent to
//!    BENCH_SUBSCRIBERS (default 10) SSE subscribers of the session's stream: from the message
//!    to the last subscriber's last `assistant_delta`, against the bare baseline of the same CLI
//!    driven directly, its delta lines broadcast (tokio broadcast) to as many counting tasks.
//!    Each subscriber counts what it got: lost = deltas the bare run saw minus the fewest any
//!    subscriber got.
//!
//! The service runs as its own process (the release binary).

// Shared with the tests; the benchmark uses part of it.
#[allow(dead_code)]
#[path = "../tests/api/support/fake_models.rs"]
mod fake_models;

use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::{Duration, Instant};

use fake_models::{Dialect, FakeModel, Reply};
use serde_json::{json, Value};
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader, Lines};
use tokio::process::{Child, ChildStdin, ChildStdout};

fn env_usize(key: &str, default: usize) -> usize {
    std::env::var(key).ok().and_then(|v| v.parse().ok()).unwrap_or(default)
}

fn median(mut v: Vec<Duration>) -> Duration {
    v.sort();
    v[v.len() / 2]
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1000.0
}

fn cache() -> PathBuf {
    std::env::var_os("CONDUIT_TEST_CACHE")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(std::env::var_os("HOME").expect("HOME")).join(".cache/conduit-test"))
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Agent {
    Codex,
    Gemini,
}

impl Agent {
    fn name(self) -> &'static str {
        match self {
            Agent::Codex => "codex",
            Agent::Gemini => "gemini",
        }
    }

    /// What Conduit starts, as it starts it: Codex's native binary, Gemini's bundle (through
    /// node) with the admin policy Conduit writes beside its database (`data`).
    fn program(self, data: &Path) -> (PathBuf, Vec<String>, Vec<(String, String)>) {
        match self {
            Agent::Codex => {
                let modules = cache().join("codex-0.169.0/node_modules/@openai");
                let native = modules.join("codex-linux-x64/vendor/x86_64-unknown-linux-musl/bin/codex");
                let env = vec![
                    ("CODEX_MANAGED_BY_NPM".to_string(), "1".to_string()),
                    ("CODEX_MANAGED_PACKAGE_ROOT".to_string(), modules.join("codex").display().to_string()),
                ];
                (native, vec!["app-server".into()], env)
            }
            Agent::Gemini => {
                let policy = data.join("agents/gemini-policy.toml");
                let args = vec![
                    "--acp".into(),
                    format!("--admin-policy={}", policy.display()),
                    "--model=gemini-2.5-flash".into(),
                ];
                (cache().join("gemini-cli-0.61.0/node_modules/@google/gemini-cli/bundle/gemini.js"), args, Vec::new())
            }
        }
    }

    fn setting_path(self) -> PathBuf {
        match self {
            Agent::Codex => cache().join("codex-0.169.0/node_modules/.bin/codex"),
            Agent::Gemini => cache().join("gemini-cli-0.61.0/node_modules/.bin/gemini"),
        }
    }
}

/// The CLIs' quiet configuration in `home`, and the environment both they and the service get.
fn prepare_home(home: &Path, model: &FakeModel) -> Vec<(String, String)> {
    let codex = home.join(".codex");
    std::fs::create_dir_all(&codex).expect("codex home");
    let config = format!(
        "model = \"gpt-5.1-codex\"\nmodel_provider = \"fake\"\ncheck_for_update_on_startup = false\n\
         [model_providers.fake]\nname = \"fake\"\nbase_url = \"{}/v1\"\nwire_api = \"responses\"\nenv_key = \"FAKE_OPENAI_KEY\"\n\
         request_max_retries = 0\nstream_max_retries = 0\n[features]\nplugins = false\napps = false\nremote_plugin = false\n\
         shell_snapshot = false\n[analytics]\nenabled = false\n[feedback]\nenabled = false\n",
        model.base_url
    );
    std::fs::write(codex.join("config.toml"), config).expect("codex config");
    let gemini = home.join(".gemini");
    std::fs::create_dir_all(&gemini).expect("gemini home");
    let settings = json!({"privacy": {"usageStatisticsEnabled": false}, "telemetry": {"enabled": false},
        "general": {"enableAutoUpdate": false, "enableAutoUpdateNotification": false},
        "security": {"folderTrust": {"enabled": false}, "auth": {"selectedType": "gemini-api-key"}}});
    std::fs::write(gemini.join("settings.json"), settings.to_string()).expect("gemini settings");
    [
        ("PATH", std::env::var("PATH").unwrap_or_default()),
        ("HOME", home.display().to_string()),
        ("FAKE_OPENAI_KEY", "sk-fake".into()),
        ("RUST_LOG", "warn".into()),
        ("GEMINI_API_KEY", "fake".into()),
        ("GOOGLE_GEMINI_BASE_URL", model.base_url.clone()),
        ("GEMINI_TELEMETRY_ENABLED", "false".into()),
        ("GEMINI_CLI_NO_RELAUNCH", "true".into()),
        ("NO_COLOR", "1".into()),
    ]
    .into_iter()
    .map(|(k, v)| (k.to_string(), v))
    .collect()
}

struct Service {
    base: String,
    project: String,
    http: reqwest::Client,
    child: std::process::Child,
}

impl Drop for Service {
    fn drop(&mut self) {
        // SAFETY: signalling our own child.
        unsafe { libc::kill(self.child.id() as i32, libc::SIGTERM) };
        let _ = self.child.wait();
    }
}

async fn start_service(dir: &Path, env: &[(String, String)]) -> Service {
    use std::io::BufRead;
    let root = dir.join("root");
    std::fs::create_dir_all(root.join("p")).expect("project folder");
    let mut cmd = std::process::Command::new(env!("CARGO_BIN_EXE_conduit"));
    cmd.arg("serve").env_clear().envs(env.iter().cloned());
    cmd.env("CONDUIT_PORT", "0")
        .env("CONDUIT_DB_PATH", dir.join("data/bench.db"))
        .env("CONDUIT_PROJECT_ROOT", &root)
        .env("CONDUIT_CODEX_PATH", Agent::Codex.setting_path())
        .env("CONDUIT_GEMINI_PATH", Agent::Gemini.setting_path())
        .env("LOG_LEVEL", "error")
        .stdin(Stdio::null())
        .stdout(Stdio::piped());
    let mut child = cmd.spawn().expect("spawn conduit");
    let mut line = String::new();
    std::io::BufReader::new(child.stdout.take().expect("stdout")).read_line(&mut line).expect("listening line");
    let base = line.trim().strip_prefix("conduit listening on ").expect("listening").to_string();
    let http = reqwest::Client::new();
    let project: Value = http
        .post(format!("{base}/api/projects"))
        .json(&json!({"name": "bench", "folder_path": "p", "sandbox": "off", "max_sessions": 100}))
        .send()
        .await
        .expect("project")
        .json()
        .await
        .expect("json");
    Service { base, project: project["id"].as_str().expect("id").to_string(), http, child }
}

impl Service {
    /// POST until the session is idle, told by the event stream (not polled: a polling loop
    /// would take CPU from the CLI starting on the same two cores).
    async fn launch_to_idle(&self, agent: Agent) -> (String, Duration) {
        let mut events = self.http.get(format!("{}/api/events/stream", self.base)).send().await.expect("events");
        let started = Instant::now();
        let mut body = json!({"agent": agent.name()});
        if agent == Agent::Gemini {
            body["model"] = json!("gemini-2.5-flash");
        }
        let url = format!("{}/api/projects/{}/sessions", self.base, self.project);
        let launched: Value = self.http.post(url).json(&body).send().await.expect("launch").json().await.expect("json");
        let id = launched["id"].as_str().unwrap_or_else(|| panic!("launch: {launched}")).to_string();
        let mut buffer = String::new();
        loop {
            while let Some(end) = buffer.find("\n\n") {
                let frame: String = buffer.drain(..end + 2).collect();
                if frame.contains(&id) && frame.contains("event: session_status") {
                    assert!(!frame.contains("\"status\":\"error\""), "{frame}");
                    if frame.contains("\"status\":\"idle\"") {
                        return (id, started.elapsed());
                    }
                }
            }
            match events.chunk().await {
                Ok(Some(chunk)) => buffer.push_str(&String::from_utf8_lossy(&chunk)),
                _ => panic!("the event stream ended"),
            }
        }
    }

    async fn close(&self, id: &str) {
        let _ = self.http.delete(format!("{}/api/sessions/{id}", self.base)).send().await;
    }
}

/// The CLI driven directly: spawned in `folder`, its JSON-RPC handshake done.
struct Bare {
    child: Child,
    stdin: ChildStdin,
    lines: Lines<BufReader<ChildStdout>>,
    /// Codex's thread or Gemini's session.
    conversation: String,
}

async fn request(b: &mut (ChildStdin, Lines<BufReader<ChildStdout>>), line: Value, id: &str) -> Value {
    b.0.write_all(format!("{line}\n").as_bytes()).await.expect("write");
    while let Ok(Some(out)) = b.1.next_line().await {
        let v: Value = serde_json::from_str(&out).unwrap_or(Value::Null);
        if v["id"] == id && v.get("method").is_none() {
            return v["result"].clone();
        }
    }
    panic!("the CLI ended before answering {id}")
}

async fn bare_ready(agent: Agent, env: &[(String, String)], folder: &Path) -> Bare {
    // `folder` is `<dir>/root/p`; the service's database is in `<dir>/data`.
    let data = folder.parent().and_then(Path::parent).expect("bench dir").join("data");
    let (program, args, own_env) = agent.program(&data);
    let mut child = tokio::process::Command::new(program)
        .args(args)
        .env_clear()
        .envs(env.iter().cloned())
        .envs(own_env)
        .current_dir(folder)
        .process_group(0)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .kill_on_drop(true)
        .spawn()
        .expect("spawn the CLI");
    let mut io = (child.stdin.take().expect("stdin"), BufReader::new(child.stdout.take().expect("stdout")).lines());
    let cwd = folder.display().to_string();
    let conversation = match agent {
        Agent::Codex => {
            let init =
                json!({"id": "1", "method": "initialize", "params": {"clientInfo": {"name": "bench", "version": "0"}}});
            request(&mut io, init, "1").await;
            io.0.write_all(b"{\"method\":\"initialized\"}\n").await.expect("write");
            let start = json!({"id": "2", "method": "thread/start", "params": {"cwd": cwd, "approvalPolicy": "untrusted",
                "approvalsReviewer": "user", "sandbox": "danger-full-access"}});
            request(&mut io, start, "2").await["thread"]["id"].as_str().expect("thread").to_string()
        }
        Agent::Gemini => {
            let init = json!({"jsonrpc": "2.0", "id": "1", "method": "initialize", "params": {"protocolVersion": 1,
                "clientCapabilities": {"fs": {"readTextFile": false, "writeTextFile": false}, "terminal": false}}});
            request(&mut io, init, "1").await;
            let new =
                json!({"jsonrpc": "2.0", "id": "2", "method": "session/new", "params": {"cwd": cwd, "mcpServers": []}});
            request(&mut io, new, "2").await["sessionId"].as_str().expect("session").to_string()
        }
    };
    Bare { child, stdin: io.0, lines: io.1, conversation }
}

async fn launch_overhead(agent: Agent, service: &Service, env: &[(String, String)], folder: &Path, n: usize) {
    let (mut bare, mut conduit) = (Vec::new(), Vec::new());
    // Conduit first each round: its first launch writes the policy file the bare run reads.
    for _ in 0..n {
        let (id, took) = service.launch_to_idle(agent).await;
        conduit.push(took);
        service.close(&id).await;
        let started = Instant::now();
        let mut b = bare_ready(agent, env, folder).await;
        bare.push(started.elapsed());
        drop(b.stdin);
        let _ = b.child.kill().await;
    }
    let (b, c) = (median(bare), median(conduit));
    println!(
        "launch {:<7} bare spawn+handshake {:>8.1} ms | through Conduit {:>8.1} ms | overhead {:>6.1} ms ({:.2}x)",
        agent.name(),
        ms(b),
        ms(c),
        ms(c.saturating_sub(b)),
        c.as_secs_f64() / b.as_secs_f64()
    );
}

fn is_delta(agent: Agent, line: &str) -> bool {
    match agent {
        Agent::Codex => line.contains("\"item/agentMessage/delta\""),
        Agent::Gemini => line.contains("\"agent_message_chunk\""),
    }
}

/// The bare baseline: the turn's delta lines from the CLI's stdout to `subscribers` counters.
async fn bare_relay(agent: Agent, env: &[(String, String)], folder: &Path, subscribers: usize) -> (Duration, usize) {
    let mut b = bare_ready(agent, env, folder).await;
    let (tx, _) = tokio::sync::broadcast::channel::<std::sync::Arc<String>>(1 << 16);
    let counters: Vec<_> = (0..subscribers)
        .map(|_| {
            let mut rx = tx.subscribe();
            tokio::spawn(async move {
                let mut n = 0usize;
                while let Ok(line) = rx.recv().await {
                    if line.is_empty() {
                        break;
                    }
                    n += 1;
                }
                n
            })
        })
        .collect();
    let prompt = match agent {
        Agent::Codex => json!({"id": "3", "method": "turn/start", "params": {"threadId": b.conversation,
            "input": [{"type": "text", "text": "stream the flood"}]}}),
        Agent::Gemini => {
            json!({"jsonrpc": "2.0", "id": "3", "method": "session/prompt", "params": {"sessionId": b.conversation,
            "prompt": [{"type": "text", "text": "stream the flood"}]}})
        }
    };
    let started = Instant::now();
    b.stdin.write_all(format!("{prompt}\n").as_bytes()).await.expect("write");
    while let Ok(Some(line)) = b.lines.next_line().await {
        if is_delta(agent, &line) {
            let _ = tx.send(std::sync::Arc::new(line));
        } else if line.contains("\"turn/completed\"") || (agent == Agent::Gemini && line.contains("\"stopReason\"")) {
            break;
        }
    }
    let _ = tx.send(std::sync::Arc::new(String::new()));
    let mut fewest = usize::MAX;
    for c in counters {
        fewest = fewest.min(c.await.unwrap_or(0));
    }
    let took = started.elapsed();
    let _ = b.child.kill().await;
    (took, fewest)
}

/// Through Conduit: SSE subscribers of the session count its `assistant_delta` events.
async fn conduit_relay(agent: Agent, service: &Service, subscribers: usize) -> (Duration, usize) {
    let (id, _) = service.launch_to_idle(agent).await;
    let mut readers = Vec::new();
    for _ in 0..subscribers {
        let res = service.http.get(format!("{}/api/sessions/{id}/stream", service.base)).send().await.expect("stream");
        readers.push(tokio::spawn(async move {
            let mut res = res;
            let (mut n, mut buffer) = (0usize, String::new());
            while let Ok(Some(chunk)) = res.chunk().await {
                buffer.push_str(&String::from_utf8_lossy(&chunk));
                while let Some(end) = buffer.find("\n\n") {
                    let frame: String = buffer.drain(..end + 2).collect();
                    if frame.contains("event: assistant_delta") {
                        n += 1;
                    } else if frame.contains("event: turn_result") {
                        return n;
                    }
                }
            }
            n
        }));
    }
    let started = Instant::now();
    let url = format!("{}/api/sessions/{id}/message", service.base);
    let res = service.http.post(url).json(&json!({"content": "stream the flood"})).send().await.expect("message");
    assert_eq!(res.status().as_u16(), 202);
    let mut fewest = usize::MAX;
    for r in readers {
        fewest = fewest.min(r.await.unwrap_or(0));
    }
    let took = started.elapsed();
    service.close(&id).await;
    (took, fewest)
}

#[actix_web::main]
async fn main() {
    let launches = env_usize("BENCH_LAUNCHES", 10);
    let deltas = env_usize("BENCH_DELTAS", 10_000);
    let subscribers = env_usize("BENCH_SUBSCRIBERS", 10);
    for agent in [Agent::Codex, Agent::Gemini] {
        let program = agent.program(Path::new("")).0;
        assert!(program.exists(), "run scripts/test-setup.sh: {} is missing", program.display());
    }
    let openai = FakeModel::start(Dialect::OpenAi).await;
    let gemini = FakeModel::start(Dialect::Gemini).await;
    let dir = tempfile::tempdir().expect("tempdir");
    let home = dir.path().join("home");
    let mut env = prepare_home(&home, &openai);
    env.retain(|(k, _)| k != "GOOGLE_GEMINI_BASE_URL");
    env.push(("GOOGLE_GEMINI_BASE_URL".into(), gemini.base_url.clone()));
    let service = start_service(dir.path(), &env).await;
    let folder = dir.path().join("root/p");
    println!("== launch overhead, median of {launches} (no sandbox)");
    for agent in [Agent::Codex, Agent::Gemini] {
        launch_overhead(agent, &service, &env, &folder, launches).await;
    }
    println!("== relay of a {deltas}-delta turn to {subscribers} subscribers");
    for agent in [Agent::Codex, Agent::Gemini] {
        let model = if agent == Agent::Codex { &openai } else { &gemini };
        let flood = || Reply::Slow { text: "d".into(), chunks: deltas, delay: Duration::ZERO };
        model.on("stream the flood", flood());
        let (bare, bare_seen) = bare_relay(agent, &env, &folder, subscribers).await;
        model.on("stream the flood", flood());
        let (through, seen) = conduit_relay(agent, &service, subscribers).await;
        println!(
            "relay  {:<7} bare {:>8.1} ms ({bare_seen} deltas each) | through Conduit {:>8.1} ms ({seen} each, fewest) | {:.2}x | lost {}",
            agent.name(),
            ms(bare),
            ms(through),
            through.as_secs_f64() / bare.as_secs_f64(),
            bare_seen.saturating_sub(seen)
        );
    }
}

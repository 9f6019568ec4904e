//! The `conduit` binary as its own process, with the real CLI's quiet environment, a temporary
//! HOME, database and project root. Used where the service's environment must be its own
//! (the CLI inherits it) or where the test signals the service.

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::{json, Value};

/// Where `scripts/test-setup.sh` installs test tools.
pub fn test_cache() -> PathBuf {
    if let Some(dir) = std::env::var_os("CONDUIT_TEST_CACHE") {
        return PathBuf::from(dir);
    }
    let base = std::env::var_os("XDG_CACHE_HOME")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(std::env::var_os("HOME").expect("HOME is set")).join(".cache"));
    base.join("conduit-test")
}

/// The real Claude Code CLI, pinned, installed by `scripts/test-setup.sh`.
pub fn real_cli() -> PathBuf {
    cli_version("2.1.330")
}

/// The older CLI that still accepts a local `--sdk-url` (the WebSocket bridge transport).
pub fn bridge_cli() -> PathBuf {
    cli_version("2.1.39")
}

fn cli_version(version: &str) -> PathBuf {
    let path = test_cache().join(format!("claude-code-{version}/node_modules/.bin/claude"));
    assert!(
        path.exists(),
        "the Claude Code CLI {version} is not installed at {}; run scripts/test-setup.sh",
        path.display()
    );
    path
}

/// The fake CLI (examples/fake_cli.rs), built by `scripts/test.sh` next to the test binary.
pub fn fake_cli() -> PathBuf {
    let exe = std::env::current_exe().expect("current exe");
    let dir = exe.parent().and_then(Path::parent).expect("target profile dir");
    let path = dir.join("examples/fake_cli");
    assert!(
        path.exists(),
        "the fake CLI is not built at {}; run scripts/test.sh, or cargo build --examples (with --release for a release test run)",
        path.display()
    );
    path
}

pub struct TestService {
    pub address: String,
    pub client: reqwest::Client,
    pub dir: ServiceDir,
    /// The project root (canonical).
    pub root: PathBuf,
    child: Child,
}

pub struct ServiceConfig {
    pub cli_path: PathBuf,
    /// The fake Messages API's base URL, when the real CLI is used.
    pub api_base_url: Option<String>,
    pub env: Vec<(String, String)>,
    /// `CONDUIT_AUTH_TOKEN`, which the test's client then sends with every request.
    pub bearer: Option<String>,
}

impl ServiceConfig {
    pub fn new(cli_path: PathBuf) -> Self {
        ServiceConfig { cli_path, api_base_url: None, env: Vec::new(), bearer: None }
    }

    /// The service requires `token` (`CONDUIT_AUTH_TOKEN`); the test's client sends it.
    pub fn authorized(mut self, token: &str) -> Self {
        self.bearer = Some(token.to_string());
        self.env("CONDUIT_AUTH_TOKEN", token)
    }

    pub fn api(mut self, base_url: &str) -> Self {
        self.api_base_url = Some(base_url.to_string());
        self
    }

    pub fn env(mut self, key: &str, value: &str) -> Self {
        self.env.push((key.to_string(), value.to_string()));
        self
    }
}

/// `conduit serve` with the CLI's quiet environment, on `dir`'s HOME, database and root.
pub fn command(dir: &Path, config: &ServiceConfig) -> Command {
    let home = dir.join("home");
    let root = dir.join("root");
    std::fs::create_dir_all(&home).expect("home");
    std::fs::create_dir_all(&root).expect("root");
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_conduit"));
    cmd.arg("serve")
        .env_clear()
        .env("PATH", std::env::var_os("PATH").unwrap_or_default())
        .env("HOME", &home)
        .env("CONDUIT_PORT", "0")
        .env("CONDUIT_DB_PATH", dir.join("data/conduit.db"))
        .env("CONDUIT_DATABASE_URL", super::database::database_url(&dir.join("data/conduit.db")))
        .env("CONDUIT_PROJECT_ROOT", &root)
        .env("CONDUIT_CLI_PATH", &config.cli_path)
        .env("LOG_LEVEL", "info")
        // The CLI's quiet environment: no traffic beyond the fake API on 127.0.0.1.
        .env("CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC", "1")
        .env("DISABLE_AUTOUPDATER", "1")
        .env("DISABLE_TELEMETRY", "1")
        .env("DISABLE_ERROR_REPORTING", "1")
        .env("ANTHROPIC_API_KEY", "sk-test-fake");
    if let Some(url) = &config.api_base_url {
        cmd.env("ANTHROPIC_BASE_URL", url);
    }
    for (k, v) in &config.env {
        cmd.env(k, v);
    }
    cmd
}

impl TestService {
    /// The pid of the service process.
    pub fn pid(&self) -> i32 {
        self.child.id() as i32
    }

    pub fn start(config: ServiceConfig) -> TestService {
        let dir = tempfile::tempdir().expect("tempdir");
        Self::start_in(dir, config)
    }

    /// Starts (or restarts) a service on an existing folder: same HOME, database and root.
    pub fn start_in(dir: impl Into<ServiceDir>, config: ServiceConfig) -> TestService {
        let mut dir: ServiceDir = dir.into();
        let root = dir.path().join("root");
        let log =
            std::fs::OpenOptions::new().create(true).append(true).open(dir.path().join("service.log")).expect("log");
        let mut cmd = command(dir.path(), &config);
        cmd.stdin(Stdio::null()).stdout(Stdio::piped()).stderr(log);
        let mut child = cmd.spawn().expect("spawn conduit");
        let stdout = child.stdout.take().expect("stdout");
        let mut line = String::new();
        BufReader::new(stdout).read_line(&mut line).expect("read the listening line");
        let address = line.trim().strip_prefix("conduit listening on ").unwrap_or_else(|| {
            let log = std::fs::read_to_string(dir.path().join("service.log")).unwrap_or_default();
            panic!("the service did not start: {line:?}\n{log}")
        });
        dir.note_cgroups();
        let mut headers = reqwest::header::HeaderMap::new();
        if let Some(token) = &config.bearer {
            let value = reqwest::header::HeaderValue::from_str(&format!("Bearer {token}")).expect("a header value");
            headers.insert(reqwest::header::AUTHORIZATION, value);
        }
        TestService {
            address: address.to_string(),
            // Idle connections are dropped before the server's 5 s keep-alive closes them.
            client: reqwest::Client::builder()
                .pool_idle_timeout(Duration::from_secs(2))
                .default_headers(headers)
                .build()
                .expect("client"),
            root: std::fs::canonicalize(&root).expect("root"),
            dir,
            child,
        }
    }

    pub fn url(&self, path: &str) -> String {
        format!("{}{}", self.address, path)
    }

    pub fn log(&self) -> String {
        std::fs::read_to_string(self.dir.path().join("service.log")).unwrap_or_default()
    }

    pub async fn get(&self, path: &str) -> reqwest::Response {
        self.client.get(self.url(path)).send().await.expect("request")
    }

    pub async fn post(&self, path: &str, body: Value) -> reqwest::Response {
        self.client.post(self.url(path)).json(&body).send().await.expect("request")
    }

    pub async fn delete(&self, path: &str) -> reqwest::Response {
        self.client.delete(self.url(path)).send().await.expect("request")
    }

    pub async fn get_json(&self, path: &str) -> Value {
        let res = self.get(path).await;
        assert!(res.status().is_success(), "GET {path}: {}", res.status());
        res.json().await.expect("json")
    }

    /// A project on a fresh folder under the root; returns its id.
    pub async fn project(&self, name: &str) -> String {
        std::fs::create_dir_all(self.root.join(name)).expect("project folder");
        let res = self.post("/api/projects", json!({"name": name, "folder_path": name})).await;
        assert_eq!(res.status().as_u16(), 201, "create project");
        let body: Value = res.json().await.expect("json");
        body["id"].as_str().expect("id").to_string()
    }

    /// Launches a session and returns its JSON (201 expected).
    pub async fn launch(&self, project: &str, body: Value) -> Value {
        let res = self.post(&format!("/api/projects/{project}/sessions"), body).await;
        let status = res.status().as_u16();
        let answer: Value = res.json().await.expect("json");
        assert_eq!(status, 201, "launch: {answer}");
        answer
    }

    /// Polls a session until `done` holds (or fails after `within`).
    pub async fn wait_for(&self, session: &str, within: Duration, done: impl Fn(&Value) -> bool) -> Value {
        let deadline = Instant::now() + within;
        loop {
            let row = self.get_json(&format!("/api/sessions/{session}")).await;
            if done(&row) {
                return row;
            }
            assert!(Instant::now() < deadline, "session never reached the expected state; last: {row}\n{}", self.log());
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }

    pub async fn wait_status(&self, session: &str, status: &str, within: Duration) -> Value {
        self.wait_for(session, within, |row| row["status"] == status).await
    }

    /// SIGTERM, then waits for the process to exit; returns how long it took and its status.
    pub fn terminate(&mut self) -> (Duration, std::process::ExitStatus) {
        let started = Instant::now();
        // SAFETY: signalling our own child by pid.
        unsafe { libc::kill(self.child.id() as i32, libc::SIGTERM) };
        let status = self.child.wait().expect("wait");
        (started.elapsed(), status)
    }

    /// SIGKILL (a crash): nothing gets a chance to clean up.
    pub fn crash(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }

    /// Hands back the folder, for a restart on the same database.
    pub fn into_dir(mut self) -> ServiceDir {
        self.crash();
        std::mem::replace(&mut self.dir, ServiceDir::from(tempfile::tempdir().expect("tempdir")))
    }
}

impl Drop for TestService {
    /// Stops the service; its folder (dropped next) ends whatever it left behind.
    fn drop(&mut self) {
        self.stop();
    }
}

/// A service's folder (HOME, database, project root). It outlives one service when a test
/// restarts on the same database, so it, not the service, ends whatever a service left behind
/// (it crashed, was killed, or left its sessions to their keepers, as a stop does by default):
/// the cgroups (keepers' included) of every service that ran on it, passed or failed. The
/// folders are noted when each service starts, as the lock file names them: the file itself
/// may be gone by the end (a test that mounted a disk over the data folder unmounts it first).
pub struct ServiceDir {
    dir: tempfile::TempDir,
    cgroups: Vec<PathBuf>,
    /// The cgroup v1 folders (hybrid hosts) that limited their CLIs.
    controllers: Vec<PathBuf>,
}

impl From<tempfile::TempDir> for ServiceDir {
    fn from(dir: tempfile::TempDir) -> ServiceDir {
        ServiceDir { dir, cgroups: Vec::new(), controllers: Vec::new() }
    }
}

impl ServiceDir {
    pub fn path(&self) -> &Path {
        self.dir.path()
    }

    /// Notes the cgroup folder the service now running on this folder uses.
    fn note_cgroups(&mut self) {
        let Some(holder) = conduit::db::lock::recorded_holder(&self.path().join("data/conduit.db")) else { return };
        if let Some(dir) = holder.cgroup {
            if !self.cgroups.contains(&dir) {
                self.cgroups.push(dir);
            }
        }
        for dir in holder.controllers {
            if !self.controllers.contains(&dir) {
                self.controllers.push(dir);
            }
        }
    }
}

impl Drop for ServiceDir {
    fn drop(&mut self) {
        self.note_cgroups();
        for dir in self.cgroups.drain(..) {
            conduit::process::cgroup::CgroupRoot::at(dir).clear(false);
        }
        // The v1 folders that limited its CLIs (hybrid hosts), emptied by the kill above.
        conduit::process::limits::clear_v1(&self.controllers, &Default::default(), false);
    }
}

impl TestService {
    fn stop(&mut self) {
        if let Ok(None) = self.child.try_wait() {
            // SAFETY: signalling our own child by pid.
            unsafe { libc::kill(self.child.id() as i32, libc::SIGTERM) };
            let deadline = Instant::now() + Duration::from_secs(8);
            while Instant::now() < deadline {
                if let Ok(Some(_)) = self.child.try_wait() {
                    return;
                }
                std::thread::sleep(Duration::from_millis(20));
            }
            let _ = self.child.kill();
            let _ = self.child.wait();
        }
    }
}

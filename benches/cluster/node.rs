//! The benchmark's `conduit serve` processes: cluster nodes on one PostgreSQL database (as
//! tests/api/cluster.rs starts them), or a single service on a database of its own for the
//! baselines. Each on 127.0.0.1 with a port picked for it, its log in its own folder; all of a
//! run's nodes share one project root, so every node reaches every project's folder.
//!
//! Nothing outlives the run: a node is stopped when dropped (SIGTERM, so it ends its CLIs, then
//! SIGKILL after a while and its cgroups cleared), which a panic unwinding through the benchmark
//! does too; and each node is told by the kernel (PR_SET_PDEATHSIG) to stop should the benchmark
//! itself be killed.

use std::io::BufRead;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::{json, Value};

use crate::common;

pub const SECRET: &str = "a-cluster-secret-for-the-benchmark";
/// The header a node trusts as coming from another node: a launch carrying it is not placed
/// elsewhere, so the benchmark can pin sessions on a node.
pub const SECRET_HEADER: &str = "x-conduit-cluster-secret";
/// The default lease (10 s): what an operator would run.
const LEASE_MS: &str = "10000";

/// The PostgreSQL server `scripts/with-postgres.sh` started, and a fresh database on it.
pub fn fresh_database(prefix: &str) -> String {
    let server = common::database::postgres_server().expect("CONDUIT_TEST_POSTGRES_URL (scripts/with-postgres.sh)");
    common::database::create_database(&server, &format!("{prefix}_{}", uuid::Uuid::new_v4().simple()))
}

pub struct Node {
    pub name: String,
    pub base: String,
    pub ws_base: String,
    pub http: reqwest::Client,
    /// A cluster node (not a single service).
    clustered: bool,
    child: Child,
    dir: tempfile::TempDir,
}

fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0").and_then(|l| l.local_addr()).map(|a| a.port()).expect("a free port")
}

impl Node {
    /// `conduit serve` on `database_url`, with `root` as its project root, room for
    /// `max_sessions` sessions; a cluster node named `name` when `cluster`.
    pub fn start(name: &str, database_url: &str, root: &Path, max_sessions: usize, cluster: bool) -> Node {
        let dir = tempfile::tempdir().expect("tempdir");
        let home = dir.path().join("home");
        std::fs::create_dir_all(&home).expect("home");
        let log = std::fs::File::create(dir.path().join("node.log")).expect("log");
        let port = free_port();
        let mut cmd = Command::new(env!("CARGO_BIN_EXE_conduit"));
        cmd.arg("serve")
            .env_clear()
            .env("PATH", std::env::var_os("PATH").unwrap_or_default())
            .env("HOME", &home)
            .env("CONDUIT_HOST", "127.0.0.1")
            .env("CONDUIT_PORT", port.to_string())
            .env("CONDUIT_DB_PATH", dir.path().join("data/conduit.db"))
            .env("CONDUIT_DATABASE_URL", database_url)
            .env("CONDUIT_PROJECT_ROOT", root)
            .env("CONDUIT_CLI_PATH", common::fake_cli())
            .env("CONDUIT_MAX_SESSIONS_GLOBAL", max_sessions.to_string())
            .env("LOG_LEVEL", "warn")
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(log);
        if cluster {
            cmd.env("CONDUIT_CLUSTER", "1")
                .env("CONDUIT_NODE_NAME", name)
                .env("CONDUIT_NODE_ADDRESS", format!("http://127.0.0.1:{port}"))
                .env("CONDUIT_CLUSTER_SECRET", SECRET)
                .env("CONDUIT_CLUSTER_LEASE_MS", LEASE_MS);
        }
        // SAFETY: prctl only, between fork and exec. The node is started from the benchmark's
        // main thread (which lives as long as the benchmark), the thread PDEATHSIG follows.
        unsafe {
            cmd.pre_exec(|| {
                libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGTERM);
                Ok(())
            });
        }
        let mut child = cmd.spawn().expect("spawn conduit (cargo build --release first)");
        let mut stdout = std::io::BufReader::new(child.stdout.take().expect("stdout"));
        let mut line = String::new();
        let _ = stdout.read_line(&mut line);
        let Some(base) = line.trim().strip_prefix("conduit listening on ").map(str::to_string) else {
            let _ = child.kill();
            let _ = child.wait();
            let log = std::fs::read_to_string(dir.path().join("node.log")).unwrap_or_default();
            panic!("node {name} did not start: {line:?}\n{log}");
        };
        // Whatever else it prints is read, so a write to its stdout never fails.
        std::thread::spawn(move || for _ in stdout.lines() {});
        // Idle connections are dropped before the server's 5 s keep-alive closes them.
        let http = reqwest::Client::builder()
            .pool_idle_timeout(Duration::from_secs(2))
            .pool_max_idle_per_host(64)
            .build()
            .expect("client");
        Node {
            name: name.to_string(),
            ws_base: base.replacen("http://", "ws://", 1),
            base,
            http,
            clustered: cluster,
            child,
            dir,
        }
    }

    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// Resident memory, in KiB.
    pub fn rss_kib(&self) -> u64 {
        common::rss_kib_of_pid(self.pid())
    }

    pub fn log_tail(&self) -> String {
        let log = std::fs::read_to_string(self.dir.path().join("node.log")).unwrap_or_default();
        let lines: Vec<&str> = log.lines().collect();
        lines[lines.len().saturating_sub(20)..].join("\n")
    }

    fn db_path(&self) -> PathBuf {
        self.dir.path().join("data/conduit.db")
    }

    pub async fn get_json(&self, path: &str) -> Value {
        let res = self.http.get(format!("{}{path}", self.base)).send().await.expect("GET");
        assert!(res.status().is_success(), "GET {path} on {}: {}", self.name, res.status());
        res.json().await.expect("json")
    }

    /// A project `name` on a fresh folder of `root`, with room for `max_sessions` (1-1000).
    pub async fn project(&self, root: &Path, name: &str, max_sessions: usize) -> String {
        let folder = root.join(name);
        std::fs::create_dir_all(&folder).expect("project folder");
        let res = self
            .http
            .post(format!("{}/api/projects", self.base))
            .json(&json!({"name": name, "folder_path": folder, "max_sessions": max_sessions.clamp(1, 1000)}))
            .send()
            .await
            .expect("create project");
        assert_eq!(res.status().as_u16(), 201, "create project: {}", res.text().await.unwrap_or_default());
        let body: Value = res.json().await.expect("json");
        body["id"].as_str().expect("project id").to_string()
    }

    /// Launches a session of the fake CLI playing `model` (the default one when empty);
    /// `pinned`: on this node whatever placement would say (a single service has no
    /// placement). Returns the session's id and owner.
    pub async fn launch(&self, project: &str, model: &str, pinned: bool) -> (String, String) {
        match self.try_launch(project, model, pinned).await {
            Ok(launched) => launched,
            Err(e) => panic!("{e}\n{}", self.log_tail()),
        }
    }

    /// [`Node::launch`], with what a refused launch was answered.
    pub async fn try_launch(&self, project: &str, model: &str, pinned: bool) -> Result<(String, String), String> {
        let body = if model.is_empty() { json!({}) } else { json!({ "model": model }) };
        let mut req = self.http.post(format!("{}/api/projects/{project}/sessions", self.base)).json(&body);
        if pinned && self.clustered {
            req = req.header(SECRET_HEADER, SECRET);
        }
        let res = req.send().await.map_err(|e| format!("launch on {}: {e}", self.name))?;
        let status = res.status().as_u16();
        let text = res.text().await.unwrap_or_default();
        if status != 201 {
            return Err(format!("launch on {}: {status} {text}", self.name));
        }
        let v: Value = serde_json::from_str(&text).expect("json");
        let owner = v["owner_node"].as_str().unwrap_or(&self.name).to_string();
        Ok((v["id"].as_str().expect("id").to_string(), owner))
    }

    /// Polls the session (any node reads it) every `every` until it is idle.
    pub async fn wait_idle(&self, id: &str, every: Duration) {
        let deadline = Instant::now() + Duration::from_secs(120);
        loop {
            let row = self.get_json(&format!("/api/sessions/{id}")).await;
            if row["status"] == "idle" {
                return;
            }
            assert!(row["status"] != "error" && Instant::now() < deadline, "session {id}: {row}\n{}", self.log_tail());
            tokio::time::sleep(every).await;
        }
    }

    /// Closes a session (forwarded to its owner when another node runs it).
    pub async fn close(&self, id: &str) {
        let _ = self.http.delete(format!("{}/api/sessions/{id}", self.base)).send().await;
    }

    pub async fn message(&self, id: &str, content: &str) {
        let res = self
            .http
            .post(format!("{}/api/sessions/{id}/message", self.base))
            .json(&json!({ "content": content }))
            .send()
            .await
            .expect("send");
        assert_eq!(res.status().as_u16(), 202, "message to {id} on {}", self.name);
    }
}

impl Drop for Node {
    /// SIGTERM (the node ends its CLIs and leaves the cluster), then SIGKILL if it takes too
    /// long, and the cgroups it recorded are cleared.
    fn drop(&mut self) {
        if std::thread::panicking() {
            eprintln!("node {}'s log, its end:\n{}", self.name, self.log_tail());
        }
        // SAFETY: signalling our own child by pid.
        unsafe { libc::kill(self.child.id() as i32, libc::SIGTERM) };
        let deadline = Instant::now() + Duration::from_secs(30);
        while Instant::now() < deadline {
            if let Ok(Some(_)) = self.child.try_wait() {
                break;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        let _ = self.child.kill();
        let _ = self.child.wait();
        if let Some(dir) = conduit::db::lock::recorded_holder(&self.db_path()).and_then(|h| h.cgroup) {
            conduit::process::cgroup::CgroupRoot::at(dir).clear(false);
        }
    }
}

/// Three nodes `a`, `b`, `c` on one fresh database, once all three are live and one leads.
pub struct Cluster {
    pub nodes: Vec<Node>,
    pub root: tempfile::TempDir,
}

impl Cluster {
    pub async fn start(max_sessions: usize) -> Cluster {
        let url = fresh_database("cluster");
        let root = tempfile::tempdir().expect("root");
        let nodes: Vec<Node> =
            ["a", "b", "c"].iter().map(|n| Node::start(n, &url, root.path(), max_sessions, true)).collect();
        let deadline = Instant::now() + Duration::from_secs(30);
        loop {
            let view = nodes[0].get_json("/api/cluster").await;
            let all = view["nodes"].as_array().map(Vec::as_slice).unwrap_or_default();
            let live = all.iter().filter(|n| n["state"] == "live").count();
            let leaders = all.iter().filter(|n| n["state"] == "live" && n["role"] == "leader").count();
            if live == 3 && leaders == 1 {
                break;
            }
            assert!(Instant::now() < deadline, "the cluster never formed: {view}");
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        Cluster { nodes, root }
    }
}

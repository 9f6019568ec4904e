//! Helpers shared by the benchmarks.
// Each benchmark is its own crate and uses part of this module.
#![allow(dead_code)]

use std::path::{Path, PathBuf};

/// The database a benchmark's service uses: SQLite, or a fresh PostgreSQL database when run
/// under `scripts/with-postgres.sh` (`BENCH_POSTGRES=1 scripts/bench.sh ...`). The tests' own.
#[path = "../../tests/api/support/database.rs"]
pub mod database;

pub fn env_usize(key: &str, default: usize) -> usize {
    std::env::var(key).ok().and_then(|v| v.parse().ok()).unwrap_or(default)
}

/// examples/fake_cli, built by scripts/bench.sh next to the benchmark binary.
pub fn fake_cli() -> PathBuf {
    let exe = std::env::current_exe().expect("current exe");
    let dir = exe.parent().and_then(Path::parent).expect("target dir");
    let path = dir.join("examples/fake_cli");
    assert!(path.exists(), "build the fake CLI first: cargo build --release --examples ({})", path.display());
    path
}

/// This process's resident memory, in KiB.
pub fn rss_kib() -> u64 {
    rss_kib_of("/proc/self/status")
}

/// CPU time (user + system) another process has used so far, in seconds.
pub fn cpu_seconds_of_pid(pid: u32) -> f64 {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
    // Fields after the command name (which may hold spaces) start after the last ')'.
    let fields: Vec<&str> =
        stat.rsplit_once(')').map(|(_, rest)| rest.split_whitespace().collect()).unwrap_or_default();
    let ticks = |i: usize| fields.get(i).and_then(|v| v.parse::<u64>().ok()).unwrap_or(0);
    // utime and stime are fields 14 and 15 of stat, 12 and 13 after the name.
    // SAFETY: sysconf with a valid name.
    let hz = unsafe { libc::sysconf(libc::_SC_CLK_TCK) }.max(1) as f64;
    (ticks(11) + ticks(12)) as f64 / hz
}

/// Another process's resident memory, in KiB (0 once it is gone).
pub fn rss_kib_of_pid(pid: u32) -> u64 {
    rss_kib_of(&format!("/proc/{pid}/status"))
}

fn rss_kib_of(status: &str) -> u64 {
    std::fs::read_to_string(status)
        .unwrap_or_default()
        .lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))
        .and_then(|v| v.split_whitespace().next())
        .and_then(|n| n.parse().ok())
        .unwrap_or(0)
}

/// The service, in this process, on a loopback port, driving the fake CLI, with one project
/// (`project`) that may hold `max_sessions_global` sessions.
pub struct Started {
    pub base: String,
    pub port: u16,
    pub project: String,
    pub stats: std::sync::Arc<conduit::db::writer::WriterStats>,
    pub dir: tempfile::TempDir,
    containment: std::sync::Arc<conduit::process::cgroup::Containment>,
}

impl Drop for Started {
    /// The in-process service is never shut down (the benchmark just ends): whatever CLI it
    /// still runs ends here with its cgroup, and the cgroup folder goes too.
    fn drop(&mut self) {
        if let Some(root) = self.containment.root() {
            root.clear(false);
        }
    }
}

/// A store of its own in a temporary folder (kept while the folder lives), made by the
/// service's migrations, with one project `p` and one session `s` for rows to belong to.
pub async fn seeded_store() -> (tempfile::TempDir, conduit::db::Store) {
    let dir = tempfile::tempdir().expect("tempdir");
    let database = database::test_database(&dir.path().join("bench.db"));
    let store = conduit::db::Store::open_blocking(database, 2, 5000).await.expect("store");
    store
        .run(|conn| {
            use diesel::connection::SimpleConnection;
            conn.batch_execute(
                "INSERT INTO projects (id, name, folder_path, created_at, updated_at) VALUES ('p','p','/p','t','t');
                 INSERT INTO sessions (id, project_id, name, status, created_at, last_active_at) VALUES ('s','p','n','idle','t','t');",
            )
            .map_err(conduit::db::StoreError::from)
        })
        .await
        .expect("seed");
    (dir, store)
}

pub async fn start_service(max_sessions_global: u32) -> Started {
    let dir = tempfile::tempdir().expect("tempdir");
    let env = [("HOME".to_string(), dir.path().display().to_string())].into_iter().collect();
    let mut settings = conduit::config::Settings::load_from(None, &env).expect("settings");
    let mut inherited: std::collections::BTreeMap<String, String> = std::env::vars().collect();
    inherited.insert("HOME".to_string(), dir.path().display().to_string());
    settings.environment.inherited = std::sync::Arc::new(conduit::sandbox::environment::Inherited::new(&inherited));
    settings.port = 0;
    settings.db_path = dir.path().join("bench.db");
    settings.database = database::test_database(&settings.db_path);
    settings.project_root = dir.path().to_path_buf();
    settings.cli_path = fake_cli().display().to_string();
    settings.max_sessions_global = max_sessions_global;
    settings.log_level = "error".to_string();
    std::fs::create_dir_all(dir.path().join("p")).expect("project folder");
    let app = conduit::startup::Application::build(settings, serve_options()).await.expect("app");
    let port = app.port();
    let stats = app.writer_stats();
    let containment = app.containment();
    actix_web::rt::spawn(app.run_until_stopped());
    let base = format!("http://127.0.0.1:{port}");
    let project = bench_project(&base, max_sessions_global).await;
    Started { base, port, project, stats, dir, containment }
}

/// Creates the "bench" project (folder `p` of the service's folder); returns its id.
async fn bench_project(base: &str, max_sessions_global: u32) -> String {
    let project: serde_json::Value = reqwest::Client::new()
        .post(format!("{base}/api/projects"))
        .json(&serde_json::json!({"name": "bench", "folder_path": "p", "max_sessions": max_sessions_global.min(1000)}))
        .send()
        .await
        .expect("create project")
        .json()
        .await
        .expect("json");
    project["id"].as_str().expect("project id").to_string()
}

/// GETs `url` and reads its JSON body.
pub async fn get_json(http: &reqwest::Client, url: &str) -> serde_json::Value {
    http.get(url).send().await.expect("get").json().await.expect("json")
}

/// The service as its own process (the release binary), so its memory is measured apart from
/// the benchmark's clients and it gets the CPU a real deployment would.
pub struct ServiceProcess {
    pub base: String,
    pub port: u16,
    pub project: String,
    child: std::process::Child,
    pub dir: tempfile::TempDir,
    /// What it was started with, for a restart on the same folder.
    max_sessions_global: u32,
    settings: Vec<(String, String)>,
    /// The cgroup folders of every start on this folder (keepers' included) and the cgroup v1
    /// folders that limited their CLIs (hybrid hosts): removed when it is dropped.
    cgroups: Vec<PathBuf>,
    controllers: Vec<PathBuf>,
}

impl ServiceProcess {
    /// Starts `target/release/conduit serve` on a loopback port, driving the fake CLI, with
    /// `settings` as extra CONDUIT_* variables, and creates the "bench" project.
    pub async fn start(max_sessions_global: u32, settings: &[(&str, String)]) -> ServiceProcess {
        let dir = tempfile::tempdir().expect("tempdir");
        std::fs::create_dir_all(dir.path().join("p")).expect("project folder");
        let settings: Vec<(String, String)> = settings.iter().map(|(k, v)| (k.to_string(), v.clone())).collect();
        let (child, base) = Self::spawn(dir.path(), max_sessions_global, &settings);
        let port = base.rsplit(':').next().and_then(|p| p.parse().ok()).expect("port");
        let project = bench_project(&base, max_sessions_global).await;
        let (cgroups, controllers) = (Vec::new(), Vec::new());
        let mut service =
            ServiceProcess { base, port, project, child, dir, max_sessions_global, settings, cgroups, controllers };
        service.note_cgroups();
        service
    }

    /// Notes the cgroup folders of the service now running, for the clean-up.
    fn note_cgroups(&mut self) {
        let Some(holder) = conduit::db::lock::recorded_holder(&self.db_path()) else { return };
        if let Some(dir) = holder.cgroup.filter(|dir| !self.cgroups.contains(dir)) {
            self.cgroups.push(dir);
        }
        for dir in holder.controllers {
            if !self.controllers.contains(&dir) {
                self.controllers.push(dir);
            }
        }
    }

    /// Stops the service (SIGTERM; it waits for the process to end), then starts it again on
    /// the same folder and settings. Returns how long the new one took from its start to
    /// listening (it attaches to kept sessions before it listens).
    pub fn restart(&mut self) -> std::time::Duration {
        // SAFETY: signalling our own child by pid.
        unsafe { libc::kill(self.child.id() as i32, libc::SIGTERM) };
        let _ = self.child.wait();
        let started = std::time::Instant::now();
        let (child, base) = Self::spawn(self.dir.path(), self.max_sessions_global, &self.settings);
        let took = started.elapsed();
        self.child = child;
        self.port = base.rsplit(':').next().and_then(|p| p.parse().ok()).expect("port");
        self.base = base;
        self.note_cgroups();
        took
    }

    /// `conduit serve` on `dir`, up to its listening line: the child and its base URL.
    fn spawn(dir: &Path, max_sessions_global: u32, settings: &[(String, String)]) -> (std::process::Child, String) {
        use std::io::BufRead;
        let mut cmd = std::process::Command::new(env!("CARGO_BIN_EXE_conduit"));
        cmd.arg("serve")
            .env_clear()
            .env("PATH", std::env::var_os("PATH").unwrap_or_default())
            .env("HOME", dir)
            .env("CONDUIT_PORT", "0")
            .env("CONDUIT_DB_PATH", dir.join("bench.db"))
            .env("CONDUIT_DATABASE_URL", database::database_url(&dir.join("bench.db")))
            .env("CONDUIT_PROJECT_ROOT", dir)
            .env("CONDUIT_CLI_PATH", fake_cli())
            .env("CONDUIT_MAX_SESSIONS_GLOBAL", max_sessions_global.to_string())
            .env("LOG_LEVEL", "error")
            .stdin(std::process::Stdio::null())
            .stdout(std::process::Stdio::piped());
        for (key, value) in settings {
            cmd.env(format!("CONDUIT_{}", key.to_ascii_uppercase()), value);
        }
        let mut child = cmd.spawn().expect("spawn conduit (cargo build --release first)");
        let stdout = child.stdout.take().expect("stdout");
        let mut line = String::new();
        std::io::BufReader::new(stdout).read_line(&mut line).expect("the listening line");
        let base = line.trim().strip_prefix("conduit listening on ").expect("conduit listening on ...").to_string();
        (child, base)
    }

    /// The service's resident memory, in KiB.
    pub fn rss_kib(&self) -> u64 {
        rss_kib_of_pid(self.child.id())
    }

    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    pub fn db_path(&self) -> PathBuf {
        self.dir.path().join("bench.db")
    }

    /// kill -9: nothing gets a chance to clean up or store what waits.
    /// Launches a session of the fake CLI playing `model` and waits until it is idle.
    pub async fn idle_session(&self, http: &reqwest::Client, model: &str) -> String {
        self.idle_session_every(http, model, std::time::Duration::from_millis(5)).await
    }

    /// The same, looking every `poll` (a fine one for timing a launch).
    pub async fn idle_session_every(&self, http: &reqwest::Client, model: &str, poll: std::time::Duration) -> String {
        let launched: serde_json::Value = http
            .post(format!("{}/api/projects/{}/sessions", self.base, self.project))
            .json(&serde_json::json!({ "model": model }))
            .send()
            .await
            .expect("launch")
            .json()
            .await
            .expect("json");
        let id = launched["id"].as_str().expect("id").to_string();
        loop {
            let row = get_json(http, &format!("{}/api/sessions/{id}", self.base)).await;
            if row["status"] == "idle" {
                return id;
            }
            assert_ne!(row["status"], "error", "{row}");
            tokio::time::sleep(poll).await;
        }
    }

    pub fn crash(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Drop for ServiceProcess {
    /// SIGTERM (the service ends its CLIs), then whatever a crash left: nothing outlives the run.
    fn drop(&mut self) {
        // SAFETY: signalling our own child by pid.
        unsafe { libc::kill(self.child.id() as i32, libc::SIGTERM) };
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(15);
        while std::time::Instant::now() < deadline {
            if let Ok(Some(_)) = self.child.try_wait() {
                break;
            }
            std::thread::sleep(std::time::Duration::from_millis(20));
        }
        let _ = self.child.kill();
        let _ = self.child.wait();
        self.note_cgroups();
        for dir in self.cgroups.drain(..) {
            conduit::process::cgroup::CgroupRoot::at(dir).clear(false);
        }
        conduit::process::limits::clear_v1(&self.controllers, &Default::default(), false);
    }
}

/// The options of an in-process service: sandboxes' networks are set up by the built binary.
pub fn serve_options() -> conduit::startup::ServeOptions {
    conduit::startup::ServeOptions {
        launcher: Some(env!("CARGO_BIN_EXE_conduit").into()),
        ..conduit::startup::ServeOptions::default()
    }
}

//! `spawn_app()` and small request helpers shared by the integration tests.

use std::path::{Path, PathBuf};

use conduit::config::Settings;
use conduit::startup::{Application, ServeOptions};
use serde_json::Value;

pub struct TestApp {
    /// How the app contains its CLIs: dropping the test ends whatever it left running.
    containment: std::sync::Arc<conduit::process::cgroup::Containment>,
    /// Its folders in the cgroup v1 hierarchies that limit sessions (hybrid hosts), removed too.
    controllers: std::sync::Arc<conduit::process::limits::Controllers>,
    pub address: String,
    pub port: u16,
    pub client: reqwest::Client,
    /// The project root the app is confined to (canonical).
    pub root: PathBuf,
    /// Holds the temporary folder (database, root) alive for the test's duration.
    pub dir: tempfile::TempDir,
}

/// Settings for a test: port 0, a fresh database and project root under `dir`; the processes it
/// starts inherit what the test's own environment has for them (PATH, ...), with `dir` as HOME.
pub fn test_settings(dir: &Path) -> Settings {
    let env = [("HOME".to_string(), dir.display().to_string())].into_iter().collect();
    let mut settings = Settings::load_from(None, &env).expect("default settings are valid");
    let mut inherited: std::collections::BTreeMap<String, String> = std::env::vars().collect();
    inherited.insert("HOME".to_string(), dir.display().to_string());
    settings.environment.inherited = std::sync::Arc::new(conduit::sandbox::environment::Inherited::new(&inherited));
    settings.port = 0;
    settings.db_path = dir.join("data").join("conduit.db");
    settings.database = crate::support::database::test_database(&settings.db_path);
    settings.project_root = dir.join("root");
    settings.cli_path = dir.join("no-such-cli").display().to_string();
    settings.log_level = "warn".to_string();
    settings
}

/// The options of an in-process service: sandboxes' networks are set up by the built binary
/// (this test binary has no `sandbox-net`).
pub fn serve_options() -> ServeOptions {
    ServeOptions { launcher: Some(env!("CARGO_BIN_EXE_conduit").into()), ..ServeOptions::default() }
}

pub async fn spawn_app() -> TestApp {
    spawn_app_with(|_| {}).await
}

/// Starts the app after `customize` adjusts its settings.
pub async fn spawn_app_with(customize: impl FnOnce(&mut Settings)) -> TestApp {
    let dir = tempfile::tempdir().expect("tempdir");
    std::fs::create_dir_all(dir.path().join("root")).expect("root");
    let mut settings = test_settings(dir.path());
    customize(&mut settings);
    let app = Application::build(settings, serve_options()).await.expect("app builds");
    let port = app.port();
    let (containment, controllers) = (app.containment(), app.controllers());
    actix_web::rt::spawn(app.run_until_stopped());
    TestApp {
        containment,
        controllers,
        address: format!("http://127.0.0.1:{port}"),
        port,
        client: reqwest::Client::builder()
            .redirect(reqwest::redirect::Policy::none())
            // Idle connections are dropped before the server's 5 s keep-alive closes them.
            .pool_idle_timeout(std::time::Duration::from_secs(2))
            .build()
            .expect("client"),
        root: std::fs::canonicalize(dir.path().join("root")).expect("canonical root"),
        dir,
    }
}

impl Drop for TestApp {
    /// The app is not shut down (its runtime just ends with the test, passed or failed):
    /// whatever CLI it still runs is killed with its cgroup here.
    fn drop(&mut self) {
        let Some(root) = self.containment.root() else {
            self.controllers.clear_except(&Default::default(), false);
            return;
        };
        // The app's actors still run while this happens: a CLI or agent run starting between
        // the listing and the folder's removal keeps the folder, so go again until it is gone.
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(5);
        while root.path().exists() && std::time::Instant::now() < deadline {
            root.clear(false);
            std::thread::sleep(std::time::Duration::from_millis(10));
        }
        // Emptied by the kill above: only the folders are left to remove.
        self.controllers.clear_except(&Default::default(), false);
    }
}

impl TestApp {
    pub fn url(&self, path: &str) -> String {
        format!("{}{}", self.address, path)
    }

    pub async fn get(&self, path: &str) -> reqwest::Response {
        self.client.get(self.url(path)).send().await.expect("request")
    }

    pub async fn post_json(&self, path: &str, body: &Value) -> reqwest::Response {
        self.client.post(self.url(path)).json(body).send().await.expect("request")
    }

    pub async fn put_json(&self, path: &str, body: &Value) -> reqwest::Response {
        self.client.put(self.url(path)).json(body).send().await.expect("request")
    }

    pub async fn delete(&self, path: &str) -> reqwest::Response {
        self.client.delete(self.url(path)).send().await.expect("request")
    }

    /// Makes `rel` (and parents) under the project root; returns its canonical path.
    pub fn mkdir(&self, rel: &str) -> PathBuf {
        let p = self.root.join(rel);
        std::fs::create_dir_all(&p).expect("mkdir");
        std::fs::canonicalize(p).expect("canonical")
    }

    /// Creates a folder and a project on it; returns the project JSON.
    pub async fn create_project(&self, name: &str, rel: &str) -> Value {
        let folder = self.mkdir(rel);
        let res = self.post_json("/api/projects", &serde_json::json!({"name": name, "folder_path": folder})).await;
        assert_eq!(res.status().as_u16(), 201, "create project");
        res.json().await.expect("json")
    }
}

/// Asserts the standard error body and returns its `code`.
pub async fn error_code(res: reqwest::Response, status: u16) -> String {
    assert_eq!(res.status().as_u16(), status, "status");
    let ct = res.headers().get("content-type").and_then(|v| v.to_str().ok()).unwrap_or("").to_string();
    assert!(ct.starts_with("application/json"), "error content type {ct:?}");
    let body: Value = res.json().await.expect("error body is JSON");
    let code = body["error"]["code"].as_str().expect("error.code").to_string();
    assert!(body["error"]["message"].as_str().is_some_and(|m| !m.is_empty()), "error.message: {body}");
    code
}

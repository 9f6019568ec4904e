//! Helpers shared by the benchmarks.
// Each benchmark is its own crate and uses part of this module.
#![allow(dead_code)]

use std::path::{Path, PathBuf};

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
    std::fs::read_to_string("/proc/self/status")
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
}

pub async fn start_service(max_sessions_global: u32) -> Started {
    let dir = tempfile::tempdir().expect("tempdir");
    let env = [("HOME".to_string(), dir.path().display().to_string())].into_iter().collect();
    let mut settings = conduit::config::Settings::load_from(None, &env).expect("settings");
    settings.port = 0;
    settings.db_path = dir.path().join("bench.db");
    settings.project_root = dir.path().to_path_buf();
    settings.cli_path = fake_cli().display().to_string();
    settings.max_sessions_global = max_sessions_global;
    settings.log_level = "error".to_string();
    std::fs::create_dir_all(dir.path().join("p")).expect("project folder");
    let app =
        conduit::startup::Application::build(settings, conduit::startup::ServeOptions::default()).await.expect("app");
    let port = app.port();
    let stats = app.writer_stats();
    actix_web::rt::spawn(app.run_until_stopped());
    let base = format!("http://127.0.0.1:{port}");
    let project: serde_json::Value = reqwest::Client::new()
        .post(format!("{base}/api/projects"))
        .json(&serde_json::json!({"name": "bench", "folder_path": "p", "max_sessions": max_sessions_global.min(1000)}))
        .send()
        .await
        .expect("create project")
        .json()
        .await
        .expect("json");
    let project = project["id"].as_str().expect("project id").to_string();
    Started { base, port, project, stats, dir }
}

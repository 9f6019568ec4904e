//! `GET /api/health`: shape, CLI detection, counts and settings it reports.

use std::collections::BTreeSet;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};

use serde_json::Value;

use crate::helpers::{spawn_app, spawn_app_with, TestApp};

async fn health(app: &TestApp) -> Value {
    let res = app.get("/api/health").await;
    assert_eq!(res.status().as_u16(), 200, "health answers 200 unless the database is down");
    let ct = res.headers().get("content-type").and_then(|v| v.to_str().ok()).unwrap_or("").to_string();
    assert!(ct.starts_with("application/json"), "content type {ct:?}");
    res.json().await.expect("health JSON")
}

fn keys(v: &Value) -> BTreeSet<&str> {
    v.as_object().expect("an object").keys().map(String::as_str).collect()
}

/// The temporary folder an app's settings live in (the parent of its project root).
fn settings_dir(project_root: &Path) -> PathBuf {
    project_root.parent().expect("project root has a parent").to_path_buf()
}

/// Writes a file with the given mode into `dir` and returns its path as a string.
fn write_file(dir: &Path, name: &str, content: &str, mode: u32) -> String {
    let path = dir.join(name);
    std::fs::write(&path, content).expect("write file");
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(mode)).expect("chmod");
    path.to_str().expect("utf-8 path").to_string()
}

#[actix_web::test]
async fn has_exactly_the_documented_keys() {
    let app = spawn_app().await;
    let body = health(&app).await;
    let expected: BTreeSet<&str> = [
        "status",
        "checks",
        "uptime_seconds",
        "session_capacity_pct",
        "active_sessions",
        "max_sessions",
        "projects",
        "event_subscribers",
        "version",
        "cluster",
    ]
    .into_iter()
    .collect();
    assert_eq!(keys(&body), expected);
    assert!(body["cluster"].is_null(), "a single service: {body}");
    let checks = [
        "cli_available",
        "database_ok",
        "storage_writable",
        "storage_error",
        "unstored_lines",
        "rejected_writes",
        "process_containment",
        "containment_note",
        "stream_history_bytes",
        "sandbox",
        "session_limits",
        "agents",
    ];
    assert_eq!(keys(&body["checks"]), checks.into_iter().collect());
    assert_eq!(body["checks"]["unstored_lines"], 0);
    assert_eq!(body["checks"]["storage_writable"], true);
    assert!(body["checks"]["storage_error"].is_null(), "{body}");
    assert_eq!(body["checks"]["rejected_writes"], 0);
    assert!(matches!(body["checks"]["process_containment"].as_str(), Some("cgroup" | "process_group")), "{body}");
    let sandbox = [
        "default_mode",
        "mechanism",
        "available",
        "bwrap_path",
        "version",
        "problem",
        "landlock_abi",
        "network_limit_available",
        "network",
    ];
    assert_eq!(keys(&body["checks"]["sandbox"]), sandbox.into_iter().collect());
    assert_eq!(body["checks"]["sandbox"]["mechanism"], "bubblewrap");
    let network = ["mechanism", "available", "pasta_path", "problem"];
    assert_eq!(keys(&body["checks"]["sandbox"]["network"]), network.into_iter().collect());
    assert_eq!(body["checks"]["sandbox"]["network"]["mechanism"], "pasta");
    assert_eq!(body["checks"]["sandbox"]["default_mode"], "workspace");
    let limits = &body["checks"]["session_limits"];
    let keys_of_limits = ["mechanism", "controllers", "note", "settings_problem"];
    assert_eq!(keys(limits), keys_of_limits.into_iter().collect());
    assert!(matches!(limits["mechanism"].as_str(), Some("cgroup_v2" | "cgroup_v1" | "none")), "{body}");
    assert!(limits["controllers"].is_array() && limits["settings_problem"].is_null(), "{body}");

    assert!(body["uptime_seconds"].is_u64(), "{body}");
    assert!(body["session_capacity_pct"].is_number(), "{body}");
    assert_eq!(body["session_capacity_pct"].as_f64(), Some(0.0));
    assert_eq!(body["active_sessions"], 0);
    assert_eq!(body["event_subscribers"], 0);
    assert_eq!(body["projects"], 0);
    assert_eq!(body["version"], env!("CARGO_PKG_VERSION"));
    assert_eq!(body["checks"]["database_ok"], true);
}

#[actix_web::test]
async fn a_missing_cli_makes_it_degraded() {
    let app = spawn_app().await; // the test settings point cli_path at a file that does not exist
    let body = health(&app).await;
    assert_eq!(body["status"], "degraded");
    assert_eq!(body["checks"]["cli_available"], false);
    assert_eq!(body["checks"]["database_ok"], true);
}

#[actix_web::test]
async fn an_executable_cli_script_makes_it_healthy() {
    let app = spawn_app_with(|s| {
        let dir = settings_dir(&s.project_root);
        s.cli_path = write_file(&dir, "fake-claude", "#!/bin/sh\necho 1.0.0\n", 0o755);
    })
    .await;
    let body = health(&app).await;
    assert_eq!(body["status"], "healthy", "{body}");
    assert_eq!(body["checks"]["cli_available"], true);
}

#[actix_web::test]
async fn bin_sh_as_the_cli_makes_it_healthy() {
    let app = spawn_app_with(|s| s.cli_path = "/bin/sh".into()).await;
    let body = health(&app).await;
    assert_eq!(body["status"], "healthy", "{body}");
    assert_eq!(body["checks"]["cli_available"], true);
}

#[actix_web::test]
async fn a_non_executable_cli_file_is_not_available() {
    let app = spawn_app_with(|s| {
        let dir = settings_dir(&s.project_root);
        s.cli_path = write_file(&dir, "not-executable", "#!/bin/sh\n", 0o644);
    })
    .await;
    let body = health(&app).await;
    assert_eq!(body["checks"]["cli_available"], false);
    assert_eq!(body["status"], "degraded");
}

#[actix_web::test]
async fn a_directory_as_the_cli_is_not_available() {
    let app = spawn_app_with(|s| s.cli_path = settings_dir(&s.project_root).display().to_string()).await;
    let body = health(&app).await;
    assert_eq!(body["checks"]["cli_available"], false, "a folder is not an executable even with its x bits");
    assert_eq!(body["status"], "degraded");
}

#[actix_web::test]
async fn the_project_count_follows_creations_and_deletions() {
    let app = spawn_app().await;
    assert_eq!(health(&app).await["projects"], 0);

    let first = app.create_project("one", "one").await;
    assert_eq!(health(&app).await["projects"], 1);
    app.create_project("two", "two").await;
    app.create_project("three", "three").await;
    assert_eq!(health(&app).await["projects"], 3);

    let res = app.delete(&format!("/api/projects/{}", first["id"].as_str().expect("id"))).await;
    assert_eq!(res.status().as_u16(), 204);
    assert_eq!(health(&app).await["projects"], 2);
}

#[actix_web::test]
async fn max_sessions_follows_the_setting() {
    let app = spawn_app_with(|s| s.max_sessions_global = 7).await;
    let body = health(&app).await;
    assert_eq!(body["max_sessions"], 7);
    assert_eq!(body["session_capacity_pct"].as_f64(), Some(0.0));

    let default = spawn_app().await;
    assert_eq!(health(&default).await["max_sessions"], 20, "the documented default");
}

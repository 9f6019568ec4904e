//! Fuzzes the running service from its own OpenAPI document with schemathesis (installed by
//! `scripts/test-setup.sh`): no server errors, no response that breaks the documented schema,
//! status codes and content types as documented, and schema-invalid input always refused.
//!
//! `positive_data_acceptance` is left out on purpose: a schema cannot say that `folder_path`
//! must exist on disk, so schema-valid bodies are rightly refused with 422.
//!
//! The Server-Sent Events endpoints that follow something live (a session, everything, a
//! background process's log) are left out too: a valid request to them is an endless stream, which a request/response fuzzer can only time out on. `tests/api/streams.rs` covers
//! them (and the WebSocket endpoint, which stays in here: without an upgrade it answers 400).

use std::path::PathBuf;
use std::time::Duration;

use crate::helpers::spawn_app_with;

const ADMIN_TOKEN: &str = "schemathesis-admin-token";

fn schemathesis_binary() -> PathBuf {
    if let Some(explicit) = std::env::var_os("CONDUIT_SCHEMATHESIS") {
        return PathBuf::from(explicit);
    }
    let cache = std::env::var_os("CONDUIT_TEST_CACHE").map(PathBuf::from).unwrap_or_else(|| {
        let base = std::env::var_os("XDG_CACHE_HOME")
            .map(PathBuf::from)
            .unwrap_or_else(|| PathBuf::from(std::env::var_os("HOME").expect("HOME is set")).join(".cache"));
        base.join("conduit-test")
    });
    cache.join("venv/bin/schemathesis")
}

#[actix_web::test]
async fn the_openapi_document_survives_schemathesis() {
    let binary = schemathesis_binary();
    assert!(binary.exists(), "schemathesis is not installed at {}; run scripts/test-setup.sh first", binary.display());

    // A CLI that exists and ends at once: launches pass the check for the agent's CLI (a
    // missing one is a documented 503, which the fuzzer counts as a server error) and end in
    // `error` without leaving processes behind.
    //
    // It runs as an admin: what it makes (an API token, in open mode) would otherwise close
    // the API to its later requests.
    let app = spawn_app_with(|s| {
        s.cli_path = "true".to_string();
        s.auth_token = Some(ADMIN_TOKEN.to_string());
        // Its `ignored_auth` check sends wrong bearers: guesses at the configured token, which
        // would lock the loopback address out (429 to everything) after five.
        s.login_limits.per_minute = 100_000;
        s.login_limits.lockout_after = 100_000;
    })
    .await;
    // Something to find, list and update.
    app.mkdir("empty");
    app.mkdir("repo/.git");
    let seed = serde_json::json!({"name": "Seed", "folder_path": app.mkdir("seed")});
    let res =
        app.client.post(app.url("/api/projects")).bearer_auth(ADMIN_TOKEN).json(&seed).send().await.expect("post");
    assert_eq!(res.status().as_u16(), 201, "create project");

    let run = tokio::process::Command::new(&binary)
        .arg("run")
        .arg(app.url("/api/openapi.json"))
        .args(["--checks", "all", "--exclude-checks", "positive_data_acceptance"])
        .args([
            "--exclude-path-regex",
            "^/api/((sessions/\\{id\\}|events)/stream|(sessions|projects)/\\{id\\}/processes/\\{process_id\\}/logs/stream)$",
        ])
        .args(["--header", &format!("Authorization: Bearer {ADMIN_TOKEN}")])
        .args(["--max-examples", "100", "--no-color", "--generation-database", "none"])
        .args(["--request-timeout", "10"])
        .current_dir(app.dir.path())
        .kill_on_drop(true)
        .output();
    let output = tokio::time::timeout(Duration::from_secs(600), run)
        .await
        .expect("schemathesis finished within 10 minutes")
        .expect("schemathesis runs");
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(
        output.status.success(),
        "schemathesis found problems:\n{stdout}\n{}",
        String::from_utf8_lossy(&output.stderr)
    );
    assert!(stdout.contains("passed"), "schemathesis ran no test:\n{stdout}");
}

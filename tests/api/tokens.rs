//! API tokens: made by an admin, shown once and stored hashed, scoped (`read` never changes
//! anything, walked over the OpenAPI document), bound to a project (other projects' rows are
//! 404), expired and revoked ones refused.

use serde_json::{json, Value};

use crate::helpers::{error_code, spawn_app_with, TestApp};
use crate::support::service::fake_cli;

pub(crate) const ADMIN: &str = "the-configured-admin-token";

pub(crate) async fn spawn() -> TestApp {
    spawn_app_with(|s| {
        s.auth_token = Some(ADMIN.into());
        s.cli_path = fake_cli().display().to_string();
    })
    .await
}

/// A request with `Authorization: Bearer <token>`; state-changing methods carry `body`.
pub(crate) async fn call(
    app: &TestApp,
    token: &str,
    method: reqwest::Method,
    path: &str,
    body: Option<Value>,
) -> reqwest::Response {
    let mut req = app.client.request(method, app.url(path)).bearer_auth(token);
    if let Some(body) = body {
        req = req.json(&body);
    }
    req.send().await.expect("request")
}

pub(crate) async fn get(app: &TestApp, token: &str, path: &str) -> reqwest::Response {
    call(app, token, reqwest::Method::GET, path, None).await
}

pub(crate) async fn post(app: &TestApp, token: &str, path: &str, body: Value) -> reqwest::Response {
    call(app, token, reqwest::Method::POST, path, Some(body)).await
}

/// Makes a token with the admin token; returns the answer (`token`, `id`, ...).
pub(crate) async fn make_token(app: &TestApp, body: Value) -> Value {
    let res = post(app, ADMIN, "/api/tokens", body).await;
    assert_eq!(res.status().as_u16(), 201, "token made");
    res.json().await.expect("json")
}

pub(crate) fn secret(made: &Value) -> String {
    made["token"].as_str().expect("the secret is shown").to_string()
}

pub(crate) async fn make_project(app: &TestApp, name: &str) -> String {
    let folder = app.mkdir(name);
    let res = post(app, ADMIN, "/api/projects", json!({"name": name, "folder_path": folder})).await;
    assert_eq!(res.status().as_u16(), 201, "project made");
    let project: Value = res.json().await.expect("json");
    project["id"].as_str().expect("id").to_string()
}

pub(crate) async fn launch(app: &TestApp, project: &str) -> String {
    let res = post(app, ADMIN, &format!("/api/projects/{project}/sessions"), json!({})).await;
    assert_eq!(res.status().as_u16(), 201, "session launched");
    let session: Value = res.json().await.expect("json");
    session["id"].as_str().expect("id").to_string()
}

/// Every operation of the service's own OpenAPI document: (method, path with ids filled in).
async fn documented_operations(app: &TestApp) -> Vec<(reqwest::Method, String)> {
    let doc: Value = get(app, ADMIN, "/api/openapi.json").await.json().await.expect("the document");
    let mut operations = Vec::new();
    for (path, item) in doc["paths"].as_object().expect("paths") {
        for method in item.as_object().expect("path item").keys() {
            let method = reqwest::Method::from_bytes(method.to_ascii_uppercase().as_bytes()).expect("a method");
            let path = path
                .replace("{id}", &uuid::Uuid::new_v4().to_string())
                .replace("{process_id}", &uuid::Uuid::new_v4().to_string());
            assert!(!path.contains('{'), "every path parameter is filled in: {path}");
            operations.push((method, path));
        }
    }
    assert!(operations.len() > 50, "the document lists the API: {}", operations.len());
    operations
}

#[actix_web::test]
async fn a_read_token_is_refused_on_every_state_changing_operation() {
    let app = spawn().await;
    let project = make_project(&app, "p").await;
    let read = secret(&make_token(&app, json!({"name": "viewer", "scope": "read"})).await);
    let mut writes = 0;
    for (method, path) in documented_operations(&app).await {
        let changes = !matches!(method, reqwest::Method::GET | reqwest::Method::HEAD);
        let res = call(&app, &read, method.clone(), &path, changes.then(|| json!({}))).await;
        let writing_socket = path.ends_with("/ws");
        let admin_read = ["/api/tokens", "/api/webhooks", "/api/audit"].iter().any(|p| path.starts_with(p));
        if path == "/api/auth/login" {
            // Signing in needs no credential, so no scope either: the empty form is refused.
            assert_eq!(error_code(res, 422).await, "validation_failed", "{method} {path}");
        } else if changes || writing_socket || admin_read {
            writes += usize::from(changes);
            assert_eq!(error_code(res, 403).await, "insufficient_scope", "{method} {path}");
        } else if path == "/api/cluster/feed" {
            assert_eq!(error_code(res, 403).await, "peers_only", "nodes only, whoever asks");
        } else {
            assert!(![401, 403].contains(&res.status().as_u16()), "{method} {path}: {}", res.status());
        }
    }
    assert!(writes >= 40, "POST, PUT and DELETE operations were tried: {writes}");
    // The same routes on real rows: still refused, and nothing changed.
    let res = call(&app, &read, reqwest::Method::DELETE, &format!("/api/projects/{project}"), None).await;
    assert_eq!(error_code(res, 403).await, "insufficient_scope");
    let res = post(&app, &read, &format!("/api/projects/{project}/exec"), json!({"command": "true"})).await;
    assert_eq!(error_code(res, 403).await, "insufficient_scope");
    let projects: Vec<Value> = get(&app, &read, "/api/projects").await.json().await.expect("json");
    assert_eq!(projects.len(), 1, "the project is still there, alone: {projects:?}");
}

#[actix_web::test]
async fn a_project_bound_token_reaches_its_project_only() {
    let app = spawn().await;
    let (mine, other) = (make_project(&app, "mine").await, make_project(&app, "other").await);
    let (my_session, other_session) = (launch(&app, &mine).await, launch(&app, &other).await);
    let made = make_token(&app, json!({"name": "ci", "scope": "operate", "project_id": mine})).await;
    assert_eq!(made["project_id"], mine.as_str());
    let token = secret(&made);

    // Its own project and session answer.
    assert_eq!(get(&app, &token, &format!("/api/sessions/{my_session}")).await.status().as_u16(), 200);
    assert_eq!(get(&app, &token, &format!("/api/projects/{mine}")).await.status().as_u16(), 200);
    let res = post(&app, &token, &format!("/api/projects/{mine}/exec"), json!({"command": "true"})).await;
    assert_eq!(res.status().as_u16(), 200, "operate runs commands in its project");
    let listed: Vec<Value> = get(&app, &token, "/api/projects").await.json().await.expect("json");
    assert_eq!(listed.iter().map(|p| p["id"].clone()).collect::<Vec<_>>(), vec![json!(mine)], "its project only");

    // The other project's rows do not exist for it.
    for path in [
        format!("/api/sessions/{other_session}"),
        format!("/api/sessions/{other_session}/messages"),
        format!("/api/projects/{other}"),
        format!("/api/projects/{other}/sessions"),
        format!("/api/sessions/{}", uuid::Uuid::new_v4()),
    ] {
        assert_eq!(error_code(get(&app, &token, &path).await, 404).await, "not_found", "GET {path}");
    }
    for path in [format!("/api/sessions/{other_session}/interrupt"), format!("/api/projects/{other}/exec")] {
        let res = post(&app, &token, &path, json!({"command": "true"})).await;
        assert_eq!(error_code(res, 404).await, "not_found", "POST {path}");
    }
    let res = call(&app, &token, reqwest::Method::DELETE, &format!("/api/sessions/{other_session}"), None).await;
    assert_eq!(error_code(res, 404).await, "not_found");
    // Lists spanning every project show its project's rows only (see `bound_lists`); the
    // routes that cannot be filtered are refused, and so is administration.
    for path in ["/api/locks", "/api/tokens"] {
        assert_eq!(error_code(get(&app, &token, path).await, 403).await, "insufficient_scope", "GET {path}");
    }
    // The other session still runs: the admin sees it.
    let session: Value = get(&app, ADMIN, &format!("/api/sessions/{other_session}")).await.json().await.expect("json");
    assert_ne!(session["status"], "closed", "{session}");
}

#[actix_web::test]
async fn expired_and_revoked_tokens_are_refused() {
    let app = spawn().await;
    let brief = secret(&make_token(&app, json!({"name": "brief", "scope": "read", "expires_in_seconds": 1})).await);
    assert_eq!(get(&app, &brief, "/api/projects").await.status().as_u16(), 200, "alive at first");
    tokio::time::sleep(std::time::Duration::from_millis(1200)).await;
    assert_eq!(error_code(get(&app, &brief, "/api/projects").await, 401).await, "unauthorized", "expired");

    let made = make_token(&app, json!({"name": "doomed", "scope": "admin"})).await;
    let (token, id) = (secret(&made), made["id"].as_str().expect("id").to_string());
    assert_eq!(get(&app, &token, "/api/tokens").await.status().as_u16(), 200, "an admin token administers");
    let res = call(&app, ADMIN, reqwest::Method::DELETE, &format!("/api/tokens/{id}"), None).await;
    assert_eq!(res.status().as_u16(), 204);
    assert_eq!(error_code(get(&app, &token, "/api/projects").await, 401).await, "unauthorized", "revoked at once");
    let res = call(&app, ADMIN, reqwest::Method::DELETE, &format!("/api/tokens/{id}"), None).await;
    assert_eq!(res.status().as_u16(), 204, "revoking twice is no error");
    let unknown = format!("/api/tokens/{}", uuid::Uuid::new_v4());
    assert_eq!(error_code(call(&app, ADMIN, reqwest::Method::DELETE, &unknown, None).await, 404).await, "not_found");

    let listed: Vec<Value> = get(&app, ADMIN, "/api/tokens").await.json().await.expect("json");
    let row = listed.iter().find(|t| t["id"] == id.as_str()).expect("a revoked token stays listed");
    assert!(row["revoked_at"].is_string(), "{row}");
}

#[actix_web::test]
async fn bad_token_requests_are_refused() {
    let app = spawn().await;
    let project = make_project(&app, "p").await;
    let cases = [
        (json!({"name": "x", "scope": "owner"}), 422),
        (json!({"name": "", "scope": "read"}), 422),
        (json!({"name": "x", "scope": "read", "expires_at": "2001-01-01T00:00:00Z"}), 422),
        (json!({"name": "x", "scope": "read", "expires_in_seconds": -5}), 422),
        (json!({"name": "x", "scope": "admin", "project_id": project}), 422),
        (json!({"name": "x", "scope": "read", "project_id": uuid::Uuid::new_v4().to_string()}), 404),
    ];
    for (body, status) in cases {
        let res = post(&app, ADMIN, "/api/tokens", body.clone()).await;
        error_code(res, status).await;
    }
    let operate = secret(&make_token(&app, json!({"name": "op", "scope": "operate"})).await);
    let res = post(&app, &operate, "/api/tokens", json!({"name": "escalate", "scope": "admin"})).await;
    assert_eq!(error_code(res, 403).await, "insufficient_scope", "operate makes no tokens");
}

#[actix_web::test]
async fn a_token_is_shown_once_and_stored_as_its_hash() {
    let app = spawn().await;
    let made = make_token(&app, json!({"name": "once", "scope": "read"})).await;
    let token = secret(&made);
    assert!(token.starts_with("cdt_") && token.len() > 60, "{token}");
    let listed = get(&app, ADMIN, "/api/tokens").await.text().await.expect("text");
    assert!(!listed.contains(&token) && !listed.contains("hash"), "the list shows neither: {listed}");
    assert_eq!(get(&app, &token, "/api/health").await.status().as_u16(), 200, "it works");

    let hash = {
        use sha2::Digest;
        sha2::Sha256::digest(token.as_bytes()).iter().map(|b| format!("{b:02x}")).collect::<String>()
    };
    let db_path = app.dir.path().join("data").join("conduit.db");
    let stored: Vec<String> = {
        use diesel::prelude::*;
        let mut conn = crate::support::database::connect(&db_path);
        conduit::db::schema::api_tokens::table
            .select(conduit::db::schema::api_tokens::token_hash)
            .load(&mut conn)
            .expect("stored tokens")
    };
    assert_eq!(stored, vec![hash.clone()], "the SHA-256 is stored");
    if !crate::support::database::on_postgres() {
        // Every byte SQLite keeps: the file and its write-ahead log.
        let mut bytes = std::fs::read(&db_path).expect("the database file");
        bytes.extend(std::fs::read(db_path.with_extension("db-wal")).unwrap_or_default());
        let text = String::from_utf8_lossy(&bytes);
        assert!(text.contains(&hash), "the hash is found where it is stored");
        assert!(!text.contains(&token[4..]), "the secret is nowhere in the database");
    }
}

#[actix_web::test]
async fn the_open_mode_ends_with_the_first_token() {
    let app = spawn_app_with(|_| {}).await;
    assert_eq!(app.get("/api/projects").await.status().as_u16(), 200, "open on loopback");
    let res = app.post_json("/api/tokens", &json!({"name": "first", "scope": "admin"})).await;
    assert_eq!(res.status().as_u16(), 201);
    let token = secret(&res.json().await.expect("json"));
    assert_eq!(error_code(app.get("/api/projects").await, 401).await, "unauthorized", "closed at once");
    assert_eq!(get(&app, &token, "/api/projects").await.status().as_u16(), 200);
}

//! The access audit: token changes, refused credentials and every state-changing request are
//! rows of `GET /api/audit` with who, what, target, status and address; reads are not; the
//! route is kept as its pattern (no `?token=`); only an admin may read it; bad filters are
//! refused; the table refuses updates on either backend.

use reqwest::Method;
use serde_json::{json, Value};

use crate::helpers::{error_code, spawn_app_with, TestApp};

const ADMIN: &str = "the-configured-admin-token";

async fn spawn() -> TestApp {
    spawn_app_with(|s| s.auth_token = Some(ADMIN.into())).await
}

async fn call(
    app: &TestApp,
    token: Option<&str>,
    method: Method,
    path: &str,
    body: Option<Value>,
) -> reqwest::Response {
    let mut req = app.client.request(method, app.url(path));
    if let Some(token) = token {
        req = req.bearer_auth(token);
    }
    if let Some(body) = body {
        req = req.json(&body);
    }
    req.send().await.expect("request")
}

async fn make_token(app: &TestApp, scope: &str) -> (String, String) {
    let res = call(app, Some(ADMIN), Method::POST, "/api/tokens", Some(json!({"name": scope, "scope": scope}))).await;
    assert_eq!(res.status().as_u16(), 201);
    let made: Value = res.json().await.expect("json");
    (made["id"].as_str().expect("id").to_string(), made["token"].as_str().expect("secret").to_string())
}

async fn audit(app: &TestApp, query: &str) -> Vec<Value> {
    let res = call(app, Some(ADMIN), Method::GET, &format!("/api/audit{query}"), None).await;
    assert_eq!(res.status().as_u16(), 200, "the audit is read");
    let rows: Value = res.json().await.expect("json");
    rows.as_array().expect("an array").clone()
}

/// (event, actor, actor_id, method, route, target, status) of a row.
fn summary(row: &Value) -> (String, String, Option<String>, String, String, Option<String>, i64) {
    let text = |k: &str| row[k].as_str().map(str::to_string);
    (
        text("event").expect("event"),
        text("actor").expect("actor"),
        text("actor_id"),
        text("method").expect("method"),
        text("route").expect("route"),
        text("target"),
        row["status"].as_i64().expect("status"),
    )
}

#[actix_web::test]
async fn token_changes_refusals_and_writes_are_audited_with_who_what_and_result() {
    let app = spawn().await;
    let (read_id, read_secret) = make_token(&app, "read").await;
    let (operate_id, operate_secret) = make_token(&app, "operate").await;

    // Reads are not recorded; writes are, whatever their answer.
    assert_eq!(call(&app, Some(&read_secret), Method::GET, "/api/projects", None).await.status().as_u16(), 200);
    let refused = call(&app, Some(&read_secret), Method::POST, "/api/projects", Some(json!({}))).await;
    assert_eq!(refused.status().as_u16(), 403, "read scope");
    let refused = call(&app, Some(&operate_secret), Method::POST, "/api/rules/global", Some(json!({}))).await;
    assert_eq!(refused.status().as_u16(), 403, "admin scope");
    let folder = app.mkdir("audited");
    let made =
        call(&app, Some(ADMIN), Method::POST, "/api/projects", Some(json!({"name": "audited", "folder_path": folder})))
            .await;
    assert_eq!(made.status().as_u16(), 201);
    let project: Value = made.json().await.expect("json");
    let project_id = project["id"].as_str().expect("id").to_string();
    let deleted = call(&app, Some(ADMIN), Method::DELETE, &format!("/api/projects/{project_id}"), None).await;
    assert!(deleted.status().is_success(), "{}", deleted.status());

    // Refused credentials: a wrong bearer on a read, and `?token=` on a stream; no credential on
    // a read is not an attempt; on a write it is.
    let wrong = call(&app, Some("cdt_0000"), Method::GET, "/api/projects", None).await;
    assert_eq!(wrong.status().as_u16(), 401);
    let stream = call(&app, None, Method::GET, "/api/events/stream?token=a-guessed-secret", None).await;
    assert_eq!(stream.status().as_u16(), 401);
    assert_eq!(call(&app, None, Method::GET, "/api/projects", None).await.status().as_u16(), 401);
    assert_eq!(call(&app, None, Method::POST, "/api/projects", Some(json!({}))).await.status().as_u16(), 401);

    let revoked = call(&app, Some(ADMIN), Method::DELETE, &format!("/api/tokens/{read_id}"), None).await;
    assert_eq!(revoked.status().as_u16(), 204);
    let after = call(&app, Some(&read_secret), Method::GET, "/api/projects", None).await;
    assert_eq!(after.status().as_u16(), 401, "revoked");

    let rows = audit(&app, "").await;
    let got: Vec<_> = rows.iter().rev().map(summary).collect();
    let s = |v: &str| v.to_string();
    let expected = vec![
        (s("token_created"), s("admin"), None, s("POST"), s("/api/tokens"), Some(read_id.clone()), 201),
        (s("token_created"), s("admin"), None, s("POST"), s("/api/tokens"), Some(operate_id.clone()), 201),
        (s("denied"), s("token"), Some(read_id.clone()), s("POST"), s("/api/projects"), None, 403),
        (s("denied"), s("token"), Some(operate_id.clone()), s("POST"), s("/api/rules/global"), None, 403),
        (s("request"), s("admin"), None, s("POST"), s("/api/projects"), Some(project_id.clone()), 201),
        (s("request"), s("admin"), None, s("DELETE"), s("/api/projects/{id}"), Some(project_id.clone()), 204),
        (s("auth_failed"), s("anonymous"), None, s("GET"), s("/api/projects"), None, 401),
        (s("auth_failed"), s("anonymous"), None, s("GET"), s("/api/events/stream"), None, 401),
        (s("auth_failed"), s("anonymous"), None, s("POST"), s("/api/projects"), None, 401),
        (s("token_revoked"), s("admin"), None, s("DELETE"), s("/api/tokens/{id}"), Some(read_id.clone()), 204),
        (s("auth_failed"), s("anonymous"), None, s("GET"), s("/api/projects"), None, 401),
    ];
    assert_eq!(got, expected, "{rows:#?}");
    for row in &rows {
        assert_eq!(row["address"], "127.0.0.1", "{row}");
        assert!(row["at"].as_str().is_some_and(|at| at.ends_with('Z')), "{row}");
    }
    let text = serde_json::to_string(&rows).expect("text");
    assert!(!text.contains("a-guessed-secret") && !text.contains("cdt_0000"), "no credential is kept: {text}");
    assert!(!text.contains(&operate_secret) && !text.contains(ADMIN), "{text}");

    // Filters and paging.
    let created = audit(&app, "?event=token_created").await;
    assert_eq!(created.len(), 2);
    let by_token = audit(&app, &format!("?actor_id={operate_id}")).await;
    assert_eq!(by_token.iter().map(summary).map(|r| r.0).collect::<Vec<_>>(), ["denied"]);
    let first = audit(&app, "?limit=4").await;
    assert_eq!(first.len(), 4);
    let last_id = first[3]["id"].as_i64().expect("id");
    let next = audit(&app, &format!("?limit=100&before={last_id}")).await;
    assert_eq!(next.len(), rows.len() - 4, "the rest, once");
    assert!(next.iter().all(|r| r["id"].as_i64() < Some(last_id)));
    assert!(audit(&app, "?since=2999-01-01T00:00:00Z").await.is_empty());
    assert_eq!(audit(&app, "?since=2000-01-01T00:00:00%2B01:00").await.len(), rows.len());
}

#[actix_web::test]
async fn only_an_admin_reads_the_audit_and_bad_filters_are_refused() {
    let app = spawn().await;
    let (_, operate) = make_token(&app, "operate").await;
    let res = call(&app, Some(&operate), Method::GET, "/api/audit", None).await;
    assert_eq!(error_code(res, 403).await, "insufficient_scope");
    let res = call(&app, None, Method::GET, "/api/audit", None).await;
    assert_eq!(res.status().as_u16(), 401);
    for (query, status) in [
        ("?event=nope", 400),
        ("?colour=red", 400),
        ("?limit=abc", 400),
        ("?limit=0", 422),
        ("?limit=1001", 422),
        ("?before=0", 422),
        ("?since=yesterday", 422),
    ] {
        let res = call(&app, Some(ADMIN), Method::GET, &format!("/api/audit{query}"), None).await;
        error_code(res, status).await;
    }
}

#[actix_web::test]
async fn the_table_refuses_updates() {
    use diesel::RunQueryDsl;
    let app = spawn().await;
    make_token(&app, "read").await;
    assert_eq!(audit(&app, "").await.len(), 1);
    let mut conn = crate::support::database::connect(&app.dir.path().join("data").join("conduit.db"));
    let changed = diesel::sql_query("UPDATE audit_log SET status = 500").execute(&mut conn);
    let refusal = changed.expect_err("the update is refused").to_string();
    assert!(refusal.contains("append-only"), "{refusal}");
    assert_eq!(audit(&app, "").await[0]["status"], 201);
}

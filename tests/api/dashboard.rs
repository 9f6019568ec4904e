//! The dashboard: how the binary serves it, that its typed client matches the API, and the whole
//! thing end to end in real headless Chromium (ui/e2e/dashboard.e2e.mjs) against the real
//! binary, the real Claude Code CLI and the fake Messages API.

use std::path::Path;
use std::time::{Duration, Instant};

use serde_json::{json, Value};

use crate::helpers::{spawn_app, spawn_app_with};
use crate::support::browser;
use crate::support::fake_api::{FakeApi, Reply};
use crate::support::service::{real_cli, ServiceConfig, TestService};

fn repo() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

fn first_asset(html: &str) -> String {
    let start = html.find("/assets/").expect("index.html links its hashed assets");
    let end = html[start..].find('"').expect("end of the asset path") + start;
    html[start..end].to_string()
}

#[actix_web::test]
async fn the_app_is_served_at_the_root_and_for_client_routes() {
    let app = spawn_app().await;
    let root = app.get("/").await;
    assert_eq!(root.status().as_u16(), 200);
    assert_eq!(root.headers()["cache-control"], "no-cache");
    assert!(root.headers()["content-type"].to_str().is_ok_and(|t| t.starts_with("text/html")));
    let html = root.text().await.expect("body");
    assert!(html.contains("<div id=\"root\">"), "the built index.html (was the UI built? see build.rs): {html}");

    for route in ["/projects/0b6f8f3c-0000-4000-8000-000000000000", "/sessions/x/y", "/no/such/page"] {
        let res = app.get(route).await;
        assert_eq!(res.status().as_u16(), 200, "{route}");
        assert_eq!(res.text().await.expect("body"), html, "{route} falls back to index.html");
    }

    let asset = first_asset(&html);
    let res = app.get(&asset).await;
    assert_eq!(res.status().as_u16(), 200, "{asset}");
    assert_eq!(res.headers()["cache-control"], "public, max-age=31536000, immutable");
    let kind = res.headers()["content-type"].to_str().expect("content type").to_string();
    assert!(kind.starts_with("text/javascript") || kind.starts_with("text/css"), "{asset}: {kind}");

    // A hashed file that is not in this build is a 404, not the app.
    let stale = app.get("/assets/index-00000000.js").await;
    assert_eq!(stale.status().as_u16(), 404);
}

#[actix_web::test]
async fn the_app_never_shadows_the_api() {
    let app = spawn_app().await;
    for path in ["/api", "/api/nope", "/api/projects/x/nope", "/api/index.html"] {
        let res = app.get(path).await;
        assert_eq!(res.status().as_u16(), 404, "{path}");
        let body: Value = res.json().await.expect("a JSON error");
        assert_eq!(body["error"]["code"], "not_found", "{path}");
    }
    let health = app.get("/api/health").await;
    assert_eq!(health.status().as_u16(), 200);
    // Writes to a page are refused with the JSON 405 and Allow.
    let res = app.post_json("/", &json!({})).await;
    assert_eq!(res.status().as_u16(), 405);
    assert_eq!(res.headers()["allow"], "GET, HEAD");
}

#[actix_web::test]
async fn with_a_token_the_page_loads_and_the_api_still_wants_the_token() {
    let app = spawn_app_with(|s| s.auth_token = Some("s3cret-token".to_string())).await;
    let page = app.get("/sessions/abc").await;
    assert_eq!(page.status().as_u16(), 200, "the page itself holds nothing secret");
    assert!(page.text().await.expect("body").contains("<div id=\"root\">"));
    assert_eq!(app.get("/api/projects").await.status().as_u16(), 401);
    let res = app.client.get(app.url("/api/projects")).bearer_auth("s3cret-token").send().await.expect("request");
    assert_eq!(res.status().as_u16(), 200, "the dashboard's way: Authorization: Bearer");
}

#[actix_web::test]
async fn the_committed_openapi_copy_matches_the_service() {
    let app = spawn_app().await;
    let live: Value = app.get("/api/openapi.json").await.json().await.expect("json");
    let path = repo().join("ui/openapi.json");
    let text = std::fs::read_to_string(&path).expect("ui/openapi.json");
    let copy: Value = serde_json::from_str(&text).expect("ui/openapi.json is JSON");
    assert!(
        copy == live,
        "ui/openapi.json differs from the service's document: the dashboard's typed client is out of date. \
         Run the service and `npm --prefix ui run refresh-openapi -- http://127.0.0.1:PORT`, then rebuild"
    );
}

#[actix_web::test]
async fn end_to_end_in_chromium_with_the_real_cli() {
    browser::chromium();
    let api = FakeApi::start().await;
    let service = TestService::start(ServiceConfig::new(real_cli()).api(&api.base_url));
    std::fs::create_dir_all(service.root.join("e2e-app")).expect("project folder");
    std::fs::create_dir_all(service.root.join("legacy-tool/.git")).expect("a folder to import");
    std::fs::write(service.root.join("legacy-tool/Cargo.toml"), "[package]\nname = \"legacy\"\n").expect("write");
    let victim = service.root.join("e2e-app/victim.txt");
    std::fs::write(&victim, "keep me").expect("write");

    // Recognisable words the page must show, and a Bash call the deny rule must stop.
    let (prompt, reply) = ("hello from the dashboard e2e", "Greetings from the fake model, e2e-4417");
    let (deny_prompt, denied) = ("please delete the victim file", "rm -f victim.txt");
    api.on(prompt, Reply::Text(reply.into()));
    api.on(
        deny_prompt,
        Reply::ToolUse { name: "Bash".into(), input: json!({"command": denied, "description": "delete"}) },
    );
    api.on("tool_result", Reply::Text("I could not delete it: a rule denied it.".into()));

    let shots = browser::fresh_screenshot_dir("dashboard");
    let started = Instant::now();
    let env = vec![
        ("E2E_PROMPT", prompt.to_string()),
        ("E2E_REPLY", reply.to_string()),
        ("E2E_DENY_PROMPT", deny_prompt.to_string()),
        ("E2E_DENIED_COMMAND", denied.to_string()),
        ("E2E_IMPORT_FOLDER", "legacy-tool".to_string()),
    ];
    browser::run_script("dashboard.e2e.mjs", &service, &shots, env).await;

    // What the browser did, seen from the API.
    assert!(victim.exists(), "the denied command did not run");
    let projects = service.get_json("/api/projects").await;
    let names: Vec<&str> = projects.as_array().expect("array").iter().filter_map(|p| p["name"].as_str()).collect();
    assert_eq!(names, ["E2E app", "legacy-tool"], "created and imported through the UI");
    let app = projects.as_array().and_then(|p| p.iter().find(|p| p["name"] == "E2E app")).expect("E2E app");
    let sessions = service.get_json(&format!("/api/projects/{}/sessions", app["id"].as_str().expect("id"))).await;
    let session = &sessions.as_array().expect("array")[0];
    assert_eq!(session["status"], "closed", "killed from the UI: {session}");
    assert_eq!(session["num_turns"], 2, "{session}");
    assert_eq!(session["permission_mode"], "plan", "switched from the UI: {session}");
    let denials = service.get_json("/api/permissions/log?decision=deny").await;
    assert!(
        denials
            .as_array()
            .is_some_and(|d| d.iter().any(|d| d["tool_input"].as_str().is_some_and(|t| t.contains(denied)))),
        "{denials}"
    );
    for shot in [
        "01-dashboard-empty",
        "02-import-dialog",
        "03-session-first-reply",
        "04-session-denied",
        "05-dashboard-live",
        "06-project",
        "07-session-closed",
    ] {
        assert!(shots.join(format!("{shot}.png")).is_file(), "screenshot {shot}");
    }
    assert!(started.elapsed() < Duration::from_secs(180), "the browser run took {:?}", started.elapsed());
}

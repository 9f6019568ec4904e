//! The access guard (Host, Origin, token) on every route, the JSON 404/405 fallbacks, and the
//! startup refusal to listen off loopback without a token.

use conduit::http::route_table;
use conduit::startup::{Application, ServeOptions};
use serde_json::{json, Value};

use crate::helpers::{error_code, spawn_app, spawn_app_with, test_settings, TestApp};

const EVIL_ORIGIN: &str = "http://evil.example";
const TOKEN: &str = "secret-token";

/// Every (method, concrete path) in the route table, `{id}` replaced with a random UUID.
fn all_routes() -> Vec<(reqwest::Method, String)> {
    let routes: Vec<_> = route_table()
        .into_iter()
        .map(|spec| {
            let method = reqwest::Method::from_bytes(spec.method.as_str().as_bytes()).expect("known method");
            let path = spec
                .path
                .replace("{id}", &uuid::Uuid::new_v4().to_string())
                .replace("{process_id}", &uuid::Uuid::new_v4().to_string());
            assert!(!path.contains('{'), "every path parameter is substituted: {path}");
            (method, path)
        })
        .collect();
    assert!(routes.len() >= 10, "the route table is not empty: {}", routes.len());
    routes
}

fn is_read(method: &reqwest::Method) -> bool {
    matches!(*method, reqwest::Method::GET | reqwest::Method::HEAD | reqwest::Method::OPTIONS)
}

/// A request on `path` with the given headers; state-changing methods carry a JSON body.
async fn send(app: &TestApp, method: reqwest::Method, path: &str, headers: &[(&str, &str)]) -> reqwest::Response {
    let mut req = app.client.request(method.clone(), app.url(path));
    if !is_read(&method) {
        req = req.json(&json!({}));
    }
    for (name, value) in headers {
        req = req.header(*name, *value);
    }
    req.send().await.expect("request")
}

fn own_origin(app: &TestApp) -> String {
    format!("http://127.0.0.1:{}", app.port)
}

/// A body that creates a project on a fresh folder.
fn new_project_body(app: &TestApp, rel: &str) -> Value {
    json!({"name": rel, "folder_path": app.mkdir(rel)})
}

async fn post_project(app: &TestApp, rel: &str, headers: &[(&str, &str)]) -> reqwest::Response {
    let mut req = app.client.post(app.url("/api/projects")).json(&new_project_body(app, rel));
    for (name, value) in headers {
        req = req.header(*name, *value);
    }
    req.send().await.expect("request")
}

fn header<'a>(res: &'a reqwest::Response, name: &str) -> Option<&'a str> {
    res.headers().get(name).map(|v| v.to_str().expect("ascii header"))
}

// ---------------------------------------------------------------------------------------------
// Host (DNS rebinding)
// ---------------------------------------------------------------------------------------------

#[actix_web::test]
async fn a_foreign_host_is_refused_on_every_route() {
    let app = spawn_app().await;
    let evil_with_port = format!("evil.example:{}", app.port);
    for (method, path) in all_routes() {
        for host in ["evil.example", evil_with_port.as_str()] {
            let res = send(&app, method.clone(), &path, &[("host", host)]).await;
            assert_eq!(error_code(res, 403).await, "host_not_allowed", "{method} {path} with Host {host}");
        }
    }
    // Nothing was created by the refused POSTs.
    let projects: Vec<Value> = app.get("/api/projects").await.json().await.expect("json");
    assert!(projects.is_empty(), "{projects:?}");
}

#[actix_web::test]
async fn a_foreign_host_is_refused_on_unknown_routes_too() {
    let app = spawn_app().await;
    for path in ["/api/nope", "/", "/index.html"] {
        let res = send(&app, reqwest::Method::GET, path, &[("host", "evil.example")]).await;
        assert_eq!(error_code(res, 403).await, "host_not_allowed", "{path}");
    }
}

#[actix_web::test]
async fn rebinding_look_alike_hosts_are_refused() {
    let app = spawn_app().await;
    let port = app.port;
    for host in [
        format!("127.0.0.1.evil.example:{port}"),
        format!("localhost.evil.example:{port}"),
        format!("evil.example.localhost.evil:{port}"),
        format!("10.0.0.1:{port}"),
        format!("0.0.0.0:{port}"),
    ] {
        let res = send(&app, reqwest::Method::GET, "/api/health", &[("host", &host)]).await;
        assert_eq!(error_code(res, 403).await, "host_not_allowed", "Host {host}");
    }
}

#[actix_web::test]
async fn loopback_hosts_are_allowed() {
    let app = spawn_app().await;
    let port = app.port;
    for host in
        [format!("localhost:{port}"), format!("127.0.0.1:{port}"), "localhost".to_string(), format!("LocalHost:{port}")]
    {
        let res = send(&app, reqwest::Method::GET, "/api/health", &[("host", &host)]).await;
        assert_eq!(res.status().as_u16(), 200, "Host {host}");
    }
}

#[actix_web::test]
async fn a_configured_host_is_allowed() {
    let app = spawn_app_with(|s| s.allowed_hosts = vec!["conduit.lan".into()]).await;
    let allowed = format!("conduit.lan:{}", app.port);
    let res = send(&app, reqwest::Method::GET, "/api/health", &[("host", &allowed)]).await;
    assert_eq!(res.status().as_u16(), 200, "Host {allowed}");

    let res = send(&app, reqwest::Method::GET, "/api/health", &[("host", "conduit.lan")]).await;
    assert_eq!(res.status().as_u16(), 200, "port-less configured host");

    let other = format!("other.lan:{}", app.port);
    let res = send(&app, reqwest::Method::GET, "/api/health", &[("host", &other)]).await;
    assert_eq!(error_code(res, 403).await, "host_not_allowed", "an unconfigured host is still refused");
}

// ---------------------------------------------------------------------------------------------
// Origin (cross-site requests)
// ---------------------------------------------------------------------------------------------

#[actix_web::test]
async fn a_foreign_origin_cannot_change_state_on_any_route() {
    let app = spawn_app().await;
    let writes: Vec<_> = all_routes().into_iter().filter(|(m, _)| !is_read(m)).collect();
    assert!(writes.len() >= 4, "POST, PUT and DELETE routes are covered: {writes:?}");
    for (method, path) in writes {
        let res = send(&app, method.clone(), &path, &[("origin", EVIL_ORIGIN)]).await;
        assert_eq!(error_code(res, 403).await, "origin_not_allowed", "{method} {path}");
    }
}

#[actix_web::test]
async fn a_foreign_origin_cannot_update_or_delete_an_existing_project() {
    let app = spawn_app().await;
    let project = app.create_project("p", "p").await;
    let path = format!("/api/projects/{}", project["id"].as_str().expect("id"));

    let res = app
        .client
        .put(app.url(&path))
        .header("origin", EVIL_ORIGIN)
        .json(&json!({"name": "pwned"}))
        .send()
        .await
        .expect("request");
    assert_eq!(error_code(res, 403).await, "origin_not_allowed");
    let res = app.client.delete(app.url(&path)).header("origin", EVIL_ORIGIN).send().await.expect("request");
    assert_eq!(error_code(res, 403).await, "origin_not_allowed");

    let stored: Value = app.get(&path).await.json().await.expect("json");
    assert_eq!(stored, project, "untouched");
}

#[actix_web::test]
async fn refused_origins() {
    let app = spawn_app().await;
    let port = app.port;
    for origin in [
        "null".to_string(),
        EVIL_ORIGIN.to_string(),
        format!("http://evil.example:{port}"),
        // Another local app on a different port is another origin.
        format!("http://127.0.0.1:{}", if port == 1 { 2 } else { port - 1 }),
        format!("http://127.0.0.1.evil.example:{port}"),
        "file://".to_string(),
    ] {
        let res = post_project(&app, "refused", &[("origin", &origin)]).await;
        assert_eq!(error_code(res, 403).await, "origin_not_allowed", "Origin {origin}");
    }
}

#[actix_web::test]
async fn the_services_own_origin_is_allowed() {
    let app = spawn_app().await;
    let res = post_project(&app, "own", &[("origin", &own_origin(&app))]).await;
    assert_eq!(res.status().as_u16(), 201, "Origin {}", own_origin(&app));

    // Served as localhost, the page's origin is localhost.
    let host = format!("localhost:{}", app.port);
    let origin = format!("http://localhost:{}", app.port);
    let res = post_project(&app, "own-localhost", &[("host", &host), ("origin", &origin)]).await;
    assert_eq!(res.status().as_u16(), 201, "Origin {origin} with Host {host}");
}

#[actix_web::test]
async fn a_configured_origin_is_allowed() {
    let app = spawn_app_with(|s| s.allowed_origins = vec!["http://localhost:5173".into()]).await;
    let res = post_project(&app, "dev", &[("origin", "http://localhost:5173")]).await;
    assert_eq!(res.status().as_u16(), 201);

    let res = post_project(&app, "other-port", &[("origin", "http://localhost:5174")]).await;
    assert_eq!(error_code(res, 403).await, "origin_not_allowed", "only the configured origin");
}

#[actix_web::test]
async fn requests_without_an_origin_are_allowed() {
    let app = spawn_app().await;
    let res = post_project(&app, "script", &[]).await;
    assert_eq!(res.status().as_u16(), 201, "curl and scripts send no Origin");
}

#[actix_web::test]
async fn a_read_with_a_foreign_origin_is_served_without_cors_headers() {
    let app = spawn_app().await;
    app.create_project("p", "p").await;
    let reads: Vec<_> = all_routes().into_iter().filter(|(m, _)| is_read(m)).collect();
    for (method, path) in reads {
        let res = send(&app, method.clone(), &path, &[("origin", EVIL_ORIGIN)]).await;
        for name in ["access-control-allow-origin", "access-control-allow-credentials"] {
            assert_eq!(header(&res, name), None, "{method} {path}: no {name}");
        }
        if path == "/api/cluster/feed" {
            // Refused to every client, whatever its origin: only nodes read it.
            assert_eq!(error_code(res, 403).await, "peers_only");
            continue;
        }
        assert_ne!(res.status().as_u16(), 403, "{method} {path} is not refused");
    }
    let res = send(&app, reqwest::Method::GET, "/api/projects", &[("origin", EVIL_ORIGIN)]).await;
    assert_eq!(res.status().as_u16(), 200);
}

#[actix_web::test]
async fn a_cors_preflight_gets_no_cors_headers() {
    let app = spawn_app().await;
    let res = app
        .client
        .request(reqwest::Method::OPTIONS, app.url("/api/projects"))
        .header("origin", EVIL_ORIGIN)
        .header("access-control-request-method", "POST")
        .send()
        .await
        .expect("request");
    assert_ne!(res.status().as_u16(), 200, "no preflight handler");
    assert_eq!(header(&res, "access-control-allow-origin"), None);
    assert_eq!(header(&res, "access-control-allow-methods"), None);
}

#[actix_web::test]
async fn a_websocket_upgrade_from_a_foreign_origin_is_refused() {
    let app = spawn_app().await;
    let upgrade = [
        ("upgrade", "websocket"),
        ("connection", "Upgrade"),
        ("sec-websocket-version", "13"),
        ("sec-websocket-key", "dGhlIHNhbXBsZSBub25jZQ=="),
    ];

    let mut headers = upgrade.to_vec();
    headers.push(("origin", EVIL_ORIGIN));
    let res = send(&app, reqwest::Method::GET, "/api/health", &headers).await;
    assert_eq!(error_code(res, 403).await, "origin_not_allowed");

    // From the service's own origin the guard lets it through.
    let own = own_origin(&app);
    let mut headers = upgrade.to_vec();
    headers.push(("origin", &own));
    let res = send(&app, reqwest::Method::GET, "/api/health", &headers).await;
    assert_ne!(res.status().as_u16(), 403, "own origin is not refused");
}

// ---------------------------------------------------------------------------------------------
// Token
// ---------------------------------------------------------------------------------------------

async fn spawn_with_token() -> TestApp {
    spawn_app_with(|s| s.auth_token = Some(TOKEN.into())).await
}

async fn assert_unauthorized(res: reqwest::Response, what: &str) {
    assert!(header(&res, "www-authenticate").is_some_and(|v| v.starts_with("Bearer")), "{what}: WWW-Authenticate");
    assert_eq!(error_code(res, 401).await, "unauthorized", "{what}");
}

#[actix_web::test]
async fn without_a_token_every_route_is_401() {
    let app = spawn_with_token().await;
    for (method, path) in all_routes() {
        let res = send(&app, method.clone(), &path, &[]).await;
        if path == "/api/auth/login" {
            // Signing in needs no token: the empty form is refused for itself, not for a token.
            let status = res.status().as_u16();
            assert!((400..500).contains(&status) && status != 401, "{method} {path}: {status}");
            continue;
        }
        assert_unauthorized(res, &format!("{method} {path}")).await;
    }
}

#[actix_web::test]
async fn a_wrong_token_is_401() {
    let app = spawn_with_token().await;
    for value in [
        "Bearer wrong",
        "Bearer secret-token-but-longer",
        "Bearer secret-toke",
        "Bearer ",
        "secret-token",
        "Basic c2VjcmV0LXRva2Vu",
    ] {
        let res = send(&app, reqwest::Method::GET, "/api/health", &[("authorization", value)]).await;
        assert_unauthorized(res, &format!("Authorization: {value}")).await;
    }
}

#[actix_web::test]
async fn the_right_bearer_token_is_accepted() {
    let app = spawn_with_token().await;
    let bearer = format!("Bearer {TOKEN}");
    let res = send(&app, reqwest::Method::GET, "/api/health", &[("authorization", &bearer)]).await;
    assert_eq!(res.status().as_u16(), 200);
    let res = post_project(&app, "with-token", &[("authorization", &bearer)]).await;
    assert_eq!(res.status().as_u16(), 201);
}

#[actix_web::test]
async fn a_query_token_only_counts_on_stream_paths() {
    let app = spawn_with_token().await;
    let res = app.get(&format!("/api/health?token={TOKEN}")).await;
    assert_unauthorized(res, "?token= on /api/health").await;
    let res = app.get(&format!("/api/projects?token={TOKEN}")).await;
    assert_unauthorized(res, "?token= on /api/projects").await;

    // On a path ending /ws or /stream it passes the guard (no such route here, so 404).
    for path in ["/api/sessions/x/ws", "/api/sessions/x/stream"] {
        let res = app.get(&format!("{path}?token={TOKEN}")).await;
        assert_eq!(error_code(res, 404).await, "not_found", "{path} with ?token=");
        let res = app.get(&format!("{path}?token=wrong")).await;
        assert_unauthorized(res, &format!("{path} with a wrong ?token=")).await;
    }
}

#[actix_web::test]
async fn the_host_check_comes_before_the_token() {
    let app = spawn_with_token().await;
    let bearer = format!("Bearer {TOKEN}");
    let res =
        send(&app, reqwest::Method::GET, "/api/health", &[("authorization", &bearer), ("host", "evil.example")]).await;
    assert_eq!(error_code(res, 403).await, "host_not_allowed", "a token does not excuse a foreign Host");
}

// ---------------------------------------------------------------------------------------------
// Fallbacks
// ---------------------------------------------------------------------------------------------

#[actix_web::test]
async fn an_unknown_route_is_a_json_404() {
    let app = spawn_app().await;
    // Outside /api, unknown paths are the dashboard's client routes (tests/api/dashboard.rs).
    for path in ["/api/nope", "/api/projects/x/y", "/api"] {
        assert_eq!(error_code(app.get(path).await, 404).await, "not_found", "{path}");
    }
    let res = app.post_json("/api/nope", &json!({})).await;
    assert_eq!(error_code(res, 404).await, "not_found");
}

#[actix_web::test]
async fn a_wrong_method_is_a_json_405_with_allow() {
    let app = spawn_app().await;
    let id = uuid::Uuid::new_v4();
    let cases = [
        (reqwest::Method::PATCH, "/api/projects".to_string(), vec!["GET", "POST"]),
        (reqwest::Method::DELETE, "/api/projects".to_string(), vec!["GET", "POST"]),
        (reqwest::Method::PATCH, format!("/api/projects/{id}"), vec!["GET", "PUT", "DELETE"]),
        (reqwest::Method::POST, "/api/health".to_string(), vec!["GET"]),
        (reqwest::Method::GET, "/api/projects/import".to_string(), vec!["POST"]),
    ];
    for (method, path, allowed) in cases {
        let res = send(&app, method.clone(), &path, &[]).await;
        let allow = header(&res, "allow").unwrap_or_else(|| panic!("{method} {path}: Allow header")).to_string();
        let mut listed: Vec<&str> = allow.split(',').map(str::trim).collect();
        listed.sort_unstable();
        let mut expected = allowed.clone();
        expected.sort_unstable();
        assert_eq!(listed, expected, "{method} {path}: Allow {allow:?}");
        assert_eq!(error_code(res, 405).await, "method_not_allowed", "{method} {path}");
    }
}

// ---------------------------------------------------------------------------------------------
// Startup
// ---------------------------------------------------------------------------------------------

#[actix_web::test]
async fn build_refuses_a_non_loopback_host_without_a_token() {
    let dir = tempfile::tempdir().expect("tempdir");
    let mut settings = test_settings(dir.path());
    settings.host = "0.0.0.0".to_string();
    match Application::build(settings, crate::helpers::serve_options()).await {
        Ok(app) => {
            app.server_handle().stop(true).await;
            panic!("built on 0.0.0.0 without a token");
        }
        Err(e) => {
            let message = e.to_string();
            assert!(message.contains("CONDUIT_AUTH_TOKEN"), "{message}");
        }
    }
}

#[actix_web::test]
async fn build_on_a_non_loopback_host_works_with_insecure_or_a_token() {
    for (what, token, insecure) in [("--insecure", None, true), ("a token", Some(TOKEN.to_string()), false)] {
        let dir = tempfile::tempdir().expect("tempdir");
        let mut settings = test_settings(dir.path());
        settings.host = "0.0.0.0".to_string();
        settings.port = 0;
        settings.auth_token = token;
        let app = match Application::build(settings, ServeOptions { insecure, ..crate::helpers::serve_options() }).await
        {
            Ok(app) => app,
            Err(e) => panic!("builds with {what}: {e}"),
        };
        assert_ne!(app.port(), 0, "{what}: a real port was bound");
        let cgroups = app.containment().root().map(|r| r.path().to_path_buf());
        let handle = app.server_handle();
        let server = actix_web::rt::spawn(app.run_until_stopped());
        handle.stop(true).await;
        server.await.expect("server task").expect("server stopped cleanly");
        // Stopped through its handle, it shut down as on SIGTERM: its cgroup folder is gone.
        assert!(cgroups.is_none_or(|dir| !dir.exists()), "{what}: the service's cgroup folder outlived it");
    }
}

#[actix_web::test]
async fn a_json_array_is_never_taken_for_an_object() {
    let app = spawn_app().await;
    std::fs::create_dir_all(app.root.join("arr")).expect("folder");
    let res = app.client.post(format!("{}/api/projects", app.address)).json(&json!(["Arr", "arr"])).send().await;
    assert_eq!(error_code(res.expect("request"), 422).await, "validation_failed");
    let res =
        app.client.post(format!("{}/api/projects", app.address)).json(&new_project_body(&app, "arr")).send().await;
    let project: Value = res.expect("request").json().await.expect("json");
    let id = project["id"].as_str().expect("id");
    for body in ["[]", "  [\"renamed\"]"] {
        let res = app
            .client
            .put(format!("{}/api/projects/{id}", app.address))
            .header("content-type", "application/json")
            .body(body)
            .send()
            .await
            .expect("request");
        assert_eq!(error_code(res, 422).await, "validation_failed", "{body}");
    }
    let res = app
        .client
        .post(format!("{}/api/projects", app.address))
        .header("content-type", "application/json")
        .body(vec![b' '; 2 * 1024 * 1024])
        .send()
        .await
        .expect("request");
    assert_eq!(error_code(res, 413).await, "payload_too_large");
}

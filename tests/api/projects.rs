//! Every `/api/projects` endpoint: create, import, list, get, update, delete and discover.

use std::path::Path;

use serde_json::{json, Value};

use crate::helpers::{error_code, spawn_app, spawn_app_with, TestApp};

/// The body limit the service enforces (1 MiB).
const MAX_BODY: usize = 1024 * 1024;

// ---------------------------------------------------------------------------------------------
// Helpers
// ---------------------------------------------------------------------------------------------

/// Asserts an error response of `status` and returns the whole JSON body.
async fn error_body(res: reqwest::Response, status: u16) -> Value {
    assert_eq!(res.status().as_u16(), status, "status");
    let body: Value = res.json().await.expect("error body is JSON");
    assert!(body["error"]["code"].is_string(), "error.code: {body}");
    assert!(body["error"]["message"].is_string(), "error.message: {body}");
    body
}

fn message(body: &Value) -> &str {
    body["error"]["message"].as_str().expect("error.message is a string")
}

/// Sends `body` as is, with the given content type (or none).
async fn post_raw(app: &TestApp, path: &str, content_type: Option<&str>, body: Vec<u8>) -> reqwest::Response {
    let mut req = app.client.post(app.url(path)).body(body);
    if let Some(ct) = content_type {
        req = req.header("content-type", ct);
    }
    req.send().await.expect("request")
}

/// Creates a folder under the root with the given (empty) files in it.
fn folder_with(app: &TestApp, rel: &str, files: &[&str]) -> std::path::PathBuf {
    let dir = app.mkdir(rel);
    for f in files {
        std::fs::write(dir.join(f), "").expect("write marker file");
    }
    dir
}

fn path_str(p: &Path) -> &str {
    p.to_str().expect("utf-8 path")
}

async fn create(app: &TestApp, body: Value) -> reqwest::Response {
    app.post_json("/api/projects", &body).await
}

async fn created(res: reqwest::Response) -> Value {
    assert_eq!(res.status().as_u16(), 201, "created");
    res.json().await.expect("project JSON")
}

fn id_of(project: &Value) -> &str {
    project["id"].as_str().expect("project id")
}

async fn list(app: &TestApp, query: &str) -> Vec<Value> {
    let res = app.get(&format!("/api/projects{query}")).await;
    assert_eq!(res.status().as_u16(), 200, "list {query}");
    res.json().await.expect("list JSON")
}

fn names(projects: &[Value]) -> Vec<&str> {
    projects.iter().map(|p| p["name"].as_str().expect("name")).collect()
}

async fn discover(app: &TestApp, path: Option<&str>) -> Vec<Value> {
    let mut req = app.client.get(app.url("/api/projects/discover"));
    if let Some(p) = path {
        req = req.query(&[("path", p)]);
    }
    let res = req.send().await.expect("request");
    assert_eq!(res.status().as_u16(), 200, "discover {path:?}");
    res.json().await.expect("discover JSON")
}

async fn discover_status(app: &TestApp, path: &str) -> reqwest::Response {
    app.client.get(app.url("/api/projects/discover")).query(&[("path", path)]).send().await.expect("request")
}

fn folder_paths(found: &[Value]) -> Vec<String> {
    found.iter().map(|d| d["folder_path"].as_str().expect("folder_path").to_string()).collect()
}

// ---------------------------------------------------------------------------------------------
// POST /api/projects
// ---------------------------------------------------------------------------------------------

#[actix_web::test]
async fn create_returns_201_with_location_and_defaults() {
    let app = spawn_app().await;
    let folder = folder_with(&app, "my-app", &["Cargo.toml"]);

    let res = create(&app, json!({"name": "  My App  ", "folder_path": folder})).await;
    assert_eq!(res.status().as_u16(), 201);
    let location =
        res.headers().get("location").expect("Location header").to_str().expect("ascii Location").to_string();
    let project: Value = res.json().await.expect("json");

    assert_eq!(location, format!("/api/projects/{}", id_of(&project)));
    assert!(uuid::Uuid::parse_str(id_of(&project)).is_ok(), "id is a UUID: {project}");
    assert_eq!(project["name"], "My App", "name is trimmed");
    assert_eq!(project["folder_path"], path_str(&folder));
    assert_eq!(project["project_type"], "rust");
    assert_eq!(project["source"], "manual");
    assert_eq!(project["max_sessions"], 5);
    assert_eq!(project["description"], Value::Null);
    assert_eq!(project["default_model"], Value::Null);
    assert_eq!(project["default_permission_mode"], Value::Null);
    assert!(project["created_at"].is_string() && project["updated_at"].is_string());

    // The Location resolves to the same project.
    let fetched: Value = app.get(&location).await.json().await.expect("json");
    assert_eq!(fetched, project);
}

#[actix_web::test]
async fn create_stores_every_optional_field() {
    let app = spawn_app().await;
    let folder = app.mkdir("full");
    let project = created(
        create(
            &app,
            json!({
                "name": "Full",
                "folder_path": folder,
                "description": "A description",
                "default_model": "claude-sonnet-4-5",
                "default_permission_mode": "acceptEdits",
                "default_system_prompt": "Be brief.",
                "default_append_system_prompt": "Always test.",
                "max_sessions": 1000,
            }),
        )
        .await,
    )
    .await;
    assert_eq!(project["description"], "A description");
    assert_eq!(project["default_model"], "claude-sonnet-4-5");
    assert_eq!(project["default_permission_mode"], "acceptEdits");
    assert_eq!(project["default_system_prompt"], "Be brief.");
    assert_eq!(project["default_append_system_prompt"], "Always test.");
    assert_eq!(project["max_sessions"], 1000);
}

#[actix_web::test]
async fn create_detects_project_type_from_marker_files() {
    let app = spawn_app().await;
    let cases: [(&str, &[&str], &str); 8] = [
        ("t-rust", &["Cargo.toml"], "rust"),
        ("t-node", &["package.json"], "node"),
        ("t-pyproject", &["pyproject.toml"], "python"),
        ("t-requirements", &["requirements.txt"], "python"),
        ("t-go", &["go.mod"], "go"),
        ("t-java", &["pom.xml"], "java"),
        ("t-generic", &["README.md"], "generic"),
        // First match wins: Cargo.toml before package.json.
        ("t-both", &["package.json", "Cargo.toml"], "rust"),
    ];
    for (rel, files, expected) in cases {
        let folder = folder_with(&app, rel, files);
        let project = created(create(&app, json!({"name": rel, "folder_path": folder})).await).await;
        assert_eq!(project["project_type"], expected, "{rel} with {files:?}");
    }
}

#[actix_web::test]
async fn create_accepts_a_folder_relative_to_the_root() {
    let app = spawn_app().await;
    let folder = app.mkdir("nested/deeper");
    let project = created(create(&app, json!({"name": "rel", "folder_path": "nested/deeper"})).await).await;
    assert_eq!(project["folder_path"], path_str(&folder), "stored canonical and absolute");
}

#[actix_web::test]
async fn create_accepts_a_name_of_exactly_200_characters() {
    let app = spawn_app().await;
    let folder = app.mkdir("long");
    let name = "é".repeat(200);
    let project = created(create(&app, json!({"name": name, "folder_path": folder})).await).await;
    assert_eq!(project["name"], name.as_str());
}

#[actix_web::test]
async fn create_rejects_invalid_fields_with_422() {
    let app = spawn_app().await;
    let folder = app.mkdir("ok");
    let folder = path_str(&folder);
    std::fs::write(app.root.join("a-file.txt"), "x").expect("write file");

    let cases: Vec<(&str, Value)> = vec![
        ("empty name", json!({"name": "", "folder_path": folder})),
        ("whitespace name", json!({"name": "   \t ", "folder_path": folder})),
        ("201-char name", json!({"name": "x".repeat(201), "folder_path": folder})),
        ("control character in name", json!({"name": "a\nb", "folder_path": folder})),
        ("missing name", json!({"folder_path": folder})),
        ("missing folder_path", json!({"name": "n"})),
        ("name of the wrong type", json!({"name": 42, "folder_path": folder})),
        ("max_sessions of the wrong type", json!({"name": "n", "folder_path": folder, "max_sessions": "5"})),
        ("folder that does not exist", json!({"name": "n", "folder_path": "no/such/folder"})),
        ("folder that is a file", json!({"name": "n", "folder_path": "a-file.txt"})),
        ("bad permission mode", json!({"name": "n", "folder_path": folder, "default_permission_mode": "yolo"})),
        (
            "permission mode in the wrong case",
            json!({"name": "n", "folder_path": folder, "default_permission_mode": "Default"}),
        ),
        ("model that looks like a flag", json!({"name": "n", "folder_path": folder, "default_model": "-p"})),
        (
            "model with a space",
            json!({"name": "n", "folder_path": folder, "default_model": "opus --dangerously-skip-permissions"}),
        ),
        ("empty model", json!({"name": "n", "folder_path": folder, "default_model": ""})),
        ("max_sessions 0", json!({"name": "n", "folder_path": folder, "max_sessions": 0})),
        ("max_sessions 1001", json!({"name": "n", "folder_path": folder, "max_sessions": 1001})),
        (
            "description over 10000 bytes",
            json!({"name": "n", "folder_path": folder, "description": "d".repeat(10_001)}),
        ),
        ("NUL in the system prompt", json!({"name": "n", "folder_path": folder, "default_system_prompt": "a\u{0}b"})),
    ];
    for (what, body) in cases {
        let code = error_code(create(&app, body).await, 422).await;
        assert_eq!(code, "validation_failed", "{what}");
    }
    assert!(list(&app, "").await.is_empty(), "nothing was created");
}

#[actix_web::test]
async fn create_with_an_unknown_field_names_it() {
    let app = spawn_app().await;
    let folder = app.mkdir("ok");
    let res = create(&app, json!({"name": "n", "folder_path": folder, "colour": "blue"})).await;
    let body = error_body(res, 422).await;
    assert_eq!(body["error"]["code"], "validation_failed");
    assert!(message(&body).contains("colour"), "message names the field: {body}");
}

#[actix_web::test]
async fn create_on_a_folder_already_used_is_409_whatever_the_spelling() {
    let app = spawn_app().await;
    let folder = app.mkdir("a");
    app.mkdir("b");
    created(create(&app, json!({"name": "first", "folder_path": folder})).await).await;

    let spellings = [
        path_str(&folder).to_string(),
        "a".to_string(),
        "a/".to_string(),
        "./a".to_string(),
        "a/../a".to_string(),
        "b/../a".to_string(),
        format!("{}/../a", path_str(&folder)),
    ];
    for spelling in spellings {
        let res = create(&app, json!({"name": "second", "folder_path": spelling})).await;
        assert_eq!(error_code(res, 409).await, "conflict", "folder spelled {spelling:?}");
    }
    assert_eq!(list(&app, "").await.len(), 1);
}

#[actix_web::test]
async fn create_outside_the_root_is_403() {
    let app = spawn_app().await;
    let outside = app.dir.path().join("outside");
    std::fs::create_dir_all(&outside).expect("mkdir outside");
    std::fs::create_dir_all(app.dir.path().join("root-leak")).expect("mkdir sibling");

    for folder in [
        path_str(&outside).to_string(),
        "..".to_string(),
        "../outside".to_string(),
        "../root-leak".to_string(),
        "/etc".to_string(),
    ] {
        let res = create(&app, json!({"name": "n", "folder_path": folder})).await;
        assert_eq!(error_code(res, 403).await, "path_outside_root", "folder {folder:?}");
    }
}

#[actix_web::test]
async fn create_with_malformed_json_is_400() {
    let app = spawn_app().await;
    let res = post_raw(&app, "/api/projects", Some("application/json"), br#"{"name": "x", "#.to_vec()).await;
    assert_eq!(error_code(res, 400).await, "malformed_json");
}

#[actix_web::test]
async fn create_without_a_json_content_type_is_415() {
    let app = spawn_app().await;
    let folder = app.mkdir("ok");
    let body = json!({"name": "n", "folder_path": folder}).to_string().into_bytes();

    let res = post_raw(&app, "/api/projects", Some("text/plain"), body.clone()).await;
    assert_eq!(error_code(res, 415).await, "unsupported_media_type", "text/plain");

    let res = post_raw(&app, "/api/projects", None, body).await;
    assert_eq!(error_code(res, 415).await, "unsupported_media_type", "no content type");
}

/// A valid create body of exactly `size` bytes: the JSON padded with whitespace.
fn padded_body(name: &str, folder: &Path, size: usize) -> Vec<u8> {
    let head = format!(r#"{{"name":"{name}","#);
    let tail = format!(r#""folder_path":{}}}"#, json!(path_str(folder)));
    let pad = size.checked_sub(head.len() + tail.len()).expect("size fits the JSON");
    let body = format!("{head}{}{tail}", " ".repeat(pad)).into_bytes();
    assert_eq!(body.len(), size);
    body
}

#[actix_web::test]
async fn create_with_a_body_over_1_mib_is_413() {
    let app = spawn_app().await;
    let folder = app.mkdir("big");
    let body = padded_body("big", &folder, MAX_BODY + 1);
    let res = post_raw(&app, "/api/projects", Some("application/json"), body).await;
    assert_eq!(error_code(res, 413).await, "payload_too_large");
    assert!(list(&app, "").await.is_empty());
}

#[actix_web::test]
async fn create_with_a_body_up_to_1_mib_is_accepted() {
    let app = spawn_app().await;
    for (rel, size) in [("just-under", MAX_BODY - 1), ("exactly", MAX_BODY)] {
        let folder = app.mkdir(rel);
        let res = post_raw(&app, "/api/projects", Some("application/json"), padded_body(rel, &folder, size)).await;
        assert_ne!(res.status().as_u16(), 413, "{size} bytes");
        let project = created(res).await;
        assert_eq!(project["name"], rel);
    }
}

// ---------------------------------------------------------------------------------------------
// POST /api/projects/import
// ---------------------------------------------------------------------------------------------

#[actix_web::test]
async fn import_names_the_project_after_its_folder() {
    let app = spawn_app().await;
    let folder = folder_with(&app, "work/web-shop", &["package.json"]);
    let res = app.post_json("/api/projects/import", &json!({"folder_path": folder})).await;
    assert_eq!(res.status().as_u16(), 201);
    let location = res.headers().get("location").expect("Location header").to_str().expect("ascii").to_string();
    let project: Value = res.json().await.expect("json");
    assert_eq!(location, format!("/api/projects/{}", id_of(&project)));
    assert_eq!(project["name"], "web-shop");
    assert_eq!(project["source"], "imported");
    assert_eq!(project["project_type"], "node");
    assert_eq!(project["folder_path"], path_str(&folder));
    assert_eq!(project["max_sessions"], 5);
}

#[actix_web::test]
async fn import_honours_an_explicit_name_and_defaults() {
    let app = spawn_app().await;
    app.mkdir("svc");
    let res = app
        .post_json(
            "/api/projects/import",
            &json!({"folder_path": "svc", "name": "  Billing  ", "max_sessions": 3, "default_permission_mode": "plan"}),
        )
        .await;
    let project = created(res).await;
    assert_eq!(project["name"], "Billing");
    assert_eq!(project["source"], "imported");
    assert_eq!(project["max_sessions"], 3);
    assert_eq!(project["default_permission_mode"], "plan");
}

#[actix_web::test]
async fn import_of_a_folder_already_registered_is_409() {
    let app = spawn_app().await;
    let manual = app.create_project("manual", "m").await;
    let res = app.post_json("/api/projects/import", &json!({"folder_path": manual["folder_path"]})).await;
    assert_eq!(error_code(res, 409).await, "conflict", "folder created manually");

    app.mkdir("i");
    created(app.post_json("/api/projects/import", &json!({"folder_path": "i"})).await).await;
    let res = app.post_json("/api/projects/import", &json!({"folder_path": "i/."})).await;
    assert_eq!(error_code(res, 409).await, "conflict", "folder imported twice");
}

#[actix_web::test]
async fn import_validates_like_create() {
    let app = spawn_app().await;
    app.mkdir("ok");
    let cases = [
        (json!({"folder_path": "missing"}), 422, "validation_failed"),
        (json!({"folder_path": "ok", "name": "  "}), 422, "validation_failed"),
        (json!({"folder_path": "ok", "max_sessions": 0}), 422, "validation_failed"),
        (json!({"folder_path": "ok", "source": "manual"}), 422, "validation_failed"),
        (json!({"name": "no folder"}), 422, "validation_failed"),
        (json!({"folder_path": ".."}), 403, "path_outside_root"),
        (json!({"name": null}), 422, "validation_failed"),
        (json!({"folder_path": null}), 422, "validation_failed"),
        (json!({"max_sessions": null}), 422, "validation_failed"),
    ];
    for (body, status, code) in cases {
        let res = app.post_json("/api/projects/import", &body).await;
        assert_eq!(error_code(res, status).await, code, "{body}");
    }
}

// ---------------------------------------------------------------------------------------------
// GET /api/projects
// ---------------------------------------------------------------------------------------------

#[actix_web::test]
async fn list_is_empty_at_first() {
    let app = spawn_app().await;
    assert_eq!(list(&app, "").await, Vec::<Value>::new());
}

#[actix_web::test]
async fn list_is_ordered_by_name_and_paginates() {
    let app = spawn_app().await;
    for name in ["charlie", "alpha", "delta", "bravo"] {
        app.create_project(name, name).await;
    }
    assert_eq!(names(&list(&app, "").await), ["alpha", "bravo", "charlie", "delta"]);
    assert_eq!(names(&list(&app, "?limit=2").await), ["alpha", "bravo"]);
    assert_eq!(names(&list(&app, "?limit=2&offset=2").await), ["charlie", "delta"]);
    assert_eq!(names(&list(&app, "?offset=1&limit=1").await), ["bravo"]);
    assert_eq!(names(&list(&app, "?offset=3").await), ["delta"]);
    assert!(list(&app, "?offset=10").await.is_empty());
    assert_eq!(list(&app, "?limit=1000").await.len(), 4);
}

#[actix_web::test]
async fn list_rejects_bad_paging() {
    let app = spawn_app().await;
    for query in ["limit=0", "limit=1001", "limit=-5", "offset=-1"] {
        let res = app.get(&format!("/api/projects?{query}")).await;
        assert_eq!(error_code(res, 422).await, "validation_failed", "{query}");
    }
    for query in ["limit=abc", "offset=1.5", "limit="] {
        let res = app.get(&format!("/api/projects?{query}")).await;
        assert_eq!(error_code(res, 400).await, "invalid_query", "{query}");
    }
}

// ---------------------------------------------------------------------------------------------
// GET /api/projects/{id}
// ---------------------------------------------------------------------------------------------

#[actix_web::test]
async fn get_returns_the_project() {
    let app = spawn_app().await;
    let project = app.create_project("p", "p").await;
    let id = id_of(&project);

    let res = app.get(&format!("/api/projects/{id}")).await;
    assert_eq!(res.status().as_u16(), 200);
    assert_eq!(res.json::<Value>().await.expect("json"), project);

    // The id is a UUID; its upper-case spelling names the same project.
    let res = app.get(&format!("/api/projects/{}", id.to_uppercase())).await;
    assert_eq!(res.status().as_u16(), 200, "upper-case UUID");
    assert_eq!(res.json::<Value>().await.expect("json")["id"], id);
}

#[actix_web::test]
async fn get_unknown_or_malformed_id_is_404() {
    let app = spawn_app().await;
    app.create_project("p", "p").await;
    let random = uuid::Uuid::new_v4().to_string();
    for id in [random.as_str(), "abc", "..%2f", "%2e%2e", "1", "00000000-0000-0000-0000-00000000000g"] {
        let res = app.get(&format!("/api/projects/{id}")).await;
        assert_eq!(error_code(res, 404).await, "not_found", "id {id:?}");
    }
}

// ---------------------------------------------------------------------------------------------
// PUT /api/projects/{id}
// ---------------------------------------------------------------------------------------------

async fn put(app: &TestApp, id: &str, body: Value) -> reqwest::Response {
    app.put_json(&format!("/api/projects/{id}"), &body).await
}

async fn updated(res: reqwest::Response) -> Value {
    assert_eq!(res.status().as_u16(), 200, "updated");
    res.json().await.expect("project JSON")
}

async fn full_project(app: &TestApp) -> Value {
    let folder = app.mkdir("full");
    created(
        create(
            app,
            json!({
                "name": "Full",
                "folder_path": folder,
                "description": "desc",
                "default_model": "opus",
                "default_permission_mode": "plan",
                "default_system_prompt": "sys",
                "default_append_system_prompt": "append",
                "max_sessions": 7,
            }),
        )
        .await,
    )
    .await
}

#[actix_web::test]
async fn update_changes_only_the_given_fields() {
    let app = spawn_app().await;
    let before = full_project(&app).await;
    let id = id_of(&before);

    let after = updated(put(&app, id, json!({"name": "  Renamed "})).await).await;
    let mut expected = before.clone();
    expected["name"] = json!("Renamed");
    expected["updated_at"] = after["updated_at"].clone();
    assert_eq!(after, expected, "only the name (and updated_at) changed");
    assert!(after["updated_at"].as_str() >= before["updated_at"].as_str());

    let after = updated(put(&app, id, json!({"max_sessions": 2, "default_model": "sonnet"})).await).await;
    assert_eq!(after["max_sessions"], 2);
    assert_eq!(after["default_model"], "sonnet");
    assert_eq!(after["name"], "Renamed");
    assert_eq!(after["description"], "desc");

    // An empty body changes nothing.
    let same = updated(put(&app, id, json!({})).await).await;
    assert_eq!(same["name"], "Renamed");
    assert_eq!(same["created_at"], before["created_at"]);

    // The change is stored, not just echoed.
    let stored: Value = app.get(&format!("/api/projects/{id}")).await.json().await.expect("json");
    assert_eq!(stored["max_sessions"], 2);
    assert_eq!(stored["name"], "Renamed");
}

#[actix_web::test]
async fn update_with_null_clears_optional_fields() {
    let app = spawn_app().await;
    let before = full_project(&app).await;
    let id = id_of(&before);

    let after = updated(put(&app, id, json!({"description": null})).await).await;
    assert_eq!(after["description"], Value::Null);
    assert_eq!(after["default_model"], "opus", "absent fields keep their value");

    let after = updated(
        put(
            &app,
            id,
            json!({
                "default_model": null,
                "default_permission_mode": null,
                "default_system_prompt": null,
                "default_append_system_prompt": null,
            }),
        )
        .await,
    )
    .await;
    for field in [
        "description",
        "default_model",
        "default_permission_mode",
        "default_system_prompt",
        "default_append_system_prompt",
    ] {
        assert_eq!(after[field], Value::Null, "{field}");
    }
    assert_eq!(after["max_sessions"], 7);
    let stored: Value = app.get(&format!("/api/projects/{id}")).await.json().await.expect("json");
    assert_eq!(stored["description"], Value::Null);
}

#[actix_web::test]
async fn update_folder_redetects_project_type() {
    let app = spawn_app().await;
    let project =
        created(create(&app, json!({"name": "p", "folder_path": folder_with(&app, "rusty", &["Cargo.toml"])})).await)
            .await;
    assert_eq!(project["project_type"], "rust");
    let node = folder_with(&app, "js", &["package.json"]);

    let after = updated(put(&app, id_of(&project), json!({"folder_path": "js"})).await).await;
    assert_eq!(after["folder_path"], path_str(&node));
    assert_eq!(after["project_type"], "node");

    // Its old folder is free again.
    created(create(&app, json!({"name": "q", "folder_path": "rusty"})).await).await;
}

#[actix_web::test]
async fn update_onto_its_own_folder_is_fine() {
    let app = spawn_app().await;
    let project = app.create_project("p", "own").await;
    let after = updated(put(&app, id_of(&project), json!({"folder_path": "own/../own"})).await).await;
    assert_eq!(after["folder_path"], project["folder_path"]);
}

#[actix_web::test]
async fn update_onto_another_projects_folder_is_409() {
    let app = spawn_app().await;
    let a = app.create_project("a", "a").await;
    let b = app.create_project("b", "b").await;
    for spelling in [b["folder_path"].as_str().expect("folder").to_string(), "b".to_string(), "a/../b".to_string()] {
        let res = put(&app, id_of(&a), json!({"folder_path": spelling})).await;
        assert_eq!(error_code(res, 409).await, "conflict", "{spelling:?}");
    }
    let stored: Value = app.get(&format!("/api/projects/{}", id_of(&a))).await.json().await.expect("json");
    assert_eq!(stored["folder_path"], a["folder_path"], "unchanged after the conflict");
}

#[actix_web::test]
async fn update_unknown_or_malformed_id_is_404() {
    let app = spawn_app().await;
    for id in [uuid::Uuid::new_v4().to_string(), "abc".to_string()] {
        let res = put(&app, &id, json!({"name": "x"})).await;
        assert_eq!(error_code(res, 404).await, "not_found", "{id}");
    }
}

#[actix_web::test]
async fn update_validates_its_fields() {
    let app = spawn_app().await;
    let project = full_project(&app).await;
    let id = id_of(&project);
    std::fs::write(app.root.join("file"), "x").expect("write file");

    let cases: Vec<(Value, u16, &str)> = vec![
        (json!({"name": ""}), 422, "validation_failed"),
        (json!({"name": "   "}), 422, "validation_failed"),
        (json!({"name": "x".repeat(201)}), 422, "validation_failed"),
        (json!({"max_sessions": 0}), 422, "validation_failed"),
        (json!({"max_sessions": 1001}), 422, "validation_failed"),
        (json!({"default_permission_mode": "ask"}), 422, "validation_failed"),
        (json!({"default_model": "-x"}), 422, "validation_failed"),
        (json!({"default_model": "a b"}), 422, "validation_failed"),
        (json!({"folder_path": "missing"}), 422, "validation_failed"),
        (json!({"folder_path": "file"}), 422, "validation_failed"),
        (json!({"name": 5}), 422, "validation_failed"),
        (json!({"folder_path": ".."}), 403, "path_outside_root"),
        (json!({"name": null}), 422, "validation_failed"),
        (json!({"folder_path": null}), 422, "validation_failed"),
        (json!({"max_sessions": null}), 422, "validation_failed"),
    ];
    for (body, status, code) in cases {
        let res = put(&app, id, body.clone()).await;
        assert_eq!(error_code(res, status).await, code, "{body}");
    }
    let stored: Value = app.get(&format!("/api/projects/{id}")).await.json().await.expect("json");
    assert_eq!(stored, project, "no failed update changed anything");
}

#[actix_web::test]
async fn update_with_an_unknown_field_is_422() {
    let app = spawn_app().await;
    let project = app.create_project("p", "p").await;
    let body = error_body(put(&app, id_of(&project), json!({"source": "imported"})).await, 422).await;
    assert_eq!(body["error"]["code"], "validation_failed");
    assert!(message(&body).contains("source"), "message names the field: {body}");
}

#[actix_web::test]
async fn update_rejects_non_json_bodies() {
    let app = spawn_app().await;
    let project = app.create_project("p", "p").await;
    let path = format!("/api/projects/{}", id_of(&project));

    let res = app
        .client
        .put(app.url(&path))
        .header("content-type", "text/plain")
        .body(r#"{"name":"x"}"#)
        .send()
        .await
        .expect("request");
    assert_eq!(error_code(res, 415).await, "unsupported_media_type");

    let res = app
        .client
        .put(app.url(&path))
        .header("content-type", "application/json")
        .body("{")
        .send()
        .await
        .expect("request");
    assert_eq!(error_code(res, 400).await, "malformed_json");
}

// ---------------------------------------------------------------------------------------------
// DELETE /api/projects/{id}
// ---------------------------------------------------------------------------------------------

#[actix_web::test]
async fn delete_removes_the_project() {
    let app = spawn_app().await;
    let project = app.create_project("p", "p").await;
    let keep = app.create_project("keep", "keep").await;
    let path = format!("/api/projects/{}", id_of(&project));

    let res = app.delete(&path).await;
    assert_eq!(res.status().as_u16(), 204);
    assert!(res.bytes().await.expect("body").is_empty(), "204 has no body");

    assert_eq!(error_code(app.get(&path).await, 404).await, "not_found");
    assert_eq!(error_code(app.delete(&path).await, 404).await, "not_found", "second delete");
    assert_eq!(list(&app, "").await, vec![keep], "only the other project is left");
}

#[actix_web::test]
async fn delete_frees_the_folder_for_a_new_project() {
    let app = spawn_app().await;
    let project = app.create_project("p", "p").await;
    let res = app.delete(&format!("/api/projects/{}", id_of(&project))).await;
    assert_eq!(res.status().as_u16(), 204);
    let again = created(create(&app, json!({"name": "p2", "folder_path": "p"})).await).await;
    assert_ne!(again["id"], project["id"]);
}

#[actix_web::test]
async fn delete_unknown_or_malformed_id_is_404() {
    let app = spawn_app().await;
    for id in [uuid::Uuid::new_v4().to_string(), "abc".to_string()] {
        let res = app.delete(&format!("/api/projects/{id}")).await;
        assert_eq!(error_code(res, 404).await, "not_found", "{id}");
    }
}

// ---------------------------------------------------------------------------------------------
// GET /api/projects/discover
// ---------------------------------------------------------------------------------------------

/// A tree under the root:
/// - `alpha/.git` + Cargo.toml (level 1)
/// - `group/beta/.claude` + package.json (level 2)
/// - `group/gamma/CLAUDE.md` (level 2)
/// - `group/gamma/inner/.git` (inside a project: not descended into)
/// - `deep/a/b/.git` (level 3: beyond the default depth of 2)
/// - `plain/` (no marker), `.hidden/.git`, `node_modules/dep/.git` (never scanned)
fn discover_tree(app: &TestApp) {
    folder_with(app, "alpha", &["Cargo.toml"]);
    app.mkdir("alpha/.git");
    folder_with(app, "group/beta", &["package.json"]);
    app.mkdir("group/beta/.claude");
    folder_with(app, "group/gamma", &["CLAUDE.md"]);
    app.mkdir("group/gamma/inner/.git");
    app.mkdir("deep/a/b/.git");
    app.mkdir("plain/sub");
    app.mkdir(".hidden/.git");
    app.mkdir("node_modules/dep/.git");
}

fn at_root(app: &TestApp, rel: &str) -> String {
    path_str(&app.root.join(rel)).to_string()
}

#[actix_web::test]
async fn discover_finds_marked_folders_up_to_the_scan_depth() {
    let app = spawn_app().await;
    discover_tree(&app);

    let found = discover(&app, None).await;
    assert_eq!(
        folder_paths(&found),
        [at_root(&app, "alpha"), at_root(&app, "group/beta"), at_root(&app, "group/gamma")]
    );

    let alpha = &found[0];
    assert_eq!(alpha["name"], "alpha");
    assert_eq!(alpha["project_type"], "rust");
    assert_eq!(alpha["markers"], json!([".git"]));
    assert_eq!(alpha["has_claude_history"], false);
    assert_eq!(alpha["project_id"], Value::Null);

    let beta = &found[1];
    assert_eq!(beta["name"], "beta");
    assert_eq!(beta["project_type"], "node");
    assert_eq!(beta["markers"], json!([".claude"]));
    assert_eq!(beta["has_claude_history"], true, ".claude/ is history");

    let gamma = &found[2];
    assert_eq!(gamma["project_type"], "generic");
    assert_eq!(gamma["markers"], json!(["CLAUDE.md"]));
    assert_eq!(gamma["has_claude_history"], false);
}

#[actix_web::test]
async fn discover_sees_cli_transcripts_under_home() {
    let app = spawn_app().await;
    let folder = app.mkdir("talked/.git");
    let folder = folder.parent().expect("parent").to_path_buf();
    assert_eq!(discover(&app, None).await[0]["has_claude_history"], false);
    // The CLI keeps transcripts under $HOME/.claude/projects/<path with '/' as '-'>; the test
    // app's HOME is its temporary folder.
    let mangled = path_str(&folder).replace('/', "-");
    std::fs::create_dir_all(app.dir.path().join(".claude/projects").join(mangled)).expect("mkdir");
    assert_eq!(discover(&app, None).await[0]["has_claude_history"], true);
}

#[actix_web::test]
async fn discover_reports_every_marker_a_folder_has() {
    let app = spawn_app().await;
    folder_with(&app, "multi", &["CLAUDE.md", "go.mod"]);
    app.mkdir("multi/.claude");
    // A worktree's `.git` is a file.
    std::fs::write(app.root.join("multi/.git"), "gitdir: /elsewhere").expect("write .git file");

    let found = discover(&app, None).await;
    assert_eq!(found.len(), 1, "{found:?}");
    assert_eq!(found[0]["markers"], json!([".claude", "CLAUDE.md", ".git"]));
    assert_eq!(found[0]["project_type"], "go");
}

#[actix_web::test]
async fn discover_reports_the_id_of_registered_projects() {
    let app = spawn_app().await;
    discover_tree(&app);
    let project = created(create(&app, json!({"name": "alpha", "folder_path": "alpha"})).await).await;

    let found = discover(&app, None).await;
    assert_eq!(found[0]["folder_path"], project["folder_path"]);
    assert_eq!(found[0]["project_id"], project["id"]);
    assert_eq!(found[1]["project_id"], Value::Null);
    assert_eq!(found[2]["project_id"], Value::Null);
}

#[actix_web::test]
async fn discover_takes_a_relative_or_absolute_path() {
    let app = spawn_app().await;
    discover_tree(&app);
    let expected = [at_root(&app, "group/beta"), at_root(&app, "group/gamma")];

    assert_eq!(folder_paths(&discover(&app, Some("group")).await), expected, "relative");
    assert_eq!(folder_paths(&discover(&app, Some(&at_root(&app, "group"))).await), expected, "absolute");
    assert_eq!(folder_paths(&discover(&app, Some("plain/../group/")).await), expected, "with ..");

    // The start folder itself counts when it is a project.
    assert_eq!(folder_paths(&discover(&app, Some("alpha")).await), [at_root(&app, "alpha")]);
    // Starting lower reaches deeper folders.
    assert_eq!(folder_paths(&discover(&app, Some("deep")).await), [at_root(&app, "deep/a/b")]);
    assert!(discover(&app, Some("plain")).await.is_empty());
}

#[actix_web::test]
async fn discover_refuses_paths_outside_the_root_and_missing_folders() {
    let app = spawn_app().await;
    discover_tree(&app);
    std::fs::create_dir_all(app.dir.path().join("root-leak/.git")).expect("mkdir sibling");
    std::fs::write(app.root.join("file"), "x").expect("write file");

    for path in ["..", "../..", "/etc", "../root-leak", &format!("{}-leak", app.root.display())] {
        let res = discover_status(&app, path).await;
        assert_eq!(error_code(res, 403).await, "path_outside_root", "{path:?}");
    }
    assert_eq!(error_code(discover_status(&app, "missing").await, 404).await, "not_found");
    assert_eq!(error_code(discover_status(&app, "file").await, 422).await, "not_a_directory");
}

#[actix_web::test]
async fn discover_respects_a_custom_scan_depth() {
    let app = spawn_app_with(|s| s.scan_depth = 1).await;
    discover_tree(&app);
    assert_eq!(folder_paths(&discover(&app, None).await), [at_root(&app, "alpha")], "group/* is two levels down");
    assert_eq!(
        folder_paths(&discover(&app, Some("group")).await),
        [at_root(&app, "group/beta"), at_root(&app, "group/gamma")],
        "one level below the path given"
    );

    let shallow = spawn_app_with(|s| s.scan_depth = 0).await;
    discover_tree(&shallow);
    assert!(discover(&shallow, None).await.is_empty(), "depth 0 checks the start folder only");
    assert_eq!(folder_paths(&discover(&shallow, Some("alpha")).await), [at_root(&shallow, "alpha")]);

    let deep = spawn_app_with(|s| s.scan_depth = 3).await;
    discover_tree(&deep);
    assert_eq!(
        folder_paths(&discover(&deep, None).await),
        [
            at_root(&deep, "alpha"),
            at_root(&deep, "deep/a/b"),
            at_root(&deep, "group/beta"),
            at_root(&deep, "group/gamma")
        ]
    );
}

#[actix_web::test]
async fn discover_does_not_follow_symlinks() {
    let app = spawn_app().await;
    let outside = app.dir.path().join("outside-project");
    std::fs::create_dir_all(outside.join(".git")).expect("mkdir outside");
    std::os::unix::fs::symlink(&outside, app.root.join("link")).expect("symlink");

    assert!(discover(&app, None).await.is_empty(), "the symlink is not followed");
    let res = discover_status(&app, "link").await;
    assert_eq!(error_code(res, 403).await, "path_outside_root");
}

/// Found while fuzzing deletes (issue 13): deleting a project removed its agents' rows but not
/// the agents themselves, which went on firing (each fire failing on the missing row), still
/// answered GET /api/agents/{id}, and kept counting against CONDUIT_MAX_AGENTS.
#[actix_web::test]
async fn deleting_a_project_ends_its_agents() {
    let app = spawn_app_with(|s| s.max_agents = 1).await;
    for round in 0..3 {
        let project = app.create_project(&format!("p{round}"), &format!("p{round}")).await;
        let id = project["id"].as_str().expect("id");
        let body = json!({"name": "a", "objective": "o", "schedule": "0 3 * * *", "project_id": id});
        let res = app.post_json("/api/agents", &body).await;
        assert_eq!(res.status().as_u16(), 201, "round {round}: the limit of one agent is free again");
        let agent: Value = res.json().await.expect("json");
        let agent_id = agent["id"].as_str().expect("id");
        assert_eq!(app.delete(&format!("/api/projects/{id}")).await.status().as_u16(), 204);
        assert_eq!(error_code(app.get(&format!("/api/agents/{agent_id}")).await, 404).await, "not_found");
        let agents: Value = app.get("/api/agents").await.json().await.expect("json");
        assert_eq!(agents, json!([]));
    }
}

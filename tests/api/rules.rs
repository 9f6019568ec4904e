//! Permission rules (`/api/projects/{id}/rules`, `/api/rules/global`, `/api/rules/{id}`) and the
//! permission log (`/api/permissions/log`).

use std::time::Duration;

use serde_json::{json, Value};

use crate::helpers::{error_code, spawn_app, TestApp};

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

fn id_of(value: &Value) -> &str {
    value["id"].as_str().expect("id is a string")
}

fn project_rules_path(project: &Value) -> String {
    format!("/api/projects/{}/rules", id_of(project))
}

fn rule_path(rule: &Value) -> String {
    format!("/api/rules/{}", id_of(rule))
}

async fn created(res: reqwest::Response) -> Value {
    assert_eq!(res.status().as_u16(), 201, "created");
    res.json().await.expect("rule JSON")
}

/// Creates a rule on the project and returns it.
async fn project_rule(app: &TestApp, project: &Value, body: Value) -> Value {
    created(app.post_json(&project_rules_path(project), &body).await).await
}

/// Creates a global rule and returns it.
async fn global_rule(app: &TestApp, body: Value) -> Value {
    created(app.post_json("/api/rules/global", &body).await).await
}

async fn list(app: &TestApp, path: &str) -> Vec<Value> {
    let res = app.get(path).await;
    assert_eq!(res.status().as_u16(), 200, "list {path}");
    res.json().await.expect("list JSON")
}

fn ids(rules: &[Value]) -> Vec<String> {
    rules.iter().map(|r| id_of(r).to_string()).collect()
}

/// Timestamps have millisecond precision: waiting a little makes "older first" unambiguous.
async fn tick() {
    actix_web::rt::time::sleep(Duration::from_millis(5)).await;
}

/// Sends `body` as is, with the given content type.
async fn post_raw(app: &TestApp, path: &str, content_type: &str, body: &str) -> reqwest::Response {
    app.client
        .post(app.url(path))
        .header("content-type", content_type)
        .body(body.to_string())
        .send()
        .await
        .expect("request")
}

// ---------------------------------------------------------------------------------------------
// POST /api/projects/{id}/rules and /api/rules/global
// ---------------------------------------------------------------------------------------------

#[actix_web::test]
async fn create_project_rule_returns_201_with_location_and_defaults() {
    let app = spawn_app().await;
    let project = app.create_project("p", "p").await;

    let res = app.post_json(&project_rules_path(&project), &json!({"tool_name": "Bash", "behavior": "allow"})).await;
    assert_eq!(res.status().as_u16(), 201);
    let location =
        res.headers().get("location").expect("Location header").to_str().expect("ascii Location").to_string();
    let rule: Value = res.json().await.expect("json");

    assert_eq!(location, format!("/api/rules/{}", id_of(&rule)));
    assert!(uuid::Uuid::parse_str(id_of(&rule)).is_ok(), "id is a UUID: {rule}");
    assert_eq!(rule["project_id"], project["id"]);
    assert_eq!(rule["tool_name"], "Bash");
    assert_eq!(rule["rule_content"], "");
    assert_eq!(rule["behavior"], "allow");
    assert_eq!(rule["priority"], 0);
    assert_eq!(rule["updated_input"], Value::Null);
    assert!(rule["created_at"].is_string(), "created_at: {rule}");
    assert!(rule["updated_at"].is_string(), "updated_at: {rule}");

    // Stored, not just echoed.
    assert_eq!(list(&app, &project_rules_path(&project)).await, vec![rule]);
}

#[actix_web::test]
async fn create_echoes_every_given_field() {
    let app = spawn_app().await;
    let project = app.create_project("p", "p").await;
    let rule = project_rule(
        &app,
        &project,
        json!({"tool_name": "Read", "rule_content": "/etc/**", "behavior": "deny", "priority": -7}),
    )
    .await;
    assert_eq!(rule["tool_name"], "Read");
    assert_eq!(rule["rule_content"], "/etc/**");
    assert_eq!(rule["behavior"], "deny");
    assert_eq!(rule["priority"], -7);
    assert_eq!(rule["updated_input"], Value::Null);
}

#[actix_web::test]
async fn global_rules_are_listed_apart_from_project_rules() {
    let app = spawn_app().await;
    let project = app.create_project("p", "p").await;

    let res = app.post_json("/api/rules/global", &json!({"tool_name": "*", "behavior": "deny", "priority": 3})).await;
    assert_eq!(res.status().as_u16(), 201);
    let location =
        res.headers().get("location").expect("Location header").to_str().expect("ascii Location").to_string();
    let global: Value = res.json().await.expect("json");
    assert_eq!(location, format!("/api/rules/{}", id_of(&global)));
    assert_eq!(global["project_id"], Value::Null);
    assert_eq!(global["tool_name"], "*");
    assert_eq!(global["priority"], 3);

    let local = project_rule(&app, &project, json!({"tool_name": "Bash", "behavior": "allow"})).await;

    assert_eq!(list(&app, "/api/rules/global").await, vec![global.clone()], "only the global rule is global");
    assert_eq!(list(&app, &project_rules_path(&project)).await, vec![local], "only the project rule is the project's");

    // Another project sees none of them.
    let other = app.create_project("other", "other").await;
    assert!(list(&app, &project_rules_path(&other)).await.is_empty());
}

#[actix_web::test]
async fn lists_are_in_evaluation_order() {
    let app = spawn_app().await;
    let project = app.create_project("p", "p").await;

    // Created in an order that differs from evaluation order.
    let mut made = Vec::new();
    for (behavior, priority) in
        [("allow", 0), ("deny", 0), ("allow", 10), ("deny", 5), ("allow", 10), ("deny", 0), ("allow", -1)]
    {
        let rule =
            project_rule(&app, &project, json!({"tool_name": "Bash", "behavior": behavior, "priority": priority}))
                .await;
        made.push(id_of(&rule).to_string());
        tick().await;
    }
    let [allow0, deny0_old, allow10_old, deny5, allow10_new, deny0_new, allow_neg] =
        <[String; 7]>::try_from(made).expect("seven rules");
    let expected = vec![deny5, deny0_old, deny0_new, allow10_old, allow10_new, allow0, allow_neg];
    assert_eq!(ids(&list(&app, &project_rules_path(&project)).await), expected);

    // Global rules follow the same order.
    let mut made = Vec::new();
    for (behavior, priority) in [("allow", 1), ("allow", 2), ("deny", -5)] {
        made.push(
            id_of(&global_rule(&app, json!({"tool_name": "*", "behavior": behavior, "priority": priority})).await)
                .to_string(),
        );
        tick().await;
    }
    assert_eq!(ids(&list(&app, "/api/rules/global").await), [made[2].clone(), made[1].clone(), made[0].clone()]);
}

#[actix_web::test]
async fn create_rejects_invalid_rules_with_422() {
    let app = spawn_app().await;
    let project = app.create_project("p", "p").await;
    let path = project_rules_path(&project);

    let cases: Vec<(&str, Value)> = vec![
        ("behavior maybe", json!({"tool_name": "Bash", "behavior": "maybe"})),
        ("behavior in the wrong case", json!({"tool_name": "Bash", "behavior": "Allow"})),
        ("missing behavior", json!({"tool_name": "Bash"})),
        ("missing tool_name", json!({"behavior": "allow"})),
        ("empty tool_name", json!({"tool_name": "", "behavior": "allow"})),
        ("blank tool_name", json!({"tool_name": "   ", "behavior": "allow"})),
        ("tool_name with a space", json!({"tool_name": "Ba sh", "behavior": "allow"})),
        ("201-byte tool_name", json!({"tool_name": "T".repeat(201), "behavior": "allow"})),
        (
            "201 characters, 199 once trimmed",
            json!({"tool_name": format!("\u{c}{}\n", "T".repeat(199)), "behavior": "allow"}),
        ),
        ("bad glob", json!({"tool_name": "Bash", "rule_content": "[unclosed", "behavior": "deny"})),
        (
            "updated_input on a deny rule",
            json!({"tool_name": "Bash", "behavior": "deny", "updated_input": {"command": "echo"}}),
        ),
        ("updated_input a string", json!({"tool_name": "Bash", "behavior": "allow", "updated_input": "echo"})),
        ("updated_input an array", json!({"tool_name": "Bash", "behavior": "allow", "updated_input": ["echo"]})),
        ("updated_input a number", json!({"tool_name": "Bash", "behavior": "allow", "updated_input": 1})),
        ("priority as a string", json!({"tool_name": "Bash", "behavior": "allow", "priority": "5"})),
        ("priority as a float", json!({"tool_name": "Bash", "behavior": "allow", "priority": 1.5})),
        ("tool_name of the wrong type", json!({"tool_name": 7, "behavior": "allow"})),
        ("NUL in rule_content", json!({"tool_name": "Bash", "rule_content": "a\u{0}b", "behavior": "deny"})),
        (
            "rule_content over 10000 bytes",
            json!({"tool_name": "Bash", "rule_content": "x".repeat(10_001), "behavior": "deny"}),
        ),
    ];
    for (what, body) in &cases {
        let code = error_code(app.post_json(&path, body).await, 422).await;
        assert_eq!(code, "validation_failed", "project rule: {what}");
        let code = error_code(app.post_json("/api/rules/global", body).await, 422).await;
        assert_eq!(code, "validation_failed", "global rule: {what}");
    }
    assert!(list(&app, &path).await.is_empty(), "no project rule was created");
    assert!(list(&app, "/api/rules/global").await.is_empty(), "no global rule was created");
}

#[actix_web::test]
async fn behavior_ask_is_refused_because_conduit_never_asks() {
    let app = spawn_app().await;
    let project = app.create_project("p", "p").await;
    for path in [project_rules_path(&project), "/api/rules/global".to_string()] {
        let body = error_body(app.post_json(&path, &json!({"tool_name": "Bash", "behavior": "ask"})).await, 422).await;
        assert_eq!(body["error"]["code"], "validation_failed");
        assert!(message(&body).contains("never"), "message says Conduit never asks: {body}");
        assert!(message(&body).contains("ask"), "message names ask: {body}");
    }
}

#[actix_web::test]
async fn create_with_an_unknown_field_names_it() {
    let app = spawn_app().await;
    let project = app.create_project("p", "p").await;
    let res = app
        .post_json(&project_rules_path(&project), &json!({"tool_name": "Bash", "behavior": "allow", "colour": "blue"}))
        .await;
    let body = error_body(res, 422).await;
    assert_eq!(body["error"]["code"], "validation_failed");
    assert!(message(&body).contains("colour"), "message names the field: {body}");
}

#[actix_web::test]
async fn create_rejects_non_json_bodies() {
    let app = spawn_app().await;
    let project = app.create_project("p", "p").await;
    for path in [project_rules_path(&project), "/api/rules/global".to_string()] {
        let res = post_raw(&app, &path, "application/json", "{").await;
        assert_eq!(error_code(res, 400).await, "malformed_json", "{path}");
        let res = post_raw(&app, &path, "application/json", r#"{"tool_name": "Bash", "behavior": "allow",}"#).await;
        assert_eq!(error_code(res, 400).await, "malformed_json", "{path} trailing comma");
        let res = post_raw(&app, &path, "text/plain", r#"{"tool_name": "Bash", "behavior": "allow"}"#).await;
        assert_eq!(error_code(res, 415).await, "unsupported_media_type", "{path}");
    }
    assert!(list(&app, &project_rules_path(&project)).await.is_empty());
    assert!(list(&app, "/api/rules/global").await.is_empty());
}

#[actix_web::test]
async fn allow_rule_keeps_updated_input_as_an_object() {
    let app = spawn_app().await;
    let project = app.create_project("p", "p").await;
    let rule = project_rule(
        &app,
        &project,
        json!({"tool_name": "Bash", "rule_content": "rm:*", "behavior": "allow", "updated_input": {"command": "echo safe"}}),
    )
    .await;
    assert_eq!(rule["updated_input"], json!({"command": "echo safe"}));
    assert_eq!(rule["rule_content"], "rm:*");

    let listed = list(&app, &project_rules_path(&project)).await;
    assert_eq!(listed.len(), 1);
    assert_eq!(listed[0]["updated_input"], json!({"command": "echo safe"}), "stored as an object");

    // Explicit null is the same as absent.
    let plain = global_rule(&app, json!({"tool_name": "Read", "behavior": "allow", "updated_input": null})).await;
    assert_eq!(plain["updated_input"], Value::Null);
}

// ---------------------------------------------------------------------------------------------
// 404s
// ---------------------------------------------------------------------------------------------

#[actix_web::test]
async fn rules_of_an_unknown_project_are_404() {
    let app = spawn_app().await;
    for id in [uuid::Uuid::new_v4().to_string(), "abc".to_string()] {
        let path = format!("/api/projects/{id}/rules");
        assert_eq!(error_code(app.get(&path).await, 404).await, "not_found", "GET {path}");
        let res = app.post_json(&path, &json!({"tool_name": "Bash", "behavior": "allow"})).await;
        assert_eq!(error_code(res, 404).await, "not_found", "POST {path}");
    }
    assert!(list(&app, "/api/rules/global").await.is_empty(), "nothing became global");
}

#[actix_web::test]
async fn update_or_delete_of_an_unknown_or_malformed_rule_id_is_404() {
    let app = spawn_app().await;
    for id in [uuid::Uuid::new_v4().to_string(), "abc".to_string()] {
        let path = format!("/api/rules/{id}");
        let res = app.put_json(&path, &json!({"priority": 1})).await;
        assert_eq!(error_code(res, 404).await, "not_found", "PUT {path}");
        assert_eq!(error_code(app.delete(&path).await, 404).await, "not_found", "DELETE {path}");
    }
}

// ---------------------------------------------------------------------------------------------
// PUT /api/rules/{id}
// ---------------------------------------------------------------------------------------------

#[actix_web::test]
async fn update_priority_only_keeps_the_other_fields() {
    let app = spawn_app().await;
    let project = app.create_project("p", "p").await;
    let before = project_rule(
        &app,
        &project,
        json!({"tool_name": "Bash", "rule_content": "git:*", "behavior": "allow", "priority": 1, "updated_input": {"command": "git status"}}),
    )
    .await;
    tick().await;

    let res = app.put_json(&rule_path(&before), &json!({"priority": 42})).await;
    assert_eq!(res.status().as_u16(), 200);
    let after: Value = res.json().await.expect("json");
    assert_eq!(after["priority"], 42);
    for field in ["id", "project_id", "tool_name", "rule_content", "behavior", "updated_input", "created_at"] {
        assert_eq!(after[field], before[field], "{field} is kept");
    }
    assert!(after["updated_at"].is_string(), "updated_at: {after}");
    assert_ne!(after["updated_at"], before["updated_at"], "updated_at moves");

    // Stored, not just echoed.
    assert_eq!(list(&app, &project_rules_path(&project)).await, vec![after]);
}

#[actix_web::test]
async fn update_changes_every_field_given() {
    let app = spawn_app().await;
    let before = global_rule(&app, json!({"tool_name": "Bash", "behavior": "allow"})).await;
    let after: Value = app
        .put_json(
            &rule_path(&before),
            &json!({"tool_name": "  Read  ", "rule_content": "/secret/**", "behavior": "deny", "priority": -2}),
        )
        .await
        .json()
        .await
        .expect("json");
    assert_eq!(after["tool_name"], "Read", "tool_name is trimmed");
    assert_eq!(after["rule_content"], "/secret/**");
    assert_eq!(after["behavior"], "deny");
    assert_eq!(after["priority"], -2);
    assert_eq!(after["project_id"], Value::Null, "still global");
    assert_eq!(list(&app, "/api/rules/global").await, vec![after]);
}

/// The schema's 200 characters hold for the text sent, before trimming (schemathesis found a
/// form feed and 200 more characters accepted).
#[actix_web::test]
async fn update_refuses_a_tool_name_longer_than_the_schema_before_trimming() {
    let app = spawn_app().await;
    let before = global_rule(&app, json!({"tool_name": "Bash", "behavior": "allow"})).await;
    let long = format!("\u{c}{}", "*".repeat(200));
    let res = app.put_json(&rule_path(&before), &json!({ "tool_name": long })).await;
    assert_eq!(error_code(res, 422).await, "validation_failed");
    assert_eq!(list(&app, "/api/rules/global").await, vec![before.clone()], "unchanged");
    // The limit counts characters, as the schema does, not bytes: 200 two-byte ones pass.
    let wide = "é".repeat(200);
    let res = app.put_json(&rule_path(&before), &json!({ "tool_name": wide })).await;
    assert_eq!(res.status().as_u16(), 200, "200 characters in 400 bytes");
}

#[actix_web::test]
async fn update_to_deny_while_updated_input_is_set_is_422_and_changes_nothing() {
    let app = spawn_app().await;
    let project = app.create_project("p", "p").await;
    let rule = project_rule(
        &app,
        &project,
        json!({"tool_name": "Bash", "behavior": "allow", "updated_input": {"command": "echo safe"}}),
    )
    .await;

    let body =
        error_body(app.put_json(&rule_path(&rule), &json!({"behavior": "deny", "priority": 9})).await, 422).await;
    assert_eq!(body["error"]["code"], "validation_failed");
    assert!(message(&body).contains("updated_input"), "message names updated_input: {body}");
    assert_eq!(list(&app, &project_rules_path(&project)).await, vec![rule.clone()], "the stored rule is unchanged");

    // Clearing updated_input in the same request makes deny acceptable.
    let res = app.put_json(&rule_path(&rule), &json!({"behavior": "deny", "updated_input": null})).await;
    assert_eq!(res.status().as_u16(), 200);
    let after: Value = res.json().await.expect("json");
    assert_eq!(after["behavior"], "deny");
    assert_eq!(after["updated_input"], Value::Null);
}

#[actix_web::test]
async fn update_with_null_updated_input_clears_it() {
    let app = spawn_app().await;
    let project = app.create_project("p", "p").await;
    let rule = project_rule(
        &app,
        &project,
        json!({"tool_name": "Bash", "behavior": "allow", "priority": 3, "updated_input": {"command": "echo safe"}}),
    )
    .await;

    // Absent leaves it alone.
    let after: Value = app.put_json(&rule_path(&rule), &json!({})).await.json().await.expect("json");
    assert_eq!(after["updated_input"], json!({"command": "echo safe"}));

    let res = app.put_json(&rule_path(&rule), &json!({"updated_input": null})).await;
    assert_eq!(res.status().as_u16(), 200);
    let after: Value = res.json().await.expect("json");
    assert_eq!(after["updated_input"], Value::Null);
    assert_eq!(after["priority"], 3, "other fields kept");
    let stored = list(&app, &project_rules_path(&project)).await;
    assert_eq!(stored[0]["updated_input"], Value::Null, "cleared in storage");

    // And it can be set again.
    let after: Value = app
        .put_json(&rule_path(&rule), &json!({"updated_input": {"command": "true"}}))
        .await
        .json()
        .await
        .expect("json");
    assert_eq!(after["updated_input"], json!({"command": "true"}));
}

#[actix_web::test]
async fn update_validates_its_fields() {
    let app = spawn_app().await;
    let project = app.create_project("p", "p").await;
    let rule =
        project_rule(&app, &project, json!({"tool_name": "Bash", "rule_content": "ls:*", "behavior": "allow"})).await;

    let cases: Vec<(&str, Value)> = vec![
        ("bad glob", json!({"rule_content": "[unclosed"})),
        ("behavior ask", json!({"behavior": "ask"})),
        ("behavior maybe", json!({"behavior": "maybe"})),
        ("empty tool_name", json!({"tool_name": ""})),
        ("tool_name with a space", json!({"tool_name": "Ba sh"})),
        ("updated_input a string", json!({"updated_input": "echo"})),
        ("updated_input an array", json!({"updated_input": []})),
        ("priority as a string", json!({"priority": "1"})),
        ("unknown field", json!({"project_id": null})),
    ];
    for (what, body) in cases {
        let code = error_code(app.put_json(&rule_path(&rule), &body).await, 422).await;
        assert_eq!(code, "validation_failed", "{what}");
    }
    assert_eq!(list(&app, &project_rules_path(&project)).await, vec![rule], "no failed update changed anything");
}

#[actix_web::test]
async fn update_rejects_non_json_bodies() {
    let app = spawn_app().await;
    let rule = global_rule(&app, json!({"tool_name": "Bash", "behavior": "allow"})).await;
    let url = app.url(&rule_path(&rule));

    let res = app
        .client
        .put(&url)
        .header("content-type", "text/plain")
        .body(r#"{"priority":1}"#)
        .send()
        .await
        .expect("request");
    assert_eq!(error_code(res, 415).await, "unsupported_media_type");

    let res = app.client.put(&url).header("content-type", "application/json").body("{").send().await.expect("request");
    assert_eq!(error_code(res, 400).await, "malformed_json");
}

// ---------------------------------------------------------------------------------------------
// DELETE /api/rules/{id}
// ---------------------------------------------------------------------------------------------

#[actix_web::test]
async fn delete_removes_the_rule() {
    let app = spawn_app().await;
    let project = app.create_project("p", "p").await;
    let gone = project_rule(&app, &project, json!({"tool_name": "Bash", "behavior": "deny"})).await;
    let keep = project_rule(&app, &project, json!({"tool_name": "Read", "behavior": "allow"})).await;
    let gone_global = global_rule(&app, json!({"tool_name": "*", "behavior": "deny"})).await;

    let res = app.delete(&rule_path(&gone)).await;
    assert_eq!(res.status().as_u16(), 204);
    assert!(res.bytes().await.expect("body").is_empty(), "204 has no body");
    assert_eq!(list(&app, &project_rules_path(&project)).await, vec![keep]);
    assert_eq!(error_code(app.delete(&rule_path(&gone)).await, 404).await, "not_found", "second delete");
    let res = app.put_json(&rule_path(&gone), &json!({"priority": 1})).await;
    assert_eq!(error_code(res, 404).await, "not_found", "update after delete");

    let res = app.delete(&rule_path(&gone_global)).await;
    assert_eq!(res.status().as_u16(), 204);
    assert!(list(&app, "/api/rules/global").await.is_empty());
    assert_eq!(error_code(app.delete(&rule_path(&gone_global)).await, 404).await, "not_found");
}

// ---------------------------------------------------------------------------------------------
// Pagination
// ---------------------------------------------------------------------------------------------

#[actix_web::test]
async fn lists_paginate() {
    let app = spawn_app().await;
    let project = app.create_project("p", "p").await;
    let mut made = Vec::new();
    // Descending priority: creation order is list order.
    for priority in [4, 3, 2, 1, 0] {
        made.push(
            id_of(
                &project_rule(&app, &project, json!({"tool_name": "Bash", "behavior": "allow", "priority": priority}))
                    .await,
            )
            .to_string(),
        );
    }
    let path = project_rules_path(&project);
    assert_eq!(ids(&list(&app, &path).await), made);
    assert_eq!(ids(&list(&app, &format!("{path}?limit=2")).await), made[..2]);
    assert_eq!(ids(&list(&app, &format!("{path}?limit=2&offset=2")).await), made[2..4]);
    assert_eq!(ids(&list(&app, &format!("{path}?offset=4")).await), made[4..]);
    assert!(list(&app, &format!("{path}?offset=10")).await.is_empty());
    assert_eq!(list(&app, &format!("{path}?limit=1000")).await.len(), 5);

    for (p, what) in [(path.clone(), "project"), ("/api/rules/global".to_string(), "global")] {
        for query in ["limit=0", "limit=1001", "limit=-1", "offset=-1"] {
            let res = app.get(&format!("{p}?{query}")).await;
            assert_eq!(error_code(res, 422).await, "validation_failed", "{what} {query}");
        }
        for query in ["limit=abc", "offset=1.5"] {
            let res = app.get(&format!("{p}?{query}")).await;
            assert_eq!(error_code(res, 400).await, "invalid_query", "{what} {query}");
        }
    }
}

// ---------------------------------------------------------------------------------------------
// GET /api/permissions/log
// ---------------------------------------------------------------------------------------------

#[actix_web::test]
async fn permission_log_is_empty_without_sessions_and_validates_filters() {
    let app = spawn_app().await;
    assert!(list(&app, "/api/permissions/log").await.is_empty());

    for query in [
        "decision=maybe",
        "decision=ask",
        "session_id=not-a-uuid",
        "project_id=not-a-uuid",
        "limit=0",
        "limit=1001",
        "offset=-1",
    ] {
        let res = app.get(&format!("/api/permissions/log?{query}")).await;
        assert_eq!(error_code(res, 422).await, "validation_failed", "{query}");
    }
    let res = app.get("/api/permissions/log?limit=abc").await;
    assert_eq!(error_code(res, 400).await, "invalid_query", "limit=abc");

    let session = uuid::Uuid::new_v4();
    let project = uuid::Uuid::new_v4();
    for query in [
        format!("decision=deny&session_id={session}&project_id={project}"),
        "decision=allow".to_string(),
        format!("session_id={}", session.simple()),
        "limit=1&offset=5".to_string(),
    ] {
        assert!(list(&app, &format!("/api/permissions/log?{query}")).await.is_empty(), "{query}");
    }
}

// ---------------------------------------------------------------------------------------------
// Project deletion
// ---------------------------------------------------------------------------------------------

#[actix_web::test]
async fn deleting_a_project_deletes_its_rules() {
    let app = spawn_app().await;
    let project = app.create_project("p", "p").await;
    let keep_project = app.create_project("keep", "keep").await;
    let doomed = project_rule(&app, &project, json!({"tool_name": "Bash", "behavior": "deny"})).await;
    let kept = project_rule(&app, &keep_project, json!({"tool_name": "Bash", "behavior": "deny"})).await;
    let global = global_rule(&app, json!({"tool_name": "*", "behavior": "allow"})).await;

    let res = app.delete(&format!("/api/projects/{}", id_of(&project))).await;
    assert_eq!(res.status().as_u16(), 204);

    assert_eq!(list(&app, "/api/rules/global").await, vec![global], "global rules are unaffected");
    assert_eq!(list(&app, &project_rules_path(&keep_project)).await, vec![kept], "other projects are unaffected");
    assert_eq!(error_code(app.get(&project_rules_path(&project)).await, 404).await, "not_found");
    let res = app.put_json(&rule_path(&doomed), &json!({"priority": 1})).await;
    assert_eq!(error_code(res, 404).await, "not_found", "the project's rule is gone");
    assert_eq!(error_code(app.delete(&rule_path(&doomed)).await, 404).await, "not_found");
}

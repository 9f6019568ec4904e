//! A token bound to a project, on the lists that span every project and the global event
//! stream: it sees its project's rows and events and none of another project's (nor of no
//! project), a query naming another project lists nothing, and the routes that cannot be
//! filtered still answer 403 `insufficient_scope`.

use conduit::db::permission_log::{self, NewDecision};
use conduit::db::usage::{self, NewUsage};
use conduit::domain::decision::{Decision, DecisionPoint, DecisionSource};
use conduit::domain::ids::{ProjectId, SessionId};
use serde_json::{json, Value};

use crate::changes::frames;
use crate::helpers::{error_code, TestApp};
use crate::terminals::{id_of, Reap};
use crate::tokens::{call, get, launch, make_project, make_token, post, secret, spawn, ADMIN};

/// An app with projects `mine` and `other`, and a `read` token bound to `mine`.
struct Two {
    app: TestApp,
    mine: String,
    other: String,
    token: String,
}

async fn two_projects() -> Two {
    let app = spawn().await;
    let (mine, other) = (make_project(&app, "mine").await, make_project(&app, "other").await);
    let token = secret(&make_token(&app, json!({"name": "ci", "scope": "read", "project_id": mine})).await);
    Two { app, mine, other, token }
}

/// The JSON answer to `GET path` with `token`, which must be 200.
async fn listed(app: &TestApp, token: &str, path: &str) -> Value {
    let res = get(app, token, path).await;
    assert_eq!(res.status().as_u16(), 200, "GET {path}");
    res.json().await.expect("json")
}

/// `field` of every row of a JSON array.
fn column(rows: &Value, field: &str) -> Vec<Value> {
    rows.as_array().expect("an array").iter().map(|row| row[field].clone()).collect()
}

#[actix_web::test]
async fn active_sessions_and_agents_are_its_projects_only() {
    let Two { app, mine, other, token } = two_projects().await;
    let (my_session, other_session) = (launch(&app, &mine).await, launch(&app, &other).await);
    let all = listed(&app, ADMIN, "/api/sessions/active").await;
    assert!(column(&all, "id").contains(&json!(other_session)), "the admin sees both: {all}");
    let live = listed(&app, &token, "/api/sessions/active").await;
    assert!(column(&live, "id").contains(&json!(my_session)), "{live}");
    assert!(column(&live, "project_id").iter().all(|p| *p == json!(mine)), "its project only: {live}");

    let loose = app.mkdir("loose").display().to_string();
    let never = "0 0 1 1 *";
    for (name, project, cwd) in
        [("a-mine", Some(&mine), None), ("b-other", Some(&other), None), ("c-loose", None, Some(&loose))]
    {
        let body = json!({"name": name, "objective": "o", "schedule": never, "project_id": project, "cwd": cwd});
        assert_eq!(post(&app, ADMIN, "/api/agents", body).await.status().as_u16(), 201, "agent {name}");
    }
    assert_eq!(column(&listed(&app, ADMIN, "/api/agents").await, "name").len(), 3);
    let agents = listed(&app, &token, "/api/agents").await;
    assert_eq!(column(&agents, "name"), vec![json!("a-mine")], "its project's agent only: {agents}");
    let paged = listed(&app, &token, "/api/agents?limit=1&offset=1").await;
    assert_eq!(paged, json!([]), "pages of its own rows");
}

/// Starts a terminal in `project` with the admin token; returns its id.
async fn start_terminal(app: &TestApp, project: &str) -> String {
    let res = post(app, ADMIN, &format!("/api/projects/{project}/terminals"), json!({})).await;
    let status = res.status().as_u16();
    let text = res.text().await.unwrap_or_default();
    assert_eq!(status, 201, "start a terminal: {text}");
    id_of(&serde_json::from_str(&text).expect("json"))
}

#[actix_web::test]
async fn terminals_are_its_projects_only() {
    let Two { app, mine, other, token } = two_projects().await;
    let my_terminal = start_terminal(&app, &mine).await;
    let _reap_mine = Reap(my_terminal.clone());
    let other_terminal = start_terminal(&app, &other).await;
    let _reap_other = Reap(other_terminal.clone());

    assert_eq!(column(&listed(&app, ADMIN, "/api/terminals").await, "id").len(), 2);
    let terminals = listed(&app, &token, "/api/terminals").await;
    assert_eq!(column(&terminals, "id"), vec![json!(my_terminal)], "{terminals}");
    let asked = listed(&app, &token, &format!("/api/terminals?project_id={mine}")).await;
    assert_eq!(column(&asked, "id"), vec![json!(my_terminal)]);
    let theirs = listed(&app, &token, &format!("/api/terminals?project_id={other}")).await;
    assert_eq!(theirs, json!([]), "another project's terminals do not exist for it");

    for id in [my_terminal, other_terminal] {
        let res = call(&app, ADMIN, reqwest::Method::DELETE, &format!("/api/terminals/{id}"), None).await;
        assert_eq!(res.status().as_u16(), 204, "terminal {id} ended");
    }
}

/// A decision of `project` (none: of no project), as the permission engine stores one.
fn decision(project: Option<&str>, session: Option<&str>, request_id: &str) -> NewDecision {
    NewDecision {
        project_id: project.map(|p| ProjectId::parse(p).expect("a project id")),
        session_id: session.map(|s| SessionId::parse(s).expect("a session id")),
        request_id: request_id.to_string(),
        tool_use_id: None,
        decision_point: DecisionPoint::Exec,
        tool_name: "Bash".to_string(),
        tool_input: json!({"command": "true"}).to_string(),
        decision: Decision::Allow,
        decision_source: DecisionSource::AutoDefault,
        rule_id: None,
        reason: None,
        decided_at: conduit::domain::time::now(),
        command_reading: None,
        agent: None,
    }
}

/// A turn's cost in `project`, recorded now.
fn cost(project: Option<&str>, cost_usd: f64) -> NewUsage {
    NewUsage {
        recorded_at: conduit::domain::time::now(),
        project_id: project.map(str::to_string),
        session_id: None,
        execution_id: None,
        agent_id: None,
        agent: "claude".to_string(),
        model: None,
        cost_usd,
        input_tokens: 10,
        output_tokens: 5,
    }
}

#[actix_web::test]
async fn the_permission_log_and_usage_are_its_projects_only() {
    let Two { app, mine, other, token } = two_projects().await;
    let (my_session, other_session) = (launch(&app, &mine).await, launch(&app, &other).await);
    {
        let mut conn = crate::support::database::connect(&app.dir.path().join("data").join("conduit.db"));
        let decisions = [
            decision(Some(&mine), Some(&my_session), "mine"),
            decision(Some(&other), Some(&other_session), "other"),
            decision(None, None, "nobody's"),
        ];
        for row in &decisions {
            permission_log::insert(&mut conn, row).expect("a decision stored");
        }
        for row in [cost(Some(&mine), 1.5), cost(Some(&other), 7.0), cost(None, 3.0)] {
            usage::record(&mut conn, &row).expect("a cost recorded");
        }
    }

    let everyone = column(&listed(&app, ADMIN, "/api/permissions/log").await, "request_id");
    assert!(["mine", "other", "nobody's"].iter().all(|r| everyone.contains(&json!(r))), "{everyone:?}");
    let log = listed(&app, &token, "/api/permissions/log").await;
    assert_eq!(column(&log, "request_id"), vec![json!("mine")], "{log}");
    for query in [format!("project_id={other}"), format!("session_id={other_session}")] {
        let theirs = listed(&app, &token, &format!("/api/permissions/log?{query}")).await;
        assert_eq!(theirs, json!([]), "?{query}");
    }
    let own = listed(&app, &token, &format!("/api/permissions/log?session_id={my_session}")).await;
    assert_eq!(column(&own, "request_id"), vec![json!("mine")]);

    let all = listed(&app, ADMIN, "/api/usage").await;
    assert_eq!(all["total"]["cost_usd"], json!(11.5), "{all}");
    let report = listed(&app, &token, "/api/usage").await;
    assert_eq!(report["total"]["cost_usd"], json!(1.5), "its project's costs only: {report}");
    assert_eq!(column(&report["groups"], "key"), vec![json!(mine)], "{report}");
    let by_model = listed(&app, &token, "/api/usage?group_by=model").await;
    assert_eq!(by_model["total"]["turns"], json!(1), "{by_model}");
    let theirs = listed(&app, &token, &format!("/api/usage?project_id={other}")).await;
    assert_eq!((&theirs["total"]["cost_usd"], &theirs["groups"]), (&json!(0.0), &json!([])), "{theirs}");
}

#[actix_web::test]
async fn what_cannot_be_filtered_is_still_refused() {
    let Two { app, token, .. } = two_projects().await;
    for path in [
        "/api/locks",
        "/api/usage/limits",
        "/api/rules/global",
        "/api/folders/browse",
        "/api/projects/discover",
        "/api/cluster",
    ] {
        assert_eq!(error_code(get(&app, &token, path).await, 403).await, "insufficient_scope", "GET {path}");
    }
    // An unbound token of the same scope reads them.
    let unbound = secret(&make_token(&app, json!({"name": "all", "scope": "read"})).await);
    assert_eq!(get(&app, &unbound, "/api/locks").await.status().as_u16(), 200);
}

/// Reads the SSE body `res` until a frame `last` accepts; returns every frame read.
async fn frames_through(res: &mut reqwest::Response, last: impl Fn(&Value) -> bool) -> Vec<Value> {
    let deadline = tokio::time::Instant::now() + std::time::Duration::from_secs(30);
    let mut text = String::new();
    loop {
        let seen = frames(&text);
        if seen.iter().any(&last) {
            return seen;
        }
        match tokio::time::timeout_at(deadline, res.chunk()).await {
            Ok(Ok(Some(bytes))) => text.push_str(&String::from_utf8_lossy(&bytes)),
            other => panic!("the stream stopped before the last frame ({other:?}); seen: {seen:?}"),
        }
    }
}

#[actix_web::test]
async fn the_event_stream_tells_its_projects_events_only() {
    let Two { app, mine, other, token } = two_projects().await;
    let mut bound = get(&app, &token, "/api/events/stream").await;
    assert_eq!(bound.status().as_u16(), 200, "a bound token follows the global stream");
    let mut everything = get(&app, ADMIN, "/api/events/stream").await;

    // Another project's session, terminal and change, and a change of no project...
    let other_session = launch(&app, &other).await;
    let other_terminal = start_terminal(&app, &other).await;
    let _reap_other = Reap(other_terminal.clone());
    let put = |project: &str, text: &str| {
        let (path, body) = (format!("/api/projects/{project}"), json!({"description": text}));
        let app = &app;
        async move { call(app, ADMIN, reqwest::Method::PUT, &path, Some(body)).await }
    };
    assert_eq!(put(&other, "theirs").await.status().as_u16(), 200);
    let rule = json!({"tool_name": "Bash", "behavior": "allow", "rule_content": "ls *"});
    assert_eq!(post(&app, ADMIN, "/api/rules/global", rule).await.status().as_u16(), 201);
    // ...then its own project's, the last one closing the read.
    let my_session = launch(&app, &mine).await;
    let my_terminal = start_terminal(&app, &mine).await;
    let _reap_mine = Reap(my_terminal.clone());
    let agent = json!({"name": "nightly", "objective": "o", "schedule": "0 0 1 1 *", "project_id": mine});
    assert_eq!(post(&app, ADMIN, "/api/agents", agent).await.status().as_u16(), 201);
    assert_eq!(put(&mine, "last").await.status().as_u16(), 200);

    let is_last = |f: &Value| f["type"] == "project.updated" && f["data"]["description"] == "last";
    let all = frames_through(&mut everything, is_last).await;
    let seen = frames_through(&mut bound, is_last).await;
    let about = |frames: &[Value], id: &str| frames.iter().any(|f| f.to_string().contains(id));
    for id in [&other_session, &other_terminal, &other] {
        assert!(about(&all, id), "the admin's stream tells {id}");
        assert!(!about(&seen, id), "the bound stream never names {id}: {seen:?}");
    }
    assert!(all.iter().any(|f| f["type"] == "rule.created"), "a global rule was told");
    assert!(!seen.iter().any(|f| f["type"] == "rule.created"), "a global rule is no project's: {seen:?}");
    assert!(seen.iter().any(|f| f["session_id"] == json!(my_session)), "its session's events: {seen:?}");
    for kind in ["session.created", "terminal.started", "agent.created"] {
        assert!(seen.iter().any(|f| f["type"] == kind), "its {kind}: {seen:?}");
    }

    for id in [my_terminal, other_terminal] {
        let res = call(&app, ADMIN, reqwest::Method::DELETE, &format!("/api/terminals/{id}"), None).await;
        assert_eq!(res.status().as_u16(), 204, "terminal {id} ended");
    }
}

//! The permission engine end to end: the real CLI's tool calls decided by Conduit's rules.

use std::time::Duration;

use serde_json::{json, Value};

use crate::support::fake_api::{FakeApi, Reply};
use crate::support::service::{real_cli, ServiceConfig, TestService};

const READY: Duration = Duration::from_secs(60);

async fn rig() -> (FakeApi, TestService) {
    let api = FakeApi::start().await;
    let service = TestService::start(ServiceConfig::new(real_cli()).api(&api.base_url));
    (api, service)
}

async fn idle_session(service: &TestService, project: &str) -> String {
    let session = service.launch(project, json!({})).await;
    let id = session["id"].as_str().expect("id").to_string();
    service.wait_status(&id, "idle", READY).await;
    id
}

async fn rule(service: &TestService, path: &str, body: Value) -> String {
    let res = service.post(path, body).await;
    assert_eq!(res.status().as_u16(), 201, "create rule");
    let rule: Value = res.json().await.expect("json");
    rule["id"].as_str().expect("id").to_string()
}

/// Makes the model run `command` with Bash on `prompt`, and waits for that turn to end.
async fn run_bash(api: &FakeApi, service: &TestService, session: &str, prompt: &str, command: &str, turns: i64) {
    api.on(prompt, Reply::ToolUse { name: "Bash".into(), input: json!({"command": command, "description": prompt}) });
    api.on(&format!("{prompt}-done"), Reply::Text("done".into()));
    // The follow-up request after the tool result carries the tool_use id; answer it plainly.
    api.on("tool_result", Reply::Text(format!("{prompt}-done")));
    let res = service.post(&format!("/api/sessions/{session}/message"), json!({"content": prompt})).await;
    assert_eq!(res.status().as_u16(), 202);
    service.wait_for(session, READY, |r| r["num_turns"] == turns && r["status"] == "idle").await;
}

async fn decisions(service: &TestService, session: &str) -> Vec<Value> {
    // The audit is written behind: give it a moment to land.
    for _ in 0..100 {
        let log = service.get_json(&format!("/api/permissions/log?session_id={session}")).await;
        let rows = log.as_array().cloned().unwrap_or_default();
        if !rows.is_empty() {
            return rows;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    Vec::new()
}

#[actix_web::test]
async fn a_global_deny_stops_rm_and_the_model_hears_why() {
    let (api, service) = rig().await;
    let project = service.project("guarded").await;
    let victim = service.root.join("guarded/victim.txt");
    std::fs::write(&victim, "keep me").expect("write");
    let rule_id =
        rule(&service, "/api/rules/global", json!({"tool_name": "Bash", "rule_content": "rm:*", "behavior": "deny"}))
            .await;
    let id = idle_session(&service, &project).await;

    run_bash(&api, &service, &id, "please delete it", "rm -f victim.txt", 1).await;
    assert!(victim.exists(), "the denied command did not run");
    let told = api
        .requests()
        .into_iter()
        .any(|r| r.contains("please delete it") && r.contains(&rule_id) && r.contains("denied"));
    assert!(told, "the model received the reason naming the rule");

    let log = decisions(&service, &id).await;
    let deny = log.iter().find(|d| d["decision"] == "deny").expect("a deny decision");
    assert_eq!(deny["decision_source"], "auto_rule");
    assert_eq!(deny["rule_id"], rule_id.as_str());
    assert_eq!(deny["tool_name"], "Bash");
    assert_eq!(deny["decision_point"], "hook");
    assert!(deny["tool_input"].as_str().is_some_and(|t| t.contains("rm -f victim.txt")));
    assert!(deny["tool_use_id"].as_str().is_some_and(|t| t.starts_with("toolu_")));
}

#[actix_web::test]
async fn a_call_the_cli_allows_by_itself_is_still_audited() {
    let (api, service) = rig().await;
    let project = service.project("quiet").await;
    let id = idle_session(&service, &project).await;
    run_bash(&api, &service, &id, "list the files", "ls", 1).await;
    let log = decisions(&service, &id).await;
    assert!(!log.is_empty(), "the ls call was audited");
    let ls = &log[0];
    assert_eq!((ls["decision"].as_str(), ls["decision_source"].as_str()), (Some("allow"), Some("auto_default")));
    assert_eq!(ls["decision_point"], "hook");
    assert!(log.iter().all(|d| d["decision_point"] == "hook"), "the CLI never prompted (no can_use_tool): {log:?}");
}

#[actix_web::test]
async fn an_allow_rule_with_updated_input_changes_what_runs() {
    let (api, service) = rig().await;
    let project = service.project("sanitized").await;
    let path = format!("/api/projects/{project}/rules");
    rule(
        &service,
        &path,
        json!({"tool_name": "Bash", "rule_content": "echo:*", "behavior": "allow", "updated_input": {"command": "echo sanitized > out.txt"}}),
    )
    .await;
    let id = idle_session(&service, &project).await;
    run_bash(&api, &service, &id, "write a file", "echo original > out.txt", 1).await;
    let written = std::fs::read_to_string(service.root.join("sanitized/out.txt")).expect("out.txt written");
    assert_eq!(written.trim(), "sanitized", "the rule's updated_input ran, not the model's command");
    let log = decisions(&service, &id).await;
    assert_eq!(log[0]["decision_source"], "auto_rule");
}

#[actix_web::test]
async fn a_rule_added_while_a_session_lives_applies_to_its_next_call() {
    let (api, service) = rig().await;
    let project = service.project("live").await;
    let id = idle_session(&service, &project).await;
    run_bash(&api, &service, &id, "first touch", "touch a.txt", 1).await;
    assert!(service.root.join("live/a.txt").exists(), "allowed before the rule");
    rule(
        &service,
        &format!("/api/projects/{project}/rules"),
        json!({"tool_name": "Bash", "rule_content": "touch:*", "behavior": "deny"}),
    )
    .await;
    run_bash(&api, &service, &id, "second touch", "touch b.txt", 2).await;
    assert!(!service.root.join("live/b.txt").exists(), "denied after the rule");
}

/// Spellings of `rm FILE` from every class the shell reading covers, one file each. Each is
/// run by the real CLI's Bash tool; `not_analyzable` marks the ones strict analysis denies for
/// what it cannot see rather than by matching `rm`.
const SPELLINGS: &[(&str, bool)] = &[
    ("\"rm\" sp01.txt", false),
    ("'r'm sp02.txt", false),
    ("\\rm sp03.txt", false),
    ("$'\\x72m' sp04.txt", false),
    ("{rm,sp05.txt}", false),
    ("r\\\nm sp06.txt", false),
    ("if true; then rm sp07.txt; fi", false),
    ("for f in sp08.txt; do rm \"$f\"; done", false),
    ("f() { rm sp09.txt; }; f", false),
    ("case x in x) rm sp10.txt;; esac", false),
    ("timeout 5 rm sp11.txt", false),
    ("nice -n 5 rm sp12.txt", false),
    (">/dev/null rm sp13.txt", false),
    ("bash -c 'rm sp14.txt'", false),
    ("eval \"rm sp15.txt\"", false),
    ("sh <<EOF\nrm sp16.txt\nEOF", false),
    ("echo sp17.txt | xargs rm", false),
    ("find . -name sp18.txt -delete", false),
    ("CMD=rm; $CMD sp19.txt", true),
    ("python3 -c 'import os; os.remove(\"sp20.txt\")'", true),
];

/// Runs every spelling in one session, one turn each, in order; returns the session id.
async fn run_spellings(api: &FakeApi, service: &TestService, project: &str) -> String {
    let id = idle_session(service, project).await;
    for (turn, (command, _)) in SPELLINGS.iter().enumerate() {
        // A prompt no other prompt contains, so each request picks its own reply.
        let prompt = format!("spelling-turn-{:02}-go", turn + 1);
        api.on(
            &prompt,
            Reply::ToolUse { name: "Bash".into(), input: json!({"command": command, "description": prompt}) },
        );
        api.on("tool_result", Reply::Text(format!("{prompt}-finished")));
        let res = service.post(&format!("/api/sessions/{id}/message"), json!({"content": prompt})).await;
        assert_eq!(res.status().as_u16(), 202);
        let turns = turn as i64 + 1;
        service.wait_for(&id, READY, |r| r["num_turns"] == turns && r["status"] == "idle").await;
    }
    id
}

fn spelling_files(folder: &std::path::Path) -> Vec<std::path::PathBuf> {
    (1..=SPELLINGS.len()).map(|k| folder.join(format!("sp{k:02}.txt"))).collect()
}

#[actix_web::test]
async fn every_spelling_of_rm_deletes_its_file_when_no_rule_stops_it() {
    let (api, service) = rig().await;
    let project = service.project("open").await;
    let files = spelling_files(&service.root.join("open"));
    for file in &files {
        std::fs::write(file, "x").expect("write");
    }
    let id = run_spellings(&api, &service, &project).await;
    let survivors: Vec<_> = files.iter().filter(|f| f.exists()).collect();
    assert!(survivors.is_empty(), "each spelling really runs rm: {survivors:?}");
    let log = decisions(&service, &id).await;
    assert!(log.iter().all(|d| d["decision"] == "allow"), "no rule, nothing denied");
    let reading = log.iter().find(|d| d["tool_input"].as_str().is_some_and(|t| t.contains("sp05.txt")));
    let reading = &reading.expect("the brace spelling was audited")["command_reading"];
    assert_eq!(reading["commands"], json!(["rm sp05.txt"]), "read as the shell runs it, even when allowed");
}

#[actix_web::test]
async fn a_project_deny_rm_stops_every_spelling_and_the_audit_shows_how_each_was_read() {
    let (api, service) = rig().await;
    let project = service.project("shut").await;
    let files = spelling_files(&service.root.join("shut"));
    for file in &files {
        std::fs::write(file, "x").expect("write");
    }
    let path = format!("/api/projects/{project}/rules");
    let rule_id = rule(&service, &path, json!({"tool_name": "Bash", "rule_content": "rm:*", "behavior": "deny"})).await;
    let id = run_spellings(&api, &service, &project).await;
    let deleted: Vec<_> = files.iter().filter(|f| !f.exists()).collect();
    assert!(deleted.is_empty(), "every spelling was denied: {deleted:?}");

    let log = service.get_json(&format!("/api/permissions/log?session_id={id}&limit=1000")).await;
    let log = log.as_array().cloned().unwrap_or_default();
    for (k, (command, not_analyzable)) in SPELLINGS.iter().enumerate() {
        let file = format!("sp{:02}.txt", k + 1);
        let row = log
            .iter()
            .find(|d| d["decision"] == "deny" && d["tool_input"].as_str().is_some_and(|t| t.contains(&file)))
            .unwrap_or_else(|| panic!("{command:?} has a deny row: {log:?}"));
        assert_eq!(row["rule_id"], rule_id.as_str(), "{command:?}");
        let reading = &row["command_reading"];
        let commands: Vec<&str> =
            reading["commands"].as_array().expect("commands").iter().flat_map(|c| c.as_str()).collect();
        if *not_analyzable {
            let why = reading["not_analyzable"].as_str().unwrap_or_default();
            assert!(!why.is_empty(), "{command:?}: {reading}");
            let reason = row["reason"].as_str().unwrap_or_default();
            assert!(reason.contains("strict shell analysis") && reason.contains(why), "{command:?}: {reason}");
        } else {
            let matched = reading["matched"].as_str().unwrap_or_default();
            assert!(matched.starts_with("rm"), "{command:?} matched an rm command: {reading}");
            assert!(commands.contains(&matched), "{command:?}: the matched command is one of the parts: {reading}");
        }
    }
    let told = api.requests().into_iter().any(|r| r.contains("strict shell analysis"));
    assert!(told, "the model heard why the call it could not have analyzed was denied");

    // The session's stream replays its permission.decision events, each with the reading.
    let mut stream = service.get(&format!("/api/sessions/{id}/stream?since=0")).await;
    let (mut seen, deadline) = (String::new(), tokio::time::Instant::now() + Duration::from_secs(10));
    while !(seen.contains("\"matched\":\"rm sp01.txt\"") && seen.contains("\"not_analyzable\":")) {
        match tokio::time::timeout_at(deadline, stream.chunk()).await {
            Ok(Ok(Some(chunk))) => seen.push_str(&String::from_utf8_lossy(&chunk)),
            other => panic!("the stream's permission.decision events carry command_reading: {other:?}\n{seen}"),
        }
    }
}

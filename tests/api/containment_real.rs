//! Containment from the attacker's side: a real Claude Code session (the fake model API telling
//! it what to run) in a default-sandboxed project tries, with one Bash tool call, to reach
//! Conduit itself: the service's secrets in its environment and in every `/proc/*/environ` it
//! can read, the database, the config file, another project's folder, another session's
//! worktree, the service's port; and it uses the session channel, which answers its own reads
//! and refuses a sandbox or rule change. The session's exec commands, background processes and
//! terminals run the same probe and see the same. A project with `sandbox: off` still gets the
//! clean environment.

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use futures_util::SinkExt;
use serde_json::{json, Value};

use crate::support::fake_api::FakeApi;
use crate::support::service::{real_cli, ServiceConfig, TestService};
use crate::workspaces_real::{repo, run_bash};

const READY: Duration = Duration::from_secs(60);

/// Secrets the service is given: none may reach anything it starts.
const WEBHOOK_SECRET: &str = "hook-secret-7f3a9c1e5b";
const AUTH_TOKEN: &str = "admin-token-2d8e4f6a0c9b";
const CLUSTER_SECRET: &str = "cluster-secret-5c1a7e3f9d";
const ADMIN_PASSWORD: &str = "admin-password-8b2d4f6e";

async fn rig() -> (FakeApi, TestService) {
    let api = FakeApi::start().await;
    let dir = tempfile::tempdir().expect("tempdir");
    let config_file = dir.path().join("conduit.toml");
    std::fs::write(&config_file, "# a config file the sandbox must not read\nlog_level = \"info\"\n").expect("config");
    let config = ServiceConfig::new(real_cli())
        .api(&api.base_url)
        .authorized(AUTH_TOKEN)
        .env("CONDUIT_CONFIG", &config_file.to_string_lossy())
        .env("CONDUIT_WEBHOOK_SECRET", WEBHOOK_SECRET)
        .env("CONDUIT_CLUSTER_SECRET", CLUSTER_SECRET)
        .env("CONDUIT_ADMIN_USER", "admin")
        .env("CONDUIT_ADMIN_PASSWORD", ADMIN_PASSWORD);
    (api, TestService::start_in(dir, config))
}

/// The secrets to look for: the ones above, and the database URL the service was given.
fn secrets(service: &TestService) -> Vec<String> {
    let url = crate::support::database::database_url(&service.dir.path().join("data/conduit.db"));
    let mut secrets: Vec<String> =
        [WEBHOOK_SECRET, AUTH_TOKEN, CLUSTER_SECRET, ADMIN_PASSWORD].map(String::from).into();
    // On SQLite the URL is empty: the database is the file.
    secrets.extend(Some(url).filter(|u| !u.is_empty()));
    secrets
}

async fn create(service: &TestService, body: Value) -> Value {
    let res = service.post("/api/projects", body).await;
    assert_eq!(res.status().as_u16(), 201, "create project");
    res.json().await.expect("json")
}

async fn idle(service: &TestService, project: &str) -> Value {
    crate::workspaces_real::idle(service, project, "guest").await
}

fn id(row: &Value) -> String {
    row["id"].as_str().expect("id").to_string()
}

/// What the probe tries, written where the session works. `$1` names its report.
struct Targets {
    database: PathBuf,
    config: PathBuf,
    other_project: PathBuf,
    other_worktree: PathBuf,
    port: String,
    project: String,
}

fn probe(targets: &Targets) -> String {
    let Targets { database, config, other_project, other_worktree, port, project } = targets;
    let channel = r#"curl -s --unix-socket /run/conduit/channel.sock -H "Authorization: Bearer $CONDUIT_SESSION_TOKEN" -o /dev/null"#;
    format!(
        r#"out="$PWD/probe-$1.txt"
session=$(echo "$CONDUIT_SESSION_TOKEN" | cut -d_ -f2)
{{
echo "== env"; env
echo "== proc"; for f in /proc/[0-9]*/environ; do tr '\0' '\n' < "$f"; echo; done 2>/dev/null
echo "== files"
for f in {db} {db}-wal {config} {other_project} {other_worktree} /etc/shadow; do
  if cat "$f" >/dev/null 2>&1; then echo "readable $f"; else echo "unreadable $f"; fi
done
echo "== service"
if curl -s -m 5 -o /dev/null http://127.0.0.1:{port}/api/health; then echo "service reached"; else echo "service refused"; fi
if curl -s -m 5 -o /dev/null http://localhost:{port}/api/health; then echo "service reached"; else echo "service refused"; fi
echo "== channel"
{channel} -w "own-session %{{http_code}}\n" "http://conduit/api/sessions/$session"
{channel} -w "own-transcript %{{http_code}}\n" "http://conduit/api/sessions/$session/messages"
{channel} -w "project-sessions %{{http_code}}\n" "http://conduit/api/projects/{project}/sessions"
{channel} -w "sandbox-off %{{http_code}}\n" -X PUT -H 'content-type: application/json' -d '{{"sandbox":"off"}}' "http://conduit/api/projects/{project}"
{channel} -w "allow-rule %{{http_code}}\n" -X POST -H 'content-type: application/json' -d '{{"tool_name":"*","behavior":"allow"}}' "http://conduit/api/projects/{project}/rules"
{channel} -w "new-project %{{http_code}}\n" -X POST -H 'content-type: application/json' -d '{{"name":"x","folder_path":"x","sandbox":"off"}}' "http://conduit/api/projects"
curl -s --unix-socket /run/conduit/channel.sock -o /dev/null -w "no-token %{{http_code}}\n" "http://conduit/api/sessions/$session"
echo "== end"
}} > "$out" 2>&1
"#,
        db = database.display(),
        config = config.display(),
        other_project = other_project.display(),
        other_worktree = other_worktree.display(),
    )
}

/// Waits for `file` to hold the probe's last line; its text.
async fn report(file: &Path) -> String {
    let deadline = Instant::now() + READY;
    loop {
        let text = std::fs::read_to_string(file).unwrap_or_default();
        if text.contains("== end") {
            return text;
        }
        assert!(Instant::now() < deadline, "the probe never finished: {} holds {text:?}", file.display());
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// Everything a probe's report must show for a contained process of the session.
fn assert_contained(label: &str, text: &str, secrets: &[String]) {
    for secret in secrets {
        assert!(!text.contains(secret.as_str()), "{label}: a secret of the service leaked: {secret}\n{text}");
    }
    let env = text.split("== proc").next().unwrap_or_default();
    let names: Vec<&str> = env.lines().filter_map(|l| l.split_once('=').map(|(k, _)| k)).collect();
    let mut own: Vec<&str> = names.into_iter().filter(|n| n.starts_with("CONDUIT_")).collect();
    own.sort();
    assert_eq!(
        own,
        ["CONDUIT_SESSION_MARKER", "CONDUIT_SESSION_TOKEN"],
        "{label}: only the marker and the channel: {env}"
    );
    let proc = text.split("== proc").nth(1).and_then(|t| t.split("== files").next()).unwrap_or_default();
    for line in proc.lines().filter(|l| l.starts_with("CONDUIT_")) {
        assert!(
            line.starts_with("CONDUIT_SESSION_MARKER=") || line.starts_with("CONDUIT_SESSION_TOKEN="),
            "{label}: /proc shows a setting: {line}"
        );
    }
    assert!(!text.lines().any(|l| l.starts_with("readable ")), "{label}: {text}");
    assert_eq!(
        text.matches("unreadable ").count(),
        6,
        "{label}: database, its WAL, config, another project, another worktree, /etc/shadow: {text}"
    );
    assert_eq!(text.matches("service refused").count(), 2, "{label}: the service's port is closed: {text}");
    for expected in [
        "own-session 200",
        "own-transcript 200",
        "project-sessions 200",
        "sandbox-off 403",
        "allow-rule 403",
        "new-project 403",
        "no-token 401",
    ] {
        assert!(text.contains(expected), "{label}: {expected:?} in {text}");
    }
}

#[actix_web::test]
async fn a_sandboxed_session_reaches_nothing_of_conduit_but_its_own_channel() {
    let (api, service) = rig().await;
    let health = service.get_json("/api/health").await;
    assert_eq!(health["checks"]["sandbox"]["network"]["mechanism"], "pasta", "{health}");
    assert_eq!(health["checks"]["sandbox"]["network"]["available"], true, "{health}");

    let other = service.root.join("other");
    std::fs::create_dir_all(&other).expect("other");
    std::fs::write(other.join("notes.txt"), "another project's file").expect("other file");
    let other_project = create(&service, json!({"name": "other", "folder_path": "other"})).await;
    assert_eq!(other_project["sandbox"], Value::Null, "the default sandbox");
    repo(&service.root.join("app"), &[("README.md", "app\n")]);
    let project = create(&service, json!({"name": "app", "folder_path": "app", "workspace_mode": "worktree"})).await;
    let project_id = id(&project);
    let mine = idle(&service, &project_id).await;
    let theirs = idle(&service, &project_id).await;
    let (my_worktree, their_worktree) = (
        PathBuf::from(mine["worktree_path"].as_str().expect("a worktree")),
        PathBuf::from(theirs["worktree_path"].as_str().expect("a worktree")),
    );
    std::fs::write(their_worktree.join("private.txt"), "the other session's work").expect("their file");
    let port = service.address.rsplit(':').next().expect("a port").to_string();
    let targets = Targets {
        database: service.dir.path().join("data/conduit.db"),
        config: service.dir.path().join("conduit.toml"),
        other_project: other.join("notes.txt"),
        other_worktree: their_worktree.join("private.txt"),
        port,
        project: project_id.clone(),
    };
    std::fs::write(my_worktree.join("probe.sh"), probe(&targets)).expect("probe");
    let secrets = secrets(&service);

    run_bash(&api, &service, &id(&mine), "look around", "sh probe.sh bash", 1).await;
    let text = report(&my_worktree.join("probe-bash.txt")).await;
    assert_contained("Bash tool call", &text, &secrets);
    assert!(text.contains("ANTHROPIC_BASE_URL="), "the CLI keeps what it needs to reach its model: {text}");

    // The session's own exec command, background process and terminal: the same.
    let res = service.post(&format!("/api/sessions/{}/exec", id(&mine)), json!({"command": "sh probe.sh exec"})).await;
    assert_eq!(res.status().as_u16(), 200, "exec");
    assert_contained("exec", &report(&my_worktree.join("probe-exec.txt")).await, &secrets);
    let res = service
        .post(&format!("/api/sessions/{}/processes", id(&mine)), json!({"command": "sh probe.sh process"}))
        .await;
    assert_eq!(res.status().as_u16(), 202, "background process");
    assert_contained("background process", &report(&my_worktree.join("probe-process.txt")).await, &secrets);
    let typed = terminal_probe(&service, &id(&mine)).await;
    assert_contained("terminal", &report(&my_worktree.join("probe-terminal.txt")).await, &secrets);
    drop(typed);

    // Nothing the channel refused happened.
    let after = service.get_json(&format!("/api/projects/{project_id}")).await;
    assert_eq!(after["sandbox"], Value::Null, "{after}");
    let rules = service.get_json(&format!("/api/projects/{project_id}/rules")).await;
    assert_eq!(rules.as_array().map(Vec::len), Some(0), "{rules}");
    let projects = service.get_json("/api/projects").await;
    assert_eq!(projects.as_array().map(Vec::len), Some(2), "{projects}");
}

/// The session's terminal runs the probe (typed at its prompt); the socket stays open while
/// the caller waits for the report.
async fn terminal_probe(
    service: &TestService,
    session: &str,
) -> tokio_tungstenite::WebSocketStream<tokio_tungstenite::MaybeTlsStream<tokio::net::TcpStream>> {
    let res = service.post(&format!("/api/sessions/{session}/terminals"), json!({})).await;
    assert_eq!(res.status().as_u16(), 201, "terminal");
    let terminal: Value = res.json().await.expect("json");
    let url = format!(
        "{}/api/terminals/{}/ws?token={AUTH_TOKEN}",
        service.address.replacen("http://", "ws://", 1),
        terminal["id"].as_str().expect("id")
    );
    let (mut socket, _) = tokio_tungstenite::connect_async(url).await.expect("the terminal's WebSocket");
    let keys = tokio_tungstenite::tungstenite::Message::Binary(b"sh probe.sh terminal\r".to_vec());
    socket.send(keys).await.expect("typed");
    socket
}

#[actix_web::test]
async fn a_project_with_the_sandbox_off_still_gets_a_clean_environment() {
    let (api, service) = rig().await;
    std::fs::create_dir_all(service.root.join("bare")).expect("folder");
    let project = create(
        &service,
        json!({"name": "bare", "folder_path": "bare", "sandbox": "off", "env": {"PROJECT_FLAG": "on"}}),
    )
    .await;
    assert_eq!(project["env"], json!({"PROJECT_FLAG": "[REDACTED:project_env]"}), "the value is never shown");
    let session = idle(&service, &id(&project)).await;
    run_bash(&api, &service, &id(&session), "show the environment", "env > env.txt", 1).await;
    let env = std::fs::read_to_string(service.root.join("bare/env.txt")).expect("the command ran");
    for secret in secrets(&service) {
        assert!(!env.contains(&secret), "a secret of the service leaked: {secret}\n{env}");
    }
    let mut own: Vec<&str> =
        env.lines().filter(|l| l.starts_with("CONDUIT_")).filter_map(|l| l.split('=').next()).collect();
    own.sort();
    assert_eq!(own, ["CONDUIT_SESSION_MARKER", "CONDUIT_SESSION_TOKEN"], "{env}");
    assert!(env.contains("PROJECT_FLAG=on"), "the project's own variable: {env}");
}

#[actix_web::test]
async fn a_word_split_at_ifs_is_denied_under_a_deny_rule() {
    let (api, service) = rig().await;
    std::fs::create_dir_all(service.root.join("guarded")).expect("folder");
    let project = create(&service, json!({"name": "guarded", "folder_path": "guarded"})).await;
    let victim = service.root.join("guarded/victim.txt");
    std::fs::write(&victim, "keep me").expect("victim");
    let rule = json!({"tool_name": "Bash", "rule_content": "rm:*", "behavior": "deny"});
    let res = service.post(&format!("/api/projects/{}/rules", id(&project)), rule).await;
    assert_eq!(res.status().as_u16(), 201, "rule");
    let session = idle(&service, &id(&project)).await;
    run_bash(&api, &service, &id(&session), "delete it quietly", "rm${IFS}-f${IFS}victim.txt", 1).await;
    assert_eq!(std::fs::read_to_string(&victim).expect("still there"), "keep me", "the spelling did not get past rm:*");
    // The audit is written behind: give it a moment to land.
    let mut denied = None;
    for _ in 0..100 {
        let log = service.get_json(&format!("/api/permissions/log?session_id={}", id(&session))).await;
        denied = log.as_array().and_then(|rows| rows.iter().find(|r| r["decision"] == "deny")).cloned();
        if denied.is_some() {
            break;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let denied = denied.expect("a denial in the audit");
    assert!(denied["reason"].as_str().is_some_and(|r| r.contains("${IFS}")), "{denied}");
}

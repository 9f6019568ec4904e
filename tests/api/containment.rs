//! Nothing escapes, and one service per database: a crash right after a launch leaves no CLI
//! behind the restart, a tool's `setsid -f env -i` escapee (no group, no marker) still ends with
//! its session and after a crash, and a second service on the same database touches nothing.

use std::time::{Duration, Instant};

use serde_json::{json, Value};

use crate::support::fake_api::{FakeApi, Reply};
use crate::support::procs::{alive, gone_within, kill_all, running};
use crate::support::service::{command, fake_cli, real_cli, ServiceConfig, ServiceDir, TestService};

const READY: Duration = Duration::from_secs(60);

fn id_of(session: &Value) -> String {
    session["id"].as_str().expect("the session has an id").to_string()
}

#[actix_web::test]
async fn health_says_each_cli_gets_a_cgroup() {
    let service = TestService::start(ServiceConfig::new(fake_cli()));
    let health = service.get_json("/api/health").await;
    assert_eq!(health["checks"]["process_containment"], "cgroup", "{health}");
    assert!(health["checks"]["containment_note"].is_null(), "{health}");
}

#[actix_web::test]
async fn a_kill_9_right_after_a_launch_never_leaves_a_cli_behind_the_restart() {
    let mut dir = ServiceDir::from(tempfile::tempdir().expect("tempdir"));
    for round in 0..20 {
        let mut service = TestService::start_in(dir, ServiceConfig::new(fake_cli()));
        let project = service.project(&format!("crash-{round}")).await;
        let session = service.launch(&project, json!({"model": "fake-ignore-term"})).await;
        // The answer comes only once the pid and its start time are stored.
        let pid = session["cli_pid"].as_i64().expect("the launch answers with the CLI's pid") as i32;
        service.crash();
        assert!(alive(pid), "round {round}: the CLI {pid} outlives the crash");
        dir = service.into_dir();

        let service = TestService::start_in(dir, ServiceConfig::new(fake_cli()));
        let row = service.get_json(&format!("/api/sessions/{}", id_of(&session))).await;
        assert_eq!(row["cli_pid"].as_i64(), Some(i64::from(pid)), "round {round}: the pid was stored: {row}");
        assert_eq!(row["closed_reason"], "service_restarted", "{row}");
        let gone = gone_within(pid, Duration::from_secs(5)).await;
        if !gone {
            kill_all(&[pid]);
        }
        assert!(gone, "round {round}: the CLI {pid} survived the restart\n{}", service.log());
        dir = service.into_dir();
    }
}

#[actix_web::test]
async fn a_second_service_on_the_same_database_refuses_and_touches_nothing() {
    let first = TestService::start(ServiceConfig::new(fake_cli()));
    let project = first.project("shared").await;
    let session = first.launch(&project, json!({})).await;
    let id = id_of(&session);
    let idle = first.wait_status(&id, "idle", READY).await;
    let pid = idle["cli_pid"].as_i64().expect("pid") as i32;

    let started = Instant::now();
    let output = command(first.dir.path(), &ServiceConfig::new(fake_cli()))
        .stdin(std::process::Stdio::null())
        .output()
        .expect("run a second service");
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(!output.status.success(), "the second service must refuse; it said {stderr}");
    assert!(started.elapsed() < Duration::from_secs(10), "it refuses at once");
    assert!(stderr.contains("already using the database"), "{stderr}");
    assert!(stderr.contains(&format!("pid {}", first.pid())), "the refusal names the holder: {stderr}");

    assert!(alive(pid), "the first service's CLI is untouched");
    let res = first.post(&format!("/api/sessions/{id}/message"), json!({"content": "still here"})).await;
    assert_eq!(res.status().as_u16(), 202);
    let row = first.wait_for(&id, READY, |r| r["num_turns"] == 1 && r["status"] == "idle").await;
    assert!(row["error_message"].is_null(), "{row}");
}

/// The real CLI runs `setsid -f env -i sleep <n>` with its Bash tool: a process in a new
/// session and group, with an empty environment (no marker). Returns its pid.
async fn escapee(api: &FakeApi, service: &TestService, session: &str, seconds: &str) -> i32 {
    let command = format!("setsid -f env -i sleep {seconds}");
    api.on(
        "escape now",
        Reply::ToolUse { name: "Bash".into(), input: json!({"command": command, "description": "escape"}) },
    );
    api.on("tool_result", Reply::Text("escaped".into()));
    let res = service.post(&format!("/api/sessions/{session}/message"), json!({"content": "escape now"})).await;
    assert_eq!(res.status().as_u16(), 202);
    service.wait_for(session, READY, |r| r["num_turns"] == 1 && r["status"] == "idle").await;
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        if let [pid] = running(&["sleep", seconds])[..] {
            return pid;
        }
        assert!(Instant::now() < deadline, "the escapee never ran\n{}", service.log());
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

async fn real_session(api: &FakeApi) -> (TestService, String) {
    let service = TestService::start(ServiceConfig::new(real_cli()).api(&api.base_url));
    let project = service.project("escape").await;
    let session = service.launch(&project, json!({})).await;
    let id = id_of(&session);
    service.wait_status(&id, "idle", READY).await;
    (service, id)
}

#[actix_web::test]
async fn a_setsid_env_i_escapee_ends_with_its_session() {
    let api = FakeApi::start().await;
    let (service, id) = real_session(&api).await;
    let pid = escapee(&api, &service, &id, "3111").await;
    let res = service.delete(&format!("/api/sessions/{id}")).await;
    assert_eq!(res.status().as_u16(), 200);
    let row: Value = res.json().await.expect("json");
    assert_eq!(row["status"], "closed", "{row}");
    let gone = !alive(pid);
    kill_all(&running(&["sleep", "3111"]));
    assert!(gone, "the escapee {pid} outlived its session's DELETE\n{}", service.log());
}

#[actix_web::test]
async fn a_setsid_env_i_escapee_is_ended_after_a_crash_even_when_its_cli_is_gone() {
    let api = FakeApi::start().await;
    let (service, id) = real_session(&api).await;
    let pid = escapee(&api, &service, &id, "3112").await;
    let cli = service.get_json(&format!("/api/sessions/{id}")).await["cli_pid"].as_i64().expect("pid") as i32;
    let dir = service.into_dir();
    // The CLI itself dies too: only its escapee is left, outside its group, without a marker.
    kill_all(&[cli]);
    assert!(gone_within(cli, Duration::from_secs(5)).await);
    assert!(alive(pid), "the escapee outlives the crash");

    let service = TestService::start_in(dir, ServiceConfig::new(real_cli()).api(&api.base_url));
    let gone = gone_within(pid, Duration::from_secs(5)).await;
    kill_all(&running(&["sleep", "3112"]));
    assert!(gone, "the escapee {pid} survived the restart\n{}", service.log());
}

//! Cluster mode, where the work runs: a project's nodes decide where its sessions go, a
//! session's commands and processes are followed through any node, two nodes never run agents
//! in one folder at once, and a node cut off past its lease (stopped, or its database silent)
//! ends its own sessions, those still preparing included. PostgreSQL pass only.

use std::time::{Duration, Instant};

use serde_json::{json, Value};

use crate::cluster::{wait_cluster, Cluster, LEASE_MS};
use crate::exec::sse_events;
use crate::support::procs::{alive, gone_within, kill_all};

#[actix_web::test]
async fn a_projects_nodes_decide_where_its_sessions_run() {
    let Some(cluster) = Cluster::new() else { return };
    let (a, b) = (cluster.node("a"), cluster.node("b"));
    wait_cluster(&a, Duration::from_secs(20), |v| crate::cluster::nodes_where(v, "state", "live").len() == 2).await;
    let folder = cluster.root.path().join("only-b");
    std::fs::create_dir_all(&folder).expect("folder");
    let res = a.post("/api/projects", json!({"name": "only-b", "folder_path": folder, "nodes": ["b", "b"]})).await;
    assert_eq!(res.status().as_u16(), 201);
    let project: Value = res.json().await.expect("json");
    assert_eq!(project["nodes"], json!(["b"]), "repeats dropped: {project}");
    let id = project["id"].as_str().expect("id").to_string();
    for _ in 0..3 {
        // Asked of A, which does not have the folder: every launch runs on B.
        let session = a.launch(&id, json!({})).await;
        assert_eq!(session["owner_node"], "b", "{session}");
    }

    // Only a node that is not live: refused, with the reason.
    let res = a.client.put(a.url(&format!("/api/projects/{id}"))).json(&json!({"nodes": ["ghost"]})).send().await;
    assert_eq!(res.expect("put").status().as_u16(), 200);
    let res = b.post(&format!("/api/projects/{id}/sessions"), json!({})).await;
    assert_eq!(res.status().as_u16(), 503);
    let body: Value = res.json().await.expect("json");
    assert_eq!(body["error"]["code"], "no_node_for_project", "{body}");

    // Bad names are a 422; null is every node again.
    let res = a.client.put(a.url(&format!("/api/projects/{id}"))).json(&json!({"nodes": ["no spaces"]})).send().await;
    assert_eq!(res.expect("put").status().as_u16(), 422);
    let res = a.client.put(a.url(&format!("/api/projects/{id}"))).json(&json!({"nodes": null})).send().await;
    let project: Value = res.expect("put").json().await.expect("json");
    assert_eq!(project["nodes"], json!([]), "{project}");
    let session = a.launch(&id, json!({})).await;
    assert_eq!(session["owner_node"], "a", "A has the fewest sessions now: {session}");
}

#[actix_web::test]
async fn a_sessions_commands_and_processes_are_followed_through_any_node() {
    let Some(cluster) = Cluster::new() else { return };
    let (a, c) = (cluster.node("a"), cluster.node("c"));
    let project = cluster.project(&a, "workbench").await;
    let session = a.launch(&project, json!({})).await;
    let id = session["id"].as_str().expect("id").to_string();
    assert_eq!(session["owner_node"], "a");
    a.wait_status(&id, "idle", Duration::from_secs(30)).await;

    // A command run through C runs on A; its output streams back through C as it comes.
    let command = "echo one; sleep 0.3; echo two; exit 4";
    let res = c.post(&format!("/api/sessions/{id}/exec/stream"), json!({"command": command})).await;
    assert_eq!(res.status().as_u16(), 200);
    let events = sse_events(&res.text().await.expect("body"));
    let names: Vec<&str> = events.iter().map(|(e, _)| e.as_str()).collect();
    assert_eq!(names, ["start", "stdout", "stdout", "exit"], "{events:?}");
    assert_eq!(events[3].1["exit_code"], 4);

    // A background process started through C runs on A; C follows its log live.
    let res =
        c.post(&format!("/api/sessions/{id}/processes"), json!({"command": "echo first; sleep 1; echo second"})).await;
    assert_eq!(res.status().as_u16(), 202, "{}", res.text().await.unwrap_or_default());
    let process: Value = res.json().await.expect("json");
    assert_eq!(process["owner_node"], "a", "{process}");
    let pid = process["id"].as_str().expect("id").to_string();
    let log = c.get(&format!("/api/sessions/{id}/processes/{pid}/logs/stream")).await;
    assert_eq!(log.status().as_u16(), 200, "{}", log.text().await.unwrap_or_default());
    let body = tokio::time::timeout(Duration::from_secs(20), log.text()).await.expect("the log ends").expect("body");
    assert!(body.contains("first") && body.contains("second"), "{body}");
    let row = c.get_json(&format!("/api/sessions/{id}/processes/{pid}")).await;
    assert_eq!(row["owner_node"], "a", "{row}");
}

/// `started_at`, `finished_at` and `owner_node` of each agent's run, once all have ended.
async fn runs_of(node: &crate::support::service::TestService, agents: &[String]) -> Vec<(String, String, String)> {
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        let mut spans = Vec::new();
        for agent in agents {
            let runs = node.get_json(&format!("/api/agents/{agent}/executions")).await;
            for run in runs.as_array().map(Vec::as_slice).unwrap_or_default() {
                if let (Some(start), Some(end)) = (run["started_at"].as_str(), run["finished_at"].as_str()) {
                    assert_eq!(run["status"], "success", "{run}");
                    let owner = run["owner_node"].as_str().unwrap_or_default().to_string();
                    spans.push((start.to_string(), end.to_string(), owner));
                }
            }
        }
        if spans.len() == agents.len() {
            return spans;
        }
        if Instant::now() >= deadline {
            let mut runs = Vec::new();
            for agent in agents {
                runs.push(node.get_json(&format!("/api/agents/{agent}/executions")).await);
            }
            panic!("the runs never ended: {runs:?}\n{}", node.log());
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

#[actix_web::test]
async fn two_nodes_never_run_agents_in_one_folder_at_once() {
    let Some(cluster) = Cluster::new() else { return };
    let (a, b) = (cluster.node("a"), cluster.node("b"));
    let project = cluster.project(&a, "one-folder").await;
    let mut agents = Vec::new();
    for name in ["left", "right"] {
        // A turn of about a second (10 lines at 10 a second); never fires on its own.
        let body = json!({"name": name, "objective": "work", "schedule": "0 0 0 1 1 *",
            "project_id": project, "model": "fake-rate-10-10"});
        let res = a.post("/api/agents", body).await;
        assert_eq!(res.status().as_u16(), 201);
        let agent: Value = res.json().await.expect("json");
        agents.push(agent["id"].as_str().expect("id").to_string());
    }
    // Each node runs its own agent's actor once it has seen the agent (within a second).
    tokio::time::sleep(Duration::from_millis(1500)).await;
    let (left, right) = (format!("/api/agents/{}/trigger", agents[0]), format!("/api/agents/{}/trigger", agents[1]));
    let (on_a, on_b) = futures_util::join!(a.post(&left, json!({})), b.post(&right, json!({})));
    assert!(on_a.status().is_success() && on_b.status().is_success(), "{} {}", on_a.status(), on_b.status());
    let mut spans = runs_of(&a, &agents).await;
    assert_eq!((spans[0].2.as_str(), spans[1].2.as_str()), ("a", "b"), "each ran where it was triggered: {spans:?}");
    spans.sort();
    assert!(spans[0].1 <= spans[1].0, "one folder, one run at a time across nodes: {spans:?}");
}

#[actix_web::test]
async fn a_node_cut_off_past_its_lease_ends_its_own_sessions() {
    let Some(cluster) = Cluster::new() else { return };
    // A leads (it starts alone), so stopping B leaves a leader to declare B lost.
    let a = cluster.node("a");
    wait_cluster(&a, Duration::from_secs(20), |v| crate::cluster::live_leaders(v) == ["a"]).await;
    let b = cluster.node("b");
    let project = cluster.project(&a, "cut-off").await;
    let session = b.launch(&project, json!({})).await;
    let id = session["id"].as_str().expect("id").to_string();
    let idle = b.wait_status(&id, "idle", Duration::from_secs(30)).await;
    let pid = idle["cli_pid"].as_i64().expect("pid") as i32;

    // B stops (not killed) past its lease: the leader declares it lost...
    // SAFETY: signals to a child process of this test.
    unsafe { libc::kill(b.pid(), libc::SIGSTOP) };
    let row = a.wait_for(&id, Duration::from_millis(LEASE_MS * 4), |r| r["status"] == "error").await;
    assert_eq!(row["closed_reason"], "node_lost", "{row}");
    // ...and B, running again, finds out and ends the session's CLI itself.
    unsafe { libc::kill(b.pid(), libc::SIGCONT) };
    let gone = gone_within(pid, Duration::from_millis(LEASE_MS + 5000)).await;
    if !gone {
        kill_all(&[pid]);
    }
    assert!(gone, "the CLI {pid} of a lost session ran on\n{}", b.log());
    assert!(!alive(pid));
    // Its end did not write over the leader's verdict.
    tokio::time::sleep(Duration::from_millis(500)).await;
    let row = a.get_json(&format!("/api/sessions/{id}")).await;
    assert_eq!((row["status"].as_str(), row["closed_reason"].as_str()), (Some("error"), Some("node_lost")), "{row}");
}

/// Every server process of one test database, stopped (`SIGSTOP`) until dropped: its queries
/// wait, as behind a dead link, instead of failing.
struct StoppedBackends(Vec<i32>);

impl StoppedBackends {
    fn of(url: &str) -> StoppedBackends {
        use diesel::prelude::*;
        #[derive(QueryableByName)]
        struct Backend {
            #[diesel(sql_type = diesel::sql_types::Integer)]
            pid: i32,
        }
        let mut conn = diesel::PgConnection::establish(url).expect("connect to the test database");
        let backends: Vec<Backend> = diesel::sql_query(
            "SELECT pid FROM pg_stat_activity WHERE datname = current_database() AND pid <> pg_backend_pid()",
        )
        .load(&mut conn)
        .expect("the database's server processes");
        let pids: Vec<i32> = backends.into_iter().map(|b| b.pid).collect();
        for pid in &pids {
            // SAFETY: a signal to a server process of this test's own database.
            assert_eq!(unsafe { libc::kill(*pid, libc::SIGSTOP) }, 0, "stop {pid}");
        }
        StoppedBackends(pids)
    }
}

impl Drop for StoppedBackends {
    fn drop(&mut self) {
        for pid in &self.0 {
            // SAFETY: as above; resumes what `of` stopped, even when the test fails.
            unsafe { libc::kill(*pid, libc::SIGCONT) };
        }
    }
}

#[actix_web::test]
async fn a_node_whose_database_stops_answering_ends_its_own_sessions() {
    let Some(cluster) = Cluster::new() else { return };
    let a = cluster.node("a");
    wait_cluster(&a, Duration::from_secs(20), |v| crate::cluster::live_leaders(v) == ["a"]).await;
    let project = cluster.project(&a, "unanswered").await;
    let session = a.launch(&project, json!({})).await;
    let id = session["id"].as_str().expect("id").to_string();
    let idle = a.wait_status(&id, "idle", Duration::from_secs(30)).await;
    let pid = idle["cli_pid"].as_i64().expect("pid") as i32;

    // No error comes back, only silence: the renewal that waits a whole lease counts as failed.
    let stopped = StoppedBackends::of(&cluster.url);
    let gone = gone_within(pid, Duration::from_millis(LEASE_MS * 2 + 3000)).await;
    drop(stopped);
    if !gone {
        kill_all(&[pid]);
    }
    assert!(gone, "the CLI {pid} ran on while the node could not renew its lease\n{}", a.log());
    let row = a.wait_for(&id, Duration::from_secs(30), |r| r["status"] == "error").await;
    assert_eq!(row["closed_reason"], "node_lost", "{row}");
}

#[actix_web::test]
async fn a_session_still_preparing_when_its_node_is_cut_off_never_starts_its_cli() {
    let Some(cluster) = Cluster::new() else { return };
    let a = cluster.node("a");
    wait_cluster(&a, Duration::from_secs(20), |v| crate::cluster::live_leaders(v) == ["a"]).await;
    let folder = cluster.root.path().join("preparing");
    crate::workspaces_real::repo(&folder, &[("README.md", "a worktree per session\n")]);
    let body = json!({"name": "preparing", "folder_path": folder, "setup_script": "echo setup-begins; sleep 8"});
    let res = a.post("/api/projects", body).await;
    assert_eq!(res.status().as_u16(), 201);
    let project: Value = res.json().await.expect("json");
    let project = project["id"].as_str().expect("id").to_string();
    let mut events = a.client.get(a.url("/api/events/stream")).send().await.expect("events");

    // The node is cut off while the worktree's setup runs, and is back before it ends.
    let launch_path = format!("/api/projects/{project}/sessions");
    let launching = a.post(&launch_path, json!({}));
    let cutting = async {
        crate::cluster::read_sse(&mut events, Duration::from_secs(30), |seen| {
            seen.iter().any(|(_, _, data)| data.contains("setup-begins"))
        })
        .await;
        let stopped = StoppedBackends::of(&cluster.url);
        tokio::time::sleep(Duration::from_millis(LEASE_MS + 2000)).await;
        drop(stopped);
    };
    let (res, ()) = tokio::join!(launching, cutting);
    let session: Value = res.json().await.expect("json");
    assert_eq!(
        (session["status"].as_str(), session["closed_reason"].as_str()),
        (Some("error"), Some("node_lost")),
        "{session}\n{}",
        a.log()
    );
    assert!(session["cli_pid"].is_null(), "no CLI started: {session}");
}

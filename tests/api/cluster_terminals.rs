//! Cluster mode, actions that reach every node: a terminal (a PTY in one node's memory) is
//! read, typed into over its WebSocket, listed and ended through any node, and a project's
//! kill-all and cleanup act on the processes of every node, naming a node they could not
//! reach. PostgreSQL pass only.

use std::time::{Duration, Instant};

use futures_util::{SinkExt, StreamExt};
use serde_json::{json, Value};
use tokio_tungstenite::tungstenite::protocol::frame::coding::CloseCode;
use tokio_tungstenite::tungstenite::Message;

use crate::cluster::{nodes_where, wait_cluster, Cluster, SECRET};
use crate::exec::{unique, Leftovers};
use crate::support::procs::running;
use crate::support::service::TestService;
use crate::terminals::{control, marked, read_until, type_in, Reap, Socket, WITHIN};

/// A project without the OS sandbox (what is tested here is where things run).
pub(crate) async fn project(cluster: &Cluster, node: &TestService, name: &str) -> String {
    let folder = cluster.root.path().join(name);
    std::fs::create_dir_all(&folder).expect("project folder");
    let res = node.post("/api/projects", json!({"name": name, "folder_path": folder, "sandbox": "off"})).await;
    assert_eq!(res.status().as_u16(), 201, "create project");
    let body: Value = res.json().await.expect("json");
    body["id"].as_str().expect("id").to_string()
}

/// Whether `node` itself runs terminal `id`: asked as a peer would, so it answers alone.
async fn runs_here(node: &TestService, id: &str) -> bool {
    let res = node.client.get(node.url(&format!("/api/terminals/{id}"))).header("x-conduit-cluster-secret", SECRET);
    res.send().await.expect("request").status().as_u16() == 200
}

async fn connect(node: &TestService, id: &str) -> Socket {
    let url = node.url(&format!("/api/terminals/{id}/ws")).replacen("http://", "ws://", 1);
    let (socket, _) = tokio_tungstenite::connect_async(url).await.expect("the WebSocket connects");
    socket
}

fn listed(list: &Value, id: &str) -> bool {
    list.as_array().is_some_and(|views| views.iter().any(|v| v["id"] == id))
}

/// Reads past output and control frames until the close; returns its code.
async fn close_code(socket: &mut Socket) -> CloseCode {
    let deadline = Instant::now() + WITHIN;
    loop {
        let left = deadline.saturating_duration_since(Instant::now());
        match tokio::time::timeout(left, socket.next()).await {
            Ok(Some(Ok(Message::Close(frame)))) => return frame.map_or(CloseCode::Status, |f| f.code),
            Ok(Some(Ok(_))) => {}
            other => panic!("no close frame: {other:?}"),
        }
    }
}

#[actix_web::test]
async fn a_terminal_started_through_one_node_is_used_through_another() {
    let Some(cluster) = Cluster::new() else { return };
    let (a, b, c) = (cluster.node("a"), cluster.node("b"), cluster.node("c"));
    wait_cluster(&a, Duration::from_secs(20), |v| nodes_where(v, "state", "live").len() == 3).await;
    let project = project(&cluster, &a, "terminals").await;
    let session = a.launch(&project, json!({})).await;
    let session_id = session["id"].as_str().expect("id").to_string();
    assert_eq!(session["owner_node"], "a", "{session}");
    a.wait_status(&session_id, "idle", Duration::from_secs(30)).await;

    // Started through C, for a session A runs: the shell runs on A.
    let res = c.post(&format!("/api/sessions/{session_id}/terminals"), json!({})).await;
    let status = res.status().as_u16();
    let terminal: Value = res.json().await.expect("json");
    assert_eq!(status, 201, "{terminal}");
    let id = terminal["id"].as_str().expect("id").to_string();
    let _reap = Reap(id.clone());
    assert_eq!(
        (runs_here(&a, &id).await, runs_here(&b, &id).await, runs_here(&c, &id).await),
        (true, false, false),
        "on the session's owner"
    );

    // Read and listed through any node.
    let row = b.get_json(&format!("/api/terminals/{id}")).await;
    assert_eq!(row["session_id"], session_id.as_str(), "{row}");
    for node in [&a, &b, &c] {
        let res = node.get(&format!("/api/terminals?session_id={session_id}")).await;
        assert!(!res.headers().contains_key("x-conduit-unreachable-nodes"), "every node answered");
        let list: Value = res.json().await.expect("list");
        assert!(listed(&list, &id), "{list}");
    }

    // Typed into through B's WebSocket: the output comes back, binary and text frames alike.
    let mut socket = connect(&b, &id).await;
    type_in(&mut socket, "echo $((6*7))-through-b\n").await;
    let mut controls = Vec::new();
    read_until(&mut socket, "42-through-b", &mut controls).await;
    socket.send(Message::Text(r#"{"type":"resize","cols":0,"rows":0}"#.into())).await.expect("send");
    let error = control(&mut socket, "error").await;
    assert!(error["message"].as_str().is_some_and(|m| !m.is_empty()), "{error}");
    let pids = marked(&id);
    assert!(!pids.is_empty(), "the shell runs");

    // Ended through B: the client hears the exit and a normal close; its processes are gone.
    let res = b.delete(&format!("/api/terminals/{id}")).await;
    assert_eq!(res.status().as_u16(), 204);
    let exit = control(&mut socket, "exit").await;
    assert_eq!(exit["reason"], "closed", "{exit}");
    assert_eq!(close_code(&mut socket).await, CloseCode::Normal);
    assert!(marked(&id).is_empty(), "the shell is gone");
    assert_eq!(c.get(&format!("/api/terminals/{id}")).await.status().as_u16(), 404);
    assert_eq!(b.delete(&format!("/api/terminals/{id}")).await.status().as_u16(), 404);
    assert!(!listed(&b.get_json("/api/terminals").await, &id));
}

#[actix_web::test]
async fn a_carried_websocket_ends_when_the_node_running_the_terminal_goes_away() {
    let Some(cluster) = Cluster::new() else { return };
    let (mut a, b) = (cluster.node("a"), cluster.node("b"));
    wait_cluster(&a, Duration::from_secs(20), |v| nodes_where(v, "state", "live").len() == 2).await;
    let project = project(&cluster, &a, "going").await;
    let res = a.post(&format!("/api/projects/{project}/terminals"), json!({})).await;
    assert_eq!(res.status().as_u16(), 201);
    let terminal: Value = res.json().await.expect("json");
    let id = terminal["id"].as_str().expect("id").to_string();
    let _reap = Reap(id.clone());
    let mut socket = connect(&b, &id).await;
    type_in(&mut socket, "echo $((6*7))-before\n").await;
    read_until(&mut socket, "42-before", &mut Vec::new()).await;

    // A dies: B closes its client as the owner going away, at once (not at a ping's silence).
    a.crash();
    assert_eq!(close_code(&mut socket).await, CloseCode::Away);
    // Until A's lease runs out, B cannot say whether the terminal still runs there.
    let res = b.get(&format!("/api/terminals/{id}")).await;
    assert!([503, 404].contains(&res.status().as_u16()), "{}", res.status());
    let res = b.get("/api/terminals").await;
    assert_eq!(res.status().as_u16(), 200);
    if let Some(names) = res.headers().get("x-conduit-unreachable-nodes") {
        assert_eq!(names, "a", "the node that could not be asked is named");
    }
}

/// Starts `sleep <seconds>` in the project's folder through `node`; its row.
async fn sleep_on(node: &TestService, project: &str, seconds: &str) -> Value {
    let res = node.post(&format!("/api/projects/{project}/processes"), json!({"argv": ["sleep", seconds]})).await;
    assert_eq!(res.status().as_u16(), 202);
    res.json().await.expect("row")
}

async fn ended(node: &TestService, project: &str, id: &str) {
    let deadline = Instant::now() + WITHIN;
    loop {
        let row = node.get_json(&format!("/api/projects/{project}/processes/{id}")).await;
        if row["status"] != "running" {
            return;
        }
        assert!(Instant::now() < deadline, "{id} still runs: {row}");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

fn log_of(node: &TestService, id: &str) -> std::path::PathBuf {
    node.dir.path().join("data").join("processes").join("logs").join(format!("{id}.stdout"))
}

#[actix_web::test]
async fn a_projects_kill_all_and_cleanup_reach_every_node() {
    let Some(cluster) = Cluster::new() else { return };
    let (a, mut b) = (cluster.node("a"), cluster.node("b"));
    wait_cluster(&a, Duration::from_secs(20), |v| nodes_where(v, "state", "live").len() == 2).await;
    let project = project(&cluster, &a, "processes").await;
    let n = unique();
    let (on_a, on_b) = (format!("330.{n}"), format!("331.{n}"));
    let guard = Leftovers(vec![vec!["sleep".into(), on_a.clone()], vec!["sleep".into(), on_b.clone()]]);
    let first = sleep_on(&a, &project, &on_a).await;
    let second = sleep_on(&b, &project, &on_b).await;
    assert_eq!((first["owner_node"].as_str(), second["owner_node"].as_str()), (Some("a"), Some("b")));
    let ids = [first["id"].as_str().expect("id").to_string(), second["id"].as_str().expect("id").to_string()];

    // Killed through A: both, one on each node.
    let res = a.post(&format!("/api/projects/{project}/processes/kill-all"), json!({"grace_ms": 0})).await;
    assert_eq!(res.status().as_u16(), 202);
    let killed: Value = res.json().await.expect("json");
    assert_eq!(killed["count"], 2, "{killed}");
    assert_eq!(killed["nodes"], json!([{"node": "a", "count": 1}, {"node": "b", "count": 1}]), "{killed}");
    assert_eq!(killed["unreachable"], json!([]), "{killed}");
    for id in &ids {
        ended(&a, &project, id).await;
    }
    assert!(guard.pids().is_empty(), "nothing runs on");
    assert!(log_of(&a, &ids[0]).exists() && log_of(&b, &ids[1]).exists(), "each log on its node's disk");

    // Cleaned through B: both rows, and each node's logs.
    let res = b.post(&format!("/api/projects/{project}/processes/cleanup"), json!({})).await;
    assert_eq!(res.status().as_u16(), 200);
    let cleaned: Value = res.json().await.expect("json");
    assert_eq!(cleaned["count"], 2, "{cleaned}");
    assert_eq!(cleaned["nodes"], json!([{"node": "b", "count": 1}, {"node": "a", "count": 1}]), "{cleaned}");
    assert_eq!(a.get_json(&format!("/api/projects/{project}/processes")).await, json!([]));
    assert!(!log_of(&a, &ids[0]).exists() && !log_of(&b, &ids[1]).exists(), "each node removed its logs");

    // A node that cannot be reached is named, and what it runs is left alone.
    let left = sleep_on(&b, &project, &on_b).await;
    b.crash();
    let res = a.post(&format!("/api/projects/{project}/processes/kill-all"), json!({"grace_ms": 0})).await;
    assert_eq!(res.status().as_u16(), 202);
    let killed: Value = res.json().await.expect("json");
    assert_eq!((killed["count"].as_u64(), killed["unreachable"][0]["node"].as_str()), (Some(0), Some("b")), "{killed}");
    assert_eq!(left["owner_node"], "b", "{left}");
    assert!(!running(&["sleep", &on_b]).is_empty(), "B's process was not touched");
    drop(guard);
}

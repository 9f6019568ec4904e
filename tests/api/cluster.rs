//! Cluster mode: three nodes on one PostgreSQL database register, one leads, a killed leader
//! is replaced within the lease, a killed node's sessions end `node_lost` and are resumed on
//! another node, and the settings and claims that keep a cluster sane. PostgreSQL pass only.

use std::time::{Duration, Instant};

use serde_json::{json, Value};

use crate::support::database::{create_database, postgres_server};
use crate::support::procs::{alive, gone_within, kill_all};
use crate::support::service::{command, fake_cli, ServiceConfig, TestService};

/// Short, so the tests wait little; a node renews every lease / 6.
pub(crate) const LEASE_MS: u64 = 3000;
pub(crate) const SECRET: &str = "a-cluster-secret-for-tests";

/// A cluster: its database and a folder every node shares as its project root.
pub(crate) struct Cluster {
    pub(crate) url: String,
    pub(crate) root: tempfile::TempDir,
}

impl Cluster {
    pub(crate) fn new() -> Option<Cluster> {
        let Some(server) = postgres_server() else {
            eprintln!("SKIPPED: cluster mode needs PostgreSQL (the suite's PostgreSQL pass runs this)");
            return None;
        };
        let url = create_database(&server, &format!("c_{}", uuid::Uuid::new_v4().simple()));
        Some(Cluster { url, root: tempfile::tempdir().expect("root") })
    }

    pub(crate) fn config(&self, name: &str) -> ServiceConfig {
        let port = free_port();
        ServiceConfig::new(fake_cli())
            .env("CONDUIT_DATABASE_URL", &self.url)
            .env("CONDUIT_PROJECT_ROOT", &self.root.path().display().to_string())
            .env("CONDUIT_PORT", &port.to_string())
            .env("CONDUIT_CLUSTER", "1")
            .env("CONDUIT_NODE_NAME", name)
            .env("CONDUIT_NODE_ADDRESS", &format!("http://127.0.0.1:{port}"))
            .env("CONDUIT_CLUSTER_SECRET", SECRET)
            .env("CONDUIT_CLUSTER_LEASE_MS", &LEASE_MS.to_string())
    }

    pub(crate) fn node(&self, name: &str) -> TestService {
        TestService::start(self.config(name))
    }

    /// A project on a fresh folder of the shared root, created through `node`.
    pub(crate) async fn project(&self, node: &TestService, name: &str) -> String {
        let folder = self.root.path().join(name);
        std::fs::create_dir_all(&folder).expect("project folder");
        let res = node.post("/api/projects", json!({"name": name, "folder_path": folder})).await;
        assert_eq!(res.status().as_u16(), 201, "create project");
        let body: Value = res.json().await.expect("json");
        body["id"].as_str().expect("id").to_string()
    }
}

/// Nodes a, b and c, once all three are live and one leads; and the leader's name.
async fn three_nodes(cluster: &Cluster) -> (Vec<TestService>, String) {
    let nodes = vec![cluster.node("a"), cluster.node("b"), cluster.node("c")];
    let view = wait_cluster(&nodes[0], Duration::from_secs(20), |v| {
        nodes_where(v, "state", "live").len() == 3 && live_leaders(v).len() == 1
    })
    .await;
    let leader = live_leaders(&view)[0].to_string();
    (nodes, leader)
}

fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0").expect("bind").local_addr().expect("addr").port()
}

/// Polls `/api/cluster` on `node` until `done` holds, within `within`.
pub(crate) async fn wait_cluster(node: &TestService, within: Duration, done: impl Fn(&Value) -> bool) -> Value {
    let deadline = Instant::now() + within;
    loop {
        let view = node.get_json("/api/cluster").await;
        if done(&view) {
            return view;
        }
        assert!(Instant::now() < deadline, "the cluster never got there; last: {view}\n{}", node.log());
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

pub(crate) fn nodes_where<'a>(view: &'a Value, field: &str, value: &str) -> Vec<&'a str> {
    let nodes = view["nodes"].as_array().map(Vec::as_slice).unwrap_or_default();
    nodes.iter().filter(|n| n[field] == value).filter_map(|n| n["name"].as_str()).collect()
}

pub(crate) fn live_leaders(view: &Value) -> Vec<&str> {
    let nodes = view["nodes"].as_array().map(Vec::as_slice).unwrap_or_default();
    nodes.iter().filter(|n| n["state"] == "live" && n["role"] == "leader").filter_map(|n| n["name"].as_str()).collect()
}

#[actix_web::test]
async fn three_nodes_register_one_leads_and_sessions_are_owned() {
    let Some(cluster) = Cluster::new() else { return };
    let nodes = [cluster.node("a"), cluster.node("b"), cluster.node("c")];
    let view = wait_cluster(&nodes[1], Duration::from_secs(20), |v| {
        nodes_where(v, "state", "live").len() == 3 && live_leaders(v).len() == 1
    })
    .await;
    assert_eq!(view["enabled"], true, "{view}");
    assert_eq!(view["node"], "b", "{view}");
    assert_eq!(view["lease_ms"], LEASE_MS, "{view}");
    let leader = live_leaders(&view)[0].to_string();
    for (node, name) in nodes.iter().zip(["a", "b", "c"]) {
        // Health tells what the node saw at its last renewal: at most a period behind.
        let role = if name == leader { "leader" } else { "follower" };
        let deadline = Instant::now() + Duration::from_secs(10);
        loop {
            let health = node.get_json("/api/health").await;
            let peers = health["cluster"]["peers"].as_array().map_or(0, Vec::len);
            if peers == 3 && health["cluster"]["role"] == role && health["cluster"]["node"] == name {
                break;
            }
            assert!(Instant::now() < deadline, "{name}'s health: {health}");
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }

    let project = cluster.project(&nodes[0], "shared").await;
    let session = nodes[0].launch(&project, json!({})).await;
    assert_eq!(session["owner_node"], "a", "{session}");
    let id = session["id"].as_str().expect("id");
    nodes[0].wait_status(id, "idle", Duration::from_secs(30)).await;
    // Any node reads it: the database is the same.
    let row = nodes[2].get_json(&format!("/api/sessions/{id}")).await;
    assert_eq!(row["owner_node"], "a", "{row}");
    let view = nodes[2].get_json("/api/cluster").await;
    let a = view["nodes"].as_array().expect("nodes").iter().find(|n| n["name"] == "a").expect("a").clone();
    assert_eq!(a["live_sessions"], 1, "{view}");
    assert!(a["load"].as_f64().is_some_and(|l| l > 0.0), "{view}");
    assert!(a["address"].as_str().is_some_and(|s| s.starts_with("http://127.0.0.1:")), "{view}");

    // A clean stop leaves; the others see it at once.
    let mut nodes = nodes;
    nodes[2].terminate();
    let view = nodes[0].get_json("/api/cluster").await;
    assert_eq!(nodes_where(&view, "state", "left"), vec!["c"], "{view}");
}

/// Reads an SSE body until `done` holds for the (event name, id, data) seen so far.
pub(crate) async fn read_sse(
    res: &mut reqwest::Response,
    within: Duration,
    done: impl Fn(&[(String, u64, String)]) -> bool,
) -> Vec<(String, u64, String)> {
    let deadline = Instant::now() + within;
    let (mut text, mut events) = (String::new(), Vec::new());
    while !done(&events) {
        let chunk = tokio::time::timeout_at(deadline.into(), res.chunk()).await;
        let bytes = match chunk {
            Ok(Ok(Some(bytes))) => bytes,
            other => {
                let last: Vec<(&str, u64)> = events.iter().rev().take(8).map(|(n, id, _)| (n.as_str(), *id)).collect();
                panic!(
                    "the stream stopped ({:?}) after {} events; the last, newest first: {last:?}",
                    other.map(|r| r.map(|_| ())),
                    events.len()
                )
            }
        };
        text.push_str(&String::from_utf8_lossy(&bytes));
        while let Some(end) = text.find("\n\n") {
            let block: String = text.drain(..end + 2).collect();
            let field = |name: &str| block.lines().find_map(|l| l.strip_prefix(name)).map(|v| v.trim().to_string());
            if let (Some(name), Some(id), Some(data)) = (field("event:"), field("id:"), field("data:")) {
                events.push((name, id.parse().expect("numeric id"), data));
            }
        }
    }
    events
}

#[actix_web::test]
async fn a_subscriber_on_one_node_follows_a_session_on_another_live_and_in_order() {
    let Some(cluster) = Cluster::new() else { return };
    let (a, b) = (cluster.node("a"), cluster.node("b"));
    let project = cluster.project(&a, "watched").await;
    let session = a.launch(&project, json!({})).await;
    let id = session["id"].as_str().expect("id").to_string();
    a.wait_status(&id, "idle", Duration::from_secs(30)).await;
    let mut res = b.client.get(b.url(&format!("/api/sessions/{id}/stream"))).send().await.expect("stream");
    assert_eq!(res.status().as_u16(), 200);
    // The subscriber is on B; the turn runs on A.
    let sent = a.post(&format!("/api/sessions/{id}/message"), json!({"content": "seen from b"})).await;
    assert_eq!(sent.status().as_u16(), 202);
    let events = read_sse(&mut res, Duration::from_secs(30), |seen| {
        seen.iter().any(|(name, _, data)| name == "session_status" && data.contains("\"idle\"") && seen.len() > 2)
    })
    .await;
    let ids: Vec<u64> = events.iter().map(|(_, id, _)| *id).collect();
    assert!(ids.windows(2).all(|w| w[0] + 1 == w[1]), "in order, none missing: {ids:?}");
    assert!(events.iter().any(|(_, _, data)| data.contains("seen from b")), "the user turn: {events:?}");
}

#[actix_web::test]
async fn launches_go_to_the_least_loaded_node() {
    let Some(cluster) = Cluster::new() else { return };
    let nodes = [cluster.node("a"), cluster.node("b"), cluster.node("c")];
    wait_cluster(&nodes[0], Duration::from_secs(20), |v| nodes_where(v, "state", "live").len() == 3).await;
    let project = cluster.project(&nodes[0], "spread").await;
    let mut owners = Vec::new();
    for _ in 0..6 {
        // Every launch asks node A; placement sends it where the fewest sessions run.
        let session = nodes[0].launch(&project, json!({})).await;
        owners.push(session["owner_node"].as_str().expect("owner").to_string());
    }
    owners.sort();
    assert_eq!(owners, ["a", "a", "b", "b", "c", "c"], "two each");
    let view = nodes[1].get_json("/api/cluster").await;
    for node in view["nodes"].as_array().expect("nodes") {
        assert_eq!(node["live_sessions"], 2, "{view}");
    }
}

#[actix_web::test]
async fn an_action_on_another_nodes_session_is_forwarded_to_its_owner() {
    let Some(cluster) = Cluster::new() else { return };
    let (a, c) = (cluster.node("a"), cluster.node("c"));
    let project = cluster.project(&c, "forwarded").await;
    let session = a.launch(&project, json!({})).await;
    let id = session["id"].as_str().expect("id").to_string();
    a.wait_status(&id, "idle", Duration::from_secs(30)).await;

    // A message and an interrupt sent to node C reach the session on node A.
    let res = c.post(&format!("/api/sessions/{id}/message"), json!({"content": "via c"})).await;
    assert_eq!(res.status().as_u16(), 202, "{}", res.text().await.unwrap_or_default());
    let row = c.wait_for(&id, Duration::from_secs(30), |r| r["num_turns"] == 1 && r["status"] == "idle").await;
    assert_eq!(row["owner_node"], "a", "{row}");
    let messages = a.get_json(&format!("/api/sessions/{id}/messages")).await;
    assert!(messages.to_string().contains("via c"), "{messages}");
    let (on_a, on_c) = (
        a.post(&format!("/api/sessions/{id}/interrupt"), json!({})).await,
        c.post(&format!("/api/sessions/{id}/interrupt"), json!({})).await,
    );
    assert_eq!(on_c.status(), on_a.status(), "the owner's answer, as if asked there");
    let (a_body, c_body) = (on_a.text().await.unwrap_or_default(), on_c.text().await.unwrap_or_default());
    assert_eq!(c_body, a_body);

    // Closed through C: ended on A (its CLI ends), read the same everywhere.
    let res = c.delete(&format!("/api/sessions/{id}")).await;
    assert!(res.status().is_success(), "{}", res.status());
    a.wait_status(&id, "closed", Duration::from_secs(30)).await;

    // A wrong cluster secret is refused, whatever it asks.
    let res = a
        .client
        .post(a.url(&format!("/api/sessions/{id}/message")))
        .header("x-conduit-cluster-secret", "not-the-cluster-secret")
        .json(&json!({"content": "sneaky"}))
        .send()
        .await
        .expect("request");
    assert_eq!(res.status().as_u16(), 401);
    let body: Value = res.json().await.expect("json");
    assert_eq!(body["error"]["code"], "bad_cluster_secret", "{body}");
}

#[actix_web::test]
async fn fifty_concurrent_launches_with_one_key_on_two_nodes_give_one_session() {
    let Some(cluster) = Cluster::new() else { return };
    let (a, b) = (cluster.node("a"), cluster.node("b"));
    let project = cluster.project(&a, "keyed").await;
    let launches = (0..50).map(|i| {
        let node = if i % 2 == 0 { &a } else { &b };
        let path = format!("/api/projects/{project}/sessions");
        async move {
            let res = node.post(&path, json!({"external_key": "ticket-42"})).await;
            let status = res.status().as_u16();
            let body: Value = res.json().await.expect("json");
            (status, body)
        }
    });
    let answers = futures_util::future::join_all(launches).await;
    let ids: std::collections::BTreeSet<String> =
        answers.iter().filter_map(|(_, body)| body["id"].as_str().map(String::from)).collect();
    assert_eq!(ids.len(), 1, "one session for one key: {answers:?}");
    let created = answers.iter().filter(|(status, _)| *status == 201).count();
    let found = answers.iter().filter(|(status, _)| *status == 200).count();
    assert_eq!((created, found), (1, 49), "{answers:?}");
    let listed = a.get_json(&format!("/api/projects/{project}/sessions")).await;
    let rows = listed["items"].as_array().or_else(|| listed.as_array()).map_or(0, Vec::len);
    assert_eq!(rows, 1, "{listed}");
}

#[actix_web::test]
async fn a_killed_leader_is_replaced_within_the_lease() {
    let Some(cluster) = Cluster::new() else { return };
    let (mut nodes, leader) = three_nodes(&cluster).await;
    let at = ["a", "b", "c"].iter().position(|n| *n == leader).expect("leader index");
    let mut killed = nodes.remove(at);
    killed.crash();
    let killed_at = Instant::now();
    let view = wait_cluster(&nodes[0], Duration::from_secs(20), |v| {
        let leaders = live_leaders(v);
        leaders.len() == 1 && leaders[0] != leader
    })
    .await;
    let took = killed_at.elapsed();
    assert!(took < Duration::from_millis(LEASE_MS + 1000), "a new leader after {took:?}: {view}");
    // The killed node is lost once its lease runs out, and live again when it starts.
    wait_cluster(&nodes[0], Duration::from_millis(LEASE_MS * 3), |v| {
        nodes_where(v, "state", "lost") == [leader.as_str()]
    })
    .await;
    let back = TestService::start_in(killed.into_dir(), cluster.config(&leader));
    wait_cluster(&back, Duration::from_secs(20), |v| nodes_where(v, "state", "live").len() == 3).await;
    let view = back.get_json("/api/cluster").await;
    assert_eq!(live_leaders(&view).len(), 1, "still one leader: {view}");
}

#[actix_web::test]
async fn a_killed_nodes_sessions_are_node_lost_and_resume_elsewhere() {
    let Some(cluster) = Cluster::new() else { return };
    let a = cluster.node("a");
    let mut b = cluster.node("b");
    let project = cluster.project(&a, "lost").await;
    let session = b.launch(&project, json!({"model": "fake-ignore-term"})).await;
    let id = session["id"].as_str().expect("id").to_string();
    b.wait_status(&id, "idle", Duration::from_secs(30)).await;
    // A turn, so the CLI has a conversation to resume.
    let res = b.post(&format!("/api/sessions/{id}/message"), json!({"content": "hello"})).await;
    assert_eq!(res.status().as_u16(), 202);
    let idle = b.wait_for(&id, Duration::from_secs(30), |r| r["num_turns"] == 1 && r["status"] == "idle").await;
    let pid = idle["cli_pid"].as_i64().expect("pid") as i32;
    wait_cluster(&a, Duration::from_secs(20), |v| live_leaders(v).len() == 1).await;

    b.crash();
    let killed_at = Instant::now();
    let row = a.wait_for(&id, Duration::from_secs(20), |r| r["status"] == "error").await;
    let took = killed_at.elapsed();
    assert_eq!(row["closed_reason"], "node_lost", "{row}");
    // A lease, plus at most one renewal period of the leader and a little scheduling.
    assert!(took < Duration::from_millis(LEASE_MS + 1000), "node_lost after {took:?}");
    assert!(alive(pid), "the killed node's CLI runs on until that node starts again");

    // Restarted, the node ends what it left running.
    let b = TestService::start_in(b.into_dir(), cluster.config("b"));
    let gone = gone_within(pid, Duration::from_secs(5)).await;
    if !gone {
        kill_all(&[pid]);
    }
    assert!(gone, "the lost session's CLI {pid} survived its node's restart\n{}", b.log());

    // Resumed on another node, which now owns it.
    let res = a.post(&format!("/api/sessions/{id}/resume"), json!({})).await;
    assert_eq!(res.status().as_u16(), 200, "{}", res.text().await.unwrap_or_default());
    let row = a.wait_status(&id, "idle", Duration::from_secs(30)).await;
    assert_eq!(row["owner_node"], "a", "{row}");
    let res = a.post(&format!("/api/sessions/{id}/message"), json!({"content": "still there?"})).await;
    assert_eq!(res.status().as_u16(), 202);
    a.wait_for(&id, Duration::from_secs(30), |r| r["num_turns"] == 2 && r["status"] == "idle").await;
}

#[actix_web::test]
async fn one_name_per_node_and_no_single_service_beside_a_cluster() {
    let Some(cluster) = Cluster::new() else { return };
    let a = cluster.node("a");
    let refused = |config: ServiceConfig| {
        let dir = tempfile::tempdir().expect("dir");
        let out = command(dir.path(), &config).stdin(std::process::Stdio::null()).output().expect("run");
        (out.status.code(), String::from_utf8_lossy(&out.stderr).to_string())
    };
    let (code, err) = refused(cluster.config("a"));
    assert_eq!(code, Some(1), "{err}");
    assert!(err.contains("a node named \"a\" is already running"), "{err}");
    let single = ServiceConfig::new(fake_cli()).env("CONDUIT_DATABASE_URL", &cluster.url);
    let (code, err) = refused(single);
    assert_eq!(code, Some(1), "{err}");
    assert!(err.contains("already using the PostgreSQL database"), "{err}");
    assert!(a.get_json("/api/health").await["cluster"]["node"] == "a");
}

/// A bad cluster setting stops startup in one line naming the key (no database needed).
#[test]
fn cluster_settings_are_checked_at_startup() {
    let pg = "postgres://conduit:pw@127.0.0.1:1/conduit";
    let run = |env: &[(&str, &str)]| {
        let dir = tempfile::tempdir().expect("dir");
        let mut config = ServiceConfig::new(fake_cli()).env("CONDUIT_CLUSTER", "1");
        for (k, v) in env {
            config = config.env(k, v);
        }
        let out = command(dir.path(), &config).stdin(std::process::Stdio::null()).output().expect("run");
        (out.status.code(), String::from_utf8_lossy(&out.stderr).to_string())
    };
    let sqlite = run(&[("CONDUIT_DATABASE_URL", "")]);
    assert!(sqlite.0 == Some(2) && sqlite.1.contains("cluster") && sqlite.1.contains("PostgreSQL"), "{sqlite:?}");
    let no_address = run(&[("CONDUIT_DATABASE_URL", pg), ("CONDUIT_CLUSTER_SECRET", SECRET)]);
    assert!(no_address.0 == Some(2) && no_address.1.contains("node_address"), "{no_address:?}");
    let short = run(&[
        ("CONDUIT_DATABASE_URL", pg),
        ("CONDUIT_NODE_ADDRESS", "http://10.0.0.5:3100"),
        ("CONDUIT_CLUSTER_SECRET", "short"),
    ]);
    assert!(short.0 == Some(2) && short.1.contains("cluster_secret") && !short.1.contains("short\""), "{short:?}");
    let name = run(&[("CONDUIT_DATABASE_URL", pg), ("CONDUIT_NODE_NAME", "no spaces please")]);
    assert!(name.0 == Some(2) && name.1.contains("node_name"), "{name:?}");
    let flag = run(&[("CONDUIT_CLUSTER", "maybe")]);
    assert!(flag.0 == Some(2) && flag.1.contains("expected true or false"), "{flag:?}");
}

#[actix_web::test]
async fn the_leader_alone_fires_schedules_and_a_new_leader_carries_on() {
    let Some(cluster) = Cluster::new() else { return };
    let (mut nodes, leader) = three_nodes(&cluster).await;
    let project = cluster.project(&nodes[0], "ticking").await;
    let body = json!({"name": "ticker", "objective": "tick", "schedule": "* * * * * *", "project_id": project});
    let res = nodes[0].post("/api/agents", body).await;
    assert_eq!(res.status().as_u16(), 201);
    let agent: Value = res.json().await.expect("json");
    let path = format!("/api/agents/{}/executions", agent["id"].as_str().expect("id"));
    tokio::time::sleep(Duration::from_millis(3500)).await;
    let runs = nodes[0].get_json(&path).await;
    let owners: Vec<&str> = runs.as_array().expect("runs").iter().filter_map(|r| r["owner_node"].as_str()).collect();
    assert!(owners.len() >= 2, "a fire a second: {runs}");
    assert!(owners.iter().all(|o| *o == leader), "only the leader ({leader}) fires: {runs}");

    let at = ["a", "b", "c"].iter().position(|n| *n == leader).expect("leader index");
    let mut killed = nodes.remove(at);
    killed.crash();
    let killed_at = Instant::now();
    let deadline = killed_at + Duration::from_secs(20);
    let took = loop {
        let runs = nodes[0].get_json(&path).await;
        let carried =
            runs.as_array().expect("runs").iter().any(|r| r["owner_node"].as_str().is_some_and(|o| o != leader));
        if carried {
            break killed_at.elapsed();
        }
        assert!(Instant::now() < deadline, "no fire after the leader died: {runs}");
        tokio::time::sleep(Duration::from_millis(50)).await;
    };
    assert!(took < Duration::from_millis(LEASE_MS + 1000), "the schedule carried on after {took:?}");
    tokio::time::sleep(Duration::from_secs(2)).await;
    let runs = nodes[0].get_json(&path).await;
    let fires: Vec<&str> = runs.as_array().expect("runs").iter().filter_map(|r| r["fire_at"].as_str()).collect();
    let distinct: std::collections::BTreeSet<&&str> = fires.iter().collect();
    assert_eq!(distinct.len(), fires.len(), "no fire ran twice: {runs}");
    drop(killed);
}

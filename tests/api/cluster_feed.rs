//! Cluster mode: each node's live feed of its own session events (`GET /api/cluster/feed`),
//! which the other nodes relay ahead of the commit, and the read-back from the store beside
//! it: a follower on another node gets every event once and in order, whichever way it came.
//! PostgreSQL pass only.

use std::time::Duration;

use serde_json::{json, Value};

use super::cluster::{read_sse, Cluster, SECRET};
use crate::support::service::TestService;

const SECRET_HEADER: &str = "x-conduit-cluster-secret";

/// A session launched on `node` itself (a request with the secret is answered where it is
/// asked), idle, running `model`.
async fn session_on(node: &TestService, project: &str, model: &str) -> String {
    let body = if model.is_empty() { json!({}) } else { json!({ "model": model }) };
    let res = node
        .client
        .post(node.url(&format!("/api/projects/{project}/sessions")))
        .header(SECRET_HEADER, SECRET)
        .json(&body)
        .send()
        .await
        .expect("launch");
    assert_eq!(res.status().as_u16(), 201, "launch");
    let session: Value = res.json().await.expect("json");
    let id = session["id"].as_str().expect("id").to_string();
    node.wait_status(&id, "idle", Duration::from_secs(30)).await;
    id
}

#[actix_web::test]
async fn the_node_feed_is_for_nodes_only_and_carries_its_sessions_events_in_order() {
    let Some(cluster) = Cluster::new() else { return };
    let a = cluster.node("a");
    let project = cluster.project(&a, "fed").await;
    let id = session_on(&a, &project, "").await;

    let asked = a.get("/api/cluster/feed").await;
    assert_eq!(asked.status().as_u16(), 403, "a client, not a node");
    let body: Value = asked.json().await.expect("json");
    assert_eq!(body["error"]["code"], "peers_only", "{body}");
    let wrong = a.client.get(a.url("/api/cluster/feed")).header(SECRET_HEADER, "not-it").send().await.expect("feed");
    assert_eq!(wrong.status().as_u16(), 401);

    let mut feed = a.client.get(a.url("/api/cluster/feed")).header(SECRET_HEADER, SECRET).send().await.expect("feed");
    assert_eq!(feed.status().as_u16(), 200);
    assert_eq!(feed.headers()["content-type"], "application/x-ndjson");
    let sent = a.post(&format!("/api/sessions/{id}/message"), json!({"content": "fed to peers"})).await;
    assert_eq!(sent.status().as_u16(), 202);
    let (mut text, mut numbers) = (String::new(), Vec::new());
    let deadline = tokio::time::Instant::now() + Duration::from_secs(30);
    while !text.contains("\"idle\"") {
        let chunk = tokio::time::timeout_at(deadline, feed.chunk()).await;
        let Ok(Ok(Some(bytes))) = chunk else { panic!("the feed stopped; read {text}") };
        text.push_str(&String::from_utf8_lossy(&bytes));
    }
    for line in text.lines().filter(|l| !l.is_empty()) {
        let frame: Value = serde_json::from_str(line).expect("a line is one JSON frame");
        assert_eq!(frame["session_id"], id.as_str(), "only sessions' events: {line}");
        numbers.push(frame["session_seq"].as_u64().expect("numbered in its session"));
    }
    assert!(numbers.windows(2).all(|w| w[0] + 1 == w[1]), "in order, none missing: {numbers:?}");
    assert!(text.contains("fed to peers"), "the user turn: {text}");
}

/// A burst of 400 events from A, followed on B by a session's subscriber and by a follower of
/// everything (who also makes B read each stored range back): both get each event once, in
/// the session's order, as the owner numbered it.
#[actix_web::test]
async fn followers_on_another_node_get_each_event_once_and_in_order_whichever_way_it_came() {
    let Some(cluster) = Cluster::new() else { return };
    let (a, b) = (cluster.node("a"), cluster.node("b"));
    let project = cluster.project(&a, "burst").await;
    let id = session_on(&a, &project, "fake-rate-400-400").await;
    let mut session = b.client.get(b.url(&format!("/api/sessions/{id}/stream"))).send().await.expect("stream");
    let mut everything = b.client.get(b.url("/api/events/stream")).send().await.expect("stream");
    assert_eq!((session.status().as_u16(), everything.status().as_u16()), (200, 200));
    // B reads A's feed once someone follows: give it the moment to connect, so both ways run.
    tokio::time::sleep(Duration::from_millis(1500)).await;
    let sent = a.post(&format!("/api/sessions/{id}/message"), json!({"content": "burst"})).await;
    assert_eq!(sent.status().as_u16(), 202);
    let own = read_sse(&mut session, Duration::from_secs(60), turn_over).await;
    let ids: Vec<u64> = own.iter().map(|(_, id, _)| *id).collect();
    assert_eq!(first_break(&ids, |a, b| a + 1 == b), None, "in order, none missing nor twice ({} events)", ids.len());
    assert!(ids.len() > 400, "the whole burst: {}", ids.len());
    let all = read_sse(&mut everything, Duration::from_secs(60), turn_over).await;
    let numbers: Vec<u64> = all
        .iter()
        .filter_map(|(_, _, data)| {
            let frame: Value = serde_json::from_str(data).ok()?;
            (frame["session_id"] == id.as_str()).then(|| frame["session_seq"].as_u64()).flatten()
        })
        .collect();
    assert_eq!(first_break(&numbers, |a, b| a < b), None, "each once, in order ({} events)", numbers.len());
    let same_span: Vec<u64> = numbers.iter().copied().filter(|n| ids.contains(n)).collect();
    let missing: Vec<u64> = ids.iter().copied().filter(|n| !same_span.contains(n)).collect();
    assert_eq!(
        (same_span.len(), &missing[..missing.len().min(20)]),
        (ids.len(), &[][..]),
        "the follower of everything got what the session's follower got ({}..={} there)",
        ids[0],
        ids[ids.len() - 1]
    );
}

/// Where `ok` first fails between neighbours of `numbers`: the pair, with a few around it
/// (a failure message that fits in a CI log's tail, unlike the whole list).
fn first_break(numbers: &[u64], ok: impl Fn(u64, u64) -> bool) -> Option<(usize, Vec<u64>)> {
    let at = numbers.windows(2).position(|w| !ok(w[0], w[1]))?;
    Some((at, numbers[at.saturating_sub(3)..(at + 5).min(numbers.len())].to_vec()))
}

/// The turn sent ("burst") has been seen, and then the session idle again.
fn turn_over(seen: &[(String, u64, String)]) -> bool {
    let Some(sent) = seen.iter().position(|(_, _, data)| data.contains("burst")) else { return false };
    seen[sent..].iter().any(|(name, _, data)| name == "session_status" && data.contains("\"idle\""))
}

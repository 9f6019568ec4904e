//! Cluster mode: what every node-to-node request shares. One HTTP client (built at startup,
//! `AppState::peers`), the cluster secret and this node's name on each request, the live peers
//! from `nodes`, and a fan-out that asks several nodes at once and says which could not be
//! reached (see [`super::forward`] for forwarding, [`super::terminals_across`] and
//! [`super::processes::across`] for fan-outs).

use std::time::Duration;

use actix_web::http::header::HeaderMap;
use futures_util::future::join_all;
use serde_json::Value;

use crate::config::ClusterSettings;
use crate::db::nodes::{self, Node};
use crate::domain::cluster::NodeState;
use crate::error::AppError;
use crate::http::AppState;

pub use crate::config::{FORWARDED_BY, SECRET_HEADER};
/// How long a fan-out waits for one node: its parts answer at once (a kill only signals; the
/// grace runs on afterwards), so a node slower than this is as good as unreachable.
const FAN_OUT_WAIT: Duration = Duration::from_secs(10);

/// Whether a request comes from another node (the guard has checked its secret): such a
/// request is answered here, never forwarded nor fanned out again.
pub(super) fn from_peer(headers: &HeaderMap) -> bool {
    headers.contains_key(SECRET_HEADER)
}

/// A request to the node at `address`, with the secret and this node's name, sent with the
/// client built at startup (public roots and `cluster_ca`; see [`crate::peer_tls`]).
pub(super) fn request(
    state: &AppState,
    cluster: &ClusterSettings,
    method: reqwest::Method,
    address: &str,
    path: &str,
) -> reqwest::RequestBuilder {
    state
        .peers
        .http
        .request(method, format!("{address}{path}"))
        .header(SECRET_HEADER, &cluster.secret)
        .header(FORWARDED_BY, &cluster.node)
}

/// An error with its causes ("error sending request" alone says nothing).
pub(super) fn error_chain(e: &dyn std::error::Error) -> String {
    let mut text = e.to_string();
    let mut source = e.source();
    while let Some(cause) = source {
        text.push_str(": ");
        text.push_str(&cause.to_string());
        source = cause.source();
    }
    text
}

/// The live nodes other than this one (none outside cluster mode).
pub(super) async fn live_peers(state: &AppState) -> Result<Vec<Node>, AppError> {
    let Some(me) = state.settings.cluster.as_ref().map(|c| c.node.clone()) else { return Ok(Vec::new()) };
    let rows = state.store.run(nodes::list).await?;
    Ok(rows.into_iter().filter(|n| n.state == NodeState::Live && n.name != me).collect())
}

/// One node's part of a fan-out: its JSON answer, or why there is none.
pub(super) type Part = (String, Result<Value, String>);

/// Sends `method path` (with `body` as JSON) to each node at once and waits for all. A node
/// that could not be reached, did not answer within [`FAN_OUT_WAIT`], or answered anything
/// but a 2xx with JSON is an `Err` with the reason: callers report it, never skip it.
pub(super) async fn fan_out(
    state: &AppState,
    targets: &[Node],
    method: reqwest::Method,
    path: &str,
    body: Option<&Value>,
) -> Vec<Part> {
    let Some(cluster) = state.settings.cluster.as_ref() else { return Vec::new() };
    let asks = targets.iter().map(|node| {
        let mut outgoing = request(state, cluster, method.clone(), &node.address, path).timeout(FAN_OUT_WAIT);
        if let Some(body) = body {
            outgoing = outgoing.header(reqwest::header::CONTENT_TYPE, "application/json").body(body.to_string());
        }
        async move { (node.name.clone(), answer_of(outgoing).await) }
    });
    let parts = join_all(asks).await;
    for (node, part) in &parts {
        if let Err(why) = part {
            tracing::warn!(node = %node, error = %why, path, "cluster: a node did not answer its part");
        }
    }
    parts
}

async fn answer_of(outgoing: reqwest::RequestBuilder) -> Result<Value, String> {
    let answer = outgoing.send().await.map_err(|e| error_chain(&e.without_url()))?;
    let status = answer.status();
    let body = answer.bytes().await.map_err(|e| error_chain(&e.without_url()))?;
    let json: Option<Value> = serde_json::from_slice(&body).ok();
    if !status.is_success() {
        let said = json.as_ref().and_then(|v| v["error"]["message"].as_str()).unwrap_or("no error message");
        return Err(format!("it answered {status}: {said}"));
    }
    json.ok_or_else(|| format!("it answered {status} without JSON"))
}

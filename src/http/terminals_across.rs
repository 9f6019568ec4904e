//! Cluster mode: terminals through any node. A terminal is a PTY in the memory of the node that
//! started it, so a request about one goes to that node (see [`super::forward`]).
//!
//! Its node is found by asking: this node's registry first, then every live peer at once
//! (`GET /api/terminals/{id}` with the cluster secret, answered from the peer's own registry).
//! No table records it: a terminal lives and dies with its node's memory, so a row would be
//! wrong after every crash and would need its own cleanup, while asking is always true and
//! costs one small request per peer, only for a terminal this node does not run.

use std::time::Duration;

use actix_web::http::StatusCode;
use futures_util::stream::{FuturesUnordered, StreamExt};
use serde_json::Value;

use super::peers;
use crate::actors::terminal::FindTerminal;
use crate::config::ClusterSettings;
use crate::db::nodes::Node;
use crate::domain::ids::TerminalId;
use crate::error::AppError;
use crate::http::AppState;

/// How long a peer may take to say whether it runs a terminal.
const LOOKUP_WAIT: Duration = Duration::from_secs(3);
/// Names the nodes whose terminals a merged list lacks because they could not be reached.
pub const UNREACHABLE_HEADER: &str = "x-conduit-unreachable-nodes";

/// The node running terminal `id` when it is a live peer: `None` when this node answers (it
/// runs the terminal, or no node does and this node says 404). A 503 `owner_unreachable` when
/// no node that answered runs it and some could not be asked: it may run on one of those.
pub(super) async fn owner(state: &AppState, id: &TerminalId) -> Result<Option<(String, String)>, AppError> {
    let Some(cluster) = state.settings.cluster.as_ref() else { return Ok(None) };
    let here = state.terminals.send(FindTerminal(id.clone())).await;
    if here.map_err(|e| AppError::internal(format!("the terminal registry is unavailable: {e}")))?.is_some() {
        return Ok(None);
    }
    let peers = peers::live_peers(state).await?;
    let path = format!("/api/terminals/{id}");
    let mut asks: FuturesUnordered<_> = peers
        .iter()
        .map(|node| {
            let path = &path;
            async move { (node, runs(state, cluster, node, path).await) }
        })
        .collect();
    let mut unasked = Vec::new();
    while let Some((node, runs)) = asks.next().await {
        match runs {
            Ok(true) => return Ok(Some((node.name.clone(), node.address.clone()))),
            Ok(false) => {}
            Err(why) => unasked.push(format!("{}: {why}", node.name)),
        }
    }
    if unasked.is_empty() {
        return Ok(None);
    }
    Err(AppError::unavailable(
        "owner_unreachable",
        format!(
            "no node that answered runs terminal {id}; it may run on one that could not be asked ({}); try again",
            unasked.join("; ")
        ),
    ))
}

/// Whether `node` runs the terminal at `path`.
async fn runs(state: &AppState, cluster: &ClusterSettings, node: &Node, path: &str) -> Result<bool, String> {
    let asked =
        peers::request(state, cluster, reqwest::Method::GET, &node.address, path).timeout(LOOKUP_WAIT).send().await;
    let answer = asked.map_err(|e| peers::error_chain(&e.without_url()))?;
    match StatusCode::from_u16(answer.status().as_u16()) {
        Ok(StatusCode::OK) => Ok(true),
        Ok(StatusCode::NOT_FOUND) => Ok(false),
        _ => Err(format!("it answered {}", answer.status())),
    }
}

/// Every live node's terminals (the filters of `query` applied by each), with this node's
/// `here`, oldest first; and the nodes that could not be asked.
pub(super) async fn everywhere(
    state: &AppState,
    query: &str,
    here: Vec<Value>,
) -> Result<(Vec<Value>, Vec<String>), AppError> {
    let peers = peers::live_peers(state).await?;
    let path = if query.is_empty() { "/api/terminals".to_string() } else { format!("/api/terminals?{query}") };
    let mut views = here;
    let mut unreachable = Vec::new();
    for (node, part) in peers::fan_out(state, &peers, reqwest::Method::GET, &path, None).await {
        match part {
            Ok(Value::Array(theirs)) => views.extend(theirs),
            Ok(_) | Err(_) => unreachable.push(node),
        }
    }
    views.sort_by(|a, b| a["started_at"].as_str().cmp(&b["started_at"].as_str()));
    Ok((views, unreachable))
}

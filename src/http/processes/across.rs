//! Cluster mode: a project's `kill-all` and `cleanup` act on every node. A project folder's
//! background processes run on whichever node was asked to start them (`owner_node`), and only
//! that node can signal them or remove their logs from its disk. So the node asked acts on its
//! own, then asks each other node that the database says runs (kill-all) or ran (cleanup) some
//! of them to do the same, at once, with the cluster secret; a node so asked acts on its own
//! and asks no one. The answers are added up into one, which names every node that could not
//! be reached (not live, or no answer): their processes were left as they were.

use serde::{Deserialize, Serialize};
use serde_json::Value;
use utoipa::ToSchema;

use crate::db::{nodes, processes};
use crate::domain::cluster::NodeState;
use crate::domain::ids::ProjectId;
use crate::error::AppResult;
use crate::http::{peers, AppState};

/// What a project-wide action did on each node.
#[derive(Debug, Serialize, Deserialize, ToSchema)]
pub struct Spread {
    /// How many processes it concerned, on every node that answered.
    pub count: usize,
    /// Each node's part: this node first, then the others that own processes of the project
    /// (cluster mode; empty on a single service).
    pub nodes: Vec<NodePart>,
    /// The nodes that own processes of the project but could not be reached: theirs were not
    /// touched; ask again when they are live. Empty when every node answered.
    pub unreachable: Vec<Unreached>,
}

#[derive(Debug, Serialize, Deserialize, ToSchema)]
pub struct NodePart {
    pub node: String,
    /// How many processes it concerned on this node.
    pub count: usize,
}

#[derive(Debug, Serialize, Deserialize, ToSchema)]
pub struct Unreached {
    pub node: String,
    /// Why: not live, no answer, or an error it answered.
    pub reason: String,
}

/// The action, as the other nodes are asked for it.
pub enum Act {
    /// Its running processes, with the request as the caller gave it.
    KillAll(Value),
    /// Its ended processes.
    Cleanup,
}

/// `here` (what this node did) and, unless `from_peer`, what every other node owning processes
/// of `project` did when asked the same.
pub async fn spread(
    state: &AppState,
    project: &ProjectId,
    act: Act,
    here: usize,
    from_peer: bool,
) -> AppResult<Spread> {
    let Some(me) = state.settings.cluster.as_ref().map(|c| c.node.clone()) else {
        return Ok(Spread { count: here, nodes: Vec::new(), unreachable: Vec::new() });
    };
    let mut spread =
        Spread { count: here, nodes: vec![NodePart { node: me.clone(), count: here }], unreachable: Vec::new() };
    if from_peer {
        return Ok(spread);
    }
    let (running, path, body) = match act {
        Act::KillAll(body) => (true, format!("/api/projects/{project}/processes/kill-all"), Some(body)),
        Act::Cleanup => (false, format!("/api/projects/{project}/processes/cleanup"), None),
    };
    let lookup = project.clone();
    let owners = state
        .store
        .run(move |conn| {
            let names = processes::nodes_of(conn, &lookup, running)?;
            let others = names.into_iter().filter(|name| *name != me);
            others.map(|name| Ok((nodes::find(conn, &name)?, name))).collect::<Result<Vec<_>, _>>()
        })
        .await?;
    let mut targets = Vec::new();
    for (row, name) in owners {
        match row {
            Some(node) if node.state == NodeState::Live => targets.push(node),
            Some(node) => spread.unreachable.push(Unreached { node: name, reason: format!("it is {}", node.state) }),
            None => spread.unreachable.push(Unreached { node: name, reason: "it is not in the cluster".into() }),
        }
    }
    for (node, part) in peers::fan_out(state, &targets, reqwest::Method::POST, &path, body.as_ref()).await {
        match part.map(|answer| answer["count"].as_u64()) {
            Ok(Some(count)) => {
                let count = usize::try_from(count).unwrap_or(usize::MAX);
                spread.count = spread.count.saturating_add(count);
                spread.nodes.push(NodePart { node, count });
            }
            Ok(None) => spread.unreachable.push(Unreached { node, reason: "it answered without a count".into() }),
            Err(reason) => spread.unreachable.push(Unreached { node, reason }),
        }
    }
    Ok(spread)
}

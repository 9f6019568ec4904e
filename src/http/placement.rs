//! Cluster mode: where a new or resumed session runs. The least-loaded live node (live sessions
//! over capacity) among those the project names in `nodes` (every node when it names none),
//! this node on a tie. A node whose lease has run out is not a candidate.

use crate::db::nodes::{self, Loads, Node};
use crate::db::{projects, sessions};
use crate::domain::cluster::{NodeList, NodeState};
use crate::domain::ids::{ProjectId, SessionId};
use crate::domain::time;
use crate::error::AppError;
use crate::http::AppState;

/// What is being placed.
pub(super) enum Placing {
    Launch(ProjectId),
    Resume(SessionId),
}

/// The node to send the request to: `None` when this node takes it (it is the best, or the
/// project or session is unknown and this node answers the 404). A 503 `no_node_for_project`
/// when the project names nodes and none of them is live.
pub(super) async fn place(state: &AppState, placing: Placing) -> Result<Option<(String, String)>, AppError> {
    let Some(me) = state.settings.cluster.as_ref().map(|c| c.node.clone()) else { return Ok(None) };
    let found = state
        .store
        .run(move |conn| {
            let project = match placing {
                Placing::Launch(id) => Some(id),
                Placing::Resume(id) => sessions::find(conn, &id)?.map(|s| s.project_id),
            };
            let Some(project) = project.map(|id| projects::find(conn, &id)).transpose()?.flatten() else {
                return Ok(None);
            };
            Ok(Some((project.nodes, nodes::list(conn)?, Loads::read(conn)?)))
        })
        .await?;
    let Some((allowed, rows, loads)) = found else { return Ok(None) };
    match best(&rows, &loads, &allowed, &me, &time::now()) {
        Some(node) if node.name == me => Ok(None),
        Some(node) => Ok(Some((node.name.clone(), node.address.clone()))),
        None if allowed.names().is_empty() => Ok(None),
        None => Err(AppError::unavailable(
            "no_node_for_project",
            format!("none of the project's nodes ({}) is live; try again when one is", allowed.names().join(", ")),
        )),
    }
}

/// The least-loaded candidate: live, lease running, some capacity, admitted by the project;
/// `me` first on a tie, then by name.
fn best<'a>(rows: &'a [Node], loads: &Loads, allowed: &NodeList, me: &str, now: &str) -> Option<&'a Node> {
    rows.iter()
        .filter(|n| n.state == NodeState::Live && n.lease_until.as_str() >= now && n.capacity > 0)
        .filter(|n| allowed.admits(&n.name))
        .map(|n| (loads.load(n), n.name != me, n))
        .min_by(|a, b| a.0.total_cmp(&b.0).then(a.1.cmp(&b.1)).then(a.2.name.cmp(&b.2.name)))
        .map(|(_, _, n)| n)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::domain::cluster::NodeRole;

    fn node(name: &str, capacity: i32, state: NodeState, lease_until: &str) -> Node {
        Node {
            name: name.into(),
            address: format!("http://{name}"),
            capacity,
            state,
            role: NodeRole::Follower,
            live_sessions: 0,
            started_at: String::new(),
            heartbeat_at: String::new(),
            lease_until: lease_until.into(),
        }
    }

    #[test]
    fn the_least_loaded_admitted_live_node_wins_and_this_one_on_a_tie() {
        let later = "2030-01-01T00:00:00Z";
        let rows = vec![
            node("a", 10, NodeState::Live, later),
            node("b", 10, NodeState::Live, later),
            node("c", 10, NodeState::Lost, later),
            node("d", 10, NodeState::Live, "2000-01-01T00:00:00Z"),
            node("e", 0, NodeState::Live, later),
        ];
        let now = "2026-01-01T00:00:00Z";
        let none = Loads::default();
        let every = NodeList::default();
        assert_eq!(best(&rows, &none, &every, "b", now).map(|n| n.name.as_str()), Some("b"), "a tie: this node");
        assert_eq!(
            best(&rows, &none, &every, "x", now).map(|n| n.name.as_str()),
            Some("a"),
            "a tie elsewhere: by name"
        );
        let only_b_d = NodeList::parse(&["b".into(), "d".into(), "c".into()]).expect("names");
        assert_eq!(best(&rows, &none, &only_b_d, "a", now).map(|n| n.name.as_str()), Some("b"));
        let only_dead = NodeList::parse(&["c".into(), "d".into(), "e".into()]).expect("names");
        assert!(best(&rows, &none, &only_dead, "a", now).is_none(), "lost, expired and no capacity are out");
    }
}

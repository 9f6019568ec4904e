//! A cluster node as it is stored and shown: whether it is up, and its role.

use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

/// `live` while its lease is renewed; `left` after a clean shutdown; `lost` once its lease ran
/// out (its sessions ended with `node_lost`). A lost or left node that starts again is live.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum NodeState {
    Live,
    Left,
    Lost,
}

text_enum!(NodeState, "node state", {
    Live => "live",
    Left => "left",
    Lost => "lost",
});

/// The leader runs the cluster's own duties (the cron scheduler, finding lost nodes); every
/// node runs its own sessions and janitor.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum NodeRole {
    Leader,
    Follower,
}

text_enum!(NodeRole, "node role", {
    Leader => "leader",
    Follower => "follower",
});

/// The most nodes a project may name.
pub const MAX_PROJECT_NODES: usize = 64;

/// 1-63 letters, digits, `.`, `_` or `-`: a node's name (`node_name`).
pub fn valid_node_name(name: &str) -> bool {
    (1..=63).contains(&name.len()) && name.bytes().all(|b| b.is_ascii_alphanumeric() || b"._-".contains(&b))
}

/// The nodes that have a project's folder, where its sessions are placed (cluster mode); empty:
/// every node. Stored as one text, one name a line (a name has no line breaks).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct NodeList {
    names: Vec<String>,
    stored: String,
}

impl NodeList {
    /// Checks every name (at most [`MAX_PROJECT_NODES`]); repeats are dropped, order kept.
    pub fn parse(raw: &[String]) -> Result<NodeList, String> {
        if raw.len() > MAX_PROJECT_NODES {
            return Err(format!("`nodes` holds at most {MAX_PROJECT_NODES} names (got {})", raw.len()));
        }
        let mut names: Vec<String> = Vec::with_capacity(raw.len());
        for name in raw {
            if !valid_node_name(name) {
                return Err(format!(
                    "`nodes` entry {name:?} is not a node name (1-63 letters, digits, '.', '_' or '-')"
                ));
            }
            if !names.contains(name) {
                names.push(name.clone());
            }
        }
        let stored = names.join("\n");
        Ok(NodeList { names, stored })
    }

    /// The list as stored (trusted: it was checked before it was stored).
    pub fn from_stored(stored: String) -> NodeList {
        let names = stored.lines().filter(|l| !l.is_empty()).map(String::from).collect();
        NodeList { names, stored }
    }

    /// Whether a session of the project may run on `node`.
    pub fn admits(&self, node: &str) -> bool {
        self.names.is_empty() || self.names.iter().any(|n| n == node)
    }

    pub fn names(&self) -> &[String] {
        &self.names
    }

    pub fn as_str(&self) -> &str {
        &self.stored
    }
}

impl Serialize for NodeList {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        self.names.serialize(serializer)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::domain::check_text_enum;

    #[test]
    fn node_lists_are_checked_and_round_trip() {
        let list = NodeList::parse(&["a".into(), "b-2".into(), "a".into()]).expect("valid");
        assert_eq!(list.names(), ["a", "b-2"]);
        assert_eq!(NodeList::from_stored(list.as_str().to_string()), list);
        assert!(list.admits("b-2") && !list.admits("c"));
        assert!(NodeList::default().admits("anything"), "empty: every node");
        assert!(NodeList::parse(&["bad name".into()]).is_err());
        assert!(NodeList::parse(&["x\ny".into()]).is_err());
        assert!(NodeList::parse(&vec!["n".to_string(); MAX_PROJECT_NODES + 1]).is_err());
    }

    #[test]
    fn node_states_and_roles_round_trip_as_text() {
        check_text_enum(NodeState::ALL, &["live", "left", "lost"]);
        check_text_enum(NodeRole::ALL, &["leader", "follower"]);
    }
}

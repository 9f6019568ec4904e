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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::domain::check_text_enum;

    #[test]
    fn node_states_and_roles_round_trip_as_text() {
        check_text_enum(NodeState::ALL, &["live", "left", "lost"]);
        check_text_enum(NodeRole::ALL, &["leader", "follower"]);
    }
}

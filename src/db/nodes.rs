//! Queries on `nodes`: cluster membership. A node joins (its row, live), renews its lease every
//! few seconds, and leaves at a clean shutdown; the leader declares a node whose lease ran out
//! lost, and ends its live sessions with `node_lost` in the same transaction.

use diesel::prelude::*;
use serde::Serialize;
use utoipa::ToSchema;

use super::schema::{nodes, sessions};
use super::{DbConnection, StoreError};
use crate::domain::cluster::{NodeRole, NodeState};
use crate::domain::ids::SessionId;
use crate::domain::session::{ClosedReason, SessionStatus};

/// A node of the cluster as stored.
#[derive(Debug, Clone, PartialEq, Queryable, Selectable, Insertable, Serialize, ToSchema)]
#[diesel(table_name = nodes)]
pub struct Node {
    pub name: String,
    /// The URL the other nodes reach it at.
    pub address: String,
    /// How many live sessions it takes (its `max_sessions_global`).
    pub capacity: i32,
    pub state: NodeState,
    pub role: NodeRole,
    /// Its live sessions at its last renewal.
    pub live_sessions: i32,
    pub started_at: String,
    pub heartbeat_at: String,
    /// Past this time, without a renewal, the node is lost.
    pub lease_until: String,
}

/// Writes `node` as it starts: live, whatever it was before (a node that was lost or left
/// comes back under its name).
pub fn join(conn: &mut DbConnection, node: &Node) -> Result<(), StoreError> {
    conn.write_transaction(|conn| {
        let updated = diesel::update(nodes::table.find(&node.name))
            .set((
                nodes::address.eq(&node.address),
                nodes::capacity.eq(node.capacity),
                nodes::state.eq(node.state),
                nodes::role.eq(node.role),
                nodes::live_sessions.eq(node.live_sessions),
                nodes::started_at.eq(&node.started_at),
                nodes::heartbeat_at.eq(&node.heartbeat_at),
                nodes::lease_until.eq(&node.lease_until),
            ))
            .execute(conn)?;
        if updated == 0 {
            diesel::insert_into(nodes::table).values(node).execute(conn)?;
        }
        Ok::<_, diesel::result::Error>(())
    })?;
    Ok(())
}

/// What a node says at each renewal.
#[derive(Debug, Clone)]
pub struct Renewal {
    pub role: NodeRole,
    pub live_sessions: i32,
    pub heartbeat_at: String,
    pub lease_until: String,
}

/// Renews `name`'s lease. False when the node is no longer live in the table: the leader
/// declared it lost while it could not renew (its sessions have ended with `node_lost`).
pub fn renew(conn: &mut DbConnection, name: &str, renewal: &Renewal) -> Result<bool, StoreError> {
    let updated = diesel::update(nodes::table.find(name).filter(nodes::state.eq(NodeState::Live)))
        .set((
            nodes::role.eq(renewal.role),
            nodes::live_sessions.eq(renewal.live_sessions),
            nodes::heartbeat_at.eq(&renewal.heartbeat_at),
            nodes::lease_until.eq(&renewal.lease_until),
        ))
        .execute(conn)?;
    Ok(updated == 1)
}

/// A clean shutdown: the node is `left`, no longer a candidate for anything.
pub fn leave(conn: &mut DbConnection, name: &str, now: &str) -> Result<(), StoreError> {
    diesel::update(nodes::table.find(name))
        .set((
            nodes::state.eq(NodeState::Left),
            nodes::role.eq(NodeRole::Follower),
            nodes::live_sessions.eq(0),
            nodes::heartbeat_at.eq(now),
        ))
        .execute(conn)?;
    Ok(())
}

pub fn list(conn: &mut DbConnection) -> Result<Vec<Node>, StoreError> {
    Ok(nodes::table.order(nodes::name.asc()).select(Node::as_select()).load(conn)?)
}

/// Live nodes whose lease ran out before `now`.
pub fn expired(conn: &mut DbConnection, now: &str) -> Result<Vec<String>, StoreError> {
    Ok(nodes::table
        .filter(nodes::state.eq(NodeState::Live))
        .filter(nodes::lease_until.lt(now))
        .select(nodes::name)
        .load(conn)?)
}

/// Declares `name` lost if its lease has still run out (it may have renewed since it was
/// listed), and ends its live sessions with `node_lost`. Returns those sessions; empty when
/// the node renewed in between.
pub fn declare_lost(conn: &mut DbConnection, name: &str, now: &str) -> Result<Vec<SessionId>, StoreError> {
    conn.write_transaction(|conn| {
        let lost = diesel::update(
            nodes::table.find(name).filter(nodes::state.eq(NodeState::Live)).filter(nodes::lease_until.lt(now)),
        )
        .set((nodes::state.eq(NodeState::Lost), nodes::role.eq(NodeRole::Follower), nodes::live_sessions.eq(0)))
        .execute(conn)?;
        if lost == 0 {
            return Ok(Vec::new());
        }
        let owned =
            sessions::table.filter(sessions::owner_node.eq(name)).filter(sessions::status.eq_any(SessionStatus::LIVE));
        let ids: Vec<SessionId> = owned.clone().select(sessions::id).load(conn)?;
        diesel::update(owned)
            .set((
                sessions::status.eq(SessionStatus::Error),
                sessions::error_message.eq(format!("node {name} was lost")),
                sessions::closed_at.eq(now),
                sessions::closed_reason.eq(ClosedReason::NodeLost),
            ))
            .execute(conn)?;
        Ok::<_, diesel::result::Error>(ids)
    })
    .map_err(StoreError::from)
}

/// The node's row as it was, to learn when it last started (before [`join`] rewrites it).
pub fn find(conn: &mut DbConnection, name: &str) -> Result<Option<Node>, StoreError> {
    Ok(nodes::table.find(name).select(Node::as_select()).first(conn).optional()?)
}

/// Live sessions per node, read once for the cluster's view and for placement.
#[derive(Debug, Default)]
pub struct Loads(Vec<(String, i64)>);

impl Loads {
    pub fn read(conn: &mut DbConnection) -> Result<Loads, StoreError> {
        let rows: Vec<(Option<String>, i64)> = sessions::table
            .filter(sessions::owner_node.is_not_null())
            .filter(sessions::status.eq_any(SessionStatus::LIVE))
            .group_by(sessions::owner_node)
            .select((sessions::owner_node, diesel::dsl::count_star()))
            .load(conn)?;
        Ok(Loads(rows.into_iter().filter_map(|(owner, n)| Some((owner?, n))).collect()))
    }

    /// The live sessions `name` owns.
    pub fn live(&self, name: &str) -> i64 {
        self.0.iter().find(|(owner, _)| owner == name).map_or(0, |(_, n)| *n)
    }

    /// `node`'s live sessions over its capacity, from 0 (idle) to 1 (full, or no capacity).
    pub fn load(&self, node: &Node) -> f64 {
        if node.capacity <= 0 {
            return 1.0;
        }
        (self.live(&node.name) as f64 / f64::from(node.capacity)).min(1.0)
    }
}

/// The live sessions one node owns (its renewal's figure; uses `sessions_owner_status_idx`).
pub fn live_owned_by(conn: &mut DbConnection, name: &str) -> Result<i64, StoreError> {
    Ok(sessions::table
        .filter(sessions::owner_node.eq(name))
        .filter(sessions::status.eq_any(SessionStatus::LIVE))
        .count()
        .get_result(conn)?)
}

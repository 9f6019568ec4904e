//! `GET /api/cluster`: the nodes of the cluster, from the database (any node answers alike).

use actix_web::{web, HttpResponse};
use serde::Serialize;
use utoipa::ToSchema;

use crate::db::nodes;
use crate::domain::cluster::{NodeRole, NodeState};
use crate::domain::time;
use crate::error::{AppResult, ErrorBody};
use crate::http::AppState;

#[derive(Debug, Serialize, ToSchema)]
pub struct ClusterReport {
    /// Cluster mode is on (`CONDUIT_CLUSTER`); when off, `node` is null and `nodes` empty.
    pub enabled: bool,
    /// The node that answered.
    pub node: Option<String>,
    /// How long a node may go without renewing its lease before it is lost.
    pub lease_ms: Option<u64>,
    /// Every node that ever joined, by name.
    pub nodes: Vec<NodeReport>,
}

#[derive(Debug, Serialize, ToSchema)]
pub struct NodeReport {
    pub name: String,
    /// The URL the other nodes reach it at.
    pub address: String,
    pub state: NodeState,
    pub role: NodeRole,
    /// Live sessions it owns, counted now.
    pub live_sessions: i64,
    /// How many live sessions it takes.
    pub capacity: i32,
    /// `live_sessions / capacity`, from 0 to 1.
    pub load: f64,
    pub started_at: String,
    pub heartbeat_at: String,
    pub lease_until: String,
    /// A live node whose lease has run out; the leader declares it lost at its next renewal.
    pub lease_expired: bool,
}

/// The cluster's nodes with their live sessions and load.
#[utoipa::path(get, path = "/api/cluster", tag = "cluster",
    responses(
        (status = 200, description = "The nodes (none when cluster mode is off)", body = ClusterReport),
        (status = 503, description = "Storage is unavailable", body = ErrorBody),
    ))]
pub async fn cluster(state: web::Data<AppState>) -> AppResult<HttpResponse> {
    let Some(settings) = &state.settings.cluster else {
        return Ok(HttpResponse::Ok().json(ClusterReport {
            enabled: false,
            node: None,
            lease_ms: None,
            nodes: vec![],
        }));
    };
    let (rows, loads) = state.store.run(|conn| Ok((nodes::list(conn)?, nodes::Loads::read(conn)?))).await?;
    let now = time::now();
    let nodes = rows
        .into_iter()
        .map(|n| NodeReport {
            load: loads.load(&n),
            lease_expired: n.state == NodeState::Live && n.lease_until < now,
            live_sessions: loads.live(&n.name),
            name: n.name,
            address: n.address,
            state: n.state,
            role: n.role,
            capacity: n.capacity,
            started_at: n.started_at,
            heartbeat_at: n.heartbeat_at,
            lease_until: n.lease_until,
        })
        .collect();
    Ok(HttpResponse::Ok().json(ClusterReport {
        enabled: true,
        node: Some(settings.node.clone()),
        lease_ms: Some(settings.lease.as_millis() as u64),
        nodes,
    }))
}

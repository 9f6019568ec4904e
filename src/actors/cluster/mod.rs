//! `ClusterNode`: this node's membership of a cluster (cluster mode, PostgreSQL only).
//!
//! Every renewal period (a sixth of the lease) it keeps or seeks the leadership (an advisory
//! lock, see [`leadership`]), renews its lease in `nodes` with its role and live sessions, and,
//! while it leads, declares lost every node whose lease ran out (their live sessions end with
//! `node_lost`). Its role is published on a watch channel: agents fire their schedules only
//! while their node leads. At a clean shutdown it leaves (`left`).

pub mod folders;
mod leadership;
pub mod live_feed;
pub mod relay;

use std::time::{Duration, Instant};

use actix::prelude::*;
use serde::Serialize;
use tokio::sync::watch;
use utoipa::ToSchema;

use crate::actors::registry::Fence;
use crate::config::ClusterSettings;
use crate::db::backend::PostgresUrl;
use crate::db::nodes::{self, Node, Renewal};
use crate::db::{Store, StoreError};
use crate::domain::cluster::{NodeRole, NodeState};
use crate::domain::time;

/// This node's name and live role, for the actors that act differently on the leader.
#[derive(Debug, Clone)]
pub struct NodeView {
    pub name: String,
    role: watch::Receiver<NodeRole>,
}

impl NodeView {
    pub fn leads(&self) -> bool {
        *self.role.borrow() == NodeRole::Leader
    }
}

pub struct ClusterNode {
    cluster: ClusterSettings,
    url: PostgresUrl,
    busy_timeout_ms: u64,
    store: Store,
    /// `None` while a renewal has it on the blocking pool.
    seat: Option<leadership::Seat>,
    role: watch::Sender<NodeRole>,
    /// The nodes as last read, for health.
    peers: Vec<Node>,
    leaving: bool,
    /// When the last renewal that reached the database began: the lease runs from there.
    renewed_at: Instant,
    /// Told when this node loses its lease (the registry ends its sessions).
    fence: Option<Recipient<Fence>>,
    /// Fenced since the last good renewal.
    fenced: bool,
}

/// Health's `cluster` section.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct ClusterHealth {
    pub node: String,
    pub role: NodeRole,
    /// Every node known to the cluster (this one included), as of the last renewal.
    pub peers: Vec<PeerHealth>,
}

#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct PeerHealth {
    pub name: String,
    pub state: NodeState,
    pub role: NodeRole,
}

impl ClusterNode {
    /// Writes this node's row (live, following) and makes its actor; the caller starts it.
    pub async fn join(
        cluster: ClusterSettings,
        url: PostgresUrl,
        busy_timeout_ms: u64,
        capacity: u32,
        store: Store,
    ) -> Result<(ClusterNode, NodeView), StoreError> {
        let capacity = i32::try_from(capacity).unwrap_or(i32::MAX);
        let now = time::now();
        let row = Node {
            name: cluster.node.clone(),
            address: cluster.address.clone(),
            capacity,
            state: NodeState::Live,
            role: NodeRole::Follower,
            live_sessions: 0,
            started_at: now.clone(),
            heartbeat_at: now,
            lease_until: time::after(cluster.lease),
        };
        let peers = store
            .run(move |conn| {
                nodes::join(conn, &row)?;
                nodes::list(conn)
            })
            .await?;
        tracing::info!(node = %cluster.node, address = %cluster.address, nodes = peers.len(), "joined the cluster");
        let (role, watching) = watch::channel(NodeRole::Follower);
        let view = NodeView { name: cluster.node.clone(), role: watching };
        let node = ClusterNode {
            cluster,
            url,
            busy_timeout_ms,
            store,
            seat: Some(leadership::Seat::default()),
            role,
            peers,
            leaving: false,
            renewed_at: Instant::now(),
            fence: None,
            fenced: false,
        };
        Ok((node, view))
    }

    fn period(&self) -> Duration {
        (self.cluster.lease / 6).max(Duration::from_millis(100))
    }
}

impl Actor for ClusterNode {
    type Context = Context<Self>;

    fn started(&mut self, ctx: &mut Context<Self>) {
        ctx.notify(Renew);
        ctx.run_interval(self.period(), |_, ctx| ctx.notify(Renew));
    }
}

#[derive(Message)]
#[rtype(result = "()")]
struct Renew;

/// What one renewal learnt.
struct Renewed {
    still_member: bool,
    lost: Vec<(String, usize)>,
    peers: Vec<Node>,
}

impl Handler<Renew> for ClusterNode {
    type Result = ResponseActFuture<Self, ()>;

    fn handle(&mut self, _: Renew, _ctx: &mut Context<Self>) -> Self::Result {
        if self.leaving {
            return Box::pin(actix::fut::ready(()));
        }
        let Some(seat) = self.seat.take() else {
            // The last renewal is still out. One that hangs (no answer, no error) for a whole
            // lease counts as failed: the leader may be declaring this node lost meanwhile.
            if self.renewed_at.elapsed() >= self.cluster.lease {
                tracing::error!(node = %self.cluster.node, "cluster: a lease renewal has not answered for a whole lease");
                self.fence_now();
            }
            return Box::pin(actix::fut::ready(()));
        };
        let (url, busy) = (self.url.clone(), self.busy_timeout_ms);
        let (store, name, lease) = (self.store.clone(), self.cluster.node.clone(), self.cluster.lease);
        let began = Instant::now();
        let work = async move {
            let (seat, role) = tokio::task::spawn_blocking(move || seat.renew(&url, busy))
                .await
                .unwrap_or_else(|_| (leadership::Seat::default(), NodeRole::Follower));
            let renewed = store.run(move |conn| renew_and_watch(conn, &name, role, lease)).await;
            (seat, role, renewed)
        };
        Box::pin(work.into_actor(self).map(move |(seat, role, renewed), act, _ctx| {
            if act.leaving {
                // Left meanwhile: the seat (and any leadership it holds) goes with it.
                return;
            }
            act.seat = Some(seat);
            if *act.role.borrow() != role {
                tracing::info!(node = %act.cluster.node, %role, "cluster role changed");
            }
            act.role.send_replace(role);
            match renewed {
                Ok(renewed) => {
                    if !renewed.still_member {
                        tracing::error!(node = %act.cluster.node, "this node was declared lost while it could not renew its lease; its sessions were ended by the leader");
                        act.fence_now();
                    }
                    act.renewed_at = began;
                    act.fenced = false;
                    for (node, sessions) in renewed.lost {
                        tracing::warn!(node = %node, sessions, "a node's lease ran out: declared lost, its live sessions ended with node_lost");
                    }
                    act.peers = renewed.peers;
                }
                Err(e) => {
                    tracing::warn!(node = %act.cluster.node, error = %e, "cluster: cannot renew the lease");
                    if act.renewed_at.elapsed() >= act.cluster.lease {
                        // The leader may declare this node lost from now on, and another node
                        // resume its sessions: their CLIs must not go on here.
                        act.fence_now();
                    }
                }
            }
        }))
    }
}

impl ClusterNode {
    fn fence_now(&mut self) {
        if std::mem::replace(&mut self.fenced, true) {
            return;
        }
        if let Some(fence) = &self.fence {
            fence.do_send(Fence);
        }
    }
}

/// Who ends this node's sessions when it loses its lease.
#[derive(Message)]
#[rtype(result = "()")]
pub struct FenceWith(pub Recipient<Fence>);

impl Handler<FenceWith> for ClusterNode {
    type Result = ();

    fn handle(&mut self, msg: FenceWith, _ctx: &mut Context<Self>) {
        self.fence = Some(msg.0);
    }
}

/// One renewal's database work: renew (or join again, when declared lost meanwhile), and on
/// the leader declare expired nodes lost.
fn renew_and_watch(
    conn: &mut crate::db::DbConnection,
    name: &str,
    role: NodeRole,
    lease: Duration,
) -> Result<Renewed, StoreError> {
    let live = nodes::live_owned_by(conn, name)?;
    let now = time::now();
    let renewal = Renewal {
        role,
        live_sessions: i32::try_from(live).unwrap_or(i32::MAX),
        heartbeat_at: now.clone(),
        lease_until: time::after(lease),
    };
    let still_member = nodes::renew(conn, name, &renewal)?;
    if !still_member {
        if let Some(mut row) = nodes::find(conn, name)? {
            (row.state, row.role, row.live_sessions) = (NodeState::Live, role, renewal.live_sessions);
            (row.heartbeat_at, row.lease_until) = (renewal.heartbeat_at.clone(), renewal.lease_until.clone());
            nodes::join(conn, &row)?;
        }
    }
    let mut lost = Vec::new();
    if role == NodeRole::Leader {
        for node in nodes::expired(conn, &now)? {
            let ended = nodes::declare_lost(conn, &node, &now)?;
            lost.push((node, ended.len()));
        }
    }
    Ok(Renewed { still_member, lost, peers: nodes::list(conn)? })
}

/// Health's view of the cluster.
#[derive(Message)]
#[rtype(result = "ClusterHealth")]
pub struct Health;

impl Handler<Health> for ClusterNode {
    type Result = MessageResult<Health>;

    fn handle(&mut self, _: Health, _ctx: &mut Context<Self>) -> Self::Result {
        MessageResult(ClusterHealth {
            node: self.cluster.node.clone(),
            role: *self.role.borrow(),
            peers: self
                .peers
                .iter()
                .map(|n| PeerHealth { name: n.name.clone(), state: n.state, role: n.role })
                .collect(),
        })
    }
}

/// A clean shutdown: the node gives up the leadership and is marked `left`.
#[derive(Message)]
#[rtype(result = "()")]
pub struct Leave;

impl Handler<Leave> for ClusterNode {
    type Result = ResponseActFuture<Self, ()>;

    fn handle(&mut self, _: Leave, _ctx: &mut Context<Self>) -> Self::Result {
        self.leaving = true;
        // Dropping the leadership connection releases the lock for the next leader at once.
        self.seat = None;
        self.role.send_replace(NodeRole::Follower);
        let (store, name) = (self.store.clone(), self.cluster.node.clone());
        Box::pin(
            async move {
                let now = time::now();
                if let Err(e) = store.run(move |conn| nodes::leave(conn, &name, &now)).await {
                    tracing::warn!(error = %e, "cluster: could not record leaving");
                }
            }
            .into_actor(self),
        )
    }
}

//! Cluster mode at startup: which leftovers recovery looks for, and joining the cluster.

use actix::{Actor, Addr};

use crate::actors::bus::{EventBus, ReportWatches};
use crate::actors::cluster::live_feed::LiveFeeds;
use crate::actors::cluster::relay::{self, BusLink, RelayHandle};
use crate::actors::cluster::{ClusterNode, NodeView};
use crate::actors::recovery::NodeScope;
use crate::config::Settings;
use crate::db::{nodes, Database, Store, StoreError};
use crate::peer_tls::PeerTrust;

/// In cluster mode: this node, and when it last started (its row, before joining rewrites it).
pub(super) async fn node_scope(settings: &Settings, store: &Store) -> Result<Option<NodeScope>, StoreError> {
    let Some(cluster) = &settings.cluster else { return Ok(None) };
    let node = cluster.node.clone();
    let previous = store.run(move |conn| nodes::find(conn, &node)).await?;
    Ok(Some(NodeScope { node: cluster.node.clone(), lost_since: previous.map(|row| row.started_at) }))
}

/// This node's membership, running; `None` outside cluster mode.
pub(super) async fn join(
    settings: &Settings,
    store: &Store,
) -> Result<Option<(Addr<ClusterNode>, NodeView)>, StoreError> {
    let (Some(cluster), Database::Postgres(url)) = (&settings.cluster, &settings.database) else { return Ok(None) };
    let (node, view) = ClusterNode::join(
        cluster.clone(),
        url.clone(),
        settings.db_busy_timeout_ms,
        settings.max_sessions_global,
        store.clone(),
    )
    .await?;
    Ok(Some((node.start(), view)))
}

/// The relay of the other nodes' session events to `bus`, both ways: read back from the store,
/// and from the nodes' live feeds. `None` outside cluster mode.
pub(super) fn relay(settings: &Settings, store: &Store, bus: &Addr<EventBus>, trust: &PeerTrust) -> Option<Relay> {
    let (Some(cluster), Database::Postgres(url)) = (&settings.cluster, &settings.database) else { return None };
    let (report, watches) = std::sync::mpsc::channel();
    bus.do_send(ReportWatches(report));
    let live =
        LiveFeeds::new(cluster.clone(), store.clone(), bus.clone().recipient(), bus.clone().recipient(), trust).start();
    let feeds = live.clone().recipient();
    let link = BusLink { publish: bus.clone().recipient(), stored: bus.clone().recipient(), watches, feeds };
    let stored = relay::start(url.clone(), settings.db_busy_timeout_ms, cluster.node.clone(), link);
    Some(Relay { _stored: stored, _live: live })
}

/// Both ways of relaying, for as long as the service runs.
pub(super) struct Relay {
    _stored: RelayHandle,
    _live: Addr<LiveFeeds>,
}

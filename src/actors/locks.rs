//! `DirLockQueue`: one FIFO per canonical directory, so two runs never work in one folder at
//! once.
//!
//! Whoever wants a folder to itself sends [`Acquire`] and awaits a [`DirLock`]: runs on the same
//! folder are granted one at a time in arrival order, runs on different folders at once.
//! Dropping the `DirLock` releases it, so every way a holder can end (success, failure,
//! timeout, cancel, or the holder actor dying) releases the folder. A waiter that gives up just
//! drops its future; when its turn comes the grant finds nobody and passes on. Empty queues
//! are dropped.

use std::collections::{HashMap, VecDeque};
use std::path::PathBuf;

use actix::prelude::*;
use serde::Serialize;
use tokio::sync::oneshot;
use utoipa::ToSchema;

use crate::actors::cluster::folders::{ClusterFolders, FolderClaim};
use crate::domain::time;

// ---------------------------------------------------------------------------------------------
// Messages

/// Queue for exclusive use of `path` (already canonical); `holder` says who, for
/// `GET /api/locks`. Answers at once with the grant to wait for (see [`acquire`]): the caller
/// holds it, so giving up (dropping it) is visible to the queue.
#[derive(Message)]
#[rtype(result = "Grant")]
pub struct Acquire {
    pub path: PathBuf,
    pub holder: String,
}

pub struct Grant {
    granted: oneshot::Receiver<DirLock>,
    /// In cluster mode, where the folder is then taken across the cluster.
    cluster: Option<ClusterFolders>,
}

/// Waits for exclusive use of `path`: first among this node's runs, then (cluster mode) across
/// the nodes.
pub async fn acquire(queue: &Recipient<Acquire>, path: PathBuf, holder: String) -> Result<DirLock, LockGone> {
    let Grant { granted, cluster } = queue.send(Acquire { path, holder }).await.map_err(|_| LockGone::Stopped)?;
    let mut lock = granted.await.map_err(|_| LockGone::Stopped)?;
    if let Some(cluster) = cluster {
        lock.claim = Some(cluster.acquire(&lock.path).await.map_err(LockGone::Cluster)?);
    }
    Ok(lock)
}

#[derive(Debug, thiserror::Error)]
pub enum LockGone {
    #[error("the directory lock queue stopped")]
    Stopped,
    #[error("{0}")]
    Cluster(String),
}

/// Holders and waiters of every folder.
#[derive(Message)]
#[rtype(result = "Vec<LockState>")]
pub struct Snapshot;

/// Drops waiters that gave up and empty queues; answers how many entries went.
#[derive(Message)]
#[rtype(result = "usize")]
pub struct Prune;

#[derive(Message)]
#[rtype(result = "()")]
struct Release {
    path: PathBuf,
    ticket: u64,
}

#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct LockState {
    /// The canonical folder.
    pub path: String,
    pub holder: Option<LockEntry>,
    /// In the order they will be granted.
    pub waiters: Vec<LockEntry>,
}

#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct LockEntry {
    /// Who holds or wants the folder, e.g. `agent nightly (execution 1f0c…)`.
    pub holder: String,
    /// When it acquired the lock (holders) or asked for it (waiters).
    pub since: String,
}

/// Exclusive use of a folder until dropped.
pub struct DirLock {
    path: PathBuf,
    ticket: u64,
    queue: Addr<DirLockQueue>,
    /// False for a grant nobody took (the queue already knows).
    armed: bool,
    /// The folder's lock across the cluster (cluster mode), released with this one.
    claim: Option<FolderClaim>,
}

impl DirLock {
    pub fn path(&self) -> &std::path::Path {
        &self.path
    }
}

impl Drop for DirLock {
    fn drop(&mut self) {
        if self.armed {
            self.queue.do_send(Release { path: self.path.clone(), ticket: self.ticket });
        }
    }
}

// ---------------------------------------------------------------------------------------------
// State

struct Waiter {
    ticket: u64,
    holder: String,
    since: String,
    grant: oneshot::Sender<DirLock>,
}

struct Held {
    ticket: u64,
    holder: String,
    since: String,
}

#[derive(Default)]
struct Queue {
    held: Option<Held>,
    waiting: VecDeque<Waiter>,
}

#[derive(Default)]
pub struct DirLockQueue {
    queues: HashMap<PathBuf, Queue>,
    next_ticket: u64,
    cluster: Option<ClusterFolders>,
}

impl DirLockQueue {
    /// A queue whose grants also take the folder across the cluster (cluster mode).
    pub fn across(cluster: ClusterFolders) -> DirLockQueue {
        DirLockQueue { cluster: Some(cluster), ..DirLockQueue::default() }
    }

    /// Hands the folder to the next waiter still waiting; drops the queue when nobody is left.
    fn grant_next(&mut self, path: &PathBuf, ctx: &mut Context<Self>) {
        let Some(queue) = self.queues.get_mut(path) else { return };
        while queue.held.is_none() {
            let Some(waiter) = queue.waiting.pop_front() else { break };
            let lock =
                DirLock { path: path.clone(), ticket: waiter.ticket, queue: ctx.address(), armed: true, claim: None };
            queue.held = Some(Held { ticket: waiter.ticket, holder: waiter.holder, since: time::now() });
            if let Err(mut lock) = waiter.grant.send(lock) {
                // The waiter gave up: take the grant back without a round trip.
                lock.armed = false;
                queue.held = None;
            }
        }
        if queue.held.is_none() && queue.waiting.is_empty() {
            self.queues.remove(path);
        }
    }
}

// ---------------------------------------------------------------------------------------------
// Handlers

impl Actor for DirLockQueue {
    type Context = Context<Self>;
}

impl Handler<Acquire> for DirLockQueue {
    type Result = MessageResult<Acquire>;

    fn handle(&mut self, msg: Acquire, ctx: &mut Context<Self>) -> Self::Result {
        self.next_ticket += 1;
        let (grant, granted) = oneshot::channel();
        let queue = self.queues.entry(msg.path.clone()).or_default();
        queue.waiting.push_back(Waiter { ticket: self.next_ticket, holder: msg.holder, since: time::now(), grant });
        self.grant_next(&msg.path, ctx);
        MessageResult(Grant { granted, cluster: self.cluster.clone() })
    }
}

impl Handler<Release> for DirLockQueue {
    type Result = ();

    fn handle(&mut self, msg: Release, ctx: &mut Context<Self>) {
        let Some(queue) = self.queues.get_mut(&msg.path) else { return };
        if queue.held.as_ref().is_some_and(|h| h.ticket == msg.ticket) {
            queue.held = None;
            self.grant_next(&msg.path, ctx);
        }
    }
}

impl Handler<Snapshot> for DirLockQueue {
    type Result = MessageResult<Snapshot>;

    fn handle(&mut self, _msg: Snapshot, _ctx: &mut Context<Self>) -> Self::Result {
        let mut states: Vec<LockState> = self
            .queues
            .iter()
            .map(|(path, q)| LockState {
                path: path.display().to_string(),
                holder: q.held.as_ref().map(|h| LockEntry { holder: h.holder.clone(), since: h.since.clone() }),
                waiters: q
                    .waiting
                    .iter()
                    .filter(|w| !w.grant.is_closed())
                    .map(|w| LockEntry { holder: w.holder.clone(), since: w.since.clone() })
                    .collect(),
            })
            .collect();
        states.sort_by(|a, b| a.path.cmp(&b.path));
        MessageResult(states)
    }
}

impl Handler<Prune> for DirLockQueue {
    type Result = usize;

    fn handle(&mut self, _msg: Prune, _ctx: &mut Context<Self>) -> usize {
        let mut pruned = 0;
        self.queues.retain(|_, q| {
            let before = q.waiting.len();
            q.waiting.retain(|w| !w.grant.is_closed());
            pruned += before - q.waiting.len();
            let keep = q.held.is_some() || !q.waiting.is_empty();
            pruned += usize::from(!keep);
            keep
        });
        pruned
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    fn take(
        q: &Addr<DirLockQueue>,
        path: &str,
        holder: &str,
    ) -> impl std::future::Future<Output = Result<DirLock, LockGone>> {
        let (q, path, holder) = (q.clone().recipient(), PathBuf::from(path), holder.to_string());
        async move { acquire(&q, path, holder).await }
    }

    #[actix_rt::test]
    async fn one_holder_per_folder_granted_in_arrival_order() {
        let q = DirLockQueue::default().start();
        let first = take(&q, "/a", "first").await.expect("granted");
        let second = take(&q, "/a", "second");
        let third = take(&q, "/a", "third");
        let other = take(&q, "/b", "other").await.expect("another folder at once");
        let second = tokio::spawn(second);
        tokio::time::sleep(Duration::from_millis(20)).await;
        let third = tokio::spawn(third);
        tokio::time::sleep(Duration::from_millis(50)).await;
        assert!(!second.is_finished() && !third.is_finished(), "/a is held");
        let states = q.send(Snapshot).await.expect("queue");
        assert_eq!(states.len(), 2);
        assert_eq!(states[0].holder.as_ref().map(|h| h.holder.as_str()), Some("first"));
        assert_eq!(states[0].waiters.iter().map(|w| w.holder.as_str()).collect::<Vec<_>>(), ["second", "third"]);

        drop(first);
        let second = second.await.expect("task").expect("granted");
        assert!(!third.is_finished(), "third waits for second");
        drop(second);
        let third = third.await.expect("task").expect("granted");
        drop((third, other));
        tokio::time::sleep(Duration::from_millis(20)).await;
        assert!(q.send(Snapshot).await.expect("queue").is_empty(), "empty queues are dropped");
    }

    #[actix_rt::test]
    async fn a_waiter_that_gives_up_is_skipped() {
        let q = DirLockQueue::default().start();
        let held = take(&q, "/a", "holder").await.expect("granted");
        let quitter = tokio::spawn(take(&q, "/a", "quitter"));
        tokio::time::sleep(Duration::from_millis(20)).await;
        let patient = tokio::spawn(take(&q, "/a", "patient"));
        tokio::time::sleep(Duration::from_millis(20)).await;
        quitter.abort();
        tokio::time::sleep(Duration::from_millis(20)).await;
        assert_eq!(q.send(Prune).await.expect("queue"), 1, "the quitter is pruned");
        drop(held);
        let lock = tokio::time::timeout(Duration::from_secs(2), patient).await.expect("granted in time");
        assert_eq!(lock.expect("task").expect("granted").path(), std::path::Path::new("/a"));
    }
}

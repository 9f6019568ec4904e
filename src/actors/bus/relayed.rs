//! Cluster mode: which of another node's events the bus publishes. They come two ways, read
//! back from the store once committed and from the owner's live feed ahead of its commit; each
//! is published once and in order, whichever way brings it first.

use std::sync::Arc;

use super::event::Origin;
use super::state::EventBus;

impl EventBus {
    /// Whether another node's event of session `id` at `seq` is published here:
    /// - read back from the store, unless the topic has it already; past a hole, the ones
    ///   between are in the store too, and the followers catch up from it;
    /// - from the owner's live feed, only as the topic's very next event and when a client here
    ///   follows the session (or everything). What a feed brings past a hole may not be stored
    ///   yet, so a catch-up could not read the hole: the store's way brings it instead.
    pub(super) fn takes_relayed(&mut self, id: &str, seq: u64, origin: &Origin) -> bool {
        let key = Some(id.to_string());
        match origin {
            Origin::Here => true,
            Origin::Stored => {
                if let Some(topic) = self.topics.get_mut(&key).filter(|t| seq <= t.seq) {
                    topic.confirmed = topic.confirmed.max(seq);
                    return false;
                }
                self.stored_up_to(&key, seq.saturating_sub(1));
                if let Some(topic) = self.topics.get_mut(&key) {
                    topic.confirmed = topic.confirmed.max(seq);
                }
                true
            }
            Origin::Live(node) => {
                let watched = self.watched(&key);
                match self.topics.get_mut(&key) {
                    Some(topic) if watched && topic.seq + 1 == seq => {
                        topic.fed_by = Some(node.clone());
                        true
                    }
                    _ => false,
                }
            }
        }
    }

    /// `node`'s feed is gone with its node: what it brought past the store is forgotten, so the
    /// session's next events, numbered from where its store ends, are published (as a
    /// follower of the owner would see them after the owner's crash and restart).
    pub(super) fn forget_unconfirmed(&mut self, node: &Arc<str>) {
        let mut gone = Vec::new();
        for (key, topic) in self.topics.iter_mut() {
            if topic.fed_by.as_ref() == Some(node) {
                topic.fed_by = None;
                if topic.seq > topic.confirmed {
                    tracing::info!(session = ?key, from = topic.confirmed + 1, to = topic.seq, node = %node, "cluster: events a lost node sent live were never stored; its session numbers on from its store");
                    topic.seq = topic.confirmed;
                    gone.push(key.clone());
                }
            }
        }
        // The numbers past the store come again: the whole history goes (what a follower
        // behind still needs, it reads from the store).
        for key in gone {
            self.restart_history(&key);
        }
    }
}

//! `WebhookDispatcher`: POSTs matching bus events to registered webhooks.
//!
//! Each webhook has its own worker following the global topic like any subscriber, with its
//! own cursor: a slow or dead endpoint falls behind on its own (catching up from the bus's
//! history later) and never delays the bus or other webhooks; only events that left the
//! history before it could deliver them are lost to it, and counted. With no webhooks, nothing
//! follows the bus. A delivery is tried up to 4 times (first try plus 3 retries with
//! exponential backoff) on network errors and 5xx answers; every attempt is recorded. Attempts
//! older than 7 days are pruned.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use super::bus::{Delivery, EventBus, Follow, Subscribe, OUTBOX};
use super::feed::{Feed, FeedItem};
use crate::db::webhooks::{self as rows, NewAttempt, WebhookRow};
use crate::db::writer::{WriteOp, Writer};
use crate::db::{Store, StoreError};
use crate::domain::ids::WebhookId;
use crate::domain::time;
use actix::prelude::*;
use hmac::{Hmac, Mac};
use sha2::Sha256;

/// The event types a webhook may ask for (or `*`).
pub const EVENT_TYPES: [&str; 39] = [
    "session.created",
    "session.status",
    "session.message",
    "session.result",
    "session.error",
    "session.closed",
    // The kernel's OOM killer ended a process of the session (actors::session::resources).
    "session.resource",
    "stream.event",
    "permission.decision",
    "workspace.created",
    "workspace.setup_output",
    "workspace.setup_failed",
    "workspace.ready",
    "workspace.committed",
    "workspace.merged",
    "workspace.archived",
    // The normalized vocabulary every agent's lines are read into (domain::agent_events).
    "assistant.delta",
    "assistant.message",
    "tool.started",
    "tool.finished",
    "turn.result",
    "turn.error",
    // Changes to what people configure (http::changes).
    "project.created",
    "project.updated",
    "project.deleted",
    "rule.created",
    "rule.updated",
    "rule.deleted",
    "agent.created",
    "agent.updated",
    "agent.deleted",
    "webhook.created",
    "webhook.deleted",
    // Usage limits (actors::session::limits).
    "usage.limit_reached",
    "usage.limit_reset",
    // Budgets (actors::budgets).
    "budget.exhausted",
    "budget.resumed",
    // The work-in-progress limit (actors::session::wip).
    "session.turn_waiting",
    // The turn watchdog (actors::session::supervision).
    "session.stalled",
];
const TIMEOUT: Duration = Duration::from_secs(10);
const RETRIES: u32 = 3;
const KEEP_ATTEMPTS: chrono::TimeDelta = chrono::TimeDelta::days(7);

/// `sha256=<hex HMAC-SHA256 of "timestamp.body">`
pub fn signature(secret: &str, timestamp: &str, body: &str) -> String {
    // HMAC accepts keys of any length; this cannot fail.
    let mut mac = <Hmac<Sha256> as Mac>::new_from_slice(secret.as_bytes()).expect("HMAC takes any key length");
    mac.update(timestamp.as_bytes());
    mac.update(b".");
    mac.update(body.as_bytes());
    let hex: String = mac.finalize().into_bytes().iter().map(|b| format!("{b:02x}")).collect();
    format!("sha256={hex}")
}

// ---------------------------------------------------------------------------------------------
// Messages

/// Re-reads the webhooks (after one is created or deleted). Answers with how many are active.
#[derive(Message)]
#[rtype(result = "Result<usize, StoreError>")]
pub struct ReloadWebhooks;

/// Events each webhook missed (they left the bus's history before it could deliver them),
/// since the service started.
#[derive(Message)]
#[rtype(result = "HashMap<WebhookId, u64>")]
pub struct DroppedCounts;

// ---------------------------------------------------------------------------------------------
// State

struct Worker {
    /// Aborted when the webhook goes (its feed, dropped with it, unsubscribes).
    task: tokio::task::AbortHandle,
    dropped: Arc<AtomicU64>,
}

pub struct WebhookDispatcher {
    store: Store,
    writer: Writer,
    bus: Addr<EventBus>,
    client: reqwest::Client,
    default_secret: Option<String>,
    retry_base: Duration,
    workers: HashMap<WebhookId, Worker>,
}

impl Drop for WebhookDispatcher {
    fn drop(&mut self) {
        for worker in self.workers.values() {
            worker.task.abort();
        }
    }
}

impl WebhookDispatcher {
    pub fn new(
        store: Store,
        writer: Writer,
        bus: Addr<EventBus>,
        default_secret: Option<String>,
        retry_base: Duration,
    ) -> Self {
        let client = reqwest::Client::builder().timeout(TIMEOUT).build().unwrap_or_default();
        WebhookDispatcher { store, writer, bus, client, default_secret, retry_base, workers: HashMap::new() }
    }

    fn install(&mut self, hooks: Vec<WebhookRow>) {
        let mut workers = HashMap::new();
        for hook in hooks {
            // Keep a worker (and its place in the stream) across reloads when it is unchanged.
            if let Some(existing) = self.workers.remove(&hook.id) {
                workers.insert(hook.id.clone(), existing);
                continue;
            }
            let dropped = Arc::new(AtomicU64::new(0));
            let target = Target {
                secret: hook.secret.clone().or_else(|| self.default_secret.clone()),
                id: hook.id.clone(),
                url: hook.url.clone(),
                events: serde_json::from_str(&hook.events).unwrap_or_default(),
                client: self.client.clone(),
                writer: self.writer.clone(),
                retry_base: self.retry_base,
                missed: dropped.clone(),
            };
            let task = tokio::spawn(target.run(self.bus.clone())).abort_handle();
            workers.insert(hook.id, Worker { task, dropped });
        }
        // Workers of deleted webhooks stop.
        for (_, gone) in self.workers.drain() {
            gone.task.abort();
        }
        self.workers = workers;
    }
}

/// One webhook's delivery loop, in event order.
struct Target {
    id: WebhookId,
    url: String,
    secret: Option<String>,
    events: Vec<String>,
    client: reqwest::Client,
    writer: Writer,
    retry_base: Duration,
    missed: Arc<AtomicU64>,
}

impl Target {
    /// Follows every event from now on and delivers the ones this webhook asked for, in order.
    async fn run(self, bus: Addr<EventBus>) {
        let follow = Subscribe { follow: Follow::Everything, since: None, outbox: OUTBOX, internal: true };
        let Ok(sub) = bus.send(follow).await else {
            tracing::error!(webhook = %self.id, "webhooks cannot follow the event bus");
            return;
        };
        let mut feed = Feed::new(bus, sub.id, sub.outbox, None);
        while let Some(items) = feed.next(Duration::from_secs(3600)).await {
            for item in items {
                match item {
                    FeedItem::Event(d) if !d.meta.relayed && self.wants(d.meta.kind) => self.deliver(&d).await,
                    FeedItem::Event(_) => {}
                    FeedItem::Missed(n) => {
                        self.missed.fetch_add(n, Ordering::Relaxed);
                        tracing::warn!(webhook = %self.id, missed = n, "a webhook fell behind the bus's history; events were not delivered");
                    }
                }
            }
        }
    }

    fn wants(&self, kind: &str) -> bool {
        self.events.iter().any(|e| e == "*" || e == kind)
    }

    async fn deliver(&self, d: &Delivery) {
        let body = d.frame.to_string();
        let delivery_id = uuid::Uuid::new_v4().to_string();
        for attempt in 1..=RETRIES + 1 {
            let timestamp = chrono::Utc::now().timestamp().to_string();
            let mut request = self
                .client
                .post(&self.url)
                .header("content-type", "application/json")
                .header("x-conduit-event", d.meta.kind)
                .header("x-conduit-delivery", &delivery_id)
                .header("x-conduit-timestamp", &timestamp)
                .body(body.clone());
            if let Some(secret) = &self.secret {
                request = request.header("x-conduit-signature", signature(secret, &timestamp, &body));
            }
            let started = Instant::now();
            let outcome = request.send().await;
            let duration_ms = started.elapsed().as_millis() as i64;
            let (status_code, error, retry) = match &outcome {
                Ok(res) if res.status().is_success() => (Some(res.status().as_u16() as i32), None, false),
                Ok(res) => {
                    let code = res.status();
                    (Some(code.as_u16() as i32), Some(format!("HTTP {code}")), code.is_server_error())
                }
                Err(e) if e.is_timeout() => (None, Some(format!("timed out after {TIMEOUT:?}")), true),
                Err(e) => (None, Some(format!("request failed: {e}")), true),
            };
            self.writer.persist(WriteOp::Attempt(NewAttempt {
                delivery_id: delivery_id.clone(),
                webhook_id: self.id.clone(),
                event_type: d.meta.kind.to_string(),
                attempt: attempt as i32,
                status_code,
                duration_ms,
                succeeded: error.is_none(),
                error,
                attempted_at: time::now(),
            }));
            if !retry || attempt > RETRIES {
                return;
            }
            tokio::time::sleep(self.retry_base * 2u32.pow(attempt - 1)).await;
        }
    }
}

// ---------------------------------------------------------------------------------------------
// Handlers

impl Actor for WebhookDispatcher {
    type Context = Context<Self>;

    fn started(&mut self, ctx: &mut Context<Self>) {
        ctx.run_interval(Duration::from_secs(3600), |act, _| {
            let store = act.store.clone();
            let before = (chrono::Utc::now() - KEEP_ATTEMPTS).to_rfc3339_opts(chrono::SecondsFormat::Millis, true);
            actix::spawn(async move {
                match store.run(move |conn| rows::prune_attempts(conn, &before)).await {
                    Ok(n) if n > 0 => tracing::info!(pruned = n, "old webhook attempts deleted"),
                    Ok(_) => {}
                    Err(e) => tracing::warn!(error = %e, "could not prune webhook attempts"),
                }
            });
        });
    }
}

impl Handler<ReloadWebhooks> for WebhookDispatcher {
    type Result = ResponseActFuture<Self, Result<usize, StoreError>>;

    fn handle(&mut self, _msg: ReloadWebhooks, _ctx: &mut Context<Self>) -> Self::Result {
        let store = self.store.clone();
        let load = async move { store.run(rows::all_active).await };
        Box::pin(load.into_actor(self).map(|hooks, act, _| {
            let hooks = hooks?;
            let n = hooks.len();
            act.install(hooks);
            Ok(n)
        }))
    }
}

impl Handler<DroppedCounts> for WebhookDispatcher {
    type Result = MessageResult<DroppedCounts>;

    fn handle(&mut self, _msg: DroppedCounts, _ctx: &mut Context<Self>) -> Self::Result {
        MessageResult(self.workers.iter().map(|(id, w)| (id.clone(), w.dropped.load(Ordering::Relaxed))).collect())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn signature_is_hmac_sha256_of_timestamp_dot_body() {
        // Known answer, computed with Python's hmac module:
        // hmac.new(b"secret", b"1700000000.{}", hashlib.sha256).hexdigest()
        let sig = signature("secret", "1700000000", "{}");
        assert_eq!(sig, "sha256=b8569b78799ff9e3cbff0fc2d63a33a2b57f3282abd07c37ae5e8e7d79a5f163");
        assert_ne!(sig, signature("other", "1700000000", "{}"));
        assert_ne!(sig, signature("secret", "1700000001", "{}"));
    }
}

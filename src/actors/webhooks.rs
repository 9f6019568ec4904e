//! `WebhookDispatcher`: POSTs matching bus events to registered webhooks.
//!
//! It reads the global topic like any subscriber. Each webhook has its own worker with a
//! bounded queue: a slow or dead endpoint fills only its own queue (what does not fit is
//! counted as dropped) and never delays the bus or other webhooks. A delivery is tried up to 4
//! times (first try plus 3 retries with exponential backoff) on network errors and 5xx answers;
//! every attempt is recorded. Attempts older than 7 days are pruned.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use actix::prelude::*;
use hmac::{Hmac, Mac};
use sha2::Sha256;
use tokio::sync::mpsc;

use super::bus::{Delivery, EventBus, Subscribe, OUTBOX};
use crate::db::webhooks::{self as rows, NewAttempt, WebhookRow};
use crate::db::writer::{WriteOp, Writer};
use crate::db::{Store, StoreError};
use crate::domain::time;

/// The event types a webhook may ask for (or `*`).
pub const EVENT_TYPES: [&str; 8] = [
    "session.created",
    "session.status",
    "session.message",
    "session.result",
    "session.error",
    "session.closed",
    "stream.event",
    "permission.decision",
];
/// Deliveries waiting per webhook at most.
pub const QUEUE: usize = 1000;
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

/// Deliveries dropped per webhook because its queue was full, since the service started.
#[derive(Message)]
#[rtype(result = "HashMap<String, u64>")]
pub struct DroppedCounts;

#[derive(Message)]
#[rtype(result = "()")]
struct Incoming(Delivery);

// ---------------------------------------------------------------------------------------------
// State

struct Worker {
    events: Vec<String>,
    queue: mpsc::Sender<Delivery>,
    dropped: Arc<AtomicU64>,
}

pub struct WebhookDispatcher {
    store: Store,
    writer: Writer,
    bus: Addr<EventBus>,
    client: reqwest::Client,
    default_secret: Option<String>,
    retry_base: Duration,
    workers: HashMap<String, Worker>,
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
            // Keep a worker (and its queue) across reloads when the webhook is unchanged.
            if let Some(existing) = self.workers.remove(&hook.id) {
                workers.insert(hook.id.clone(), existing);
                continue;
            }
            let (tx, rx) = mpsc::channel(QUEUE);
            let events: Vec<String> = serde_json::from_str(&hook.events).unwrap_or_default();
            let target = Target {
                secret: hook.secret.clone().or_else(|| self.default_secret.clone()),
                id: hook.id.clone(),
                url: hook.url.clone(),
                client: self.client.clone(),
                writer: self.writer.clone(),
                retry_base: self.retry_base,
            };
            tokio::spawn(target.run(rx));
            workers.insert(hook.id, Worker { events, queue: tx, dropped: Arc::new(AtomicU64::new(0)) });
        }
        // Workers of deleted webhooks end when their queue's sender is dropped here.
        self.workers = workers;
    }
}

/// One webhook's delivery loop, in event order.
struct Target {
    id: String,
    url: String,
    secret: Option<String>,
    client: reqwest::Client,
    writer: Writer,
    retry_base: Duration,
}

impl Target {
    async fn run(self, mut queue: mpsc::Receiver<Delivery>) {
        while let Some(d) = queue.recv().await {
            self.deliver(&d).await;
        }
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
                .header("x-conduit-event", d.event.kind)
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
                event_type: d.event.kind.to_string(),
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
        // Follow every event; a large outbox absorbs bursts while workers fan out.
        let bus = self.bus.clone();
        let follow = async move {
            bus.send(Subscribe { session_id: None, since: None, outbox: OUTBOX * 10, internal: true }).await
        };
        ctx.wait(follow.into_actor(self).map(|sub, _act, ctx| {
            let Ok(sub) = sub else {
                tracing::error!("webhooks cannot follow the event bus");
                return;
            };
            let events = futures_util::stream::unfold(sub.outbox, |outbox| async move {
                let batch = outbox.next(512, Duration::from_secs(3600)).await?;
                if batch.dropped > 0 {
                    tracing::warn!(dropped = batch.dropped, "webhooks fell behind the event bus");
                }
                Some((futures_util::stream::iter(batch.events.into_iter().map(Incoming)), outbox))
            });
            ctx.add_stream(futures_util::StreamExt::flatten(events));
        }));
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

impl StreamHandler<Incoming> for WebhookDispatcher {
    fn handle(&mut self, msg: Incoming, _ctx: &mut Context<Self>) {
        let kind = msg.0.event.kind;
        for worker in self.workers.values() {
            if !worker.events.iter().any(|e| e == "*" || e == kind) {
                continue;
            }
            if worker.queue.try_send(msg.0.clone()).is_err() {
                worker.dropped.fetch_add(1, Ordering::Relaxed);
            }
        }
    }

    fn finished(&mut self, _ctx: &mut Context<Self>) {}
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

//! The crash window: what a kill -9 can lose of what clients were already shown.
//!
//! Lines are relayed to subscribers as soon as they are read, and stored behind, in batches;
//! a crash loses what was relayed and not yet committed. The bound is each session's backlog
//! (`session_backlog_bytes`) plus one batch in flight. This measures it: a session writing at a
//! known rate (then one flooding), a WebSocket client counting the lines it was shown, kill -9
//! mid-turn, and a count of the lines in the database afterwards.

use std::time::{Duration, Instant};

use diesel::prelude::*;
use diesel::sql_types::{BigInt, Text};
use futures_util::StreamExt;
use serde_json::json;
use tokio_tungstenite::tungstenite::Message;

use crate::common::ServiceProcess;

#[derive(QueryableByName)]
struct Count {
    #[diesel(sql_type = BigInt)]
    n: i64,
}

/// Shown to a client, stored after a crash `after` into the turn, and the client's rate.
async fn one_crash(model: &str, after: Duration) -> (u64, u64, f64) {
    let mut svc = ServiceProcess::start(10, &[]).await;
    let id = svc.idle_session(&reqwest::Client::new(), model).await;
    let url = format!("ws://127.0.0.1:{}/api/sessions/{id}/ws", svc.port);
    let (mut ws, _) = tokio_tungstenite::connect_async(url).await.expect("connect");
    reqwest::Client::new()
        .post(format!("{}/api/sessions/{id}/message", svc.base))
        .json(&json!({"content": "go"}))
        .send()
        .await
        .expect("send");
    let (mut shown, mut first_at) = (0u64, None);
    let deadline = Instant::now() + after;
    while let Ok(Some(Ok(frame))) = tokio::time::timeout_at(deadline.into(), ws.next()).await {
        if let Message::Text(text) = frame {
            if text.contains(r#""event":"stream_event""#) {
                first_at.get_or_insert_with(Instant::now);
                shown += 1;
            }
        }
    }
    svc.crash();
    let rate = shown as f64 / first_at.map(|t| t.elapsed().as_secs_f64()).unwrap_or(1.0).max(1e-3);
    let mut conn = conduit::db::open_sqlite(&svc.db_path(), 5000).expect("open the database");
    let stored =
        diesel::sql_query("SELECT count(*) AS n FROM messages WHERE session_id = ? AND message_type = 'stream_event'")
            .bind::<Text, _>(&id)
            .get_result::<Count>(&mut conn)
            .expect("count")
            .n as u64;
    (shown, stored, rate)
}

pub async fn crash_window() {
    for (what, model) in [("20,000 lines/s", "fake-rate-20000-400000"), ("full speed", "fake-flood-2000000")] {
        let mut windows = Vec::new();
        for _ in 0..3 {
            let (shown, stored, rate) = one_crash(model, Duration::from_secs(3)).await;
            let lost = shown.saturating_sub(stored);
            windows.push((lost, lost as f64 * 1000.0 / rate, shown, stored));
        }
        let worst = windows.iter().map(|w| w.1).fold(0.0, f64::max);
        let detail: Vec<String> = windows
            .iter()
            .map(|(lost, ms, shown, stored)| format!("{lost} of {shown} shown ({ms:.1} ms; {stored} stored)"))
            .collect();
        println!(
            "crash window, {what}: kill -9 3 s into the turn, lines shown to a client but not stored: {}; worst {worst:.1} ms of traffic (target < 100 ms)",
            detail.join(", ")
        );
    }
}

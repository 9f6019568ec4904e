//! Part 1: cross-node event latency. Sessions pinned on node A, the fake CLI writing its share
//! of the total rate with its write time stamped in each line; every session has one WebSocket
//! subscriber on node A (the same-node baseline) and one on node B (the events reach B through
//! PostgreSQL: stored by A, notified, read back by B's relay), both connected before the turns
//! start, so both see the very same events under the very same load. Each subscriber counts
//! what it got against what the CLI wrote: lost, out of order, duplicated.

use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use futures_util::{SinkExt, StreamExt};
use serde_json::Value;
use tokio_tungstenite::tungstenite::Message;

use crate::common;
use crate::node::Cluster;

fn now_ns() -> u64 {
    SystemTime::now().duration_since(UNIX_EPOCH).map(|d| d.as_nanos() as u64).unwrap_or(0)
}

pub fn pct(sorted: &[Duration], p: f64) -> Duration {
    if sorted.is_empty() {
        return Duration::ZERO;
    }
    sorted[((sorted.len() as f64 * p) as usize).min(sorted.len() - 1)]
}

pub fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1e3
}

/// What the subscribers on one node saw, all sessions together.
#[derive(Default)]
struct Seen {
    /// Distinct lines of the CLI's received.
    distinct: u64,
    /// Lines that came after a line written later than them.
    out_of_order: u64,
    duplicates: u64,
    /// Subscribers whose turn's end (the `result`) never came before the deadline.
    unfinished: u64,
    latencies: Vec<Duration>,
    /// (write time in ns since the epoch, latency) of each line, for the latency over the run.
    timeline: Vec<(u64, Duration)>,
}

impl Seen {
    fn add(&mut self, other: Seen) {
        self.distinct += other.distinct;
        self.out_of_order += other.out_of_order;
        self.duplicates += other.duplicates;
        self.unfinished += other.unfinished;
        self.latencies.extend(other.latencies);
        self.timeline.extend(other.timeline);
    }

    /// The median latency of the lines written in each second of the run, from `start_ns`.
    fn by_second(&self, start_ns: u64, seconds: u64) -> String {
        let mut buckets: Vec<Vec<Duration>> = vec![Vec::new(); seconds as usize + 1];
        for (written, latency) in &self.timeline {
            let s = (written.saturating_sub(start_ns) / 1_000_000_000).min(seconds) as usize;
            buckets[s].push(*latency);
        }
        let medians: Vec<String> = buckets
            .iter_mut()
            .filter(|b| !b.is_empty())
            .map(|b| {
                b.sort();
                format!("{:.1}", ms(pct(b, 0.5)))
            })
            .collect();
        medians.join(", ")
    }
}

/// One subscriber: reads frames until the turn's `result` (or `deadline`), noting each of the
/// `lines` stream events by its number `t<i>` and its latency from the stamped write time.
async fn subscribe(url: String, lines: u64, deadline: Instant, ready: Arc<tokio::sync::Barrier>) -> Seen {
    let (mut ws, _) = tokio_tungstenite::connect_async(&url).await.expect("connect the subscriber");
    ready.wait().await;
    let mut seen = Seen { unfinished: 1, ..Default::default() };
    let mut got = vec![false; lines as usize];
    let mut highest: Option<u64> = None;
    while let Ok(Some(Ok(msg))) = tokio::time::timeout_at(deadline.into(), ws.next()).await {
        let text = match msg {
            Message::Text(t) => t,
            Message::Ping(p) => {
                let _ = ws.send(Message::Pong(p)).await;
                continue;
            }
            Message::Close(_) => break,
            _ => continue,
        };
        let received = now_ns();
        if text.starts_with(r#"{"event":"result""#) {
            seen.unfinished = 0;
            break;
        }
        if !text.contains(r#""event":"stream_event""#) {
            continue;
        }
        let frame: Value = serde_json::from_str(&text).unwrap_or(Value::Null);
        let data = &frame["data"];
        let Some(i) = data["event"]["delta"]["text"].as_str().and_then(|t| t.get(1..)).and_then(|t| t.parse().ok())
        else {
            continue;
        };
        let i: u64 = i;
        match got.get_mut(i as usize) {
            Some(true) => seen.duplicates += 1,
            Some(slot) => {
                *slot = true;
                seen.distinct += 1;
                if highest.is_some_and(|h| i < h) {
                    seen.out_of_order += 1;
                }
            }
            None => continue,
        }
        highest = highest.max(Some(i));
        if let Some(w) = data["written_ns"].as_u64() {
            let latency = Duration::from_nanos(received.saturating_sub(w));
            seen.latencies.push(latency);
            seen.timeline.push((w, latency));
        }
    }
    seen
}

fn summary(label: &str, seen: &Seen, expected: u64) -> String {
    let l = &seen.latencies;
    format!(
        "{label}: median {:.2} ms, p90 {:.2}, p99 {:.2}, p99.9 {:.2}, max {:.2} ms over {} deliveries; lost {} of {expected}, out of order {}, duplicated {}, turns never finished {}",
        ms(pct(l, 0.5)),
        ms(pct(l, 0.9)),
        ms(pct(l, 0.99)),
        ms(pct(l, 0.999)),
        ms(pct(l, 1.0)),
        l.len(),
        expected.saturating_sub(seen.distinct),
        seen.out_of_order,
        seen.duplicates,
        seen.unfinished
    )
}

/// `sessions` sessions on node A writing `total_rate` events/s together for `seconds`.
/// `backlog`: sample A's write backlog meanwhile.
pub async fn cross_node(cluster: &Cluster, sessions: usize, total_rate: u64, seconds: u64, backlog: bool) {
    let (a, b) = (&cluster.nodes[0], &cluster.nodes[1]);
    let per_session = (total_rate / sessions as u64).max(1);
    let lines = per_session * seconds;
    let project = a.project(cluster.root.path(), "latency", sessions).await;
    let model = format!("fake-rate-{per_session}-{lines}");
    let mut ids = Vec::new();
    for _ in 0..sessions {
        let (id, owner) = a.launch(&project, &model, true).await;
        assert_eq!(owner, a.name, "pinned on A");
        a.wait_idle(&id, Duration::from_millis(5)).await;
        ids.push(id);
    }
    let ready = Arc::new(tokio::sync::Barrier::new(2 * sessions + 1));
    // Long enough for every line at the offered rate, and then some for a backlog to drain.
    let deadline = Instant::now() + Duration::from_secs(seconds * 3 + 30);
    let mut on_a = Vec::new();
    let mut on_b = Vec::new();
    for id in &ids {
        let path = format!("/api/sessions/{id}/ws");
        on_a.push(tokio::spawn(subscribe(format!("{}{path}", a.ws_base), lines, deadline, ready.clone())));
        on_b.push(tokio::spawn(subscribe(format!("{}{path}", b.ws_base), lines, deadline, ready.clone())));
    }
    ready.wait().await;
    tokio::time::sleep(Duration::from_millis(300)).await;
    let started = Instant::now();
    let start_ns = now_ns();
    // When asked, A's write backlog (health's unstored_lines) each second while the turns run,
    // at its highest of samples every 100 ms: B reads what A stored. Off by default: a health
    // request is work enough (it probes the CLIs and the database) to slow A's own deliveries.
    let backlog = backlog.then(|| {
        let (http, url) = (a.http.clone(), format!("{}/api/health", a.base));
        tokio::spawn(async move {
            let mut peaks = vec![0u64; seconds as usize + 1];
            while started.elapsed() < Duration::from_secs(seconds + 1) {
                let second = (started.elapsed().as_secs() as usize).min(seconds as usize);
                if let Ok(res) = http.get(&url).send().await {
                    let health: Value = res.json().await.unwrap_or(Value::Null);
                    let pending = health["checks"]["unstored_lines"].as_u64().unwrap_or(0);
                    peaks[second] = peaks[second].max(pending);
                }
                tokio::time::sleep(Duration::from_millis(100)).await;
            }
            peaks
        })
    });
    let cpu_before: Vec<f64> = cluster.nodes.iter().map(|n| common::cpu_seconds_of_pid(n.pid())).collect();
    for id in &ids {
        a.message(id, "go").await;
    }
    let (mut same, mut cross) = (Seen::default(), Seen::default());
    for task in on_a {
        same.add(task.await.expect("subscriber on A"));
    }
    for task in on_b {
        cross.add(task.await.expect("subscriber on B"));
    }
    let took = started.elapsed();
    let backlog = match backlog {
        Some(task) => task.await.unwrap_or_default(),
        None => Vec::new(),
    };
    let cpu: Vec<String> = cluster
        .nodes
        .iter()
        .zip(cpu_before)
        .map(|(n, before)| format!("{} {:.1} s", n.name, common::cpu_seconds_of_pid(n.pid()) - before))
        .collect();
    for id in &ids {
        a.close(id).await;
    }
    same.latencies.sort();
    cross.latencies.sort();
    let expected = lines * sessions as u64;
    println!(
        "cross-node latency: {sessions} sessions on node A x {per_session} events/s = {} events/s for {seconds} s ({expected} events; every subscriber done after {:.1} s)",
        per_session * sessions as u64,
        took.as_secs_f64()
    );
    println!("  {}", summary("subscribers on A (same node, baseline)", &same, expected));
    println!("  {}", summary("subscribers on B (cross-node)", &cross, expected));
    let backlog: Vec<String> = backlog.iter().map(u64::to_string).collect();
    let backlog =
        if backlog.is_empty() { "not sampled (BENCH_CLUSTER_BACKLOG=1)".to_string() } else { backlog.join(", ") };
    println!(
        "  median latency of the lines written in each second, on A: {} ms; on B: {} ms",
        same.by_second(start_ns, seconds),
        cross.by_second(start_ns, seconds)
    );
    println!(
        "  A's write backlog (lines read, not yet stored; the most of each second): {}; nodes' CPU meanwhile: {}",
        backlog,
        cpu.join(", ")
    );
    let ratio = |p: f64| ms(pct(&cross.latencies, p)) / ms(pct(&same.latencies, p)).max(1e-9);
    let lost = expected.saturating_sub(cross.distinct);
    println!(
        "  cross-node/same-node: median {:.2}x, p99 {:.2}x; cross-node p99 {:.2} ms (target: <= 20 ms: {}); cross-node lost {lost}, out of order {} (target: 0 and 0: {})",
        ratio(0.5),
        ratio(0.99),
        ms(pct(&cross.latencies, 0.99)),
        if ms(pct(&cross.latencies, 0.99)) <= 20.0 { "met" } else { "MISSED" },
        cross.out_of_order,
        if lost == 0 && cross.out_of_order == 0 && cross.duplicates == 0 { "met" } else { "MISSED" }
    );
}

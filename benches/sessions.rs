//! Session benchmarks: `scripts/bench.sh sessions` (builds the fake CLI, then runs this).
//!
//! Every figure is reported next to a baseline measured in the same run, as a ratio, because
//! the machines are shared and noisy:
//! 1. launch overhead: POST /api/projects/{id}/sessions until the session is idle, against a
//!    bare tokio spawn of the same fake CLI plus its initialize answer (median of N); and the
//!    sandbox's share: a sandboxed project's launches against one with `sandbox: off`;
//! 2. the same with this process's memory inflated by 1 GiB (spawning must not slow down with
//!    the parent's size: posix_spawn-style, not fork+copy);
//! 3. memory per idle session with 1,000 fake-CLI sessions (growth of the service's RSS);
//! 4. lines persisted per second: 20 sessions at 1,000 lines/s each (all stored, lag), and the
//!    same 20 sessions flooding as fast as they can (their CLIs slowed by back-pressure when
//!    storage lags, never dropped), against a bare batched insert of the same rows through the
//!    same connection type; the lines lost (must be 0) and the write path's memory at its peak
//!    (bytes read and not yet stored, and the process's RSS growth);
//! 5. the crash window: a session writing 20,000 lines/s (then one flooding) with a WebSocket
//!    client counting what it was shown; kill -9 mid-turn; the lines shown but not in the
//!    database afterwards, and how many milliseconds of that traffic they are;
//! 6. the per-result bookkeeping (totals, ledger row and rollup in one transaction): the flood
//!    with every 10th line a result against the same flood without, alternated
//!    (sessions/results.rs; BENCH_RESULT_ROUNDS, default 2).
//!
//! The service runs in this process (so its RSS is this process's), on a real loopback port.
//! Sizes can be reduced for a quick look: BENCH_LAUNCHES (default 50), BENCH_IDLE_SESSIONS
//! (default 1000), BENCH_FLOOD_LINES per session (default 50000). BENCH_PARTS picks parts by
//! name, comma-separated: launch, idle, persistence, results, crash (default: all).
//! BENCH_POSTGRES=1 runs it on PostgreSQL (launch, idle and persistence; the baseline insert
//! goes to PostgreSQL too).

mod common;
#[path = "sessions/crash.rs"]
mod crash;
#[path = "sessions/results.rs"]
mod results;
#[path = "sessions/sandbox.rs"]
mod sandbox;

use std::path::Path;
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

use common::{env_usize, fake_cli, rss_kib};
use serde_json::{json, Value};
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};

fn median(mut v: Vec<Duration>) -> Duration {
    v.sort();
    v[v.len() / 2]
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1000.0
}

struct Bench {
    base: String,
    client: reqwest::Client,
    project: String,
    app_stats: std::sync::Arc<conduit::db::writer::WriterStats>,
    /// Holds the service's folder, and ends its CLIs when the benchmark ends.
    _service: common::Started,
}

impl Bench {
    async fn start() -> Bench {
        let started = common::start_service(5000).await;
        // Idle connections are dropped before the server's 5 s keep-alive closes them.
        let client = reqwest::Client::builder()
            .pool_max_idle_per_host(64)
            .pool_idle_timeout(Duration::from_secs(2))
            .build()
            .expect("client");
        let (base, project, app_stats) = (started.base.clone(), started.project.clone(), started.stats.clone());
        Bench { base, client, project, app_stats, _service: started }
    }

    async fn launch(&self, body: Value) -> String {
        self.launch_in(&self.project, body).await
    }

    async fn launch_in(&self, project: &str, body: Value) -> String {
        let res = self
            .client
            .post(format!("{}/api/projects/{project}/sessions", self.base))
            .json(&body)
            .send()
            .await
            .expect("launch");
        assert_eq!(res.status().as_u16(), 201, "launch: {}", res.text().await.unwrap_or_default());
        let v: Value = res.json().await.expect("json");
        v["id"].as_str().expect("id").to_string()
    }

    async fn status(&self, id: &str) -> Value {
        self.client
            .get(format!("{}/api/sessions/{id}", self.base))
            .send()
            .await
            .expect("get")
            .json()
            .await
            .expect("json")
    }

    async fn wait(&self, id: &str, done: impl Fn(&Value) -> bool) {
        let deadline = Instant::now() + Duration::from_secs(120);
        loop {
            let row = self.status(id).await;
            if done(&row) {
                return;
            }
            assert!(Instant::now() < deadline, "timed out: {row}");
            assert_ne!(row["status"], "error", "session failed: {row}");
        }
    }

    async fn close(&self, id: &str) {
        self.client.delete(format!("{}/api/sessions/{id}", self.base)).send().await.expect("delete");
    }

    /// POST to idle, polling the session without pause.
    async fn launch_to_idle(&self) -> Duration {
        self.launch_to_idle_in(&self.project).await
    }

    async fn launch_to_idle_in(&self, project: &str) -> Duration {
        let started = Instant::now();
        let id = self.launch_in(project, json!({})).await;
        self.wait(&id, |r| r["status"] == "idle").await;
        let took = started.elapsed();
        self.close(&id).await;
        took
    }
}

/// The baseline: spawn the fake CLI, send initialize, read its answer.
async fn bare_spawn_to_ready(cli: &Path) -> Duration {
    let started = Instant::now();
    let mut child = tokio::process::Command::new(cli)
        .process_group(0)
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::null())
        .spawn()
        .expect("spawn");
    let mut stdin = child.stdin.take().expect("stdin");
    let mut lines = BufReader::new(child.stdout.take().expect("stdout")).lines();
    stdin
        .write_all(b"{\"type\":\"control_request\",\"request_id\":\"b1\",\"request\":{\"subtype\":\"initialize\",\"hooks\":null}}\n")
        .await
        .expect("write");
    while let Ok(Some(line)) = lines.next_line().await {
        if line.contains("control_response") {
            break;
        }
    }
    let took = started.elapsed();
    drop(stdin);
    let _ = child.wait().await;
    took
}

async fn launch_overhead(bench: &Bench, n: usize, label: &str) {
    let cli = fake_cli();
    // Interleave the two so drift on a shared machine hits both alike.
    let (mut bare, mut conduit) = (Vec::new(), Vec::new());
    for _ in 0..3 {
        bare_spawn_to_ready(&cli).await;
        bench.launch_to_idle().await;
    }
    for _ in 0..n {
        bare.push(bare_spawn_to_ready(&cli).await);
        conduit.push(bench.launch_to_idle().await);
    }
    let (b, c) = (median(bare), median(conduit));
    println!(
        "launch {label}: bare spawn+initialize median {:.2} ms, POST-to-idle median {:.2} ms, overhead {:.2} ms, ratio {:.2}x (target: overhead <= 2 ms)",
        ms(b),
        ms(c),
        ms(c.saturating_sub(b)),
        c.as_secs_f64() / b.as_secs_f64()
    );
}

async fn idle_memory(bench: &Bench, n: usize) {
    // Warm up allocators and connection pools with a few sessions first.
    for _ in 0..5 {
        bench.launch_to_idle().await;
    }
    tokio::time::sleep(Duration::from_millis(500)).await;
    let before = rss_kib();
    let mut ids = Vec::with_capacity(n);
    for _ in 0..n {
        ids.push(bench.launch(json!({})).await);
    }
    for id in &ids {
        bench.wait(id, |r| r["status"] == "idle").await;
    }
    tokio::time::sleep(Duration::from_millis(500)).await;
    let after = rss_kib();
    let per = (after.saturating_sub(before)) as f64 / n as f64;
    println!(
        "memory: {n} idle sessions grew the service's RSS from {before} KiB to {after} KiB: {per:.1} KiB per idle session, {:.2}x the 64 KiB target",
        per / 64.0
    );
    // Closing is measured too. With cgroups a close ends the CLI's cgroup and signals its
    // process group, with no walk of /proc; without them (the fallback) each close looks
    // through /proc for the session's escaped descendants, and its cost grows with the number
    // of processes on the machine.
    let started = Instant::now();
    use futures_util::StreamExt;
    futures_util::stream::iter(ids.iter()).for_each_concurrent(16, |id| bench.close(id)).await;
    let took = started.elapsed();
    println!(
        "closing: {n} idle sessions closed (16 at a time) in {:.2} s, {:.1} ms per session",
        took.as_secs_f64(),
        ms(took) / n as f64
    );
}

/// When `target` lines are stored (or `None` after `within`), and the write path's peak: bytes
/// read and not yet stored, and this process's RSS.
async fn wait_stored(bench: &Bench, target: u64, within: Duration) -> (Option<Instant>, u64, u64) {
    let deadline = Instant::now() + within;
    let (mut peak_bytes, mut peak_rss) = (0, 0);
    while Instant::now() < deadline {
        peak_bytes = peak_bytes.max(bench.app_stats.pending_bytes.load(Ordering::Relaxed));
        peak_rss = peak_rss.max(rss_kib());
        if bench.app_stats.stored.load(Ordering::Relaxed) >= target {
            return (Some(Instant::now()), peak_bytes, peak_rss);
        }
        tokio::time::sleep(Duration::from_millis(2)).await;
    }
    (None, peak_bytes, peak_rss)
}

/// `n` sessions of the fake CLI's `model`, each idle.
async fn idle_sessions(bench: &Bench, model: &str, n: usize) -> Vec<String> {
    let mut ids = Vec::with_capacity(n);
    for _ in 0..n {
        let id = bench.launch(json!({ "model": model })).await;
        bench.wait(&id, |r| r["status"] == "idle").await;
        ids.push(id);
    }
    ids
}

/// Starts one turn in each session.
async fn start_turns(bench: &Bench, ids: &[String]) {
    for id in ids {
        bench
            .client
            .post(format!("{}/api/sessions/{id}/message", bench.base))
            .json(&json!({"content": "go"}))
            .send()
            .await
            .expect("send");
    }
}

async fn persistence(bench: &Bench, flood_lines: usize) {
    // Paced: 20 sessions x 1,000 lines/s for 5 s.
    let paced_lines = 5_000;
    let ids = idle_sessions(bench, &format!("fake-rate-1000-{paced_lines}"), 20).await;
    let stored_before = bench.app_stats.stored.load(Ordering::Relaxed);
    let started = Instant::now();
    start_turns(bench, &ids).await;
    let expected = stored_before + 20 * (paced_lines as u64 + 4);
    let (done, _, _) = wait_stored(bench, expected, Duration::from_secs(60)).await;
    let stored = bench.app_stats.stored.load(Ordering::Relaxed) - stored_before;
    match done {
        Some(t) => println!(
            "persist paced: 20 sessions x 1,000 lines/s: {stored} lines stored in {:.2} s (offered for 5.00 s), all of them, lag at the end {:.0} ms",
            (t - started).as_secs_f64(),
            ((t - started).as_secs_f64() - 5.0).max(0.0) * 1000.0
        ),
        None => println!("persist paced: only {stored} of {} lines stored within 60 s", expected - stored_before),
    }
    for id in &ids {
        bench.close(id).await;
    }

    // Flood: 20 sessions writing as fast as they can.
    let ids = idle_sessions(bench, &format!("fake-flood-{flood_lines}"), 20).await;
    let stored_before = bench.app_stats.stored.load(Ordering::Relaxed);
    let rss_before = rss_kib();
    let started = Instant::now();
    start_turns(bench, &ids).await;
    let total = 20 * (flood_lines as u64 + 4);
    let (done, peak_bytes, peak_rss) = wait_stored(bench, stored_before + total, Duration::from_secs(300)).await;
    let elapsed = done.map(|t| (t - started).as_secs_f64());
    for id in &ids {
        bench.close(id).await;
    }
    let stored = bench.app_stats.stored.load(Ordering::Relaxed) - stored_before;
    let lost = total.saturating_sub(stored) + bench.app_stats.rejected.load(Ordering::Relaxed);
    println!(
        "persist flood, write path at its peak: {:.1} MiB read and not yet stored (20 sessions x {} KiB backlog each at most); RSS +{:.1} MiB",
        peak_bytes as f64 / 1048576.0,
        default_backlog_kib(),
        peak_rss.saturating_sub(rss_before) as f64 / 1024.0
    );

    // Baseline: the same number of rows, batched the same way, straight into a database.
    let raw = raw_insert_rate(total as usize).await;
    match elapsed {
        Some(s) => {
            let rate = total as f64 / s;
            println!(
                "persist flood: {total} lines from 20 sessions stored in {s:.2} s = {rate:.0} lines/s; bare batched insert {raw:.0} rows/s; ratio {:.2}x; lost {lost} (target: >= 0.8x, 0 lost)",
                rate / raw
            );
        }
        None => println!("persist flood: not all {total} lines were stored within 300 s (lost {lost})"),
    }
}

async fn raw_insert_rate(rows: usize) -> f64 {
    use conduit::db::messages::{insert_many, NewMessage};
    let (_dir, store) = common::seeded_store().await;
    let batch: Vec<NewMessage> = (0..5000)
        .map(|i| NewMessage {
            session_id: "s".into(),
            direction: "from_cli",
            message_type: "stream_event".into(),
            message_subtype: None,
            content: format!(r#"{{"type":"stream_event","event":{{"type":"content_block_delta","index":0,"delta":{{"type":"text_delta","text":"t{i}"}}}},"session_id":"x"}}"#),
            timestamp: conduit::domain::time::now(),
            seq: Some(i + 1),
            cli_seq: None,
        })
        .collect();
    let started = Instant::now();
    let batches = rows.div_ceil(batch.len());
    store
        .run(move |conn| {
            use diesel::Connection;
            for _ in 0..batches {
                conn.transaction(|c| insert_many(c, &batch))?;
            }
            Ok(())
        })
        .await
        .expect("raw insert");
    (batches * 5000) as f64 / started.elapsed().as_secs_f64()
}

fn main() {
    // `cargo bench` passes --bench; `cargo test --all-targets` runs this binary without it, and
    // a benchmark of 1,000 sessions has no place inside the test suite.
    if !std::env::args().any(|a| a == "--bench") {
        println!("sessions benchmark: skipped (run it with scripts/bench.sh sessions)");
        return;
    }
    let launches = env_usize("BENCH_LAUNCHES", 50);
    let idle = env_usize("BENCH_IDLE_SESSIONS", 1000);
    let flood = env_usize("BENCH_FLOOD_LINES", 50_000);
    let _ = conduit::process::raise_open_file_limit();
    actix_web::rt::System::new().block_on(async move {
        let parts = std::env::var("BENCH_PARTS").unwrap_or_default();
        let part = |name: &str| parts.is_empty() || parts.split(',').any(|p| p.trim() == name);
        let bench = Bench::start().await;
        if part("launch") {
            launch_overhead(&bench, launches, "(service as is)").await;
            sandbox::sandbox_overhead(&bench, launches).await;
            // 1 GiB of touched memory in the service's own process.
            let ballast = vec![1u8; 1 << 30];
            std::hint::black_box(&ballast);
            launch_overhead(&bench, launches, "(service inflated by 1 GiB)").await;
        }
        if part("idle") {
            idle_memory(&bench, idle).await;
        }
        if part("persistence") {
            persistence(&bench, flood).await;
        }
        // These two read the SQLite file to count what was stored.
        let sqlite = !common::database::on_postgres();
        if part("results") && sqlite {
            results::result_bookkeeping(&bench, flood, env_usize("BENCH_RESULT_ROUNDS", 2)).await;
        }
        if part("crash") && sqlite {
            crash::crash_window().await;
        }
        if !sqlite && (part("results") || part("crash")) {
            println!("results and crash: skipped on PostgreSQL (they count rows in the SQLite file)");
        }
    });
}

/// The compiled-in per-session backlog (the service runs with its defaults).
fn default_backlog_kib() -> usize {
    let home = std::env::var("HOME").unwrap_or_else(|_| "/".to_string());
    let env = std::collections::BTreeMap::from([("HOME".to_string(), home)]);
    match conduit::config::Settings::load_from(None, &env) {
        Ok(settings) => settings.session_backlog_bytes / 1024,
        Err(e) => panic!("the default settings do not load: {e}"),
    }
}

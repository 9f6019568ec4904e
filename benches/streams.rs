//! Stream benchmarks: `scripts/bench.sh streams`.
//!
//! 1. Throughput: the fake CLI writes N `stream_event` lines as fast as it can; deliveries per
//!    second to 1, 10 and 100 WebSocket subscribers reading as fast as they can, against a bare
//!    tokio-tungstenite broadcast of the same lines to the same number of clients in the same
//!    run. The service runs with its default outbox (1,000 events), so clients that fall behind
//!    catch up from the history; every client counts what it got and checks the order, and the
//!    lines lost and out of order are reported.
//! 2. Latency: 20 sessions at 1,000 events/s, one subscriber each; median and p99 from the CLI's
//!    write (stamped in the line) to the subscriber's receipt, against a bare pipeline in the
//!    same run (the same 20 fake CLIs spawned directly, each line forwarded by a plain tokio task
//!    to a tokio-tungstenite client), which shows what the machine itself adds.
//! 3. A slow subscriber (reading one message a second) next to nine fast ones while the CLI
//!    writes 10,000 events/s, after a control run of the nine alone for as long: the service's
//!    memory growth beyond the control run's against the slow one's outbox cap (it reads from the
//!    shared history once behind, so it holds no copies), whether it missed anything, and the
//!    fast ones' p99 against the control run's.
//!
//! 4. Redaction's cost: the same flood (BENCH_LINES) to BENCH_REDACTION_SUBSCRIBERS (default 10)
//!    subscribers, but each delta a line of code talk naming keys and tokens (so the rules run,
//!    as on real transcripts) and every 1,000th holding a GitHub token: deliveries per second
//!    with `redaction` at its default (`at_rest`: the writer and the bus both redact) against a
//!    service with `redaction = "off"` (and `in_flight`, where only the bus does), alternating, two rounds each (the mean of each side); the
//!    lines lost and the tokens that came through redacted on both.
//!
//! Sizes: BENCH_LINES (default 100000), BENCH_SUBSCRIBERS (default 1,10,100),
//! BENCH_LATENCY_SESSIONS (default 20), BENCH_SLOW_SECONDS (default 60). BENCH_ONLY=redaction
//! runs the fourth part alone.

mod common;

use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use common::env_usize;
use futures_util::{SinkExt, StreamExt};
use serde_json::{json, Value};
use tokio_tungstenite::tungstenite::Message;

fn now_ns() -> u128 {
    SystemTime::now().duration_since(UNIX_EPOCH).map(|d| d.as_nanos()).unwrap_or(0)
}

fn pct(sorted: &[Duration], p: f64) -> Duration {
    if sorted.is_empty() {
        return Duration::ZERO;
    }
    sorted[((sorted.len() as f64 * p) as usize).min(sorted.len() - 1)]
}

struct Service {
    process: common::ServiceProcess,
    base: String,
    ws_base: String,
    http: reqwest::Client,
}

impl Service {
    /// The release binary in its own process; `outbox` is its `subscriber_outbox` setting.
    async fn start(outbox: usize) -> Service {
        Service::start_with(&[("subscriber_outbox", outbox.to_string())]).await
    }

    /// The release binary in its own process with these settings.
    async fn start_with(settings: &[(&str, String)]) -> Service {
        let process = common::ServiceProcess::start(500, settings).await;
        let http = reqwest::Client::builder().pool_idle_timeout(Duration::from_secs(2)).build().expect("client");
        let base = process.base.clone();
        Service { ws_base: format!("ws://127.0.0.1:{}", process.port), base, http, process }
    }

    async fn session(&self, model: &str) -> String {
        self.process.idle_session(&self.http, model).await
    }

    async fn send(&self, id: &str) {
        self.http
            .post(format!("{}/api/sessions/{id}/message", self.base))
            .json(&json!({"content": "go"}))
            .send()
            .await
            .expect("send");
    }
}

/// What one subscriber saw.
#[derive(Default)]
struct Seen {
    lines: u64,
    in_order: bool,
    /// Lines that came with another number than the next expected one.
    out_of_order: u64,
    warnings: u64,
    latencies: Vec<Duration>,
    /// Lines that came with a `[REDACTED:…]` marker.
    redacted: u64,
}

/// Reads frames until `want` stream events arrived (or the socket closes); checks their order.
async fn consume(url: String, want: u64, delay_each: Option<Duration>, ready: Arc<tokio::sync::Barrier>) -> Seen {
    let (mut ws, _) = tokio_tungstenite::connect_async(&url).await.expect("connect");
    ready.wait().await;
    let mut seen = Seen { in_order: true, ..Default::default() };
    let mut next = 0u64;
    while seen.lines < want {
        let Some(Ok(msg)) = ws.next().await else { break };
        let text = match msg {
            Message::Text(t) => t,
            Message::Ping(p) => {
                let _ = ws.send(Message::Pong(p)).await;
                continue;
            }
            _ => continue,
        };
        if let Some(d) = delay_each {
            tokio::time::sleep(d).await;
        }
        if text.contains(r#""event":"warning""#) {
            seen.warnings += 1;
            continue;
        }
        // The turn's end: whatever has not arrived by now was dropped.
        if text.starts_with(r#"{"event":"result""#) {
            break;
        }
        if !text.contains(r#""event":"stream_event""#) {
            continue;
        }
        // The line's own "t<i>" and, when stamped, "written_ns".
        let frame: Value = serde_json::from_str(&text).unwrap_or(Value::Null);
        let text = frame["data"]["event"]["delta"]["text"].as_str().unwrap_or("");
        let i: u64 = text.get(1..).and_then(|t| t.split(' ').next()).and_then(|n| n.parse().ok()).unwrap_or(u64::MAX);
        if text.contains("[REDACTED:") {
            seen.redacted += 1;
        }
        if i != next {
            seen.in_order = false;
            seen.out_of_order += 1;
        }
        next = i + 1;
        if let Some(w) = frame["data"]["written_ns"].as_u64() {
            seen.latencies.push(Duration::from_nanos((now_ns() as u64).saturating_sub(w)));
        }
        seen.lines += 1;
    }
    seen
}

/// What `k` subscribers got of `lines`: deliveries per second, lines lost, lines out of order.
struct Broadcast {
    rate: f64,
    lost: u64,
    out_of_order: u64,
    redacted: u64,
}

/// Conduit: one session flooding `lines` (the fake CLI's `scenario`: `flood` or `prose`), `k`
/// WebSocket subscribers.
async fn conduit_broadcast(svc: &Service, scenario: &str, k: usize, lines: u64) -> Broadcast {
    let id = svc.session(&format!("fake-{scenario}-{lines}")).await;
    let ready = Arc::new(tokio::sync::Barrier::new(k + 1));
    let url = format!("{}/api/sessions/{id}/ws", svc.ws_base);
    let clients: Vec<_> = (0..k).map(|_| tokio::spawn(consume(url.clone(), lines, None, ready.clone()))).collect();
    ready.wait().await;
    tokio::time::sleep(Duration::from_millis(200)).await;
    let started = Instant::now();
    svc.send(&id).await;
    let (mut lost, mut out_of_order, mut delivered, mut redacted) = (0, 0, 0, 0);
    for c in clients {
        let seen = c.await.expect("client");
        lost += lines.saturating_sub(seen.lines);
        out_of_order += seen.out_of_order;
        delivered += seen.lines;
        redacted += seen.redacted;
    }
    let rate = delivered as f64 / started.elapsed().as_secs_f64();
    let _ = svc.http.delete(format!("{}/api/sessions/{id}", svc.base)).send().await;
    Broadcast { rate, lost, out_of_order, redacted }
}

/// The baseline: a bare tokio-tungstenite server broadcasting the same lines to `k` clients.
async fn bare_broadcast(k: usize, lines: u64) -> f64 {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.expect("bind");
    let port = listener.local_addr().expect("addr").port();
    let (tx, _) = tokio::sync::broadcast::channel::<Arc<String>>(lines as usize + 16);
    let accept_tx = tx.clone();
    // The server task and this one: both know then that every client is accepted.
    let connected = Arc::new(tokio::sync::Barrier::new(2));
    let server_ready = connected.clone();
    tokio::spawn(async move {
        for _ in 0..k {
            let (stream, _) = listener.accept().await.expect("accept");
            let mut rx = accept_tx.subscribe();
            tokio::spawn(async move {
                let mut ws = tokio_tungstenite::accept_async(stream).await.expect("handshake");
                while let Ok(line) = rx.recv().await {
                    if ws.send(Message::Text(line.as_ref().clone())).await.is_err() {
                        break;
                    }
                }
            });
        }
        server_ready.wait().await;
    });
    let ready = Arc::new(tokio::sync::Barrier::new(k + 1));
    let url = format!("ws://127.0.0.1:{port}/");
    let clients: Vec<_> = (0..k).map(|_| tokio::spawn(consume(url.clone(), lines, None, ready.clone()))).collect();
    ready.wait().await;
    connected.wait().await;
    tokio::time::sleep(Duration::from_millis(200)).await;
    let started = Instant::now();
    for i in 0..lines {
        // The same frame shape Conduit sends, so both sides parse alike.
        let line = format!(
            r#"{{"event":"stream_event","seq":{i},"type":"stream.event","session_id":"x","timestamp":"t","data":{{"type":"stream_event","event":{{"type":"content_block_delta","index":0,"delta":{{"type":"text_delta","text":"t{i}"}}}}}}}}"#
        );
        let _ = tx.send(Arc::new(line));
        if i % 1024 == 0 {
            tokio::task::yield_now().await;
        }
    }
    let _ = tx.send(Arc::new(r#"{"event":"result"}"#.to_string()));
    for c in clients {
        c.await.expect("client");
    }
    (k as u64 * lines) as f64 / started.elapsed().as_secs_f64()
}

async fn throughput(svc: &Service, lines: u64, subscribers: &[usize]) {
    for &k in subscribers {
        let bare = bare_broadcast(k, lines).await;
        let b = conduit_broadcast(svc, "flood", k, lines).await;
        println!(
            "throughput {k:>3} subscribers: Conduit {:.0} deliveries/s, bare broadcast {bare:.0}/s, ratio {:.2}x; lost {}, out of order {} of {} (target: 0 lost, 0 out of order, >= 0.8x)",
            b.rate,
            b.rate / bare,
            b.lost,
            b.out_of_order,
            k as u64 * lines
        );
    }
}

/// Part 4: the prose flood with redaction on (the default) against off, alternating.
async fn redaction_cost(lines: u64, k: usize) {
    let mut runs: [Vec<Broadcast>; 3] = [Vec::new(), Vec::new(), Vec::new()];
    for _round in 0..2 {
        for (side, mode) in ["at_rest", "off", "in_flight"].into_iter().enumerate() {
            let svc = Service::start_with(&[("redaction", mode.to_string())]).await;
            runs[side].push(conduit_broadcast(&svc, "prose", k, lines).await);
        }
    }
    let mean = |v: &[Broadcast]| v.iter().map(|b| b.rate).sum::<f64>() / v.len().max(1) as f64;
    let (on_rate, off_rate, in_flight_rate) = (mean(&runs[0]), mean(&runs[1]), mean(&runs[2]));
    let sum = |v: &[Broadcast], f: fn(&Broadcast) -> u64| v.iter().map(f).sum::<u64>();
    let planted = lines / 1000 * k as u64 * 2;
    println!(
        "redaction relay, {k} subscribers x {lines} prose lines, mean of 2 runs each: on (at_rest) {on_rate:.0} deliveries/s, off {off_rate:.0}/s, ratio {:.2}x (target >= 0.9x); lost on {} off {}, out of order on {} off {}; planted tokens delivered redacted: on {} of {planted}, off {} (expected 0); in_flight (the bus redacts, the writer does not) {in_flight_rate:.0}/s, {:.2}x, lost {}",
        on_rate / off_rate.max(1e-9),
        sum(&runs[0], |b| b.lost),
        sum(&runs[1], |b| b.lost),
        sum(&runs[0], |b| b.out_of_order),
        sum(&runs[1], |b| b.out_of_order),
        sum(&runs[0], |b| b.redacted),
        sum(&runs[1], |b| b.redacted),
        in_flight_rate / off_rate.max(1e-9),
        sum(&runs[2], |b| b.lost),
    );
}

/// `sessions` sessions at `rate` events/s for `seconds`, each with `fast` subscribers (and one
/// slow one reading a message a second when `slow`); returns the fast ones' latencies (sorted),
/// whether they got every line in order, and the drop warnings the slow ones received.
async fn paced(
    svc: &Service,
    sessions: usize,
    fast: usize,
    rate: u64,
    seconds: u64,
    slow: bool,
) -> (Vec<Duration>, bool, u64) {
    let lines = rate * seconds;
    let mut ids = Vec::new();
    for _ in 0..sessions {
        ids.push(svc.session(&format!("fake-rate-{rate}-{lines}")).await);
    }
    let subscribers = fast + usize::from(slow);
    let ready = Arc::new(tokio::sync::Barrier::new(sessions * subscribers + 1));
    let mut clients = Vec::new();
    for id in &ids {
        let url = format!("{}/api/sessions/{id}/ws", svc.ws_base);
        for s in 0..subscribers {
            let delay = (slow && s == fast).then_some(Duration::from_secs(1));
            let want = if delay.is_some() { seconds } else { lines };
            clients.push((delay.is_some(), tokio::spawn(consume(url.clone(), want, delay, ready.clone()))));
        }
    }
    ready.wait().await;
    tokio::time::sleep(Duration::from_millis(200)).await;
    for id in &ids {
        svc.send(id).await;
    }
    let (mut all, mut ok, mut slow_warnings) = (Vec::new(), true, 0);
    for (is_slow, c) in clients {
        let seen = c.await.expect("client");
        if is_slow {
            slow_warnings += seen.warnings;
        } else {
            ok &= seen.lines == lines && seen.in_order;
            all.extend(seen.latencies);
        }
    }
    for id in &ids {
        let _ = svc.http.delete(format!("{}/api/sessions/{id}", svc.base)).send().await;
    }
    all.sort();
    (all, ok, slow_warnings)
}

/// The latency baseline: `sessions` fake CLIs at `rate` lines/s spawned directly, each line
/// wrapped in the same frame shape and forwarded by a bare tokio task to one tokio-tungstenite
/// client. Returns the sorted latencies and whether every client got every line in order.
async fn bare_paced(sessions: usize, rate: u64, seconds: u64) -> (Vec<Duration>, bool) {
    use tokio::io::{AsyncBufReadExt, AsyncWriteExt};
    let lines = rate * seconds;
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.expect("bind");
    let url = format!("ws://127.0.0.1:{}/", listener.local_addr().expect("addr").port());
    let ready = Arc::new(tokio::sync::Barrier::new(sessions + 1));
    let clients: Vec<_> =
        (0..sessions).map(|_| tokio::spawn(consume(url.clone(), lines, None, ready.clone()))).collect();
    let mut stdins = Vec::new();
    let mut forwarders = Vec::new();
    for _ in 0..sessions {
        let (stream, _) = listener.accept().await.expect("accept");
        let mut ws = tokio_tungstenite::accept_async(stream).await.expect("handshake");
        let mut cli = tokio::process::Command::new(common::fake_cli())
            .arg(format!("--model=fake-rate-{rate}-{lines}"))
            .stdin(std::process::Stdio::piped())
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::null())
            .kill_on_drop(true)
            .spawn()
            .expect("spawn the fake CLI");
        stdins.push(cli.stdin.take().expect("stdin"));
        let mut out = tokio::io::BufReader::new(cli.stdout.take().expect("stdout")).lines();
        forwarders.push(tokio::spawn(async move {
            let mut seq = 0u64;
            while let Ok(Some(line)) = out.next_line().await {
                seq += 1;
                let frame = if line.contains(r#""type":"result""#) {
                    r#"{"event":"result"}"#.to_string()
                } else if !line.contains(r#""type":"stream_event""#) {
                    continue;
                } else {
                    format!(
                        r#"{{"event":"stream_event","seq":{seq},"type":"stream.event","session_id":"x","timestamp":"t","data":{line}}}"#
                    )
                };
                if ws.send(Message::Text(frame)).await.is_err() {
                    break;
                }
            }
            drop(cli);
        }));
    }
    ready.wait().await;
    tokio::time::sleep(Duration::from_millis(200)).await;
    for stdin in &mut stdins {
        let _ = stdin.write_all(b"{\"type\":\"user\",\"message\":{\"role\":\"user\",\"content\":\"go\"}}\n").await;
    }
    let (mut all, mut ok) = (Vec::new(), true);
    for c in clients {
        let seen = c.await.expect("client");
        ok &= seen.lines == lines && seen.in_order;
        all.extend(seen.latencies);
    }
    drop(stdins);
    for f in forwarders {
        f.abort();
    }
    all.sort();
    (all, ok)
}

/// A 10k/s session with nine fast subscribers (and a slow one when `slow`), the service's RSS
/// sampled every second.
struct Sampled {
    latencies: Vec<Duration>,
    ok: bool,
    warnings: u64,
    before: u64,
    /// RSS 10 s in, when the slow one's outbox and socket buffers are long full.
    settled: u64,
    end: u64,
    peak: u64,
}

async fn sampled(svc: &Service, seconds: u64, slow: bool) -> Sampled {
    let pid = svc.process.pid();
    let before = svc.process.rss_kib();
    let stop = Arc::new(std::sync::atomic::AtomicBool::new(false));
    let sampling = stop.clone();
    let sampler = tokio::spawn(async move {
        let mut samples = Vec::new();
        while !sampling.load(std::sync::atomic::Ordering::Relaxed) {
            samples.push(common::rss_kib_of_pid(pid));
            tokio::time::sleep(Duration::from_secs(1)).await;
        }
        samples
    });
    let (latencies, ok, warnings) = paced(svc, 1, 9, 10_000, seconds, slow).await;
    let end = svc.process.rss_kib();
    stop.store(true, std::sync::atomic::Ordering::Relaxed);
    let samples = sampler.await.unwrap_or_default();
    let settled = samples.get(10).copied().unwrap_or(before);
    let peak = samples.iter().copied().max().unwrap_or(end).max(end);
    Sampled { latencies, ok, warnings, before, settled, end, peak }
}

fn main() {
    if !std::env::args().any(|a| a == "--bench") {
        println!("streams benchmark: skipped (run it with scripts/bench.sh streams)");
        return;
    }
    let lines = env_usize("BENCH_LINES", 100_000) as u64;
    let slow_seconds = env_usize("BENCH_SLOW_SECONDS", 60) as u64;
    let latency_sessions = env_usize("BENCH_LATENCY_SESSIONS", 20);
    let subscriber_counts: Vec<usize> = std::env::var("BENCH_SUBSCRIBERS")
        .unwrap_or_else(|_| "1,10,100".into())
        .split(',')
        .filter_map(|k| k.trim().parse().ok())
        .collect();
    let _ = conduit::process::raise_open_file_limit();
    // The clients (and the bare baseline's server) on two threads; the service in its own process.
    let runtime = tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build().expect("runtime");
    let redaction_subscribers = env_usize("BENCH_REDACTION_SUBSCRIBERS", 10);
    if std::env::var("BENCH_ONLY").is_ok_and(|only| only == "redaction") {
        runtime.block_on(redaction_cost(lines, redaction_subscribers));
        return;
    }
    runtime.block_on(async move {
        // The default outbox: clients that fall behind catch up from the stream's history.
        let svc = Service::start(conduit::actors::bus::OUTBOX).await;
        throughput(&svc, lines, &subscriber_counts).await;
        redaction_cost(lines, redaction_subscribers).await;

        let (bare, bare_ok) = bare_paced(latency_sessions, 1000, 5).await;
        let cpu_before = common::cpu_seconds_of_pid(svc.process.pid());
        let (lat, ok, _) = paced(&svc, latency_sessions, 1, 1000, 5, false).await;
        let cpu = common::cpu_seconds_of_pid(svc.process.pid()) - cpu_before;
        println!(
            "service CPU during the latency run: {:.2} s for {} events, {:.1} us per event",
            cpu,
            lat.len(),
            cpu * 1e6 / lat.len().max(1) as f64
        );
        let ms = |v: &[Duration], p: f64| pct(v, p).as_secs_f64() * 1e3;
        println!(
            "latency: {latency_sessions} sessions x 1,000 events/s: median {:.2} ms, p90 {:.2}, p99 {:.2}, p99.9 {:.2}, max {:.2} ms over {} deliveries, all in order: {ok} (target: p99 <= 2 ms)",
            ms(&lat, 0.5), ms(&lat, 0.9), ms(&lat, 0.99), ms(&lat, 0.999), ms(&lat, 1.0),
            lat.len()
        );
        println!(
            "latency, bare pipeline (same CLIs, plain tokio forwarders): median {:.2} ms, p90 {:.2}, p99 {:.2}, p99.9 {:.2}, max {:.2} ms, all in order: {bare_ok}; Conduit/bare: median {:.2}x, p99 {:.2}x",
            ms(&bare, 0.5), ms(&bare, 0.9), ms(&bare, 0.99), ms(&bare, 0.999), ms(&bare, 1.0),
            ms(&lat, 0.5) / ms(&bare, 0.5).max(1e-9),
            ms(&lat, 0.99) / ms(&bare, 0.99).max(1e-9)
        );

        // The same nine fast subscribers on a 10k/s session for the same time, without and
        // then with the slow one: the control run gives the fast ones' unloaded p99 and the
        // memory the service grows anyway (topic history, SQLite page cache, allocator), so
        // what the slow subscriber costs is the difference.
        let control = sampled(&svc, slow_seconds, false).await;
        let loaded = sampled(&svc, slow_seconds, true).await;
        let cap_kib = conduit::actors::bus::OUTBOX_BYTES / 1024;
        for (name, run) in [("control (9 fast)", &control), ("with the slow one", &loaded)] {
            println!(
                "memory, {name}: RSS {} KiB before, {} KiB at 10 s, {} KiB at {slow_seconds} s (peak {}): growth {} KiB, of which after 10 s {} KiB",
                run.before, run.settled, run.end, run.peak,
                run.end as i64 - run.before as i64,
                run.end as i64 - run.settled as i64
            );
        }
        let extra = (loaded.end as i64 - loaded.before as i64) - (control.end as i64 - control.before as i64);
        println!(
            "slow subscriber memory: {extra} KiB more growth than the control run, against its outbox cap of {cap_kib} KiB (once behind it reads the shared history; target: within the cap)"
        );
        println!(
            "slow subscriber: 9 fast + 1 reading 1/s, 10,000 events/s for {slow_seconds} s: missed-event warnings seen by the slow one within its {slow_seconds} reads: {} (target 0); fast p99 {:.2} ms vs {:.2} ms in the control run, ratio {:.2}x (target <= 2x); fast ones complete and in order: {}",
            loaded.warnings,
            pct(&loaded.latencies, 0.99).as_secs_f64() * 1e3,
            pct(&control.latencies, 0.99).as_secs_f64() * 1e3,
            pct(&loaded.latencies, 0.99).as_secs_f64() / pct(&control.latencies, 0.99).as_secs_f64().max(1e-9),
            loaded.ok && control.ok
        );
    });
}

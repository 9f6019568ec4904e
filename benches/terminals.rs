//! Terminal benchmark: `scripts/bench.sh terminals`.
//!
//! Every figure is reported next to a baseline measured in the same run, as a ratio:
//! 1. keystroke echo round trip: one key sent, until the shell's answer arrives (bash's line
//!    editor redraws the line), N times (a key, then a backspace), over the service's WebSocket
//!    (the service as its own process, the shell in its default sandbox), against the same
//!    keys typed into the same bash on a bare PTY in this process (no service, no sandbox);
//!    median, p99 and max (target: p99 <= 10 ms);
//! 2. output and loss: `seq 1 M` in the same two shells, read to its end: every number must
//!    arrive, once and in order (lost, duplicated or reordered lines are counted; target 0),
//!    and how long it took, as MB/s against the bare PTY.
//!
//! Sizes: BENCH_ECHOES (key round trips, default 2000), BENCH_SEQ (default 200000).

mod common;

use std::time::{Duration, Instant};

use common::{env_usize, ServiceProcess};
use futures_util::{SinkExt, StreamExt};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio_tungstenite::tungstenite::Message;

type Socket = tokio_tungstenite::WebSocketStream<tokio_tungstenite::MaybeTlsStream<tokio::net::TcpStream>>;

/// A terminal to type into and read from.
trait Tty {
    async fn send(&mut self, bytes: &[u8]);
    /// The next output (empty after `within` without any).
    async fn recv(&mut self, within: Duration) -> Vec<u8>;
}

struct Ws(Socket);

impl Tty for Ws {
    async fn send(&mut self, bytes: &[u8]) {
        self.0.send(Message::Binary(bytes.to_vec())).await.expect("send");
    }

    async fn recv(&mut self, within: Duration) -> Vec<u8> {
        loop {
            match tokio::time::timeout(within, self.0.next()).await {
                Ok(Some(Ok(Message::Binary(bytes)))) => return bytes,
                Ok(Some(Ok(_))) => continue,
                Ok(other) => panic!("the terminal's WebSocket ended: {other:?}"),
                Err(_) => return Vec::new(),
            }
        }
    }
}

struct Bare {
    reader: pty_process::OwnedReadPty,
    writer: pty_process::OwnedWritePty,
    _child: tokio::process::Child,
}

impl Tty for Bare {
    async fn send(&mut self, bytes: &[u8]) {
        self.writer.write_all(bytes).await.expect("write to the PTY");
    }

    async fn recv(&mut self, within: Duration) -> Vec<u8> {
        let mut buf = vec![0u8; 64 * 1024];
        match tokio::time::timeout(within, self.reader.read(&mut buf)).await {
            Ok(Ok(n)) => {
                buf.truncate(n);
                buf
            }
            Ok(Err(e)) => panic!("the bare PTY failed: {e}"),
            Err(_) => Vec::new(),
        }
    }
}

/// Bash on a bare PTY, with the environment the service gives its shells here.
fn bare_bash(home: &std::path::Path) -> Bare {
    let (pty, pts) = pty_process::open().expect("a PTY");
    pty.resize(pty_process::Size::new(24, 80)).expect("size");
    let child = pty_process::Command::new("/bin/bash")
        .env_clear()
        .env("PATH", std::env::var_os("PATH").unwrap_or_default())
        .env("HOME", home)
        .env("TERM", "xterm-256color")
        .current_dir(home)
        .spawn(pts)
        .expect("bash on a bare PTY");
    let (reader, writer) = pty.into_split();
    Bare { reader, writer, _child: child }
}

/// Reads until `needle` has been seen, then until the output settles (the prompt).
async fn settle(tty: &mut impl Tty, needle: &str) {
    tty.send(format!("echo {needle}-$((1+1))\r").as_bytes()).await;
    let wanted = format!("{needle}-2");
    let deadline = Instant::now() + Duration::from_secs(30);
    let mut seen = String::new();
    while !seen.contains(&wanted) {
        assert!(Instant::now() < deadline, "the shell did not answer: {seen:?}");
        seen.push_str(&String::from_utf8_lossy(&tty.recv(Duration::from_secs(1)).await));
    }
    while !tty.recv(Duration::from_millis(300)).await.is_empty() {}
}

/// `n` round trips (a key, then a backspace): from each send until output arrives.
async fn round_trips(tty: &mut impl Tty, n: usize) -> Vec<Duration> {
    let mut times = Vec::with_capacity(n);
    for i in 0..n {
        let key: &[u8] = if i % 2 == 0 { b"x" } else { b"\x7f" };
        let sent = Instant::now();
        tty.send(key).await;
        let got = tty.recv(Duration::from_secs(10)).await;
        assert!(!got.is_empty(), "no echo within 10 s");
        times.push(sent.elapsed());
        // Whatever else the redraw wrote, before the next key.
        while !tty.recv(Duration::from_micros(500)).await.is_empty() {}
    }
    times.sort();
    times
}

/// What `seq 1 m` printed, as a client read it.
struct Sequence {
    lost: usize,
    repeated: usize,
    out_of_order: usize,
    bytes: usize,
    took: Duration,
}

/// `seq 1 m` read to its end.
async fn sequence(tty: &mut impl Tty, m: usize) -> Sequence {
    let started = Instant::now();
    tty.send(format!("seq 1 {m}; echo seq-done-$((2+3))\r").as_bytes()).await;
    let mut all = Vec::new();
    let deadline = Instant::now() + Duration::from_secs(300);
    while !String::from_utf8_lossy(&all[all.len().saturating_sub(64)..]).contains("seq-done-5") {
        assert!(Instant::now() < deadline, "seq did not finish");
        all.extend(tty.recv(Duration::from_secs(5)).await);
    }
    let took = started.elapsed();
    let text = String::from_utf8_lossy(&all);
    // A line is what follows its last carriage return (bash ends bracketed paste with one).
    let numbers: Vec<usize> = text
        .split('\n')
        .filter_map(|l| l.trim_end_matches('\r').rsplit('\r').next().and_then(|l| l.trim().parse().ok()))
        .filter(|n| (1..=m).contains(n))
        .collect();
    let mut seen = vec![false; m + 1];
    let mut repeated = 0;
    for &n in &numbers {
        repeated += usize::from(std::mem::replace(&mut seen[n], true));
    }
    let lost = seen[1..].iter().filter(|s| !**s).count();
    let out_of_order = numbers.windows(2).filter(|w| w[1] <= w[0]).count();
    Sequence { lost, repeated, out_of_order, bytes: all.len(), took }
}

fn pct(sorted: &[Duration], p: f64) -> f64 {
    let i = ((sorted.len() as f64 * p).ceil() as usize).clamp(1, sorted.len()) - 1;
    sorted[i].as_secs_f64() * 1e3
}

fn main() {
    if !std::env::args().any(|a| a == "--bench") {
        println!("terminals benchmark: skipped (run it with scripts/bench.sh terminals)");
        return;
    }
    let echoes = env_usize("BENCH_ECHOES", 2000);
    let seq = env_usize("BENCH_SEQ", 200_000);
    actix_web::rt::System::new().block_on(async move {
        let svc = ServiceProcess::start(10, &[]).await;
        let http = reqwest::Client::new();
        let started: serde_json::Value = http
            .post(format!("{}/api/projects/{}/terminals", svc.base, svc.project))
            .json(&serde_json::json!({"shell": "/bin/bash"}))
            .send()
            .await
            .expect("start a terminal")
            .json()
            .await
            .expect("json");
        let id = started["id"].as_str().unwrap_or_else(|| panic!("a terminal: {started}")).to_string();
        println!("terminal: sandboxed {}", started["sandboxed"]);
        let url = format!("ws://127.0.0.1:{}/api/terminals/{id}/ws", svc.port);
        let mut ws = Ws(tokio_tungstenite::connect_async(url).await.expect("connect").0);
        let mut bare = bare_bash(svc.dir.path());
        settle(&mut ws, "ready").await;
        settle(&mut bare, "ready").await;

        // Interleaved halves, so both sides see the same machine load.
        let (mut conduit, mut baseline) = (Vec::new(), Vec::new());
        for _ in 0..2 {
            conduit.extend(round_trips(&mut ws, echoes / 2).await);
            baseline.extend(round_trips(&mut bare, echoes / 2).await);
        }
        conduit.sort();
        baseline.sort();
        println!(
            "echo round trip over the WebSocket: median {:.3} ms, p99 {:.3} ms, max {:.3} ms over {} keys (target: p99 <= 10 ms)",
            pct(&conduit, 0.5), pct(&conduit, 0.99), pct(&conduit, 1.0), conduit.len()
        );
        println!(
            "echo round trip, bare PTY (same bash, no service): median {:.3} ms, p99 {:.3} ms, max {:.3} ms; Conduit/bare: median {:.2}x, p99 {:.2}x",
            pct(&baseline, 0.5), pct(&baseline, 0.99), pct(&baseline, 1.0),
            pct(&conduit, 0.5) / pct(&baseline, 0.5).max(1e-9),
            pct(&conduit, 0.99) / pct(&baseline, 0.99).max(1e-9)
        );

        let over_ws = sequence(&mut ws, seq).await;
        let over_bare = sequence(&mut bare, seq).await;
        let mbps = |s: &Sequence| s.bytes as f64 / 1e6 / s.took.as_secs_f64().max(1e-9);
        println!(
            "output: seq 1 {seq} over the WebSocket: {} bytes in {:.0} ms ({:.1} MB/s); lines lost {}, repeated {}, out of order {} (target 0 each)",
            over_ws.bytes, over_ws.took.as_secs_f64() * 1e3, mbps(&over_ws), over_ws.lost, over_ws.repeated, over_ws.out_of_order
        );
        println!(
            "output, bare PTY: {} bytes in {:.0} ms ({:.1} MB/s); lines lost {}, repeated {}, out of order {}; Conduit/bare throughput {:.2}x",
            over_bare.bytes, over_bare.took.as_secs_f64() * 1e3, mbps(&over_bare), over_bare.lost, over_bare.repeated,
            over_bare.out_of_order, mbps(&over_ws) / mbps(&over_bare).max(1e-9)
        );
        let _ = http.delete(format!("{}/api/terminals/{id}", svc.base)).send().await;
    });
}

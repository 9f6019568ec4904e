//! Exec API benchmarks: `scripts/bench.sh exec`. The service is the release binary in its own
//! process.
//!
//! 1. Round trip: `POST /api/projects/{id}/exec` of `true`, one after another, against a bare
//!    spawn of the same command (`bash --noprofile --norc -c true` through tokio, read to its
//!    end) in the same run; medians and p99, and what the service adds (target: <= 2 ms at the
//!    median). Measured in a project without a sandbox (the same command as the bare spawn),
//!    and for information in one with the `workspace` sandbox (bubblewrap) too.
//! 2. Log streaming: a background process writes BENCH_LOG_MB MiB of text as fast as it can; one
//!    SSE client follows its log from offset 0 while it is written. MiB/s against a bare pipe
//!    read of the same command in the same run (target: >= 100 MiB/s), and the bytes lost
//!    (received against written; must be 0).
//!
//! Sizes: BENCH_EXEC_RUNS (default 300), BENCH_LOG_MB (default 256).

mod common;

use std::time::{Duration, Instant};

use common::env_usize;
use serde_json::{json, Value};

fn median(sorted: &[Duration]) -> Duration {
    sorted.get(sorted.len() / 2).copied().unwrap_or_default()
}

fn p99(sorted: &[Duration]) -> Duration {
    sorted.get((sorted.len() * 99 / 100).min(sorted.len().saturating_sub(1))).copied().unwrap_or_default()
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1000.0
}

async fn project(http: &reqwest::Client, base: &str, name: &str, sandbox: &str) -> String {
    let res: Value = http
        .post(format!("{base}/api/projects"))
        .json(&json!({"name": name, "folder_path": format!("p/{name}"), "sandbox": sandbox}))
        .send()
        .await
        .expect("project")
        .json()
        .await
        .expect("json");
    res["id"].as_str().unwrap_or_else(|| panic!("project: {res}")).to_string()
}

async fn bare_spawns(runs: usize) -> Vec<Duration> {
    let mut times = Vec::with_capacity(runs);
    for _ in 0..runs {
        let t = Instant::now();
        let out = tokio::process::Command::new("bash")
            .args(["--noprofile", "--norc", "-c", "true"])
            .stdin(std::process::Stdio::null())
            .output()
            .await
            .expect("bash");
        assert!(out.status.success());
        times.push(t.elapsed());
    }
    times.sort();
    times
}

async fn exec_round_trips(http: &reqwest::Client, base: &str, project: &str, runs: usize) -> Vec<Duration> {
    let url = format!("{base}/api/projects/{project}/exec");
    let mut times = Vec::with_capacity(runs);
    for _ in 0..runs {
        let t = Instant::now();
        let res = http.post(&url).json(&json!({"command": "true"})).send().await.expect("exec");
        let status = res.status();
        let body: Value = res.json().await.expect("json");
        assert!(status.is_success() && body["exit_code"] == 0, "{status} {body}");
        times.push(t.elapsed());
    }
    times.sort();
    times
}

/// Reads the log stream to its `exit`; (bytes of log data received, seconds).
async fn follow(http: &reqwest::Client, url: &str) -> (u64, f64) {
    let t = Instant::now();
    let res = http.get(url).send().await.expect("stream");
    assert!(res.status().is_success(), "{}", res.status());
    let mut res = res;
    let (mut buf, mut received, mut expected_offset) = (Vec::<u8>::new(), 0u64, 0u64);
    while let Some(chunk) = res.chunk().await.expect("chunk") {
        buf.extend_from_slice(&chunk);
        let mut start = 0;
        while let Some(end) = buf[start..].windows(2).position(|w| w == b"\n\n").map(|p| start + p) {
            let frame = std::str::from_utf8(&buf[start..end]).expect("utf-8 frame");
            start = end + 2;
            let event = frame.lines().find_map(|l| l.strip_prefix("event: ")).unwrap_or("");
            let data = frame.lines().find_map(|l| l.strip_prefix("data: ")).unwrap_or("null");
            match event {
                "stdout" => {
                    let v: Value = serde_json::from_str(data).expect("json");
                    assert_eq!(v["offset"].as_u64(), Some(expected_offset), "in order, no gap");
                    let n = v["data"].as_str().map(str::len).unwrap_or(0) as u64;
                    expected_offset += n;
                    received += n;
                }
                "exit" => return (received, t.elapsed().as_secs_f64()),
                _ => {}
            }
        }
        buf.drain(..start);
    }
    (received, t.elapsed().as_secs_f64())
}

fn writer_command(bytes: u64) -> String {
    format!("yes 0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ | head -c {bytes}")
}

async fn bare_pipe(bytes: u64) -> f64 {
    use tokio::io::AsyncReadExt;
    let t = Instant::now();
    let mut child = tokio::process::Command::new("bash")
        .args(["--noprofile", "--norc", "-c", &writer_command(bytes)])
        .stdout(std::process::Stdio::piped())
        .spawn()
        .expect("bash");
    let mut out = child.stdout.take().expect("stdout");
    let (mut buf, mut got) = (vec![0u8; 64 * 1024], 0u64);
    loop {
        match out.read(&mut buf).await.expect("read") {
            0 => break,
            n => got += n as u64,
        }
    }
    child.wait().await.expect("wait");
    assert_eq!(got, bytes);
    t.elapsed().as_secs_f64()
}

#[actix_web::main]
async fn main() {
    let runs = env_usize("BENCH_EXEC_RUNS", 300);
    let log_mib = env_usize("BENCH_LOG_MB", 256) as u64;
    let service = common::ServiceProcess::start(10, &[("process_log_bytes", (4u64 << 30).to_string())]).await;
    let http = reqwest::Client::builder().pool_idle_timeout(Duration::from_secs(30)).build().expect("client");
    let base = service.base.clone();
    let _ = std::env::set_current_dir(service.dir.path());
    std::fs::create_dir_all(service.dir.path().join("p/bare")).expect("folder");
    std::fs::create_dir_all(service.dir.path().join("p/fenced")).expect("folder");
    let bare_project = project(&http, &base, "bare", "off").await;
    let fenced_project = project(&http, &base, "fenced", "workspace").await;

    println!("exec round trip ({runs} sequential runs of `true`, after 30 to warm up)");
    bare_spawns(30).await;
    exec_round_trips(&http, &base, &bare_project, 30).await;
    let bare = bare_spawns(runs).await;
    let served = exec_round_trips(&http, &base, &bare_project, runs).await;
    let fenced = exec_round_trips(&http, &base, &fenced_project, runs.min(100)).await;
    println!("  bare spawn (baseline):     median {:>7.3} ms  p99 {:>7.3} ms", ms(median(&bare)), ms(p99(&bare)));
    println!(
        "  exec, no sandbox:          median {:>7.3} ms  p99 {:>7.3} ms  ({:.2}x the baseline; adds {:.3} ms at the median, target <= 2 ms)",
        ms(median(&served)),
        ms(p99(&served)),
        ms(median(&served)) / ms(median(&bare)).max(1e-9),
        ms(median(&served)) - ms(median(&bare))
    );
    println!(
        "  exec, workspace sandbox:   median {:>7.3} ms  p99 {:>7.3} ms  ({:.2}x the baseline; bubblewrap included)",
        ms(median(&fenced)),
        ms(p99(&fenced)),
        ms(median(&fenced)) / ms(median(&bare)).max(1e-9)
    );

    let bytes = log_mib << 20;
    println!("log streaming ({log_mib} MiB written by a background process, one SSE client following it live)");
    let bare_secs = bare_pipe(bytes).await;
    let started: Value = http
        .post(format!("{base}/api/projects/{bare_project}/processes"))
        .json(&json!({"command": writer_command(bytes)}))
        .send()
        .await
        .expect("start")
        .json()
        .await
        .expect("json");
    let id = started["id"].as_str().unwrap_or_else(|| panic!("start: {started}"));
    let url = format!("{base}/api/projects/{bare_project}/processes/{id}/logs/stream");
    let (received, secs) = follow(&http, &url).await;
    let mib = |b: u64, s: f64| b as f64 / (1u64 << 20) as f64 / s.max(1e-9);
    println!("  bare pipe read (baseline): {:>8.1} MiB/s", mib(bytes, bare_secs));
    println!(
        "  SSE log stream:            {:>8.1} MiB/s  ({:.2}x the baseline; target >= 100 MiB/s)",
        mib(received, secs),
        mib(received, secs) / mib(bytes, bare_secs).max(1e-9)
    );
    println!("  bytes lost: {} (written {bytes}, received {received})", bytes.saturating_sub(received));
}

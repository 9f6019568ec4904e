//! Keepers (`scripts/bench.sh keepers`): what a session's keeper costs and what it buys.
//!
//! - **Launch**: launch-to-idle of the fake CLI with keepers against without (`keepers = false`,
//!   the CLI the service's own child), interleaved, in the same run; sandbox off, so the figure
//!   is the keeper's alone.
//! - **Memory**: each kept session's keeper and its guardian, Pss and private memory from
//!   `/proc/<pid>/smaps_rollup`, against the fake CLI's own (the smallest real process a session
//!   has), in the same run.
//! - **Restart**: 50 live sessions, then a stop (SIGTERM: they are left to their keepers) and a
//!   start: the time until the service listens with every session attached again, and until
//!   every one has answered a turn, against the same start with no session (same run).
//!
//! Settings: KEEPERS_LAUNCHES (default 40 of each kind), KEEPERS_SESSIONS (50).

#[path = "common/mod.rs"]
mod common;

use std::time::{Duration, Instant};

use common::{env_usize, get_json, ServiceProcess};
use serde_json::{json, Value};

fn main() {
    // `cargo bench` passes --bench; `cargo test --all-targets` runs this binary without it.
    if !std::env::args().any(|a| a == "--bench") {
        println!("keepers benchmark: skipped (run it with scripts/bench.sh keepers)");
        return;
    }
    let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build().expect("runtime");
    runtime.block_on(async {
        launch().await;
        restart().await;
    });
}

fn quiet() -> Vec<(&'static str, String)> {
    vec![("sandbox", "off".to_string()), ("session_idle_timeout_ms", "3600000".to_string())]
}

fn median(mut xs: Vec<f64>) -> f64 {
    xs.sort_by(|a, b| a.total_cmp(b));
    xs.get(xs.len() / 2).copied().unwrap_or(f64::NAN)
}

/// Launch to idle, polled every half millisecond (a coarser poll would round both kinds up
/// to its step), in ms; the session is closed after.
async fn launch_ms(service: &ServiceProcess, http: &reqwest::Client) -> f64 {
    let started = Instant::now();
    let id = service.idle_session_every(http, "fake-default", Duration::from_micros(500)).await;
    let took = started.elapsed().as_secs_f64() * 1000.0;
    let _ = http.delete(format!("{}/api/sessions/{id}", service.base)).send().await;
    took
}

async fn launch() {
    let n = env_usize("KEEPERS_LAUNCHES", 40);
    let http = reqwest::Client::new();
    let mut settings = quiet();
    let kept = ServiceProcess::start(2 * n as u32 + 30, &settings).await;
    settings.push(("keepers", "false".to_string()));
    let bare = ServiceProcess::start(2 * n as u32 + 30, &settings).await;
    // Warm both (the first launch reads the CLI's version, pages in the binary).
    launch_ms(&kept, &http).await;
    launch_ms(&bare, &http).await;
    let (mut with, mut without) = (Vec::new(), Vec::new());
    for _ in 0..n {
        without.push(launch_ms(&bare, &http).await);
        with.push(launch_ms(&kept, &http).await);
    }
    let (w, wo) = (median(with), median(without));
    println!(
        "launch to idle, median of {n}: with a keeper {w:.2} ms, without {wo:.2} ms: +{:.2} ms ({:.2}x)",
        w - wo,
        w / wo
    );
    for _ in 0..20 {
        kept.idle_session(&http, "fake-default").await;
    }
    memory(&kept, &http).await;
}

/// `Pss` and `Private_Clean + Private_Dirty` of a process, in KiB.
fn smaps(pid: i32) -> (u64, u64) {
    let text = std::fs::read_to_string(format!("/proc/{pid}/smaps_rollup")).unwrap_or_default();
    let field = |name: &str| {
        text.lines()
            .find_map(|l| l.strip_prefix(name))
            .and_then(|v| v.split_whitespace().next())
            .and_then(|n| n.parse::<u64>().ok())
            .unwrap_or(0)
    };
    (field("Pss:"), field("Private_Clean:") + field("Private_Dirty:"))
}

fn parent_of(pid: i32) -> i32 {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
    let after = stat.rfind(')').map(|i| &stat[i + 2..]).unwrap_or_default();
    after.split_whitespace().nth(1).and_then(|p| p.parse().ok()).unwrap_or(0)
}

fn children_of(pid: i32) -> Vec<i32> {
    let path = format!("/proc/{pid}/task/{pid}/children");
    std::fs::read_to_string(path).unwrap_or_default().split_whitespace().filter_map(|p| p.parse().ok()).collect()
}

async fn memory(service: &ServiceProcess, http: &reqwest::Client) {
    let sessions =
        get_json(http, &format!("{}/api/projects/{}/sessions?limit=100", service.base, service.project)).await;
    let rows = sessions.get("items").unwrap_or(&sessions).as_array().cloned().unwrap_or_default();
    let (mut keeper, mut guardian, mut cli) = (Vec::new(), Vec::new(), Vec::new());
    for row in rows.iter().filter(|r| r["status"] == "idle") {
        let Some(pid) = row["cli_pid"].as_i64().map(|p| p as i32) else { continue };
        let k = parent_of(pid);
        let Some(g) = children_of(k).into_iter().find(|&c| c != pid) else { continue };
        keeper.push(smaps(k));
        guardian.push(smaps(g));
        cli.push(smaps(pid));
    }
    let mean = |xs: &[(u64, u64)], pick: fn(&(u64, u64)) -> u64| {
        xs.iter().map(pick).sum::<u64>() as f64 / xs.len().max(1) as f64
    };
    let (kp, kx) = (mean(&keeper, |m| m.0), mean(&keeper, |m| m.1));
    let (gp, gx) = (mean(&guardian, |m| m.0), mean(&guardian, |m| m.1));
    let (cp, cx) = (mean(&cli, |m| m.0), mean(&cli, |m| m.1));
    println!(
        "memory per kept session ({} sessions), mean: keeper Pss {kp:.0} KiB (private {kx:.0}), guardian Pss {gp:.0} KiB (private {gx:.0}); both: Pss {:.0} KiB ({:.2} MiB), private {:.0} KiB; the fake CLI itself: Pss {cp:.0} KiB (private {cx:.0}): {:.2}x",
        keeper.len(),
        kp + gp,
        (kp + gp) / 1024.0,
        kx + gx,
        (kp + gp) / cp.max(1.0),
    );
}

async fn turn(http: &reqwest::Client, base: &str, id: &str, turns: i64) {
    let res = http.post(format!("{base}/api/sessions/{id}/message")).json(&json!({"content": "again"})).send().await;
    assert!(res.is_ok_and(|r| r.status().is_success()), "a message to {id}");
    loop {
        let row = get_json(http, &format!("{base}/api/sessions/{id}")).await;
        if row["num_turns"] == turns && row["status"] == "idle" {
            return;
        }
        assert!(row["status"] != "error" && row["status"] != "closed", "{row}");
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
}

async fn restart() {
    let n = env_usize("KEEPERS_SESSIONS", 50);
    let http = reqwest::Client::new();
    let mut empty = ServiceProcess::start(10, &quiet()).await;
    let empty_start = empty.restart();
    drop(empty);

    let mut service = ServiceProcess::start(n as u32 + 10, &quiet()).await;
    let mut ids = Vec::new();
    for _ in 0..n {
        ids.push(service.idle_session(&http, "fake-default").await);
    }
    let rows = ids.iter().map(|id| {
        let (http, url) = (http.clone(), format!("{}/api/sessions/{id}", service.base));
        async move { get_json(&http, &url).await["cli_pid"].clone() }
    });
    let pids: Vec<Value> = futures_util::future::join_all(rows).await;
    let listening = service.restart();
    let started = Instant::now();
    let answered = futures_util::future::join_all(ids.iter().map(|id| turn(&http, &service.base, id, 1)));
    answered.await;
    let all_answered = listening + started.elapsed();
    let mut same = 0;
    for (id, pid) in ids.iter().zip(&pids) {
        let row = get_json(&http, &format!("{}/api/sessions/{id}", service.base)).await;
        same += usize::from(row["cli_pid"] == *pid);
    }
    println!(
        "restart with {n} live sessions: listening with all attached in {:.0} ms (an empty service: {:.0} ms, {:.2}x); every one answered a turn {:.0} ms after the start; {same} of {n} on the same CLI",
        listening.as_secs_f64() * 1000.0,
        empty_start.as_secs_f64() * 1000.0,
        listening.as_secs_f64() / empty_start.as_secs_f64(),
        all_answered.as_secs_f64() * 1000.0,
    );
}

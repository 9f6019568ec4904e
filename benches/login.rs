//! Login benchmark: `scripts/bench.sh login`. The service as its own process (release binary),
//! with a user (`conduit user add`) and an admin API token.
//!
//! 1. One argon2id password check (the product's `verify_password`), in this process.
//! 2. Baseline: `GET /api/projects` with the API token (a bearer: no password), 8 clients for
//!    `BENCH_LOGIN_SECONDS` (3). Then the same with HTTP Basic and the right password: the
//!    first request of the minute pays argon2, the rest find the remembered credential.
//!    Ratio against the bearer baseline.
//! 3. Password checks over HTTP: a wrong password from each of `BENCH_LOGIN_ADDRESSES` (10)
//!    fresh loopback addresses (each pays a full check): p50 and max latency.
//! 4. Cost under the limit: the bearer load again while 20 loopback addresses guess passwords
//!    as fast as 4 clients each can. Counted: guesses answered 401 (a check ran) and 429 (the
//!    limit refused it without a check), the service's CPU seconds against the baseline's, and
//!    the bearer throughput as a ratio to the baseline. Loss: every request with the right
//!    credential (bearer and Basic) must succeed.

mod common;

use std::io::Write;
use std::net::{IpAddr, Ipv4Addr};
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use common::{cpu_seconds_of_pid, env_usize, ServiceProcess};

const USER: &str = "bench";
const PASSWORD: &str = "a long enough bench password";

fn client(address: IpAddr) -> reqwest::Client {
    reqwest::Client::builder().local_address(address).build().expect("a client")
}

fn user_add(service: &ServiceProcess) {
    let db = service.db_path();
    let mut child = Command::new(env!("CARGO_BIN_EXE_conduit"))
        .args(["user", "add", USER])
        .env_clear()
        .env("PATH", std::env::var_os("PATH").unwrap_or_default())
        .env("HOME", service.dir.path())
        .env("CONDUIT_DB_PATH", &db)
        .env("CONDUIT_DATABASE_URL", common::database::database_url(&db))
        .env("CONDUIT_PROJECT_ROOT", service.dir.path())
        .stdin(Stdio::piped())
        .stdout(Stdio::null())
        .stderr(Stdio::inherit())
        .spawn()
        .expect("conduit user add");
    child.stdin.take().expect("stdin").write_all(format!("{PASSWORD}\n").as_bytes()).expect("password");
    assert!(child.wait().expect("user add ends").success(), "user add");
}

/// Requests `GET /api/projects` from 8 clients for `seconds`: (answered 200, others).
async fn load(
    base: &str,
    auth: Arc<dyn Fn(reqwest::RequestBuilder) -> reqwest::RequestBuilder + Send + Sync>,
    seconds: u64,
) -> (usize, usize) {
    let (ok, other) = (Arc::new(AtomicUsize::new(0)), Arc::new(AtomicUsize::new(0)));
    let until = Instant::now() + Duration::from_secs(seconds);
    let http = client(IpAddr::V4(Ipv4Addr::LOCALHOST));
    let tasks: Vec<_> = (0..8)
        .map(|_| {
            let (http, auth, ok, other, url) =
                (http.clone(), auth.clone(), ok.clone(), other.clone(), format!("{base}/api/projects"));
            tokio::spawn(async move {
                while Instant::now() < until {
                    match auth(http.get(&url)).send().await {
                        Ok(res) if res.status().as_u16() == 200 => ok.fetch_add(1, Ordering::Relaxed),
                        _ => other.fetch_add(1, Ordering::Relaxed),
                    };
                }
            })
        })
        .collect();
    for task in tasks {
        task.await.expect("a load client");
    }
    (ok.load(Ordering::Relaxed), other.load(Ordering::Relaxed))
}

/// Guesses from 20 addresses (127.0.0.100-119), 4 clients each, until `until`: (401s, 429s).
async fn guess(base: &str, until: Instant) -> (usize, usize) {
    let (checked, limited) = (Arc::new(AtomicUsize::new(0)), Arc::new(AtomicUsize::new(0)));
    let mut tasks = Vec::new();
    for host in 100..120u8 {
        let http = client(IpAddr::V4(Ipv4Addr::new(127, 0, 0, host)));
        for n in 0..4 {
            let (http, checked, limited, url) =
                (http.clone(), checked.clone(), limited.clone(), format!("{base}/api/projects"));
            tasks.push(tokio::spawn(async move {
                let mut i = 0;
                while Instant::now() < until {
                    i += 1;
                    let res = http.get(&url).basic_auth(USER, Some(format!("guess-{host}-{n}-{i}"))).send().await;
                    match res.map(|r| r.status().as_u16()) {
                        Ok(401) => checked.fetch_add(1, Ordering::Relaxed),
                        Ok(429) => limited.fetch_add(1, Ordering::Relaxed),
                        other => panic!("a guess got {other:?}"),
                    };
                }
            }));
        }
    }
    for task in tasks {
        task.await.expect("a guessing client");
    }
    (checked.load(Ordering::Relaxed), limited.load(Ordering::Relaxed))
}

#[tokio::main]
async fn main() {
    let seconds = env_usize("BENCH_LOGIN_SECONDS", 3) as u64;
    let service = ServiceProcess::start(10, &[]).await;
    let base = service.base.clone();
    let local = client(IpAddr::V4(Ipv4Addr::LOCALHOST));
    let made: serde_json::Value = local
        .post(format!("{base}/api/tokens"))
        .json(&serde_json::json!({"name": "bench", "scope": "admin"}))
        .send()
        .await
        .expect("token")
        .json()
        .await
        .expect("json");
    let token = made["token"].as_str().expect("the admin token").to_string();
    user_add(&service);
    let probe = local.get(format!("{base}/api/projects")).bearer_auth(&token).send().await.expect("probe");
    assert_eq!(probe.status().as_u16(), 200, "the admin token works: {}", probe.text().await.unwrap_or_default());

    // 1. One check, in this process.
    let hash = conduit::domain::credentials::hash_password(PASSWORD).expect("a hash");
    let mut checks: Vec<f64> = (0..10)
        .map(|_| {
            let started = Instant::now();
            assert!(conduit::domain::credentials::verify_password(PASSWORD, &hash));
            started.elapsed().as_secs_f64() * 1000.0
        })
        .collect();
    checks.sort_by(f64::total_cmp);
    println!("argon2id check (verify_password): p50 {:.1} ms, max {:.1} ms", checks[5], checks[9]);

    // 2. Bearer against Basic.
    let bearer = {
        let t = token.clone();
        Arc::new(move |r: reqwest::RequestBuilder| r.bearer_auth(&t))
    };
    let cpu_before = cpu_seconds_of_pid(service.pid());
    let (base_ok, base_other) = load(&base, bearer.clone(), seconds).await;
    let base_cpu = cpu_seconds_of_pid(service.pid()) - cpu_before;
    let basic = Arc::new(|r: reqwest::RequestBuilder| r.basic_auth(USER, Some(PASSWORD)));
    let (basic_ok, basic_other) = load(&base, basic, seconds).await;
    let rate = |n: usize| n as f64 / seconds as f64;
    println!("bearer (baseline): {:>8.0} req/s ({base_other} not 200), service CPU {:.2} s", rate(base_ok), base_cpu);
    println!(
        "basic, remembered: {:>8.0} req/s ({basic_other} not 200), {:.3}x the bearer",
        rate(basic_ok),
        basic_ok as f64 / base_ok.max(1) as f64
    );

    // 3. Full checks over HTTP: a wrong password from fresh addresses (a right one would be
    // found remembered, with no check).
    let mut firsts = Vec::new();
    for host in 2..2 + env_usize("BENCH_LOGIN_ADDRESSES", 10) as u8 {
        let http = client(IpAddr::V4(Ipv4Addr::new(127, 0, 0, host)));
        let started = Instant::now();
        let res = http.get(format!("{base}/api/projects")).basic_auth(USER, Some("wrong")).send().await.expect("login");
        assert_eq!(res.status().as_u16(), 401, "a checked, wrong password");
        firsts.push(started.elapsed().as_secs_f64() * 1000.0);
    }
    firsts.sort_by(f64::total_cmp);
    println!(
        "a password check over HTTP: p50 {:.1} ms, max {:.1} ms",
        firsts[firsts.len() / 2],
        firsts[firsts.len() - 1]
    );

    // 4. The bearer load while 20 addresses guess.
    let cpu_before = cpu_seconds_of_pid(service.pid());
    let until = Instant::now() + Duration::from_secs(seconds);
    let guessing = tokio::spawn({
        let base = base.clone();
        async move { guess(&base, until).await }
    });
    let (ok, other) = load(&base, bearer, seconds).await;
    let (checked, limited) = guessing.await.expect("the guessers");
    let cpu = cpu_seconds_of_pid(service.pid()) - cpu_before;
    println!("under guessing from 20 addresses: {checked} guesses checked (401), {limited} refused by the limit (429)");
    println!(
        "  bearer: {:>8.0} req/s ({other} not 200), {:.3}x the baseline; service CPU {:.2} s ({:.2}x the baseline's)",
        rate(ok),
        ok as f64 / base_ok.max(1) as f64,
        cpu,
        cpu / base_cpu.max(0.001)
    );
    // A right credential must never be refused: a burst of the same Basic credential is one
    // check that the others wait for, not a burst of guesses.
    println!(
        "loss: right credentials not answered 200: {} (bearer {}, basic {basic_other})",
        base_other + other + basic_other,
        base_other + other
    );
}

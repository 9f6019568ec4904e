//! The dashboard's live behaviour end to end (ui/e2e/live.e2e.mjs) in real headless Chromium
//! against the real binary, the real Claude Code CLI and the fake Messages API: streamed text
//! before the result, requests per turn elsewhere, resume, and a restart seen without a reload.
//! The script asks for the restart on its stdout; this test restarts the service on the same
//! address and answers by creating a file.

use std::io::{BufRead, BufReader};
use std::process::{Command, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use crate::support::browser;
use crate::support::fake_api::{FakeApi, Reply};
use crate::support::service::{real_cli, ServiceConfig, TestService};

/// A port nothing listens on now, for a service that must come back on the same address.
fn free_port() -> u16 {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
    listener.local_addr().expect("addr").port()
}

/// The browser run, ended if the test fails first.
struct Node(std::process::Child);

impl Drop for Node {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

#[actix_web::test]
async fn live_dashboard_in_chromium_with_the_real_cli() {
    let chromium = browser::chromium();
    let api = FakeApi::start().await;
    let port = free_port().to_string();
    let config = || ServiceConfig::new(real_cli()).api(&api.base_url).env("CONDUIT_PORT", &port);
    let service = TestService::start(config());
    std::fs::create_dir_all(service.root.join("live-e2e")).expect("project folder");

    // The fake sends the text once per chunk, numbered: "slow-words 0 slow-words 1 ... slow-words 15".
    let slow = "slow-words";
    let (slow_prompt, other_prompt) = ("please answer slowly", "a turn in the other session");
    api.on(slow_prompt, Reply::Slow { text: slow.into(), chunks: 16, delay: Duration::from_millis(250) });
    api.on(other_prompt, Reply::Text("the other session's answer".into()));

    let marker = tempfile::tempdir().expect("tempdir");
    let restart_file = marker.path().join("restarted");
    let shots = browser::fresh_screenshot_dir("dashboard-live");
    let started = Instant::now();
    let env = [
        ("CONDUIT_URL", service.address.clone()),
        ("SCREENSHOT_DIR", shots.display().to_string()),
        ("CHROMIUM_PATH", chromium),
        ("E2E_SLOW_PROMPT", slow_prompt.to_string()),
        ("E2E_SLOW_FIRST", "slow-words 0".to_string()),
        ("E2E_SLOW_LAST", "slow-words 15".to_string()),
        ("E2E_OTHER_PROMPT", other_prompt.to_string()),
        ("E2E_RESTART_FILE", restart_file.display().to_string()),
    ];
    // Blocking work (the browser run, the restart) off the runtime thread, which serves the
    // fake Messages API meanwhile.
    let (api_url, same_port) = (api.base_url.clone(), port.clone());
    let (service, status, said, stderr) = tokio::task::spawn_blocking(move || {
        let mut service = service;
        let mut node = Node(
            Command::new("node")
                .arg(browser::checkout().join("ui/e2e/live.e2e.mjs"))
                .envs(env)
                .stdout(Stdio::piped())
                .stderr(Stdio::piped())
                .spawn()
                .expect("node runs (Node.js is needed for the dashboard tests)"),
        );
        let stdout = node.0.stdout.take().expect("stdout");
        let stderr = node.0.stderr.take().expect("stderr");
        let errors = std::thread::spawn(move || std::io::read_to_string(stderr).unwrap_or_default());
        let (lines, heard) = mpsc::channel::<String>();
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines().map_while(Result::ok) {
                if lines.send(line).is_err() {
                    break;
                }
            }
        });
        let mut said = Vec::new();
        loop {
            match heard.recv_timeout(Duration::from_secs(300)) {
                Ok(line) => {
                    if line == "e2e: restart-now" {
                        service.terminate();
                        let again = ServiceConfig::new(real_cli()).api(&api_url).env("CONDUIT_PORT", &same_port);
                        service = TestService::start_in(service.into_dir(), again);
                        std::fs::write(&restart_file, "").expect("marker");
                    }
                    said.push(line);
                }
                Err(mpsc::RecvTimeoutError::Disconnected) => break,
                Err(mpsc::RecvTimeoutError::Timeout) => {
                    said.push("(the browser run said nothing for 5 minutes)".to_string());
                    break;
                }
            }
        }
        let status = node.0.wait().expect("wait for node");
        (service, status, said.join("\n"), errors.join().unwrap_or_default())
    })
    .await
    .expect("join");
    assert!(
        status.success() && said.contains("e2e: all steps passed"),
        "the browser run failed ({status:?} in {:?}); screenshots in {}\n--- stdout\n{said}\n--- stderr\n{stderr}\n--- service log\n{}",
        started.elapsed(),
        shots.display(),
        service.log()
    );
    for shot in ["live-01-streaming", "live-02-streamed", "live-03-resumed", "live-04-after-restart"] {
        assert!(shots.join(format!("{shot}.png")).is_file(), "screenshot {shot}");
    }
}

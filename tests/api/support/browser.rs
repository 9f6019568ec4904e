//! What the browser end-to-end tests share: the checks that Chromium and playwright-core are
//! installed, and running one `ui/e2e/*.e2e.mjs` script to its end against a service.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Instant;

use super::service::TestService;

pub fn checkout() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

/// Chromium's path (`CHROMIUM_PATH`, default Debian's), after checking it and playwright-core
/// are installed.
pub fn chromium() -> String {
    let chromium = std::env::var("CHROMIUM_PATH").unwrap_or_else(|_| "/usr/bin/chromium".to_string());
    assert!(Path::new(&chromium).exists(), "Chromium is not installed at {chromium}; run scripts/test-setup.sh");
    assert!(
        checkout().join("ui/node_modules/playwright-core").is_dir(),
        "playwright-core is not installed in ui/node_modules; run scripts/test-setup.sh"
    );
    chromium
}

/// Where a run's screenshots go (kept for people to look at), emptied for a new run.
pub fn fresh_screenshot_dir(name: &str) -> PathBuf {
    let dir = checkout().join("test-output").join(name);
    let _ = std::fs::remove_dir_all(&dir);
    dir
}

/// Runs `ui/e2e/<script>` with `env` (plus CONDUIT_URL, SCREENSHOT_DIR and CHROMIUM_PATH) off
/// the runtime thread, and fails with its output and the service's log unless every step
/// passed. Returns its stdout.
pub async fn run_script(script: &str, service: &TestService, shots: &Path, env: Vec<(&'static str, String)>) -> String {
    let mut env = env;
    env.extend([
        ("CONDUIT_URL", service.address.clone()),
        ("SCREENSHOT_DIR", shots.display().to_string()),
        ("CHROMIUM_PATH", chromium()),
    ]);
    let script = checkout().join("ui/e2e").join(script);
    let started = Instant::now();
    let output = tokio::task::spawn_blocking(move || Command::new("node").arg(&script).envs(env).output())
        .await
        .expect("join")
        .expect("node runs (Node.js is needed for the dashboard tests)");
    let stdout = String::from_utf8_lossy(&output.stdout).into_owned();
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        output.status.success(),
        "the browser run failed ({:?} in {:?}); screenshots in {}\n--- stdout\n{stdout}\n--- stderr\n{stderr}\n--- service log\n{}",
        output.status,
        started.elapsed(),
        shots.display(),
        service.log()
    );
    assert!(stdout.contains("e2e: all steps passed"), "{stdout}");
    stdout
}

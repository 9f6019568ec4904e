//! The `conduit` binary itself: commands, exit codes, startup errors, graceful stop.

use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

fn conduit(dir: &Path) -> Command {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_conduit"));
    cmd.env_clear()
        .env("PATH", std::env::var_os("PATH").unwrap_or_default())
        .env("HOME", dir)
        .env("CONDUIT_DB_PATH", dir.join("data/c.db"))
        .env("CONDUIT_PROJECT_ROOT", dir)
        .current_dir(dir);
    cmd
}

/// `conduit serve` on a random port in `dir`, once it is listening: the child and its URL.
fn serve(dir: &Path) -> (std::process::Child, String) {
    let mut child = conduit(dir)
        .arg("serve")
        .env("CONDUIT_PORT", "0")
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("spawn");
    let mut line = String::new();
    BufReader::new(child.stdout.take().expect("stdout")).read_line(&mut line).expect("listening line");
    let url = line.trim().strip_prefix("conduit listening on ").expect("listening line format").to_string();
    (child, url)
}

fn run(cmd: &mut Command) -> (i32, String, String) {
    let out = cmd.output().expect("conduit runs");
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

#[test]
fn version_prints_the_package_version() {
    let dir = tempfile::tempdir().expect("tempdir");
    let (code, stdout, _) = run(conduit(dir.path()).arg("--version"));
    assert_eq!(code, 0);
    assert_eq!(stdout.trim(), format!("conduit {}", env!("CARGO_PKG_VERSION")));
}

#[test]
fn a_bad_setting_stops_startup_with_one_clear_line() {
    let dir = tempfile::tempdir().expect("tempdir");
    for (var, value, key, allowed) in [
        ("CONDUIT_PORT", "99999", "`port`", "0 to 65535"),
        ("CONDUIT_SCAN_DEPTH", "-1", "`scan_depth`", "0 to 10"),
        ("LOG_FORMAT", "yaml", "`log_format`", "pretty, json"),
    ] {
        let (code, _, stderr) = run(conduit(dir.path()).env(var, value));
        assert_eq!(code, 2, "{var}={value}");
        assert_eq!(stderr.trim().lines().count(), 1, "one line: {stderr}");
        assert!(stderr.contains(key) && stderr.contains(var) && stderr.contains(allowed), "{stderr}");
    }
    assert!(!dir.path().join("data/c.db").exists(), "nothing is created when settings are bad");
}

#[test]
fn an_unknown_key_in_a_config_file_stops_startup() {
    let dir = tempfile::tempdir().expect("tempdir");
    let file = dir.path().join("conduit.toml");
    std::fs::write(&file, "port = 4000\ncli_paht = \"claude\"\n").expect("write");
    let (code, _, stderr) = run(conduit(dir.path()).arg("--config").arg(&file));
    assert_eq!(code, 2);
    assert!(stderr.contains("`cli_paht`") && stderr.contains("unknown key"), "{stderr}");
}

#[test]
fn migrate_and_db_reset() {
    let dir = tempfile::tempdir().expect("tempdir");
    let db = dir.path().join("data/c.db");
    let (code, stdout, stderr) = run(conduit(dir.path()).arg("migrate"));
    assert_eq!(code, 0, "{stderr}");
    assert!(stdout.contains("applied"), "{stdout}");
    assert!(db.exists());
    let (code, stdout, _) = run(conduit(dir.path()).arg("migrate"));
    assert_eq!(code, 0);
    assert!(stdout.contains("up to date"), "{stdout}");

    let (code, _, stderr) = run(conduit(dir.path()).args(["db", "reset"]));
    assert_ne!(code, 0, "reset without --yes must refuse");
    assert!(stderr.contains("--yes"), "{stderr}");
    assert!(db.exists(), "nothing erased without --yes");

    std::fs::write(dir.path().join("marker"), "").expect("write");
    let before = std::fs::metadata(&db).expect("db").len();
    let (code, stdout, stderr) = run(conduit(dir.path()).args(["db", "reset", "--yes"]));
    assert_eq!(code, 0, "{stderr}");
    assert!(stdout.contains("erased") && stdout.contains("applied"), "{stdout}");
    assert!(db.exists() && before > 0);
}

#[test]
fn migrate_and_reset_refuse_while_a_service_holds_the_database() {
    let dir = tempfile::tempdir().expect("tempdir");
    let (mut service, _) = serve(dir.path());
    let db = dir.path().join("data/c.db");
    let before = std::fs::metadata(&db).expect("db").len();
    for args in [vec!["db", "reset", "--yes"], vec!["migrate"]] {
        let (code, _, stderr) = run(conduit(dir.path()).args(&args));
        assert_eq!(code, 1, "{args:?} must refuse: {stderr}");
        assert!(stderr.contains(&format!("pid {}", service.id())), "{args:?} names the holder: {stderr}");
    }
    assert!(std::fs::metadata(&db).is_ok_and(|m| m.len() >= before), "the database is untouched");
    Command::new("kill").args(["-TERM", &service.id().to_string()]).status().expect("kill");
    assert!(service.wait().expect("wait").success());
    let (code, _, stderr) = run(conduit(dir.path()).args(["db", "reset", "--yes"]));
    assert_eq!(code, 0, "once the service is gone: {stderr}");
}

#[test]
fn refuses_a_non_loopback_address_without_a_token() {
    let dir = tempfile::tempdir().expect("tempdir");
    let (code, _, stderr) = run(conduit(dir.path()).env("CONDUIT_HOST", "0.0.0.0").env("CONDUIT_PORT", "0"));
    assert_eq!(code, 1);
    assert!(stderr.contains("CONDUIT_AUTH_TOKEN") && stderr.contains("--insecure"), "{stderr}");
}

#[test]
fn serve_answers_health_and_stops_cleanly_on_sigterm() {
    let dir = tempfile::tempdir().expect("tempdir");
    let (mut child, url) = serve(dir.path());

    let body = std::process::Command::new("curl").args(["-sf", &format!("{url}/api/health")]).output();
    // curl is not required by the project; fall back to a raw request if it is missing.
    let health = match body {
        Ok(out) if out.status.success() => String::from_utf8_lossy(&out.stdout).into_owned(),
        _ => raw_get(&url, "/api/health"),
    };
    assert!(health.contains("\"status\""), "{health}");

    let started = Instant::now();
    Command::new("kill").args(["-TERM", &child.id().to_string()]).status().expect("kill");
    loop {
        if let Some(status) = child.try_wait().expect("wait") {
            assert!(status.success(), "exit status {status:?}");
            break;
        }
        assert!(started.elapsed() < Duration::from_secs(10), "did not stop within 10 s of SIGTERM");
        std::thread::sleep(Duration::from_millis(50));
    }
}

fn raw_get(url: &str, path: &str) -> String {
    use std::io::{Read, Write};
    let authority = url.trim_start_matches("http://");
    let mut stream = std::net::TcpStream::connect(authority).expect("connect");
    write!(stream, "GET {path} HTTP/1.1\r\nHost: {authority}\r\nConnection: close\r\n\r\n").expect("write");
    let mut response = String::new();
    stream.read_to_string(&mut response).expect("read");
    response
}

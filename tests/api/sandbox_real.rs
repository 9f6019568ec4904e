//! The OS sandbox end to end, with the real CLI and no rules at all: what the model's commands
//! can and cannot touch, and a sandboxed launch where the sandbox is missing.

use std::time::Duration;

use serde_json::{json, Value};

use crate::support::fake_api::{FakeApi, Reply};
use crate::support::service::{fake_cli, real_cli, ServiceConfig, TestService};

const READY: Duration = Duration::from_secs(60);

async fn rig(config: impl FnOnce(ServiceConfig) -> ServiceConfig) -> (FakeApi, TestService) {
    let api = FakeApi::start().await;
    let service = TestService::start(config(ServiceConfig::new(real_cli()).api(&api.base_url)));
    (api, service)
}

async fn project(service: &TestService, name: &str, sandbox: &str) -> String {
    let folder = service.root.join(name);
    std::fs::create_dir_all(&folder).expect("project folder");
    let res = service
        .post("/api/projects", json!({"name": name, "folder_path": folder.to_string_lossy(), "sandbox": sandbox}))
        .await;
    assert_eq!(res.status().as_u16(), 201, "create project");
    let body: Value = res.json().await.expect("json");
    assert_eq!(body["sandbox"], sandbox);
    body["id"].as_str().expect("id").to_string()
}

async fn idle_session(service: &TestService, project: &str) -> String {
    let session = service.launch(project, json!({})).await;
    let id = session["id"].as_str().expect("id").to_string();
    service.wait_status(&id, "idle", READY).await;
    id
}

/// The model runs `command` with Bash on `prompt`; answers once the turn has ended with what
/// the CLI sent back to the model as the tool's result.
async fn run_bash(
    api: &FakeApi,
    service: &TestService,
    session: &str,
    prompt: &str,
    command: &str,
    turns: i64,
) -> String {
    api.on(prompt, Reply::ToolUse { name: "Bash".into(), input: json!({"command": command, "description": prompt}) });
    api.on("tool_result", Reply::Text(format!("{prompt}: done")));
    let res = service.post(&format!("/api/sessions/{session}/message"), json!({"content": prompt})).await;
    assert_eq!(res.status().as_u16(), 202);
    service.wait_for(session, READY, |r| r["num_turns"] == turns && r["status"] == "idle").await;
    api.requests().into_iter().rev().find(|r| r.contains(prompt) && r.contains("tool_result")).unwrap_or_default()
}

#[actix_web::test]
async fn the_sandbox_keeps_the_model_inside_the_project_with_no_rules_at_all() {
    let (api, service) = rig(|c| c).await;
    let health = service.get_json("/api/health").await;
    assert_eq!(health["checks"]["sandbox"]["available"], true, "bubblewrap is installed by test-setup: {health}");
    let home = service.dir.path().join("home");
    std::fs::create_dir_all(home.join(".ssh")).expect(".ssh");
    std::fs::write(home.join(".ssh/id_rsa"), "PRIVATE-KEY-MATERIAL").expect("key");
    let outside = service.dir.path().join("outside");
    std::fs::create_dir_all(&outside).expect("outside");
    let project = project(&service, "fenced", "workspace").await;
    let folder = service.root.join("fenced");
    let id = idle_session(&service, &project).await;

    // HOME is there, empty and read-only; the test's other folders do not exist in the sandbox
    // at all.
    let (escaped, hidden) = (home.join("escaped.txt"), outside.join("escaped.txt"));
    let command = format!("touch {}; touch {}", escaped.display(), hidden.display());
    let told = run_bash(&api, &service, &id, "touch outside", &command, 1).await;
    assert!(!escaped.exists() && !hidden.exists(), "nothing was written outside the project");
    assert!(told.contains("Read-only file system"), "the refusal is in the transcript the model sees: {told}");
    assert!(told.contains("No such file or directory"), "the folder outside is not even there: {told}");

    let told =
        run_bash(&api, &service, &id, "read the key", "cat ~/.ssh/id_rsa > leaked.txt; ls -A ~/.ssh | wc -l", 2).await;
    let leaked = std::fs::read_to_string(folder.join("leaked.txt")).expect("the command ran");
    assert!(!leaked.contains("PRIVATE-KEY-MATERIAL"), "the secret folder is hidden: {leaked:?}");
    assert!(!told.contains("PRIVATE-KEY-MATERIAL"), "the model never saw the key");

    let told = run_bash(&api, &service, &id, "write usr", "touch /usr/conduit-sandbox-probe", 3).await;
    assert!(!std::path::Path::new("/usr/conduit-sandbox-probe").exists(), "/usr is read-only");
    assert!(told.contains("Read-only file system"), "{told}");

    run_bash(&api, &service, &id, "work inside", "mkdir -p src && echo built > src/out.txt", 4).await;
    let built = std::fs::read_to_string(folder.join("src/out.txt")).expect("work inside the project succeeds");
    assert_eq!(built.trim(), "built");
    // The CLI kept its own state (its transcript) in its HOME.
    assert!(home.join(".claude/projects").is_dir(), "the CLI's state folder is writable");
}

#[actix_web::test]
async fn strict_limits_the_network_to_the_model_api() {
    let (api, service) = rig(|c| c).await;
    let health = service.get_json("/api/health").await;
    if health["checks"]["sandbox"]["network_limit_available"] != true {
        // Only a kernel without Landlock ABI 4 gets here; the launch must then be refused.
        let project = project(&service, "strict-refused", "strict").await;
        let res = service.post(&format!("/api/projects/{project}/sessions"), json!({})).await;
        assert_eq!(res.status().as_u16(), 503);
        return;
    }
    let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
    let port = listener.local_addr().expect("addr").port();
    listener.set_nonblocking(true).expect("nonblocking");
    let project = project(&service, "strict", "strict").await;
    let id = idle_session(&service, &project).await;
    let command = format!("(exec 3<>/dev/tcp/127.0.0.1/{port} && echo connected) > net.txt 2>&1");
    let told = run_bash(&api, &service, &id, "phone home", &command, 1).await;
    let net = std::fs::read_to_string(service.root.join("strict/net.txt")).expect("the command ran");
    assert!(!net.contains("connected"), "the connection was refused: {net:?} / {told}");
    assert!(listener.accept().is_err(), "nothing reached the other port");
    // The model API itself stays reachable: the turn above completed, and another does.
    run_bash(&api, &service, &id, "still talking", "echo hi", 2).await;
}

/// A launch in `project` is refused (503 `sandbox_unavailable`), saying what is missing
/// (`missing`) and the way out.
async fn assert_launch_refused(service: &TestService, project: &str, missing: &str) {
    let res = service.post(&format!("/api/projects/{project}/sessions"), json!({})).await;
    assert_eq!(res.status().as_u16(), 503);
    let body: Value = res.json().await.expect("json");
    assert_eq!(body["error"]["code"], "sandbox_unavailable", "{body}");
    let message = body["error"]["message"].as_str().unwrap_or_default();
    assert!(message.contains(missing) && message.contains("`off`"), "says what is missing and the way out: {message}");
}

#[actix_web::test]
async fn a_sandboxed_launch_without_the_mechanism_is_refused_never_run_bare() {
    let (_api, service) = rig(|c| c.env("CONDUIT_BWRAP_PATH", "/nonexistent/bwrap")).await;
    let health = service.get_json("/api/health").await;
    assert_eq!(health["status"], "degraded", "{health}");
    assert_eq!(health["checks"]["sandbox"]["available"], false);
    assert!(health["checks"]["sandbox"]["problem"].as_str().is_some_and(|p| p.contains("bubblewrap")), "{health}");

    let sandboxed = project(&service, "needs-sandbox", "workspace").await;
    assert_launch_refused(&service, &sandboxed, "bubblewrap").await;
    let sessions = service.get_json(&format!("/api/projects/{sandboxed}/sessions")).await;
    assert_eq!(sessions.as_array().map(Vec::len), Some(0), "nothing was started or stored: {sessions}");

    // A project that opts out runs, unsandboxed, as it asked.
    let bare = project(&service, "bare", "off").await;
    idle_session(&service, &bare).await;
}

#[actix_web::test]
async fn a_write_deny_rule_on_a_path_also_holds_against_the_shell() {
    let (api, service) = rig(|c| c).await;
    let project = project(&service, "guarded", "workspace").await;
    let folder = service.root.join("guarded");
    let protected = folder.join("protected.txt");
    std::fs::write(&protected, "original").expect("write");
    let rule = json!({"tool_name": "Write", "rule_content": protected.to_string_lossy(), "behavior": "deny"});
    let res = service.post(&format!("/api/projects/{project}/rules"), rule).await;
    assert_eq!(res.status().as_u16(), 201);
    let id = idle_session(&service, &project).await;
    // The rule names the Write tool; Bash slips past it, and the sandbox holds the line.
    let told =
        run_bash(&api, &service, &id, "overwrite it", "echo changed > protected.txt; echo fine > other.txt", 1).await;
    assert_eq!(std::fs::read_to_string(&protected).expect("read"), "original", "the denied path stayed read-only");
    assert!(told.contains("Read-only file system"), "{told}");
    assert_eq!(std::fs::read_to_string(folder.join("other.txt")).expect("the rest is writable").trim(), "fine");
}

#[actix_web::test]
async fn a_sandboxed_launch_without_pasta_is_refused_unless_the_host_network_is_chosen() {
    let missing = TestService::start(ServiceConfig::new(fake_cli()).env("CONDUIT_PASTA_PATH", "/nonexistent/pasta"));
    let health = missing.get_json("/api/health").await;
    assert_eq!(health["status"], "degraded", "{health}");
    let network = &health["checks"]["sandbox"]["network"];
    assert_eq!(
        (network["mechanism"].as_str(), network["available"].as_bool()),
        (Some("pasta"), Some(false)),
        "{health}"
    );
    assert!(network["problem"].as_str().is_some_and(|p| p.contains("passt")), "names the package: {health}");
    let sandboxed = project(&missing, "needs-network", "workspace").await;
    assert_launch_refused(&missing, &sandboxed, "pasta").await;
    let res = missing.post(&format!("/api/projects/{sandboxed}/exec"), json!({"command": "true"})).await;
    assert_eq!(res.status().as_u16(), 503, "exec is refused the same way");

    // On a machine that cannot run pasta, the host's network can be chosen, knowingly.
    let host = TestService::start(
        ServiceConfig::new(fake_cli())
            .env("CONDUIT_PASTA_PATH", "/nonexistent/pasta")
            .env("CONDUIT_SANDBOX_NETWORK", "host"),
    );
    let health = host.get_json("/api/health").await;
    assert_eq!(health["checks"]["sandbox"]["network"]["mechanism"], "host", "{health}");
    assert_eq!(health["status"], "healthy", "{health}");
    let sandboxed = project(&host, "host-network", "workspace").await;
    idle_session(&host, &sandboxed).await;
}

/// Networks made on the spot, many at once as a busy service makes them: every sandbox starts.
/// When bubblewrap made the namespace itself, its loopback set-up raced pasta's and about one
/// launch in a hundred failed (`loopback: Failed RTM_NEWADDR`); the service's start-up trial
/// was one of them now and then, and its sandboxed launches were refused from then on.
#[test]
fn sandboxes_whose_networks_are_made_at_once_all_start() {
    const LAUNCHES: usize = 25;
    const AT_ONCE: usize = 8;
    let on_path = |name: &str| {
        std::env::split_paths(&std::env::var_os("PATH").unwrap_or_default())
            .map(|dir| dir.join(name))
            .find(|path| path.is_file())
            .unwrap_or_else(|| panic!("{name} is installed by test-setup"))
    };
    let (pasta, bwrap) = (on_path("pasta"), on_path("bwrap"));
    let launch = move || {
        let mut child = std::process::Command::new(env!("CARGO_BIN_EXE_conduit"))
            .arg("sandbox-net")
            .arg("--pasta")
            .arg(&pasta)
            .arg("--")
            .arg(&bwrap)
            .args(["--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc", "--unshare-pid", "--die-with-parent"])
            .args(["sh", "-c", "grep -q lo: /proc/net/dev"])
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .expect("conduit sandbox-net starts");
        let deadline = std::time::Instant::now() + Duration::from_secs(60);
        let status = loop {
            match child.try_wait().expect("wait") {
                Some(status) => break Some(status),
                None if std::time::Instant::now() > deadline => break None,
                None => std::thread::sleep(Duration::from_millis(5)),
            }
        };
        let Some(status) = status else {
            let _ = child.kill();
            let _ = child.wait();
            return Some("not started within a minute".to_string());
        };
        let mut stderr = String::new();
        let _ = std::io::Read::read_to_string(&mut child.stderr.take().expect("stderr"), &mut stderr);
        (!status.success()).then(|| format!("{status}: {stderr}"))
    };
    let workers: Vec<_> = (0..AT_ONCE)
        .map(|_| {
            let launch = launch.clone();
            std::thread::spawn(move || (0..LAUNCHES).filter_map(|_| launch()).collect::<Vec<_>>())
        })
        .collect();
    let failures: Vec<String> = workers.into_iter().flat_map(|w| w.join().expect("no panic")).collect();
    assert!(failures.is_empty(), "{} of {} launches failed: {failures:?}", failures.len(), LAUNCHES * AT_ONCE);
}

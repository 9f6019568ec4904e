//! The fence's command line, from a real (temporary) file system.

use std::path::PathBuf;

use super::*;
use crate::sandbox::support::NetworkSupport;

fn support(available: bool, landlock_abi: i32, network: Option<NetworkPlan>) -> SandboxSupport {
    SandboxSupport {
        mechanism: "bubblewrap",
        available,
        bwrap_path: "/usr/bin/bwrap".into(),
        version: None,
        problem: (!available).then(|| "bubblewrap (\"bwrap\") is not installed".to_string()),
        landlock_abi,
        network: NetworkSupport {
            mechanism: "pasta",
            available: network.is_some(),
            pasta_path: None,
            problem: network.is_none().then(|| "pasta (\"pasta\") is not installed".to_string()),
            plan: network,
        },
    }
}

fn settings(hidden: Vec<PathBuf>, network: SandboxNetwork) -> crate::config::SandboxSettings {
    crate::config::SandboxSettings {
        default_mode: SandboxMode::Workspace,
        bwrap_path: "bwrap".into(),
        hidden,
        writable: vec![],
        readable: vec![],
        network,
        pasta_path: "pasta".into(),
        host_ports: vec![],
    }
}

fn plan_of() -> NetworkPlan {
    NetworkPlan::new("/usr/bin/pasta".into(), false, "/proc/self/exe".into())
}

#[test]
fn only_literal_deny_paths_become_read_only_binds() {
    let p = |s: &str| literal_path(s);
    assert_eq!(p("/srv/app/.env"), Some(PathBuf::from("/srv/app/.env")));
    assert_eq!(p("/srv/app/secrets/**"), Some(PathBuf::from("/srv/app/secrets")));
    assert_eq!(p(" /srv/app/../app/x "), Some(PathBuf::from("/srv/app/x")));
    for glob in ["/srv/*.env", "**/.env", "/srv/app/[ab]", "relative/path", "", "/", "/**", "/a/{b,c}"] {
        assert_eq!(p(glob), None, "{glob:?}");
    }
}

#[test]
fn the_view_is_built_from_what_the_process_needs() {
    let dir = tempfile::tempdir().expect("tempdir");
    let (home, folder) = (dir.path().join("home"), dir.path().join("project"));
    let (other, data) = (dir.path().join("project/nested"), dir.path().join("data"));
    std::fs::create_dir_all(home.join(".ssh")).expect("ssh");
    std::fs::create_dir_all(home.join(".cargo/bin")).expect("cargo");
    std::fs::write(home.join(".cargo/credentials.toml"), "token").expect("credentials");
    std::fs::write(home.join(".netrc"), "secret").expect("netrc");
    std::fs::create_dir_all(&other).expect("nested project");
    std::fs::create_dir_all(&data).expect("data");
    let state = vec![StatePath::Folder(home.join(".claude")), StatePath::File(home.join(".claude.json"))];
    let hidden = vec![home.join(".ssh"), home.join(".netrc"), home.join(".aws"), home.join(".cargo/credentials.toml")];
    let mut fence = Fence::plan(
        SandboxMode::Workspace,
        &support(true, 0, None),
        &settings(hidden, SandboxNetwork::Host),
        &folder.to_string_lossy(),
        Some(&home),
        state,
    )
    .expect("available")
    .expect("on");
    fence.hide([other.clone(), data.clone()]);
    let path = format!("{}:/usr/bin", home.join(".cargo/bin").display());
    fence.fit_environment(&[("PATH".to_string(), path)], 3100);
    fence.prepare("/bin/sh").expect("prepare");
    assert!(home.join(".claude").is_dir() && home.join(".claude.json").is_file(), "the CLI's state is created");
    let (program, args) = fence.command_line("/bin/sh", vec!["-c".into(), "true".into()], None);
    assert_eq!(program, "/usr/bin/bwrap");
    let line = args.join(" ");
    let (h, f) = (home.display(), folder.display());
    for expected in [
        "--unshare-pid --unshare-ipc --cap-drop ALL".to_string(),
        "--dev /dev --proc /proc --tmpfs /tmp".to_string(),
        "--ro-bind /usr /usr".to_string(),
        "--ro-bind /etc /etc".to_string(),
        format!("--tmpfs {h}"),
        format!("--remount-ro {h}"),
        format!("--ro-bind {h}/.cargo {h}/.cargo"),
        format!("--bind {f} {f}"),
        format!("--bind {h}/.claude {h}/.claude"),
        format!("--ro-bind /dev/null {h}/.cargo/credentials.toml"),
        format!("--tmpfs {f}/nested"),
        format!("--remount-ro {f}/nested"),
        "--remount-ro /".to_string(),
        format!("--chdir {f} -- /bin/sh -c true"),
    ] {
        assert!(line.contains(&expected), "{expected:?} in {line}");
    }
    assert!(!line.contains("--ro-bind / /"), "never the whole machine: {line}");
    for absent in [".ssh", ".netrc", ".aws", "/data"] {
        assert!(!line.contains(absent), "{absent}: hidden paths nothing shows are not even named: {line}");
    }
    assert!(!line.contains("sandbox-exec") && !line.contains("sandbox-net"), "workspace on the host network");
    let shadow = std::path::Path::new("/etc/shadow");
    if shadow.exists() {
        assert!(line.contains("--ro-bind /dev/null /etc/shadow"), "{line}");
    }
}

#[test]
fn an_isolated_network_wraps_bubblewrap_and_opens_only_what_is_needed() {
    let dir = tempfile::tempdir().expect("tempdir");
    let folder = dir.path().to_string_lossy().into_owned();
    let mut fence = Fence::plan(
        SandboxMode::Workspace,
        &support(true, 0, Some(plan_of())),
        &settings(vec![], SandboxNetwork::Isolated),
        &folder,
        None,
        vec![],
    )
    .expect("available")
    .expect("on");
    let env = |pairs: &[(&str, &str)]| pairs.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect::<Vec<_>>();
    fence.fit_environment(
        &env(&[("ANTHROPIC_BASE_URL", "http://127.0.0.1:8080"), ("HTTPS_PROXY", "http://127.0.0.1:3100")]),
        3100,
    );
    fence.open_host_ports(&[11434, 3100], 3100);
    fence.show_channel(dir.path().join("channel.sock"));
    std::fs::write(dir.path().join("channel.sock"), "").expect("a stand-in socket");
    fence.prepare("/bin/sh").expect("prepare");
    let (program, args) = fence.command_line("/bin/sh", vec![], Some(9005));
    assert_eq!(program, "/proc/self/exe");
    let line = args.join(" ");
    assert!(
        line.starts_with("sandbox-net --pasta /usr/bin/pasta --tcp 8080,9005,11434 -- /usr/bin/bwrap "),
        "the model API, the bridge and the setting; never the service's port: {line}"
    );
    assert!(line.contains(&format!("--ro-bind {folder}/channel.sock {CHANNEL_SOCKET}")), "{line}");
}

#[test]
fn strict_limits_tcp_and_a_missing_mechanism_is_refused() {
    let dir = tempfile::tempdir().expect("tempdir");
    let folder = dir.path().to_string_lossy().into_owned();
    let strict = SandboxMode::Strict;
    let host = settings(vec![], SandboxNetwork::Host);
    let mut fence =
        Fence::plan(strict, &support(true, 6, None), &host, &folder, None, vec![]).expect("available").expect("on");
    fence.fit_environment(&[], 3100);
    fence.prepare("/bin/sh").expect("prepare");
    let (_, args) = fence.command_line("/bin/sh", vec![], Some(9005));
    let line = args.join(" ");
    assert!(line.contains("sandbox-exec --tcp-port 443 --tcp-port 9005 -- /bin/sh"), "{line}");

    let refused = Fence::plan(strict, &support(true, 3, None), &host, &folder, None, vec![]);
    assert!(refused.is_err_and(|e| e.to_string().contains("Landlock ABI 4")));
    let refused = Fence::plan(SandboxMode::Workspace, &support(false, 6, None), &host, &folder, None, vec![]);
    let message = refused.expect_err("refused").to_string();
    assert!(message.contains("not installed") && message.contains("`off`"), "{message}");
    let isolated = settings(vec![], SandboxNetwork::Isolated);
    let refused = Fence::plan(SandboxMode::Workspace, &support(true, 6, None), &isolated, &folder, None, vec![]);
    let message = refused.expect_err("no pasta: refused").to_string();
    assert!(message.contains("pasta") && message.contains("`off`"), "{message}");
    let off = Fence::plan(SandboxMode::Off, &support(false, 0, None), &host, &folder, None, vec![]);
    assert!(off.is_ok_and(|f| f.is_none()), "off needs nothing");

    let mut missing = Fence::plan(SandboxMode::Workspace, &support(true, 0, None), &host, &folder, None, vec![])
        .expect("ok")
        .expect("on");
    assert!(missing.prepare("/nonexistent/claude").is_err_and(|e| e.contains("/nonexistent/claude")));
}

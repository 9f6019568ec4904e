//! Starting a session's CLI process: its command line, its process group, cgroup and marker,
//! its transport (the pipes, or a WebSocket bridge), and its back-pressure gate. The registry
//! calls this and then starts the session's actor with what comes back.

use std::sync::Arc;

use super::bridge::BridgeSocket;
use super::session::Spawned;
use crate::config::Settings;
use crate::db::backlog::Backlog;
use crate::db::sessions::Session;
use crate::process::cgroup::Cgroup;
use crate::process::command::{stdio_args, websocket_args, CliOptions};
use crate::process::tree::ProcessTree;
use crate::process::{owned, procfs, SESSION_MARKER_ENV};
use crate::transport::{stdio, websocket, CliOutput};

type OutputStream = std::pin::Pin<Box<dyn futures_util::Stream<Item = CliOutput>>>;

/// What a session's CLI is started with.
pub struct SpawnRequest<'a> {
    pub row: Session,
    pub folder: &'a str,
    pub options: &'a CliOptions,
    /// A bound port: the WebSocket transport.
    pub bridge: Option<(std::net::TcpListener, u16)>,
    /// It brings back an ended session (`--resume`).
    pub resumed: bool,
    /// The last event number stored for the session.
    pub last_seq: u64,
    /// The cgroup to put the CLI in, when the service uses cgroups.
    pub cgroup: Option<Cgroup>,
}

pub fn describe_exit(status: std::process::ExitStatus) -> String {
    use std::os::unix::process::ExitStatusExt;
    match (status.code(), status.signal()) {
        (Some(code), _) => format!("exited with status {code}"),
        (None, Some(sig)) => format!("was killed by signal {sig}"),
        _ => "ended".to_string(),
    }
}

/// A CLI that could not start: its row (unchanged) and why. Nothing of it is left running.
pub type SpawnFailure = Box<(Session, String)>;

/// Starts the CLI.
pub fn spawn_cli(settings: &Settings, req: SpawnRequest<'_>) -> Result<Spawned, SpawnFailure> {
    let SpawnRequest { mut row, folder, options, bridge, resumed, last_seq, cgroup } = req;
    let secret = websocket::new_secret();
    let mut cmd = tokio::process::Command::new(&settings.cli_path);
    match &bridge {
        None => cmd.args(stdio_args(options)).stdin(std::process::Stdio::piped()),
        Some((_, port)) => cmd
            .args(websocket_args(options, &format!("ws://127.0.0.1:{port}/{secret}")))
            .stdin(std::process::Stdio::null()),
    };
    cmd.current_dir(folder)
        .process_group(0)
        .env(SESSION_MARKER_ENV, row.id.as_str())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .kill_on_drop(false);
    if let Some(token) = &settings.cli_session_access_token {
        cmd.env("CLAUDE_CODE_SESSION_ACCESS_TOKEN", token);
    }
    let mut child = match cmd.spawn() {
        Ok(child) => child,
        Err(e) => {
            if let Some(cgroup) = cgroup {
                tokio::task::spawn_blocking(move || cgroup.kill_and_remove(std::time::Duration::from_secs(1)));
            }
            let reason = format!("cannot start the CLI {:?}: {e}", settings.cli_path);
            return Err(Box::new((row, reason)));
        }
    };
    let Some(pid) = child.id().map(|p| p as i32) else {
        return Err(Box::new((row, "the CLI exited before it could be watched".to_string())));
    };
    // tokio waits for this child itself: the subreaper's sweep must leave it alone.
    owned::own(pid);
    // Into its cgroup at once, before it can start anything: a write to cgroupfs (no disk I/O,
    // microseconds), done here rather than on the blocking pool because every moment of delay
    // is a moment in which a child of the CLI would start outside the cgroup. Its process group
    // and marker cover that moment and the fallback.
    let cgroup = cgroup.and_then(|cg| match cg.add(pid) {
        Ok(()) => Some(cg),
        Err(e) => {
            tracing::warn!(session = %row.id, error = %e, "cannot move the CLI into its cgroup; its process group contains it");
            tokio::task::spawn_blocking(move || cg.kill_and_remove(std::time::Duration::from_secs(1)));
            None
        }
    });
    let tree = ProcessTree { pgid: pid, marker: row.id.to_string(), cgroup };
    let end_now = |tree: &ProcessTree| {
        // tokio reaps the dropped child; the subreaper may too.
        owned::release(tree.pgid);
        let tree = tree.clone();
        tokio::task::spawn_blocking(move || tree.end(std::time::Duration::from_secs(2)));
    };
    let (Some(stdout), Some(stderr)) = (child.stdout.take(), child.stderr.take()) else {
        end_now(&tree);
        return Err(Box::new((row, "the CLI started without its standard streams".to_string())));
    };
    let backlog = Backlog::new(settings.session_backlog_bytes);
    let (stdin, protocol, bridge) = match bridge {
        None => {
            let Some(stdin) = child.stdin.take() else {
                end_now(&tree);
                return Err(Box::new((row, "the CLI started without its standard input".to_string())));
            };
            let protocol: OutputStream = Box::pin(stdio::stdout_stream(stdout, Some(backlog.clone())));
            (stdio::stdin_writer(stdin), vec![protocol], None)
        }
        Some((listener, port)) => {
            let (outbound, inbound, handoff) = websocket::channels(stdio::STDIN_QUEUE);
            let bridge = match BridgeSocket::start(row.id.as_str(), listener, port, &secret, handoff) {
                Ok(bridge) => bridge,
                Err(e) => {
                    end_now(&tree);
                    return Err(Box::new((row, format!("cannot serve the WebSocket bridge on port {port}: {e}"))));
                }
            };
            // On this transport stdout carries no protocol; whatever the CLI prints there is
            // kept with its stderr.
            let inbound: OutputStream = Box::pin(stdio::gated(Box::pin(inbound), backlog.clone()));
            let stdout: OutputStream = Box::pin(stdio::side_stream(stdout, Some(backlog.clone())));
            row.ws_port = Some(i32::from(port));
            (outbound, vec![inbound, stdout], Some(bridge))
        }
    };
    row.cli_pid = Some(pid);
    row.cli_started_at = procfs::stat(pid).map(|s| s.start_time.to_string());
    let mut outputs = protocol;
    outputs.push(Box::pin(stdio::stderr_stream(stderr, Some(backlog.clone()))));
    Ok(Spawned {
        row,
        pid,
        tree,
        stdin,
        last_seq,
        backlog: Arc::clone(&backlog),
        outputs,
        exited: Box::pin(async move {
            let how = match child.wait().await {
                Ok(status) => describe_exit(status),
                Err(e) => format!("could not be waited for: {e}"),
            };
            owned::release(pid);
            how
        }),
        bridge,
        resumed,
    })
}

//! Starting a CLI process: its program and arguments, its process group, cgroup and marker, its
//! transport (the pipes, or a WebSocket bridge), and the back-pressure gate on its output. Only
//! the registry calls this (it is the one owner of the pids tokio waits for), then hands what
//! comes back to a [`super::process::CliProcess`].

use std::net::TcpListener;
use std::pin::Pin;
use std::sync::Arc;

use std::path::PathBuf;

use super::adapter::Wire;
use crate::actors::bridge::{BridgeHandle, BridgeSocket};
use crate::actors::network_pool::TakenNetwork;
use crate::db::backlog::Backlog;
use crate::keeper::link::{self, Durable, KeeperHandle};
use crate::keeper::spec::Spec;
use crate::process::cgroup::Cgroup;
use crate::process::limits::ResourceGroups;
use crate::process::tree::ProcessTree;
use crate::process::{procfs, SESSION_MARKER_ENV};
use crate::sandbox::enclosure::Enclosure;
use crate::sandbox::Fence;
use crate::transport::{stdio, websocket, CliOutput, OutLine};

/// A CLI's arguments, given how it reaches Conduit.
pub type Arguments = Box<dyn FnOnce(&Wire) -> Vec<String>>;

pub type OutputStream = Pin<Box<dyn futures_util::Stream<Item = CliOutput>>>;

/// How a process ended, as waited for.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Exit {
    /// "exited with status 1", "was killed by signal 9", ...
    pub how: String,
    pub code: Option<i32>,
    /// The signal that killed it (read back from a sandbox's 128+N status too).
    pub signal: Option<i32>,
}

impl Exit {
    /// `sandboxed`: the status is bubblewrap's, which reports a CLI killed by signal N as
    /// status 128+N (the shell's convention); it is read back as the signal.
    pub fn of(status: std::process::ExitStatus, sandboxed: bool) -> Exit {
        use std::os::unix::process::ExitStatusExt;
        let signal =
            status.signal().or_else(|| status.code().filter(|c| sandboxed && (129..=192).contains(c)).map(|c| c - 128));
        match (signal, status.code()) {
            (Some(sig), _) => Exit { how: format!("was killed by signal {sig}"), code: None, signal: Some(sig) },
            (None, Some(code)) => Exit { how: format!("exited with status {code}"), code: Some(code), signal: None },
            _ => Exit { how: "ended".to_string(), code: None, signal: None },
        }
    }
}

/// What a CLI is started with.
pub struct SpawnRequest {
    /// The session or execution id: the marker every process of the tree carries.
    pub marker: String,
    pub program: String,
    /// Arguments for stdio; for the bridge, a function of the bridge's URL.
    pub arguments: Arguments,
    pub folder: String,
    /// The CLI's whole environment (its enclosure's); nothing of the service's is inherited.
    pub env: Vec<(String, String)>,
    /// A bound port: the WebSocket transport.
    pub bridge: Option<(TcpListener, u16)>,
    /// The cgroup to put the CLI in, when the service uses cgroups.
    pub cgroup: Option<Cgroup>,
    /// The sandbox to run it in (prepared), unless its project's is `off`.
    pub fence: Option<Fence>,
    /// Bytes read but not yet stored, when the output is stored: its readers wait when full.
    pub backlog: Option<Arc<Backlog>>,
    /// The network made ahead of time its sandbox joins, if any.
    pub network: Option<TakenNetwork>,
    /// The cgroups that limit it besides `cgroup` (v1 folders), which it joins too.
    pub resources: Option<ResourceGroups>,
}

/// A running CLI, ready to be supervised.
pub struct Spawned {
    pub pid: i32,
    /// The CLI's start time (clock ticks since boot), to recognise it after a restart.
    pub started_at: Option<String>,
    pub tree: ProcessTree,
    pub stdin: tokio::sync::mpsc::Sender<OutLine>,
    pub outputs: Vec<OutputStream>,
    /// Resolves with how the process ended.
    pub exited: Pin<Box<dyn std::future::Future<Output = Exit>>>,
    /// Set on the WebSocket transport: the bridge the CLI connects to, and its port.
    pub bridge: Option<(BridgeHandle, u16)>,
    /// How many stream ends the outputs tell before the output is whole.
    pub ends: usize,
    /// Set when a keeper holds the CLI (see [`crate::keeper`]).
    pub keeper: Option<KeeperHandle>,
}

/// Starts the CLI. On failure nothing of it is left running; the error says why.
pub fn spawn(req: SpawnRequest) -> Result<Spawned, String> {
    let SpawnRequest { marker, program, arguments, folder, env, bridge, cgroup, fence, backlog, network, resources } =
        req;
    let secret = websocket::new_secret();
    let (wire, stdin) = match &bridge {
        None => (Wire::Stdio, std::process::Stdio::piped()),
        Some((_, port)) => {
            (Wire::WebSocket { url: format!("ws://127.0.0.1:{port}/{secret}") }, std::process::Stdio::null())
        }
    };
    let args = arguments(&wire);
    // Sandboxed, the program started is bubblewrap, and the CLI its grandchild; bubblewrap
    // stays in the CLI's process group and cgroup and exits with its status.
    let (started, args) = match &fence {
        Some(fence) => fence.command_line(&program, args, bridge.as_ref().map(|(_, port)| *port)),
        None => (program.clone(), args),
    };
    let sandboxed = fence.is_some();
    let mut cmd = tokio::process::Command::new(&started);
    cmd.args(args).stdin(stdin);
    // Nothing of the service's own environment: `env` is the whole of it (see
    // `sandbox::environment`).
    cmd.current_dir(&folder)
        .process_group(0)
        .env_clear()
        .envs(env)
        .env(SESSION_MARKER_ENV, &marker)
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .kill_on_drop(false);
    let discard = |cgroup: Option<Cgroup>, resources: Option<ResourceGroups>| {
        tokio::task::spawn_blocking(move || {
            if let Some(cgroup) = cgroup {
                let _ = cgroup.kill_and_remove(std::time::Duration::from_secs(1));
            }
            if let Some(resources) = resources {
                let _ = resources.remove(std::time::Duration::from_secs(1));
            }
        });
    };
    let mut child = match cmd.spawn() {
        Ok(child) => child,
        Err(e) => {
            discard(cgroup, resources);
            let how = if sandboxed { format!(" in its sandbox ({started:?})") } else { String::new() };
            return Err(format!("cannot start the CLI {program:?}{how}: {e}"));
        }
    };
    let Some(pid) = child.id().map(|p| p as i32) else {
        discard(cgroup, resources);
        return Err("the CLI exited before it could be watched".to_string());
    };
    // Into its cgroup at once, with anything it already started: writes to cgroupfs and reads
    // of its own `children` files (no disk I/O, microseconds), done here rather than on the
    // blocking pool because every moment of delay is a moment in which a child of the CLI could
    // start outside. (Joining between fork and exec would close even that moment, but a
    // `pre_exec` hook makes std fork the whole service instead of `posix_spawn`: 66 ms per
    // launch with 1 GiB resident.) The process group and marker are the fallback where there
    // is no cgroup.
    let cgroup = cgroup.and_then(|cg| match cg.adopt(pid) {
        Ok(()) => Some(cg),
        Err(e) => {
            tracing::warn!(%marker, error = %e, "cannot move the CLI into its cgroup; its process group contains it");
            discard(Some(cg), None);
            None
        }
    });
    // Its limits hold from the same moment: a CLI that cannot be limited as asked is ended.
    if let Some(Err(e)) = resources.as_ref().map(|r| r.adopt(pid)) {
        let tree = ProcessTree { pgid: pid, marker, cgroup, wrapped: sandboxed, resources };
        tokio::task::spawn_blocking(move || tree.end(std::time::Duration::from_secs(2)));
        return Err(format!("cannot move the CLI into the cgroups that limit it: {e}"));
    }
    Enclosure::started(network, pid, cgroup.as_ref());
    let tree = ProcessTree { pgid: pid, marker, cgroup, wrapped: sandboxed, resources };
    let end_now = |tree: &ProcessTree, why: &str| {
        let tree = tree.clone();
        tokio::task::spawn_blocking(move || tree.end(std::time::Duration::from_secs(2)));
        why.to_string()
    };
    let (Some(stdout), Some(stderr)) = (child.stdout.take(), child.stderr.take()) else {
        return Err(end_now(&tree, "the CLI started without its standard streams"));
    };
    let (stdin, mut outputs, bridge) = match bridge {
        None => {
            let Some(stdin) = child.stdin.take() else {
                return Err(end_now(&tree, "the CLI started without its standard input"));
            };
            let protocol: OutputStream = Box::pin(stdio::stdout_stream(stdout, backlog.clone()));
            (stdio::stdin_writer(stdin), vec![protocol], None)
        }
        Some((listener, port)) => {
            let (outbound, inbound, handoff) = websocket::channels(stdio::STDIN_QUEUE);
            let handle = match BridgeSocket::start(&tree.marker, listener, port, &secret, handoff) {
                Ok(handle) => handle,
                Err(e) => {
                    return Err(end_now(&tree, &format!("cannot serve the WebSocket bridge on port {port}: {e}")))
                }
            };
            // On this transport stdout carries no protocol; whatever the CLI prints there is
            // kept with its stderr.
            let inbound: OutputStream = match &backlog {
                Some(gate) => Box::pin(stdio::gated(Box::pin(inbound), gate.clone())),
                None => Box::pin(inbound),
            };
            let side: OutputStream = Box::pin(stdio::side_stream(stdout, backlog.clone()));
            (outbound, vec![inbound, side], Some((handle, port)))
        }
    };
    outputs.push(Box::pin(stdio::stderr_stream(stderr, backlog)));
    let started_at = procfs::stat(pid).map(|s| s.start_time.to_string());
    let exited = Box::pin(async move {
        match child.wait().await {
            Ok(status) => Exit::of(status, sandboxed),
            Err(e) => Exit { how: format!("could not be waited for: {e}"), code: None, signal: None },
        }
    });
    let ends = outputs.len();
    Ok(Spawned { pid, started_at, tree, stdin, outputs, exited, bridge, ends, keeper: None })
}

/// How a CLI is kept: by which `conduit` executable, where its socket goes, how much output it
/// holds, the number of its first line, and how the session knows its lines are stored.
pub struct Keeping {
    pub launcher: PathBuf,
    pub socket: PathBuf,
    pub buffer_bytes: usize,
    pub first_seq: u64,
    pub orphan_ms: u64,
    pub durable: Durable,
    /// The keepers' own cgroup's `cgroup.procs`, if the service uses cgroups.
    pub keeper_cgroup: Option<PathBuf>,
}

/// Starts the CLI under a keeper of its own (stdio only: a bridge's socket is the service's),
/// so it outlives the service. On failure nothing of it is left running; the error says why.
pub async fn spawn_kept(req: SpawnRequest, keeping: Keeping) -> Result<Spawned, String> {
    let SpawnRequest {
        marker,
        program,
        arguments,
        folder,
        mut env,
        bridge: _,
        cgroup,
        fence,
        backlog,
        network,
        resources,
    } = req;
    let args = arguments(&Wire::Stdio);
    let (started, args) = match &fence {
        Some(fence) => fence.command_line(&program, args, None),
        None => (program.clone(), args),
    };
    let sandboxed = fence.is_some();
    env.push((SESSION_MARKER_ENV.to_string(), marker.clone()));
    let spec = Spec {
        session: marker.clone(),
        program: started,
        args,
        cwd: folder,
        env,
        join: cgroup
            .iter()
            .map(|cg| cg.path().join("cgroup.procs"))
            .chain(resources.iter().flat_map(ResourceGroups::join_files))
            .collect(),
        cgroup: cgroup.as_ref().map(|cg| cg.path().to_path_buf()),
        keeper_cgroup: keeping.keeper_cgroup,
        socket: keeping.socket,
        buffer_bytes: keeping.buffer_bytes,
        first_seq: keeping.first_seq,
        sandboxed,
        orphan_ms: keeping.orphan_ms,
    };
    let launched = match link::start(&keeping.launcher, &spec).await {
        Ok(launched) => launched,
        Err(why) => {
            let tree = ProcessTree { pgid: 0, marker, cgroup, wrapped: sandboxed, resources };
            tokio::task::spawn_blocking(move || tree.end(std::time::Duration::from_secs(1)));
            return Err(format!("cannot start the CLI {program:?} under its keeper: {why}"));
        }
    };
    let pid = launched.cli_pid;
    let handed = cgroup.clone();
    tokio::task::spawn_blocking(move || Enclosure::started(network, pid, handed.as_ref()));
    let tree = ProcessTree { pgid: pid, marker, cgroup, wrapped: sandboxed, resources };
    Ok(kept(launched.connection.attach(keeping.first_seq.saturating_sub(1), keeping.durable), tree, backlog))
}

/// A keeper's CLI, attached, as the supervisor takes it (after a start, or a restart).
pub fn kept(attached: link::Attached, tree: ProcessTree, backlog: Option<Arc<Backlog>>) -> Spawned {
    let link::Attached { stdin, output, exited, handle, hello } = attached;
    let output: OutputStream = match backlog {
        Some(gate) => Box::pin(stdio::gated(output, gate)),
        None => output,
    };
    Spawned {
        pid: hello.cli_pid,
        started_at: hello.cli_started_at,
        tree,
        stdin,
        outputs: vec![output],
        exited,
        bridge: None,
        ends: 2,
        keeper: Some(handle),
    }
}

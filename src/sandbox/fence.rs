//! What one sandboxed process may touch, and the command line that fences it in.
//!
//! The file system is built from what it needs ([`super::view`]): on an empty read-only root,
//! the system folders (`/usr`, the `/lib*` and `/bin` links, `/etc` without its secrets, `/opt`,
//! `/sys`) and the folders of the tools on PATH and of its own program, read-only; its own
//! `/dev`, `/proc` (and pid space: it cannot see or signal the service or other sessions) and
//! `/tmp`; the folder it works in and its CLI's state, writable. Nothing else of the machine is
//! there: not the service's data folder (database, lock, logs, other sessions' worktrees), its
//! config file, TLS and cluster keys, other projects' folders, nor the rest of HOME. What is
//! hidden is covered again wherever a shown folder holds it (`sandbox_hidden`, `/etc/shadow`,
//! a project folder inside this one). No capabilities: root inside cannot remount anything.
//! Read-only again inside the writable folder: the paths of `Write`/`Edit` deny rules that name
//! a file or folder literally.
//!
//! Its network is a namespace of its own ([`super::network`]), unless `sandbox_network` is
//! `host`; `strict` adds the TCP port limit of [`super::netlock`].
//!
//! Building a fence is cheap; [`Fence::prepare`] looks at the file system (which paths exist,
//! what links resolve to) and must run on the blocking pool.

use std::path::{Path, PathBuf};

use super::disk::{look, own_folder, program_roots, ssh_host_keys, toolchain_root, ETC_SECRETS, SYSTEM};
use super::network::NetworkPlan;
use super::support::SandboxSupport;
use super::view::{self, Access, Mount};
use crate::config::SandboxSettings;
use crate::domain::sandbox::{SandboxMode, SandboxNetwork};

/// Where an agent CLI keeps its own state: writable inside the sandbox.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum StatePath {
    /// Created when missing.
    Folder(PathBuf),
    /// Created (empty JSON object) when missing: only an existing file can be bound.
    File(PathBuf),
    /// Shown read-only (the service's own configuration for the CLI, which it must not change).
    ReadOnly(PathBuf),
}

/// Why a process cannot be started in the sandbox it asks for.
#[derive(Debug, Clone, thiserror::Error)]
pub enum FenceError {
    #[error(
        "the project asks for the `{mode}` sandbox, but {problem}. Conduit never runs a sandboxed CLI unsandboxed: fix that, or set the project's `sandbox` (or the `sandbox` setting) to `off`"
    )]
    Unavailable { mode: SandboxMode, problem: String },
}

/// Where the session channel's socket is inside every sandbox.
pub const CHANNEL_SOCKET: &str = "/run/conduit/channel.sock";

/// The fence of one process.
#[derive(Debug, Clone)]
pub struct Fence {
    pub mode: SandboxMode,
    bwrap: String,
    folder: PathBuf,
    home: Option<PathBuf>,
    state: Vec<StatePath>,
    /// `sandbox_hidden`, the service's own files, other projects' folders.
    hidden: Vec<PathBuf>,
    /// `sandbox_readable`.
    readable: Vec<PathBuf>,
    /// Caches the model's builds need (`sandbox_writable`), writable where they exist.
    writable: Vec<PathBuf>,
    /// Deny-rule paths to keep read-only inside the writable folders.
    read_only: Vec<PathBuf>,
    /// The folders of the child's PATH: its tools, shown read-only.
    search_path: Vec<PathBuf>,
    /// `strict`: the ports TCP connections may go to (the model API's).
    connect_ports: Vec<u16>,
    /// The service's own executable: `sandbox-exec` inside a `strict` sandbox.
    shim: Option<PathBuf>,
    /// A network namespace of its own (`sandbox_network = "isolated"`).
    network: Option<NetworkPlan>,
    /// The holder of a network made ahead of time to join, instead of making one.
    joining: Option<i32>,
    /// The session channel's socket on the machine, shown at [`CHANNEL_SOCKET`].
    channel: Option<PathBuf>,
    /// A git worktree's repository folder (`.git`), shown read-only; the parts a commit
    /// writes are in `state`.
    repository: Option<PathBuf>,
    /// Set by [`Fence::prepare`]: the program, found the way a shell would (outside, so a
    /// missing one fails the start as it does unsandboxed).
    program: Option<PathBuf>,
    /// Set by [`Fence::prepare`]: the view, in order, and the hidden folders made read-only last.
    mounts: Vec<Mount>,
    sealed: Vec<PathBuf>,
}

impl Fence {
    /// The fence for `mode`, or `None` for `off`; an error when the machine cannot provide it.
    /// `service_paths`: what the service keeps for itself (always hidden).
    pub fn plan(
        mode: SandboxMode,
        support: &SandboxSupport,
        settings: &SandboxSettings,
        folder: &str,
        home: Option<&Path>,
        state: Vec<StatePath>,
    ) -> Result<Option<Fence>, FenceError> {
        if !mode.is_on() {
            return Ok(None);
        }
        if !support.available {
            let problem = support.problem.clone().unwrap_or_else(|| "bubblewrap is not available".to_string());
            return Err(FenceError::Unavailable { mode, problem });
        }
        let network = match settings.network {
            SandboxNetwork::Host => None,
            SandboxNetwork::Isolated => match &support.network.plan {
                Some(plan) => Some(plan.clone()),
                None => {
                    let problem = support.network.problem.clone().unwrap_or_else(|| "pasta is not available".into());
                    return Err(FenceError::Unavailable { mode, problem });
                }
            },
        };
        let shim = if mode == SandboxMode::Strict {
            if !support.limits_network() {
                let problem = format!(
                    "its network limit needs Landlock ABI 4 (Linux 6.7+) and this kernel offers ABI {}",
                    support.landlock_abi
                );
                return Err(FenceError::Unavailable { mode, problem });
            }
            Some(std::env::current_exe().map_err(|e| FenceError::Unavailable {
                mode,
                problem: format!("the service's executable is unknown: {e}"),
            })?)
        } else {
            None
        };
        Ok(Some(Fence {
            mode,
            bwrap: support.bwrap_path.clone(),
            folder: PathBuf::from(folder),
            home: home.map(Path::to_path_buf),
            state,
            hidden: settings.hidden.clone(),
            readable: settings.readable.clone(),
            writable: settings.writable.clone(),
            read_only: Vec::new(),
            search_path: Vec::new(),
            connect_ports: Vec::new(),
            shim,
            network,
            joining: None,
            channel: None,
            repository: None,
            program: None,
            mounts: Vec::new(),
            sealed: Vec::new(),
        }))
    }

    /// The folder the fenced process works in (writable).
    pub fn folder(&self) -> &Path {
        &self.folder
    }

    /// Hides `paths` too (the service's own files, other projects' folders), wherever
    /// something shown would reveal them.
    pub fn hide(&mut self, paths: impl IntoIterator<Item = PathBuf>) {
        self.hidden.extend(paths);
    }

    /// The child's environment decides what else it needs: the folders of its PATH are shown
    /// read-only, and the services its URLs name on this machine's loopback (a model API, a
    /// proxy) are reachable from its network. `service_port`: the service's own, never opened.
    pub fn fit_environment(&mut self, env: &[(String, String)], service_port: u16) {
        let value = |name: &str| env.iter().find(|(k, _)| k == name).map(|(_, v)| v.as_str());
        self.search_path = value("PATH").map(|p| std::env::split_paths(p).collect()).unwrap_or_default();
        let reached = super::network::reached(env);
        self.connect_ports = reached.iter().map(|r| r.port).collect();
        if self.mode == SandboxMode::Strict && self.connect_ports.is_empty() {
            // No URL named: the model API's default, https.
            self.connect_ports.push(443);
        }
        if let Some(network) = self.network.as_mut() {
            let local = reached.iter().filter(|r| r.loopback && r.port != service_port).map(|r| r.port);
            network.open_host_ports(local);
            network.close_host_port(service_port);
        }
    }

    /// Loopback ports of this machine the process may reach besides its own ones
    /// (`sandbox_host_ports`).
    pub fn open_host_ports(&mut self, ports: &[u16], service_port: u16) {
        if let Some(network) = self.network.as_mut() {
            network.open_host_ports(ports.iter().copied());
            network.close_host_port(service_port);
        }
    }

    /// The loopback ports its own network lets through (`None`: it has none of its own), for
    /// a network made ahead of time that lets the same through.
    pub fn network_ports(&self, bridge_port: Option<u16>) -> Option<super::network::Ports> {
        self.network.as_ref().map(|n| n.ports(bridge_port))
    }

    /// Joins the network made ahead of time whose holder is `holder` instead of making one.
    pub fn join_network(&mut self, holder: i32) {
        self.joining = Some(holder);
    }

    /// Shows the session channel's socket (on the machine at `socket`) at [`CHANNEL_SOCKET`].
    pub fn show_channel(&mut self, socket: PathBuf) {
        self.channel = Some(socket);
    }

    /// Lets a process working in a git worktree commit on its branch: the repository's `.git`
    /// (`common`) is shown read-only, and writable only where a commit writes: its objects,
    /// refs and logs, and the worktree's own admin folder (`own`: index, HEAD). Its config and
    /// hooks stay read-only, so nothing the model does changes how git behaves in the user's
    /// own checkout. Sharing the same repository again changes nothing.
    pub fn share_repository(&mut self, common: &Path, own: &Path) {
        if self.repository.as_deref() == Some(common) {
            return;
        }
        self.repository = Some(common.to_path_buf());
        for part in ["objects", "refs", "logs"] {
            self.state.push(StatePath::Folder(common.join(part)));
        }
        self.state.push(StatePath::Folder(own.to_path_buf()));
    }

    /// Keeps read-only what `Write`/`Edit` deny rules name literally (their `rule_content`):
    /// an absolute path with no glob characters, or such a folder followed by `/**`. Other
    /// patterns are left to the rules.
    pub fn keep_read_only(&mut self, denied: &[String]) {
        self.read_only = denied.iter().filter_map(|content| literal_path(content)).collect();
        self.read_only.sort();
        self.read_only.dedup();
    }

    /// Looks at the file system: finds `program`, creates the CLI's missing state, and builds
    /// the view from what exists. Blocking.
    pub fn prepare(&mut self, program: &str) -> Result<(), String> {
        let found = crate::process::executable::resolve(program)
            .ok_or_else(|| format!("cannot start {program:?}: no such executable file"))?;
        for state in &self.state {
            match state {
                StatePath::Folder(dir) => std::fs::create_dir_all(dir)
                    .map_err(|e| format!("cannot create the CLI's state folder {}: {e}", dir.display()))?,
                StatePath::File(file) if !file.exists() => {
                    if let Some(parent) = file.parent() {
                        let _ = std::fs::create_dir_all(parent);
                    }
                    std::fs::write(file, "{}")
                        .map_err(|e| format!("cannot create the CLI's state file {}: {e}", file.display()))?
                }
                StatePath::File(_) | StatePath::ReadOnly(_) => {}
            }
        }
        let wanted = self.wanted(&found);
        self.program = Some(found);
        (self.mounts, self.sealed) = view::build(wanted);
        let home_mounted = self.mounts.iter().any(|m| matches!(m, Mount::Tmpfs(p) if Some(p) == self.home.as_ref()));
        if let (true, Some(home)) = (home_mounted, &self.home) {
            self.sealed.push(home.clone());
        }
        Ok(())
    }

    /// Everything the view is made of, as the disk has it now.
    fn wanted(&self, program: &Path) -> view::Wanted {
        let mut wanted = view::Wanted::default();
        for dir in ["/dev", "/proc", "/tmp"] {
            wanted.base.push(match dir {
                "/dev" => Mount::Dev(dir.into()),
                "/proc" => Mount::Proc(dir.into()),
                _ => Mount::Tmpfs(dir.into()),
            });
        }
        // HOME is there, empty and read-only, with only the CLI's state (and what else is
        // shown under it) bound in: `cd ~` works, `touch ~/x` fails as on a read-only disk.
        if let Some(home) = self.home.as_ref().filter(|h| own_folder(h)) {
            wanted.base.push(Mount::Tmpfs(home.clone()));
        }
        for path in SYSTEM {
            let path = Path::new(path);
            match std::fs::symlink_metadata(path) {
                Ok(meta) if meta.file_type().is_symlink() => {
                    if let (Ok(target), Some(found)) = (std::fs::read_link(path), look(path)) {
                        wanted.links.push((found, target));
                    }
                }
                Ok(_) => wanted.shown.extend(look(path).map(|f| (f, Access::ReadOnly))),
                Err(_) => {}
            }
        }
        let mut show = |path: &Path, access: Access| {
            if let Some(found) = look(path) {
                wanted.shown.push((found, access));
            }
        };
        for dir in &self.search_path {
            show(dir, Access::ReadOnly);
            if let Some(toolchain) = toolchain_root(dir, self.home.as_deref()) {
                show(&toolchain, Access::ReadOnly);
            }
        }
        for path in program_roots(program) {
            show(&path, Access::ReadOnly);
        }
        if let Some(shim) = &self.shim {
            show(shim, Access::ReadOnly);
        }
        for path in self.readable.iter().chain(&self.repository) {
            show(path, Access::ReadOnly);
        }
        show(&self.folder, Access::Writable);
        for state in &self.state {
            match state {
                StatePath::Folder(p) | StatePath::File(p) => show(p, Access::Writable),
                StatePath::ReadOnly(p) => show(p, Access::ReadOnly),
            }
        }
        for path in &self.writable {
            show(path, Access::Writable);
        }
        for path in &self.read_only {
            show(path, Access::Protected);
        }
        if let Some(socket) = &self.channel {
            if socket.exists() {
                wanted.placed.push((socket.clone(), PathBuf::from(CHANNEL_SOCKET)));
            }
        }
        let etc = ETC_SECRETS.iter().map(PathBuf::from).chain(ssh_host_keys());
        wanted.hidden = self.hidden.iter().cloned().chain(etc).filter_map(|p| look(&p)).collect();
        wanted
    }

    /// The command line that runs `program args` inside the fence. `bridge_port`: the
    /// session's WebSocket bridge, which its network (and `strict`) must let it reach.
    pub fn command_line(&self, program: &str, args: Vec<String>, bridge_port: Option<u16>) -> (String, Vec<String>) {
        let program =
            self.program.as_deref().map(|p| p.to_string_lossy().into_owned()).unwrap_or_else(|| program.to_string());
        let mut a: Vec<String> = Vec::with_capacity(64 + args.len());
        a.extend(["--unshare-pid", "--unshare-ipc", "--cap-drop", "ALL"].map(String::from));
        // Tools that honour TMPDIR must find it: the service's may be a folder the sandbox
        // does not have.
        a.extend(["--setenv", "TMPDIR", "/tmp"].map(String::from));
        for mount in &self.mounts {
            a.extend(mount.arguments());
        }
        let path = |p: &Path| p.to_string_lossy().into_owned();
        for sealed in &self.sealed {
            a.extend(["--remount-ro".to_string(), path(sealed)]);
        }
        // The root itself: nothing written outside the writable folders lands anywhere.
        a.extend(["--remount-ro", "/"].map(String::from));
        a.extend(["--chdir".to_string(), path(&self.folder), "--".to_string()]);
        if let Some(shim) = &self.shim {
            a.extend([path(shim), "sandbox-exec".to_string()]);
            let mut ports = self.connect_ports.clone();
            ports.extend(bridge_port);
            for port in ports {
                a.extend(["--tcp-port".to_string(), port.to_string()]);
            }
            a.push("--".to_string());
        }
        a.push(program);
        a.extend(args);
        match &self.network {
            Some(network) => network.wrap(&self.bwrap, a, bridge_port, self.joining),
            None => (self.bwrap.clone(), a),
        }
    }
}

/// `/srv/app/.env` -> itself, `/srv/app/secrets/**` -> `/srv/app/secrets`; globs -> `None`.
fn literal_path(content: &str) -> Option<PathBuf> {
    let content = content.trim();
    let path = content.strip_suffix("/**").unwrap_or(content);
    let literal = path.starts_with('/') && !path.contains(['*', '?', '[', ']', '{', '}', '\\']);
    let normalized = crate::domain::folders::normalize_lexically(Path::new(path));
    (literal && normalized != Path::new("/")).then_some(normalized)
}

#[cfg(test)]
#[path = "fence_tests.rs"]
mod tests;

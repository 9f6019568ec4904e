//! What fences a process in before it starts: its environment, its cgroup and its sandbox.
//! Shared by everything that starts processes in a project's folder or a session's workspace:
//! CLI sessions, agent runs, exec commands, background processes, terminals and setup scripts.
//! Deciding the sandbox is cheap and happens first, so a start the machine cannot sandbox is
//! refused before anything is stored; reading what the project adds (its `env`, its rules, the
//! other projects' folders), creating the cgroup and looking at the file system for the sandbox
//! happen together, off the executor.

use std::future::Future;

use actix::Recipient;
use std::path::PathBuf;
use std::sync::Arc;

use super::channel::{SessionChannel, TOKEN_ENV};
use super::fence::StatePath;
use super::{Fence, FenceError, SandboxSupport};
use crate::actors::network_pool::{Take, TakenNetwork};
use crate::config::Settings;
use crate::db::{projects, rules, Store};
use crate::domain::agent_kind::AgentKind;
use crate::domain::environment::ProjectEnv;
use crate::domain::ids::{ProjectId, SessionId};
use crate::domain::resources::SessionLimits;
use crate::domain::sandbox::SandboxMode;
use crate::process::cgroup::{Cgroup, Containment};
use crate::process::limits::{Controllers, ResourceGroups};

/// A process's cgroup (when the service uses cgroups), its sandbox (unless `off`), its whole
/// environment (every spawner clears the service's first), and the network made ahead of time
/// its sandbox joins, if one was ready (hand it over to the started process).
pub struct Enclosure {
    pub cgroup: Option<Cgroup>,
    /// The cgroups that limit and measure it (a session's CLI only).
    pub resources: Option<ResourceGroups>,
    pub fence: Option<Fence>,
    pub env: Vec<(String, String)>,
    pub network: Option<TakenNetwork>,
}

impl Enclosure {
    /// The process started as `pid`: the network it joined is its own from now on. Blocking.
    pub fn started(network: Option<TakenNetwork>, pid: i32, cgroup: Option<&Cgroup>) {
        if let Some(network) = network {
            network.hand_over(pid, cgroup);
        }
    }
}

/// Who a process is, for its environment and sandbox.
pub struct Guest {
    /// Its project (`None`: an agent with no project).
    pub project: Option<ProjectId>,
    /// An agent CLI of this kind, or a plain command.
    pub agent: Option<AgentKind>,
    /// The session whose channel it gets, if any.
    pub session: Option<SessionId>,
    /// Variables its start sets itself (a request's `env`, a CLI's own), over the rest.
    pub extra: Vec<(String, String)>,
    /// The WebSocket bridge port its network must let through (a CLI on that transport).
    pub bridge: Option<u16>,
    /// A session's CLI: the kernel limits it runs under (resolved; empty: none), and the
    /// cgroups its readings come from. `None`: anything else, which gets neither.
    pub limits: Option<SessionLimits>,
}

/// A sandbox fitted to its process (if it has one), and the process's whole environment.
pub type Fitted = (Option<Fence>, Vec<(String, String)>);

/// Builds [`Enclosure`]s. Cheap to clone: everything in it is shared.
#[derive(Clone)]
pub struct Encloser {
    settings: Arc<Settings>,
    store: Store,
    containment: Arc<Containment>,
    /// Which cgroup controllers limit sessions here.
    controllers: Arc<Controllers>,
    support: Arc<SandboxSupport>,
    channel: Arc<SessionChannel>,
    /// The service's own port: never opened to a sandbox.
    service_port: u16,
    /// Networks made ahead of time, when sandboxes get networks of their own.
    pool: Option<Recipient<Take>>,
}

impl Encloser {
    pub fn new(
        settings: Arc<Settings>,
        store: Store,
        (containment, controllers): (Arc<Containment>, Arc<Controllers>),
        support: Arc<SandboxSupport>,
        channel: Arc<SessionChannel>,
        service_port: u16,
        pool: Option<Recipient<Take>>,
    ) -> Self {
        Encloser { settings, store, containment, controllers, support, channel, service_port, pool }
    }

    /// Which cgroup controllers limit sessions here.
    pub fn controllers(&self) -> &Arc<Controllers> {
        &self.controllers
    }

    /// How the service contains process trees (a cgroup each, or process groups).
    pub fn containment(&self) -> &Arc<Containment> {
        &self.containment
    }

    /// The sandbox of a process working in `folder` for a project asking for `mode` (`None`:
    /// the `sandbox` setting); `state`: what it must be able to write outside `folder` (a CLI's
    /// state under HOME; nothing for a plain command). An error when this machine cannot
    /// provide it.
    pub fn plan(
        &self,
        mode: Option<SandboxMode>,
        folder: &str,
        state: Vec<StatePath>,
    ) -> Result<Option<Fence>, FenceError> {
        let mode = mode.unwrap_or(self.settings.sandbox.default_mode);
        let home = self.settings.home.as_deref();
        Fence::plan(mode, &self.support, &self.settings.sandbox, folder, home, state)
    }

    /// The environment of `guest` and its sandbox fitted to it, without looking at the file
    /// system yet: the project's `env`, the session's channel, the deny rules of the project
    /// on file-writing tools (read-only binds), the service's own files and every other
    /// project's folder (hidden), the ports its environment needs (reachable).
    pub fn fit(&self, guest: Guest, fence: Option<Fence>) -> impl Future<Output = Result<Fitted, String>> {
        let (store, settings, channel, port) =
            (self.store.clone(), self.settings.clone(), self.channel.clone(), self.service_port);
        async move {
            let Guest { project, agent, session, extra, bridge: _, limits: _ } = guest;
            let sandboxed = fence.is_some();
            let rules_of = project.clone();
            let (project_env, others, denied) = store
                .run(move |conn| {
                    let (env, others) = match &project {
                        Some(p) => projects::sandbox_view(conn, p)?,
                        None => (ProjectEnv::default(), Vec::new()),
                    };
                    let denied = if sandboxed { rules::write_denials(conn, rules_of.as_ref())? } else { Vec::new() };
                    Ok((env, others, denied))
                })
                .await
                .map_err(|e| format!("the project's environment and rules could not be read: {e}"))?;
            let mut env = settings.environment.for_child(agent.as_ref(), &project_env);
            let mut set = |name: &str, value: String| {
                env.retain(|(k, _)| k != name);
                env.push((name.to_string(), value));
            };
            for (name, value) in extra {
                set(&name, value);
            }
            if let Some(session) = &session {
                set(TOKEN_ENV, channel.token(session));
            }
            let Some(mut fence) = fence else { return Ok((None, env)) };
            share_worktree_repository(&mut fence).await?;
            fence.keep_read_only(&denied);
            fence.hide(service_paths(&settings, &channel));
            fence.hide(others.into_iter().map(PathBuf::from));
            fence.fit_environment(&env, port);
            fence.open_host_ports(&settings.sandbox.host_ports, port);
            if session.is_some() {
                fence.show_channel(channel.socket().to_path_buf());
            }
            Ok((Some(fence), env))
        }
    }

    /// [`Encloser::fit`], then creates the cgroup named `id` and prepares the fence for
    /// `program`, off the executor. A sandbox that cannot be prepared is an error (the cgroup
    /// is removed again).
    pub fn enclose(
        &self,
        id: String,
        guest: Guest,
        fence: Option<Fence>,
        program: String,
    ) -> impl Future<Output = Result<Enclosure, String>> {
        let (containment, controllers, pool) = (self.containment.clone(), self.controllers.clone(), self.pool.clone());
        let (bridge, limits) = (guest.bridge, guest.limits);
        let fitted = self.fit(guest, fence);
        async move {
            let (mut fence, env) = fitted.await?;
            // A network made ahead of time that lets the same ports through, when one is ready.
            let mut network = None;
            if let (Some(pool), Some(ports)) = (pool, fence.as_ref().and_then(|f| f.network_ports(bridge))) {
                network = pool.send(Take(ports)).await.ok().flatten();
            }
            if let (Some(f), Some(taken)) = (fence.as_mut(), network.as_ref()) {
                f.join_network(taken.holder());
            }
            let work = move || {
                let cgroup = containment.cgroup_for(&id);
                let discard = |cgroup: Option<Cgroup>, resources: Option<ResourceGroups>| {
                    if let Some(cg) = cgroup {
                        let _ = cg.kill_and_remove(std::time::Duration::from_secs(1));
                    }
                    if let Some(resources) = resources {
                        let _ = resources.remove(std::time::Duration::from_secs(1));
                    }
                };
                let resources = match &limits {
                    Some(limits) => match controllers.prepare(&id, cgroup.as_ref().map(Cgroup::path), limits) {
                        Ok(resources) => resources,
                        Err(e) => {
                            discard(cgroup, None);
                            return Err(format!("the session's limits could not be applied: {e}"));
                        }
                    },
                    None => None,
                };
                if let Some(f) = fence.as_mut() {
                    if let Err(e) = f.prepare(&program) {
                        discard(cgroup, resources);
                        return Err(e);
                    }
                }
                Ok(Enclosure { cgroup, resources, fence, env, network })
            };
            tokio::task::spawn_blocking(work).await.map_err(|e| format!("the start was interrupted: {e}"))?
        }
    }
}

/// What the service keeps for itself on disk, hidden from every sandbox: its data folder (the
/// database, the instance lock, the channel's key and socket, and by default the processes'
/// logs and the sessions' worktrees), those two folders where they are set elsewhere, its
/// config file, and its TLS and cluster CA files.
pub fn service_paths(settings: &Settings, channel: &SessionChannel) -> Vec<PathBuf> {
    let absolute = |p: &std::path::Path| std::path::absolute(p).unwrap_or_else(|_| p.to_path_buf());
    let db = absolute(&settings.db_path);
    let mut paths: Vec<PathBuf> = db.parent().map(|d| vec![d.to_path_buf()]).unwrap_or_default();
    for suffix in ["", "-wal", "-shm", ".lock"] {
        let mut file = db.clone().into_os_string();
        file.push(suffix);
        paths.push(PathBuf::from(file));
    }
    paths.push(absolute(&settings.workspaces()));
    paths.push(absolute(&settings.process_dir()));
    paths.extend(channel.socket().parent().map(absolute));
    paths.extend(settings.config_file.as_deref().map(absolute));
    if let Some(tls) = &settings.tls {
        paths.extend([absolute(&tls.cert), absolute(&tls.key)]);
    }
    paths.extend(settings.cluster.as_ref().and_then(|c| c.ca.as_deref()).map(absolute));
    paths
}

/// A process working in a git worktree (a session's, whatever runs there: its CLI, exec
/// commands, processes, terminals) may commit on its branch: the parts of the repository a
/// commit writes are shared into its fence. A worktree is known by its `.git` being a file.
async fn share_worktree_repository(fence: &mut Fence) -> Result<(), String> {
    let folder = fence.folder().to_path_buf();
    let is_worktree = tokio::fs::symlink_metadata(folder.join(".git")).await.is_ok_and(|m| m.is_file());
    if is_worktree {
        let (common, own) = crate::workspace::worktree::git_dirs(&folder)
            .await
            .map_err(|e| format!("the worktree's repository could not be read: {e}"))?;
        fence.share_repository(&common, &own);
    }
    Ok(())
}

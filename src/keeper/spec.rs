//! What a keeper is asked to start, and what it answers once its CLI runs. The spec travels on
//! the keeper's stdin (a pipe: the CLI's environment holds keys, which have no place in an
//! argument list or a file), the answer as one JSON line on its stdout.

use std::path::PathBuf;

use serde::{Deserialize, Serialize};

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Spec {
    /// The session whose CLI this is (the socket's and the keeper's name).
    pub session: String,
    /// What to run (bubblewrap or its network launcher when sandboxed) and its arguments.
    pub program: String,
    pub args: Vec<String>,
    pub cwd: String,
    /// The CLI's whole environment: nothing of the keeper's is passed on.
    pub env: Vec<(String, String)>,
    /// `cgroup.procs` files the CLI joins before it runs its program (its own cgroup, and the
    /// cgroups of the controllers that limit it), so nothing it starts is ever outside.
    pub join: Vec<PathBuf>,
    /// The cgroup (v2) killed when the keeper dies, if there is one.
    pub cgroup: Option<PathBuf>,
    /// The `cgroup.procs` of the keepers' own cgroup, which the keeper joins first.
    pub keeper_cgroup: Option<PathBuf>,
    /// Where the keeper listens for the service.
    pub socket: PathBuf,
    /// Bytes of output held while no service stores them; then the CLI waits.
    pub buffer_bytes: usize,
    /// The number of the CLI's first line (after the session's earlier CLIs' lines).
    pub first_seq: u64,
    pub sandboxed: bool,
    /// After the CLI has ended with no service attached for this long, the keeper gives up
    /// (its cgroup is killed); 0: never.
    pub orphan_ms: u64,
}

/// Set in a keeper's environment (its only variable): the session it keeps, so a restarted
/// service finds keepers it will not attach to.
pub const KEEPER_MARKER_ENV: &str = "CONDUIT_KEEPER_OF";

/// The keeper's answer on stdout.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Started {
    Ok { keeper_pid: i32, cli_pid: i32, cli_started_at: Option<String> },
    Error(String),
}

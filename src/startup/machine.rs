//! What the service learns about its machine and database before it starts: the database's
//! lock, how CLIs are contained, whether they can be sandboxed.

use std::sync::Arc;

use super::StartupError;
use crate::config::Settings;
use crate::db::claim::PostgresClaim;
use crate::db::lock::{Holder, InstanceLock};
use crate::db::Database;
use crate::http::health::ContainmentReport;
use crate::process::cgroup::Containment;
use crate::process::limits::Controllers;
use crate::sandbox::SandboxSupport;

/// Whether CLIs can be sandboxed here (bubblewrap runs a trivial sandbox), on the blocking pool.
pub(super) async fn probe_sandbox(settings: &Settings, launcher: std::path::PathBuf) -> Arc<SandboxSupport> {
    let sandbox = settings.sandbox.clone();
    let support =
        tokio::task::spawn_blocking(move || SandboxSupport::probe(&sandbox, &launcher)).await.unwrap_or_else(|e| {
            SandboxSupport::unavailable(&settings.sandbox.bwrap_path, format!("the sandbox probe failed: {e}"))
        });
    match (&support.problem, settings.sandbox.default_mode) {
        (Some(problem), mode) if mode.is_on() => {
            tracing::warn!(%problem, sandbox = %mode, "sessions that need a sandbox will be refused")
        }
        (Some(problem), _) => tracing::info!(%problem, "no OS sandbox available"),
        (None, mode) => {
            tracing::info!(version = ?support.version, landlock_abi = support.landlock_abi, sandbox = %mode, network = support.network.mechanism, "OS sandbox available")
        }
    }
    if let (Some(problem), true) = (&support.network.problem, support.available) {
        tracing::warn!(%problem, "sandboxes cannot get a network of their own: sessions that need a sandbox will be refused");
    }
    Arc::new(support)
}

/// What health says of `containment`: it does not change while the service runs, so the HTTP
/// layer gets it once, as plain data.
pub(super) fn report(containment: &Containment) -> ContainmentReport {
    let note = match containment {
        Containment::ProcessGroups { why } => Some(why.clone()),
        Containment::Cgroups(_) => None,
    };
    ContainmentReport { kind: containment.kind().to_string(), note }
}

/// What health says of the controllers that limit sessions (settled at startup too), and
/// whether the `session_*` settings can be applied with them.
pub(super) fn limits_report(controllers: &Controllers, settings: &Settings) -> crate::http::health::LimitsReport {
    crate::http::health::LimitsReport {
        mechanism: controllers.mechanism(),
        controllers: controllers.kinds().to_vec(),
        note: controllers.note().map(String::from),
        settings_problem: controllers.refusal(&settings.session_limits),
    }
}

/// Removes the cgroup folders made for a service that did not start (nothing ran in them).
pub(super) async fn release(containment: Arc<Containment>, controllers: Arc<Controllers>) {
    let cleared = tokio::task::spawn_blocking(move || {
        if let Some(root) = containment.root() {
            root.clear(false);
        }
        controllers.clear_except(&Default::default(), false);
    });
    let _ = cleared.await;
}

/// What a service holds while it runs: this machine's lock file, and on PostgreSQL the
/// database's claim.
pub(super) struct Claimed {
    pub(super) lock: InstanceLock,
    pub(super) postgres: Option<PostgresClaim>,
    pub(super) containment: Arc<Containment>,
    pub(super) controllers: Arc<Controllers>,
}

/// Takes the database's lock (the file beside `db_path`, and on PostgreSQL the database's
/// advisory lock too), finds how to contain CLIs, and records both in the lock file (the next
/// holder reads them back after a crash). Blocking work, on the blocking pool.
pub(super) async fn claim_database(settings: &Settings) -> Result<Claimed, StartupError> {
    let db_path = settings.db_path.clone();
    let database = settings.database.clone();
    let busy_timeout_ms = settings.db_busy_timeout_ms;
    let node = settings.cluster.as_ref().map(|c| c.node.clone());
    let claimed = tokio::task::spawn_blocking(move || {
        let mut lock = InstanceLock::acquire(&db_path)?;
        let postgres = match (&database, node) {
            (Database::Postgres(url), None) => Some(PostgresClaim::acquire(url, busy_timeout_ms)?),
            (Database::Postgres(url), Some(node)) => Some(PostgresClaim::acquire_node(url, busy_timeout_ms, &node)?),
            (Database::Sqlite(_), _) => None,
        };
        let containment = Containment::detect(&database_key(&db_path));
        match &containment {
            Containment::Cgroups(root) => {
                tracing::info!(cgroup = %root.path().display(), "each CLI runs in a cgroup of its own");
            }
            Containment::ProcessGroups { why } => {
                tracing::warn!(%why, "no usable cgroup2: CLIs are contained by process groups and an environment marker only");
            }
        }
        let key = database_key(&db_path);
        let controllers = Controllers::detect(&key, containment.root().map(|r| r.path()));
        tracing::info!(mechanism = ?controllers.mechanism(), controllers = ?controllers.kinds(), note = controllers.note().unwrap_or(""), "session limits");
        let holder = Holder {
            pid: std::process::id(),
            started_at: crate::domain::time::now(),
            cgroup: containment.root().map(|r| r.path().to_path_buf()),
            controllers: controllers.v1_roots(),
        };
        lock.record(&holder)?;
        let (containment, controllers) = (Arc::new(containment), Arc::new(controllers));
        Ok::<_, StartupError>(Claimed { lock, postgres, containment, controllers })
    })
    .await
    .map_err(|e| crate::db::StoreError::Other(format!("the startup task failed: {e}")))?;
    claimed
}

/// A short stable name for a database (its canonical path hashed): the folder of its CLIs'
/// cgroups, so services on different databases never share one.
fn database_key(db_path: &std::path::Path) -> String {
    use sha2::{Digest, Sha256};
    let canonical = match (db_path.parent(), db_path.file_name()) {
        (Some(parent), Some(name)) if !parent.as_os_str().is_empty() => {
            std::fs::canonicalize(parent).map(|p| p.join(name)).unwrap_or_else(|_| db_path.to_path_buf())
        }
        _ => std::fs::canonicalize(".").map(|p| p.join(db_path)).unwrap_or_else(|_| db_path.to_path_buf()),
    };
    let digest = Sha256::digest(canonical.as_os_str().as_encoded_bytes());
    digest.iter().take(8).map(|b| format!("{b:02x}")).collect()
}

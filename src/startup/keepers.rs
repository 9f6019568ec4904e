//! Keepers at start: where they are, their cgroup, and attaching again to the sessions whose
//! keepers answered (see [`crate::keeper`]).

use actix::Addr;

use crate::actors::registry::{Found, Keepers, Reattach, SessionRegistry};
use crate::config::Settings;
use crate::db::writer::Writer;
use crate::process::cgroup::Containment;

/// How this service's sessions get keepers: this executable runs them, their sockets go in
/// the data folder (made absolute: a keeper's socket path must not depend on its folder).
pub(super) fn keepers(settings: &Settings, launcher: &std::path::Path) -> Keepers {
    let data = settings.db_path.parent().filter(|p| !p.as_os_str().is_empty()).unwrap_or(std::path::Path::new("."));
    let data = std::path::absolute(data).unwrap_or_else(|_| data.to_path_buf());
    Keepers { launcher: launcher.to_path_buf(), data, buffer_bytes: settings.keeper_buffer_bytes, cgroup: None }
}

/// The keepers' cgroup (made after recovery, which clears the service's folder of what is not
/// kept).
pub(super) fn keepers_cgroup(containment: &Containment) -> Option<std::path::PathBuf> {
    match containment.root()?.keepers() {
        Ok(cgroup) => Some(cgroup.path().join("cgroup.procs")),
        Err(e) => {
            tracing::warn!(error = %e, "cannot make the keepers' cgroup; keepers run in the service's");
            None
        }
    }
}

/// Attaches again to the sessions whose keepers answered at start. One that cannot be attached
/// to is ended (`crashed`, resumable): its keeper is told to go, which ends its CLI.
pub(super) async fn reattach(registry: &Addr<SessionRegistry>, writer: &Writer, found: Vec<Found>) {
    for found in found {
        let (id, keeper) = (found.row.id.clone(), found.connection.hello.keeper_pid);
        let outcome = registry.send(Reattach(found)).await.unwrap_or_else(|_| Err("the registry stopped".to_string()));
        if let Err(why) = outcome {
            tracing::error!(session = %id, error = %why, "cannot attach again to the session; it is ended");
            let _ = crate::process::kill::signal_pid(keeper, libc::SIGKILL);
            let patch = crate::db::sessions::SessionPatch {
                status: Some(crate::domain::session::SessionStatus::Error),
                error_message: Some(Some(format!("could not attach again after the restart: {why}"))),
                closed_at: Some(Some(crate::domain::time::now())),
                closed_reason: Some(Some(crate::domain::session::ClosedReason::Crashed)),
                keeper_state: Some(None),
                ..Default::default()
            };
            writer.persist(crate::db::writer::WriteOp::Session { id, patch });
        }
    }
}

//! The session channel's key and socket (see [`crate::sandbox::channel`]), made at start, once
//! the instance lock is held: a socket file left by an earlier run of this service is removed,
//! never a live service's.

use std::os::unix::fs::PermissionsExt;
use std::os::unix::net::UnixListener;
use std::sync::Arc;

use super::StartupError;
use crate::config::Settings;
use crate::sandbox::channel::SessionChannel;

/// The channel, and the listener the HTTP server answers it on.
pub(super) async fn open(settings: &Settings) -> Result<(Arc<SessionChannel>, UnixListener), StartupError> {
    let data = settings.db_path.parent().filter(|p| !p.as_os_str().is_empty()).map(ToOwned::to_owned);
    let data = data.unwrap_or_else(|| std::path::PathBuf::from("."));
    let work = move || -> Result<(SessionChannel, UnixListener), String> {
        let channel = SessionChannel::open(&data)?;
        let socket = channel.socket().to_path_buf();
        match std::fs::remove_file(&socket) {
            Ok(()) => {}
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
            Err(e) => return Err(format!("cannot remove the old socket {}: {e}", socket.display())),
        }
        let listener =
            UnixListener::bind(&socket).map_err(|e| format!("cannot listen on {}: {e}", socket.display()))?;
        // The service's user only (sandboxes are that user too).
        std::fs::set_permissions(&socket, std::fs::Permissions::from_mode(0o600))
            .map_err(|e| format!("cannot restrict {}: {e}", socket.display()))?;
        listener.set_nonblocking(true).map_err(|e| format!("cannot set up {}: {e}", socket.display()))?;
        Ok((channel, listener))
    };
    let (channel, listener) = tokio::task::spawn_blocking(work)
        .await
        .map_err(|e| StartupError::Channel(format!("the setup was interrupted: {e}")))?
        .map_err(StartupError::Channel)?;
    tracing::info!(socket = %channel.socket().display(), "the session channel listens");
    Ok((Arc::new(channel), listener))
}

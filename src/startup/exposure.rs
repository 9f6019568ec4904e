//! What the bind address exposes, checked before anything starts: off loopback a token is
//! required (unless `--insecure`), and plain HTTP there is warned about; with `tls_cert` and
//! `tls_key` the TLS configuration is read here, so a bad file stops startup at once.

use super::{tls, ServeOptions, StartupError};
use crate::config::Settings;

/// The TLS configuration to serve with (`None`: plain HTTP), once the address may be bound.
pub(super) fn checked(
    settings: &Settings,
    options: &ServeOptions,
    addr: &str,
) -> Result<Option<rustls::ServerConfig>, StartupError> {
    let off_loopback = !settings.binds_loopback();
    if off_loopback && settings.auth_token.is_none() && !options.insecure {
        return Err(StartupError::TokenRequired(addr.to_string()));
    }
    if off_loopback && settings.auth_token.is_none() {
        tracing::warn!(%addr, "listening off loopback with no token (--insecure)");
    }
    if off_loopback && settings.tls.is_none() {
        // A TLS proxy in front is as good, and cannot be seen from here: a warning, no refusal.
        tracing::warn!(
            %addr,
            "listening off loopback without TLS: tokens, passwords and sign-in cookies cross the network in clear unless a TLS proxy is in front (see tls_cert)"
        );
    }
    if !settings.redaction.in_flight() {
        tracing::warn!(
            "redaction is off: secrets the CLIs write are stored, streamed, sent to webhooks and logged as written"
        );
    }
    settings.tls.as_ref().map(tls::server_config).transpose()
}

//! Optional TLS (`tls_cert`, `tls_key`): the rustls server configuration the HTTP server
//! listens with, read from the PEM files once at startup. A missing, unreadable or malformed
//! file, a key that is not there, or a key that does not belong to the certificate stops
//! startup with one line naming the setting and the file; nothing here panics. In cluster
//! mode, the `cluster_ca` certificates the clients that call peers trust ([`peer_clients`]),
//! read and checked the same way.
//!
//! The crypto provider is rustls' ring one: reqwest (webhooks, cluster peers) already compiles
//! ring into the binary, so TLS adds no second crypto library. It is named explicitly rather
//! than taken from the process default, which rustls cannot pick by itself when a build ever
//! has two providers (it panics with "no process-level CryptoProvider").

use std::path::Path;
use std::sync::Arc;

use rustls::crypto::ring;
use rustls::ServerConfig;
use rustls_pki_types::pem::PemObject;
use rustls_pki_types::{CertificateDer, PrivateKeyDer};

use super::StartupError;
use crate::config::{Settings, TlsFiles};
use crate::peer_tls::{PeerClients, PeerTrust};

/// The server configuration for `files`: the certificate chain and its key, with rustls' safe
/// default protocol versions (TLS 1.2 and 1.3). ALPN is left to actix-web, which offers what it
/// serves (HTTP/1.1).
pub(super) fn server_config(files: &TlsFiles) -> Result<ServerConfig, StartupError> {
    // Anything else in the process that asks rustls for the default provider gets this same
    // one. An error only means one was installed already, which is as good.
    let _ = ring::default_provider().install_default();
    let chain = certificates("tls_cert", &files.cert)?;
    let key = private_key(&files.key)?;
    ServerConfig::builder_with_provider(Arc::new(ring::default_provider()))
        .with_safe_default_protocol_versions()
        .map_err(|e| StartupError::Tls(format!("the TLS protocol versions cannot be set: {e}")))?
        .with_no_client_auth()
        .with_single_cert(chain, key)
        .map_err(|e| match e {
            rustls::Error::InconsistentKeys(_) => StartupError::Tls(format!(
                "the key in tls_key {} does not belong to the certificate in tls_cert {}",
                files.key.display(),
                files.cert.display()
            )),
            other => StartupError::Tls(format!(
                "cannot use tls_cert {} with tls_key {}: {other}",
                files.cert.display(),
                files.key.display()
            )),
        })
}

/// The clients this node calls its peers with: the public roots, plus in cluster mode the
/// certificates of `cluster_ca` (each must be usable as a root).
pub(super) fn peer_clients(settings: &Settings) -> Result<PeerClients, StartupError> {
    let ca = settings.cluster.as_ref().and_then(|cluster| cluster.ca.as_deref());
    let trust = match ca {
        Some(path) => PeerTrust::new(certificates("cluster_ca", path)?).map_err(|e| bad_file("cluster_ca", path, e))?,
        None => PeerTrust::default(),
    };
    if let Some(path) = ca {
        tracing::info!(file = %path.display(), certificates = trust.extra(), "cluster_ca: trusted when calling peers, besides the public roots");
    }
    PeerClients::new(trust).map_err(StartupError::Tls)
}

/// Every certificate in the PEM file of `setting`, in order (a server's own first); at least one.
fn certificates(setting: &str, path: &Path) -> Result<Vec<CertificateDer<'static>>, StartupError> {
    let pem = read(setting, path)?;
    let chain = CertificateDer::pem_slice_iter(&pem)
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| bad_file(setting, path, format!("not valid PEM ({e})")))?;
    if chain.is_empty() {
        return Err(bad_file(setting, path, "no certificate in it (expected -----BEGIN CERTIFICATE-----)"));
    }
    Ok(chain)
}

/// The first private key in the PEM file (PKCS#8, PKCS#1 or SEC1).
fn private_key(path: &Path) -> Result<PrivateKeyDer<'static>, StartupError> {
    let pem = read("tls_key", path)?;
    PrivateKeyDer::from_pem_slice(&pem).map_err(|e| match e {
        rustls_pki_types::pem::Error::NoItemsFound => {
            bad_file("tls_key", path, "no private key in it (expected -----BEGIN PRIVATE KEY----- or the RSA/EC forms)")
        }
        other => bad_file("tls_key", path, format!("not valid PEM ({other})")),
    })
}

/// The file's bytes, read here rather than by the PEM parser so a missing file is said as such.
fn read(setting: &str, path: &Path) -> Result<Vec<u8>, StartupError> {
    std::fs::read(path).map_err(|e| bad_file(setting, path, format!("cannot be read ({e})")))
}

fn bad_file(setting: &str, path: &Path, problem: impl std::fmt::Display) -> StartupError {
    StartupError::Tls(format!("{setting} {}: {problem}", path.display()))
}

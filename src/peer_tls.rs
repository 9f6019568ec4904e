//! Cluster mode: whom a node trusts when it calls its peers over `https://` / `wss://`. The
//! public web roots (webpki-roots, as reqwest's rustls-tls), plus the CA certificates of the
//! `cluster_ca` setting, read once at startup (`startup::tls`). Every client that calls a peer
//! is built from one [`PeerTrust`]: forwarded requests and fan-outs (`http::peers`), the live
//! feeds (`actors::cluster::live_feed`) and the terminal WebSocket proxy (`http::ws_proxy`).
//! Webhooks are not: they call URLs users give, which the public roots alone vouch for.
//!
//! The WebSocket's rustls configuration names the ring provider, as the server's does, so no
//! second crypto library is compiled in and nothing depends on the process default.

use std::sync::Arc;
use std::time::Duration;

use rustls::crypto::ring;
use rustls::{ClientConfig, RootCertStore};
use rustls_pki_types::CertificateDer;

/// The roots peers' certificates are checked against.
#[derive(Clone, Default)]
pub struct PeerTrust {
    /// The `cluster_ca` certificates (none without the setting), each usable as a root.
    extra: Arc<[CertificateDer<'static>]>,
}

impl PeerTrust {
    /// The public roots plus `extra`; an `Err` says which certificate (1-based) rustls cannot
    /// take as a trust anchor, and why.
    pub fn new(extra: Vec<CertificateDer<'static>>) -> Result<PeerTrust, String> {
        let trust = PeerTrust { extra: extra.into() };
        trust.root_store()?;
        Ok(trust)
    }

    /// How many `cluster_ca` certificates are trusted besides the public roots.
    pub fn extra(&self) -> usize {
        self.extra.len()
    }

    fn root_store(&self) -> Result<RootCertStore, String> {
        let mut roots = RootCertStore::empty();
        roots.extend(webpki_roots::TLS_SERVER_ROOTS.iter().cloned());
        for (n, cert) in self.extra.iter().enumerate() {
            roots.add(cert.clone()).map_err(|e| format!("certificate {} cannot be trusted ({e})", n + 1))?;
        }
        Ok(roots)
    }

    /// A reqwest client builder (rustls, ring) trusting the public roots and `cluster_ca`.
    pub fn http_builder(&self) -> reqwest::ClientBuilder {
        let mut builder = reqwest::Client::builder().use_rustls_tls();
        for cert in self.extra.iter() {
            match reqwest::Certificate::from_der(cert) {
                Ok(cert) => builder = builder.add_root_certificate(cert),
                // Not reached: [`PeerTrust::new`] parsed every one already.
                Err(e) => tracing::error!(error = %e, "cluster_ca: a certificate was left out"),
            }
        }
        builder
    }

    /// The client for requests to peers (`http::peers`): a short connect wait, and idle
    /// connections dropped before the peers' own keep-alive closes them.
    pub fn http_client(&self) -> Result<reqwest::Client, String> {
        self.http_builder()
            .connect_timeout(Duration::from_secs(2))
            // Under the nodes' own keep-alive (actix: 5 s), so a pooled connection is never
            // reused just as the owner closes it (seen once in 4,400 forwarded launches).
            .pool_idle_timeout(Duration::from_secs(2))
            .build()
            .map_err(|e| format!("the HTTP client for peers cannot be built ({e})"))
    }

    /// The rustls configuration for `wss://` connections to peers.
    pub fn websocket(&self) -> Result<Arc<ClientConfig>, String> {
        let config = ClientConfig::builder_with_provider(Arc::new(ring::default_provider()))
            .with_safe_default_protocol_versions()
            .map_err(|e| format!("the TLS protocol versions cannot be set ({e})"))?
            .with_root_certificates(self.root_store()?)
            .with_no_client_auth();
        Ok(Arc::new(config))
    }
}

/// The clients a node calls its peers with, built once at startup from one [`PeerTrust`].
#[derive(Clone)]
pub struct PeerClients {
    pub trust: PeerTrust,
    /// Forwarded requests, fan-outs and terminal look-ups.
    pub http: reqwest::Client,
    /// A terminal's WebSocket carried to an `https://` node.
    pub websocket: Arc<ClientConfig>,
}

impl PeerClients {
    pub fn new(trust: PeerTrust) -> Result<PeerClients, String> {
        Ok(PeerClients { http: trust.http_client()?, websocket: trust.websocket()?, trust })
    }
}

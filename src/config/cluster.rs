//! The cluster settings: `cluster`, `node_name`, `node_address`, `cluster_secret`,
//! `cluster_lease_ms` and `cluster_ca`, checked together (a cluster needs PostgreSQL, an
//! address and a secret).

pub use crate::domain::cluster::valid_node_name;
use std::fmt;
use std::path::PathBuf;
use std::time::Duration;

use super::layers::Layers;
use super::ConfigError;
use crate::db::Database;

/// Carries the cluster secret on node-to-node requests (forwarded actions, fan-outs, feeds).
pub const SECRET_HEADER: &str = "x-conduit-cluster-secret";
/// Names the node that sent a node-to-node request (for the receiver's logs).
pub const FORWARDED_BY: &str = "x-conduit-forwarded-by";

/// This node's place in a cluster. `Debug` never shows the secret.
#[derive(Clone)]
pub struct ClusterSettings {
    /// Unique in the cluster: 1-63 letters, digits, `.`, `_` or `-`.
    pub node: String,
    /// The URL the other nodes reach this one at (`http(s)://host:port`, no trailing slash).
    pub address: String,
    /// Shared by every node; authenticates node-to-node requests.
    pub secret: String,
    /// A node that has not renewed its lease for this long is lost.
    pub lease: Duration,
    /// `cluster_ca`: a PEM file of CA certificates trusted, besides the public roots, when this
    /// node calls its peers over TLS. Only its path is checked here; startup reads it
    /// (`startup::tls`), so a bad file stops the service before it touches the database.
    pub ca: Option<PathBuf>,
}

impl fmt::Debug for ClusterSettings {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ClusterSettings")
            .field("node", &self.node)
            .field("address", &self.address)
            .field("secret", &"<set>")
            .field("lease", &self.lease)
            .field("ca", &self.ca)
            .finish()
    }
}

/// The cluster settings, or `None` when `cluster` is off (the other keys are then ignored).
pub(super) fn cluster_settings(
    l: &Layers,
    database: &Database,
    home: Option<&str>,
) -> Result<Option<ClusterSettings>, ConfigError> {
    if !l.flag("cluster")? {
        return Ok(None);
    }
    if !matches!(database, Database::Postgres(_)) {
        return Err(l.err("cluster", "a cluster shares one PostgreSQL database: set database_url to a postgres:// URL"));
    }
    let node = match l.string("node_name")?.trim() {
        "" => host_name().ok_or_else(|| l.err("node_name", "the host name cannot be read: set node_name"))?,
        name => name.to_string(),
    };
    if !valid_node_name(&node) {
        return Err(l.err("node_name", format!("expected 1-63 letters, digits, '.', '_' or '-', got {node:?}")));
    }
    let address = node_address(&l.string("node_address")?).map_err(|problem| l.err("node_address", problem))?;
    let secret = l.string("cluster_secret")?;
    if secret.trim().chars().count() < 16 {
        return Err(l.err("cluster_secret", "expected at least 16 characters, the same on every node"));
    }
    let lease = Duration::from_millis(l.integer("cluster_lease_ms", 1_000, 300_000)? as u64);
    let ca = match l.optional_string("cluster_ca")? {
        Some(raw) => {
            Some(super::validate::expand_home(&raw, home).map_err(|e| l.err("cluster_ca", format!("{raw:?}: {e}")))?)
        }
        None => None,
    };
    Ok(Some(ClusterSettings { node, address, secret: secret.trim().to_string(), lease, ca }))
}

/// `http(s)://host[:port][/prefix]`, without a trailing slash, query or fragment.
fn node_address(raw: &str) -> Result<String, String> {
    let raw = raw.trim();
    let expected = "expected the URL the other nodes reach this one at, such as http://10.0.0.5:3100";
    if raw.is_empty() {
        return Err(expected.to_string());
    }
    let url = url::Url::parse(raw).map_err(|e| format!("{expected}, got {raw:?} ({e})"))?;
    if !matches!(url.scheme(), "http" | "https") || url.host_str().is_none() {
        return Err(format!("{expected}, got {raw:?}"));
    }
    if url.query().is_some() || url.fragment().is_some() || !url.username().is_empty() || url.password().is_some() {
        return Err(format!("{expected} (no credentials, query or fragment), got {raw:?}"));
    }
    Ok(raw.trim_end_matches('/').to_string())
}

fn host_name() -> Option<String> {
    let mut buf = [0u8; 256];
    // SAFETY: the buffer is valid for its length; gethostname NUL-terminates within it or fails.
    if unsafe { libc::gethostname(buf.as_mut_ptr().cast(), buf.len()) } != 0 {
        return None;
    }
    let end = buf.iter().position(|&b| b == 0)?;
    let name = std::str::from_utf8(&buf[..end]).ok()?.to_string();
    (!name.is_empty()).then_some(name)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn node_names_are_short_and_plain() {
        for good in ["a", "node-1", "eu.west_2", &"n".repeat(63)] {
            assert!(valid_node_name(good), "{good}");
        }
        for bad in ["", "has space", "slash/", "ünï", &"n".repeat(64)] {
            assert!(!valid_node_name(bad), "{bad}");
        }
    }

    #[test]
    fn node_addresses_are_plain_http_urls() {
        assert_eq!(node_address("http://10.0.0.5:3100/").as_deref(), Ok("http://10.0.0.5:3100"));
        assert_eq!(node_address("https://a.example/conduit").as_deref(), Ok("https://a.example/conduit"));
        for bad in ["", "10.0.0.5:3100", "ftp://a", "http://u:p@a", "http://a/?x=1", "http://a/#f"] {
            assert!(node_address(bad).is_err(), "{bad}");
        }
    }
}

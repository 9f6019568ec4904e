//! The session channel: the one way a session's processes talk to Conduit, as that session and
//! no more. A sandboxed process cannot reach the service's port (its network is its own); it
//! finds instead a Unix socket at [`super::fence::CHANNEL_SOCKET`], bound into its sandbox, and
//! its session's token in `CONDUIT_SESSION_TOKEN`. Over that socket the service answers the
//! same HTTP API, but only to a session token, and only the routes a session may use
//! (`http::scopes::SESSION_ROUTES`: its own session and transcript, its project's sessions);
//! everything else is 403 `outside_session`, whatever the request carries. The token works on
//! the service's port too, with the same limits (for a session with `sandbox: off`).
//!
//! A token is `cst_<session id>_<HMAC-SHA256 of the id>`, keyed with a secret the service keeps
//! in its data folder (hidden from every sandbox): any node can tell one it made from a guess
//! without storing it, a restarted service (its CLIs kept) still knows its sessions' tokens,
//! and a session's exec commands, background processes and terminals are given the same token.
//! A token names its session; a deleted session's token names nothing (401).

use std::io::Write;
use std::os::unix::fs::{DirBuilderExt, OpenOptionsExt};
use std::path::{Path, PathBuf};

use hmac::{Hmac, Mac};
use sha2::{Digest, Sha256};
use subtle::ConstantTimeEq;

use crate::domain::ids::SessionId;

/// The variable a session's processes find their token in.
pub const TOKEN_ENV: &str = "CONDUIT_SESSION_TOKEN";

/// What every token starts with.
const PREFIX: &str = "cst_";

/// A Unix socket's path must fit `sun_path` (108 bytes with its NUL).
const MAX_SOCKET_PATH: usize = 107;

/// The channel's key and where its socket is.
pub struct SessionChannel {
    key: [u8; 32],
    socket: PathBuf,
}

impl std::fmt::Debug for SessionChannel {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SessionChannel").field("socket", &self.socket).finish_non_exhaustive()
    }
}

impl SessionChannel {
    /// Reads the key kept in `data_dir` (made, readable by the service's user only, when there
    /// is none) and picks the socket's path: `data_dir/channel.sock`, or a private folder of the
    /// temporary directory when that path is too long for a socket. Blocking.
    pub fn open(data_dir: &Path) -> Result<SessionChannel, String> {
        std::fs::create_dir_all(data_dir).map_err(|e| format!("cannot create {}: {e}", data_dir.display()))?;
        let key_file = data_dir.join("channel.key");
        let key = match std::fs::read(&key_file) {
            Ok(bytes) if bytes.len() == 32 => {
                let mut key = [0u8; 32];
                key.copy_from_slice(&bytes);
                key
            }
            _ => new_key(&key_file)?,
        };
        let preferred =
            std::path::absolute(data_dir.join("channel.sock")).unwrap_or_else(|_| data_dir.join("channel.sock"));
        let socket = if preferred.as_os_str().len() <= MAX_SOCKET_PATH {
            preferred
        } else {
            let digest = Sha256::digest(preferred.as_os_str().as_encoded_bytes());
            let name: String = digest.iter().take(6).map(|b| format!("{b:02x}")).collect();
            let dir = std::env::temp_dir().join(format!("conduit-{name}"));
            std::fs::DirBuilder::new()
                .recursive(true)
                .mode(0o700)
                .create(&dir)
                .map_err(|e| format!("cannot create {}: {e}", dir.display()))?;
            dir.join("channel.sock")
        };
        Ok(SessionChannel { key, socket })
    }

    /// A channel with `key` and `socket`, for tests.
    pub fn with_key(key: [u8; 32], socket: PathBuf) -> SessionChannel {
        SessionChannel { key, socket }
    }

    /// Where the service listens for the channel on this machine.
    pub fn socket(&self) -> &Path {
        &self.socket
    }

    /// The token of `session`.
    pub fn token(&self, session: &SessionId) -> String {
        format!("{PREFIX}{session}_{}", hex(&self.mac(session)))
    }

    /// The session a token names, when this service made it.
    pub fn verify(&self, token: &str) -> Option<SessionId> {
        let rest = token.strip_prefix(PREFIX)?;
        let (id, mac) = rest.split_once('_')?;
        let session: SessionId = id.parse().ok()?;
        let expected = hex(&self.mac(&session));
        bool::from(expected.as_bytes().ct_eq(mac.as_bytes())).then_some(session)
    }

    /// Whether `token` is shaped like a session token (so it is never counted as a guess at
    /// the configured token).
    pub fn looks_like_token(token: &str) -> bool {
        token.starts_with(PREFIX)
    }

    fn mac(&self, session: &SessionId) -> [u8; 32] {
        let mut mac = <Hmac<Sha256> as Mac>::new_from_slice(&self.key).expect("HMAC takes a key of any length");
        mac.update(b"conduit session channel\0");
        mac.update(session.as_str().as_bytes());
        mac.finalize().into_bytes().into()
    }
}

fn new_key(path: &Path) -> Result<[u8; 32], String> {
    let mut key = [0u8; 32];
    getrandom::getrandom(&mut key).map_err(|e| format!("no randomness for the session channel's key: {e}"))?;
    // Written whole under another name, then renamed: a crash leaves the old key or the new.
    let partial = path.with_extension("key.partial");
    let mut file = std::fs::OpenOptions::new()
        .write(true)
        .create(true)
        .truncate(true)
        .mode(0o600)
        .open(&partial)
        .map_err(|e| format!("cannot write {}: {e}", partial.display()))?;
    file.write_all(&key)
        .and_then(|()| file.sync_all())
        .map_err(|e| format!("cannot write {}: {e}", partial.display()))?;
    std::fs::rename(&partial, path).map_err(|e| format!("cannot write {}: {e}", path.display()))?;
    Ok(key)
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_token_names_its_session_and_nothing_else() {
        let channel = SessionChannel::with_key([7; 32], "/x/channel.sock".into());
        let (a, b) = (SessionId::new(), SessionId::new());
        let token = channel.token(&a);
        assert!(token.starts_with("cst_") && SessionChannel::looks_like_token(&token));
        assert_eq!(channel.verify(&token), Some(a.clone()));
        assert_ne!(channel.token(&b), token);
        // Another session's id with this session's MAC, another key, a cut or changed MAC.
        let forged = token.replacen(a.as_str(), b.as_str(), 1);
        assert_eq!(channel.verify(&forged), None);
        assert_eq!(SessionChannel::with_key([8; 32], "/x".into()).verify(&token), None);
        assert_eq!(channel.verify(&token[..token.len() - 1]), None);
        for bad in ["", "cst_", "cst_x_y", "cdt_abc", &format!("cst_{a}")] {
            assert_eq!(channel.verify(bad), None, "{bad:?}");
        }
    }

    #[test]
    fn the_key_is_kept_and_a_long_path_gets_a_short_socket() {
        let dir = tempfile::tempdir().expect("tempdir");
        let first = SessionChannel::open(dir.path()).expect("open");
        let again = SessionChannel::open(dir.path()).expect("open again");
        let id = SessionId::new();
        assert_eq!(first.token(&id), again.token(&id), "the same key after a restart");
        use std::os::unix::fs::PermissionsExt;
        let mode = std::fs::metadata(dir.path().join("channel.key")).expect("key").permissions().mode();
        assert_eq!(mode & 0o777, 0o600);
        assert_eq!(first.socket(), std::path::absolute(dir.path().join("channel.sock")).expect("absolute"));
        let deep = dir.path().join("d".repeat(120));
        let long = SessionChannel::open(&deep).expect("open deep");
        assert!(long.socket().as_os_str().len() <= MAX_SOCKET_PATH, "{}", long.socket().display());
    }
}

//! Secrets people and programs sign in with, and what is kept of them.
//!
//! - An API token is 32 random bytes from the OS, hex encoded behind the prefix `cdt_` (so a
//!   leaked one is easy to recognise in logs and by secret scanners). Only its SHA-256 is
//!   stored: the token is random, so a fast hash is enough (nothing to guess from), and a
//!   request's token is found by one indexed lookup of its hash.
//! - A password is chosen by a person, so it is stored as an argon2id hash (a PHC string, the
//!   `argon2` crate's default parameters), slow on purpose.

use argon2::password_hash::{PasswordHash, PasswordHasher, PasswordVerifier, SaltString};
use argon2::Argon2;
use sha2::{Digest, Sha256};

/// What every API token starts with.
pub const TOKEN_PREFIX: &str = "cdt_";
/// Random bytes in a token.
const TOKEN_BYTES: usize = 32;
/// Passwords shorter than this are refused.
pub const MIN_PASSWORD_CHARS: usize = 8;
/// Longer ones too: hashing is bounded.
pub const MAX_PASSWORD_BYTES: usize = 1024;

#[derive(Debug, thiserror::Error)]
pub enum CredentialError {
    #[error("the operating system gave no random bytes: {0}")]
    Random(String),
    #[error("hashing the password failed: {0}")]
    Hash(String),
}

/// A token just made: the secret, shown once, and the hash that is stored.
pub struct NewToken {
    pub secret: String,
    pub hash: String,
}

impl std::fmt::Debug for NewToken {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("NewToken").field("hash", &self.hash).finish_non_exhaustive()
    }
}

fn random_bytes<const N: usize>() -> Result<[u8; N], CredentialError> {
    let mut bytes = [0u8; N];
    getrandom::getrandom(&mut bytes).map_err(|e| CredentialError::Random(e.to_string()))?;
    Ok(bytes)
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// A fresh random token.
pub fn new_token() -> Result<NewToken, CredentialError> {
    let secret = format!("{TOKEN_PREFIX}{}", hex(&random_bytes::<TOKEN_BYTES>()?));
    let hash = token_hash(&secret);
    Ok(NewToken { secret, hash })
}

/// What is stored of a token, and looked up when one is presented: its SHA-256, hex.
pub fn token_hash(secret: &str) -> String {
    hex(&Sha256::digest(secret.as_bytes()))
}

/// A fresh secret for a sign-in cookie (32 random bytes, hex, no prefix: it never leaves the
/// cookie jar) and the hash that is stored of it ([`token_hash`]: it is random too).
pub fn new_session_secret() -> Result<NewToken, CredentialError> {
    let secret = hex(&random_bytes::<TOKEN_BYTES>()?);
    let hash = token_hash(&secret);
    Ok(NewToken { secret, hash })
}

/// Whether `text` has the shape of a sign-in cookie's secret (checked before any lookup).
pub fn looks_like_session_secret(text: &str) -> bool {
    text.len() == TOKEN_BYTES * 2 && text.bytes().all(|b| b.is_ascii_hexdigit())
}

/// Whether `text` has the shape of a token this service makes (checked before any lookup).
pub fn looks_like_token(text: &str) -> bool {
    text.strip_prefix(TOKEN_PREFIX)
        .is_some_and(|rest| rest.len() == TOKEN_BYTES * 2 && rest.bytes().all(|b| b.is_ascii_hexdigit()))
}

/// The argon2id PHC string of `password`, with a fresh random salt. Slow on purpose: call it
/// off the async executor.
pub fn hash_password(password: &str) -> Result<String, CredentialError> {
    let salt = SaltString::encode_b64(&random_bytes::<16>()?).map_err(|e| CredentialError::Hash(e.to_string()))?;
    Argon2::default()
        .hash_password(password.as_bytes(), &salt)
        .map(|hash| hash.to_string())
        .map_err(|e| CredentialError::Hash(e.to_string()))
}

/// Whether `password` matches the stored PHC string (false for a string that cannot be read).
/// Slow on purpose, like [`hash_password`].
pub fn verify_password(password: &str, stored: &str) -> bool {
    match PasswordHash::new(stored) {
        Ok(hash) => Argon2::default().verify_password(password.as_bytes(), &hash).is_ok(),
        Err(_) => false,
    }
}

/// A user name: 1 to 64 characters of letters, digits, `.`, `_`, `-` and `@` (no `:`, which
/// HTTP Basic uses to end it).
pub fn user_name(raw: &str) -> Result<String, String> {
    let name = raw.trim();
    let ok = |c: char| c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-' | '@');
    if name.is_empty() || name.chars().count() > 64 || !name.chars().all(ok) {
        return Err(format!("a user name is 1 to 64 letters, digits, '.', '_', '-' or '@'; got {raw:?}"));
    }
    Ok(name.to_string())
}

/// A password as given: at least [`MIN_PASSWORD_CHARS`] characters, at most
/// [`MAX_PASSWORD_BYTES`] bytes, without control characters.
pub fn password(raw: &str) -> Result<&str, String> {
    if raw.chars().count() < MIN_PASSWORD_CHARS {
        return Err(format!("a password has at least {MIN_PASSWORD_CHARS} characters"));
    }
    if raw.len() > MAX_PASSWORD_BYTES {
        return Err(format!("a password has at most {MAX_PASSWORD_BYTES} bytes"));
    }
    if raw.chars().any(char::is_control) {
        return Err("a password has no control characters (a line break, a tab, ...)".to_string());
    }
    Ok(raw)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tokens_are_random_prefixed_and_stored_as_their_hash() {
        let (a, b) = (new_token().expect("token"), new_token().expect("token"));
        assert_ne!(a.secret, b.secret);
        assert!(looks_like_token(&a.secret), "{}", a.secret);
        assert_eq!(a.secret.len(), TOKEN_PREFIX.len() + 64);
        assert_eq!(a.hash, token_hash(&a.secret));
        assert_eq!(a.hash.len(), 64);
        assert!(!a.hash.contains(&a.secret[4..]), "the hash is not the secret");
        assert!(!format!("{a:?}").contains(&a.secret), "Debug hides the secret");
    }

    #[test]
    fn what_is_not_a_token_is_told_apart() {
        for text in ["", "cdt_", "secret-token", "cdt_xyz", &format!("cdt_{}", "g".repeat(64))] {
            assert!(!looks_like_token(text), "{text}");
        }
    }

    #[test]
    fn passwords_hash_to_argon2id_and_verify() {
        let hash = hash_password("correct horse").expect("hash");
        assert!(hash.starts_with("$argon2id$"), "{hash}");
        assert!(verify_password("correct horse", &hash));
        assert!(!verify_password("wrong horse", &hash));
        assert!(!verify_password("correct horse", "not a PHC string"));
        assert_ne!(hash, hash_password("correct horse").expect("hash"), "salted");
    }

    #[test]
    fn names_and_passwords_are_checked() {
        assert_eq!(user_name(" ada ").as_deref(), Ok("ada"));
        for bad in ["", "a:b", "with space", &"x".repeat(65)] {
            assert!(user_name(bad).is_err(), "{bad}");
        }
        assert!(password("short").is_err());
        assert!(password("long enough").is_ok());
        assert!(password("line\nbreak!").is_err());
    }
}

//! The bearers a request presents (`Authorization: Bearer`, `?token=` on a stream path), for
//! [`Authenticator::identify`](super::auth::Authenticator::identify):
//!
//! - Shaped like a stored token (`cdt_` and 64 hex digits, 256 random bits): compared with the
//!   configured `CONDUIT_AUTH_TOKEN` in constant time, else looked up by its SHA-256. Never
//!   counted as a guess: guessing one is hopeless, and a revoked or expired token a script
//!   still sends must not lock its address out.
//! - Any other bearer, when a token is configured, could only be that token, which a person
//!   chose like a password: it is a guess, counted by the [`LoginGuard`] with the address's
//!   password checks (the same per-minute limit, the same lockout, shared: alternating
//!   passwords and tokens buys nothing), 429 `too_many_logins` with `Retry-After` once refused,
//!   whatever the bearer (the right one too). The right token is remembered for a minute by a
//!   keyed hash, like a password that passed, so a script sending it on every request is
//!   counted once a minute and costs one message to the guard per request. The comparison takes
//!   no time, so it is made first and the guard admits and records it in one step
//!   ([`Compared`]): no check is ever left running, and a burst of right tokens is not held back.
//! - Any other bearer with no configured token matches nothing and is not counted (nothing to
//!   guess): the request goes on as if it had none.
//! - A session channel's token (`cst_`) is checked before all of these (`http::channel`) and is
//!   never a guess at the configured token.
//!
//! [`LoginGuard`]: crate::actors::login_guard::LoginGuard

use std::net::IpAddr;

use sha2::Digest;
use subtle::ConstantTimeEq;

use super::auth::{too_many_logins, Authenticator, TOUCH_EVERY};
use crate::actors::login_guard::{Admission, Compared, CredentialKey, Outcome, Proven};
use crate::db::{accounts, Store};
use crate::domain::access::Identity;
use crate::domain::{credentials, time};
use crate::error::AppError;
use crate::sandbox::channel::SessionChannel;

impl Authenticator {
    /// The identity one of `bearers` proves, if any; `Err` with 429 when the client at
    /// `address` may not guess the configured token now, or 503 when the database cannot say.
    pub(super) async fn bearer(
        &self,
        bearers: &[String],
        address: IpAddr,
        store: Option<&Store>,
    ) -> Result<Option<Identity>, AppError> {
        // The configured token first, as it always was: a request carrying it and an API token
        // (a header and a `?token=`) is the admin's.
        let random = || bearers.iter().filter(|b| credentials::looks_like_token(b));
        if random().any(|b| self.is_configured(b)) {
            return Ok(Some(Identity::Admin));
        }
        if self.configured.is_some() {
            let chosen: Vec<&String> = bearers
                .iter()
                .filter(|b| !b.is_empty() && !credentials::looks_like_token(b) && !SessionChannel::looks_like_token(b))
                .collect();
            for (i, bearer) in chosen.iter().enumerate() {
                // The header and `?token=` saying the same are one guess.
                if chosen[..i].contains(bearer) {
                    continue;
                }
                if self.configured_guess(address, bearer, store).await? {
                    return Ok(Some(Identity::Admin));
                }
            }
        }
        if let Some(store) = store {
            for bearer in random() {
                if let Some(identity) = token(store, bearer).await? {
                    return Ok(Some(identity));
                }
            }
        }
        Ok(None)
    }

    /// Whether `bearer` is the configured token, when the client at `address` may guess now
    /// (429 `too_many_logins` otherwise, the right token included; in cluster mode the nodes'
    /// shared lockout decides too).
    async fn configured_guess(&self, address: IpAddr, bearer: &str, store: Option<&Store>) -> Result<bool, AppError> {
        let matches = self.is_configured(bearer);
        let outcome = if matches { Outcome::Passed(Proven::ConfiguredToken) } else { Outcome::Failed };
        let key = self.bearer_key(bearer);
        let admission = self
            .logins
            .send(Compared { address, key, outcome })
            .await
            .map_err(|e| AppError::internal(format!("the login guard is gone: {e}")))?;
        match admission {
            // Remembered: the right token, not counted again.
            Admission::Known(Proven::ConfiguredToken) => {
                if let Some(store) = store {
                    self.shared_known(store, address).await?;
                }
                Ok(matches)
            }
            // Keys are domain-separated: a bearer never hashes to a name and password's key.
            Admission::Known(Proven::User(_)) => Err(AppError::internal("a bearer's key was remembered for a user")),
            // Counted, its outcome recorded (and told to the other nodes).
            Admission::Check => {
                if let Some(store) = store {
                    self.shared_compared(store, address, !matches).await?;
                }
                Ok(matches)
            }
            // Only for a password check followed (a comparison never runs long enough).
            Admission::Failed => Ok(false),
            Admission::Wait(wait) => Err(too_many_logins(wait)),
        }
    }

    /// Whether `bearer` is the configured token (in constant time).
    fn is_configured(&self, bearer: &str) -> bool {
        self.configured.as_ref().is_some_and(|expected| bool::from(bearer.as_bytes().ct_eq(expected.as_bytes())))
    }

    /// A keyed hash of a bearer: what the right configured token is remembered by.
    fn bearer_key(&self, bearer: &str) -> CredentialKey {
        let mut hash = self.keyed(b"conduit bearer\0");
        hash.update(bearer.as_bytes());
        hash.finalize().into()
    }
}

/// The stored, live token `secret` is, as an identity; its use is recorded (at most once a
/// minute, in the background: a lost write costs nothing).
async fn token(store: &Store, secret: &str) -> Result<Option<Identity>, AppError> {
    let hash = credentials::token_hash(secret);
    let Some(row) = store.run(move |conn| accounts::live_token_by_hash(conn, &hash, &time::now())).await? else {
        return Ok(None);
    };
    if row.last_used_at.as_deref().is_none_or(|last| *last < *time::ago(TOUCH_EVERY)) {
        let (store, id) = (store.clone(), row.id.clone());
        actix_web::rt::spawn(async move {
            if let Err(e) = store.run(move |conn| accounts::touch_token(conn, &id, &time::now())).await {
                tracing::debug!(error = %e, "a token's last use was not recorded");
            }
        });
    }
    Ok(Some(Identity::Token { id: row.id, scope: row.scope, project: row.project_id }))
}

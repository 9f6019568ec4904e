//! Password checks for [`Authenticator`]: HTTP Basic and the dashboard's login form take the
//! same path, so the same limits and lockout hold for both. The [`LoginGuard`] admits a check
//! first (and in cluster mode the nodes' shared lockout, see `auth_shared`); argon2 runs on the
//! blocking pool, at most [`PASSWORD_CHECKS`] at once; the outcome is told to both whichever
//! way the check ends.

use std::net::IpAddr;
use std::sync::OnceLock;

use actix::Addr;
use actix_web::web;
use sha2::Digest;

#[cfg(doc)]
use super::auth::PASSWORD_CHECKS;
use super::auth::{too_many_logins, Authenticator};
use crate::actors::login_guard::{Admission, CredentialKey, LoginGuard, MayTry, Outcome, Proven, Tried};
use crate::db::{accounts, Store};
use crate::domain::credentials;
use crate::domain::ids::UserId;
use crate::error::AppError;

impl Authenticator {
    /// The user `name` and `password` prove, if the client at `address` may try now (429
    /// `too_many_logins` otherwise). The one path every password takes, HTTP Basic and the
    /// login form alike, so the same limits and lockout apply to both.
    pub async fn password_login(
        &self,
        store: &Store,
        address: IpAddr,
        name: String,
        password: String,
    ) -> Result<Option<UserId>, AppError> {
        let key = self.credential_key(&name, &password);
        let admission = self
            .logins
            .send(MayTry { address, key })
            .await
            .map_err(|e| AppError::internal(format!("the login guard is gone: {e}")))?;
        match admission {
            Admission::Known(Proven::User(id)) => {
                self.shared_known(store, address).await?;
                return Ok(Some(id));
            }
            // Keys are domain-separated: a name and password never hash to a bearer's key.
            Admission::Known(Proven::ConfiguredToken) => {
                return Err(AppError::internal("a password's key was remembered as the configured token"))
            }
            Admission::Wait(wait) => return Err(too_many_logins(wait)),
            // The same name and password, checked by a request in parallel, failed.
            Admission::Failed => return Ok(None),
            Admission::Check => {}
        }
        let mut running = RunningCheck { logins: &self.logins, address, key, outcome: Outcome::Unfinished };
        let shared = self.shared_begin(store, address).await?;
        let proved = self.check_password(store, name, password).await?;
        let outcome = match &proved {
            Some(user) => Outcome::Passed(Proven::User(user.clone())),
            None => Outcome::Failed,
        };
        if let Some(shared) = shared {
            shared.finish(&outcome).await?;
        }
        running.outcome = outcome;
        Ok(proved)
    }

    /// A keyed hash of a name and password: what a passed one is remembered by.
    fn credential_key(&self, name: &str, password: &str) -> CredentialKey {
        let mut hash = self.keyed(b"conduit password\0");
        hash.update((name.len() as u64).to_le_bytes());
        hash.update(name.as_bytes());
        hash.update(password.as_bytes());
        hash.finalize().into()
    }

    /// The user `name` whose password `password` is; `None` for no such user or another
    /// password. An unknown name is checked against a fixed hash all the same, so the time
    /// an answer takes does not tell whether the name exists.
    async fn check_password(&self, store: &Store, name: String, password: String) -> Result<Option<UserId>, AppError> {
        // A name no user can have (a NUL byte, which PostgreSQL refuses to even compare, or
        // any other character `user add` refuses) is an unknown name, not a storage error.
        let user = match credentials::user_name(&name) {
            Ok(valid) if valid == name => store.run(move |conn| accounts::user_by_name(conn, &name)).await?,
            _ => None,
        };
        let _permit = self
            .password_checks
            .clone()
            .acquire_owned()
            .await
            .map_err(|e| AppError::internal(format!("password checks closed: {e}")))?;
        let stored = user.as_ref().map(|u| u.password_hash.clone());
        let matches = web::block(move || match stored {
            Some(stored) => credentials::verify_password(&password, &stored),
            None => {
                // Same work as for a real user; the answer is no whatever it says.
                let _ = credentials::verify_password(&password, dummy_hash());
                false
            }
        })
        .await
        .map_err(|e| AppError::internal(format!("password check failed: {e}")))?;
        Ok(user.filter(|_| matches).map(|u| u.id))
    }
}

/// A password check the login guard admitted: its outcome is told when it ends, whichever way
/// it ends (an error, or the client leaving, drops it [`Outcome::Unfinished`]).
struct RunningCheck<'a> {
    logins: &'a Addr<LoginGuard>,
    address: IpAddr,
    key: CredentialKey,
    outcome: Outcome,
}

impl Drop for RunningCheck<'_> {
    fn drop(&mut self) {
        let outcome = std::mem::replace(&mut self.outcome, Outcome::Unfinished);
        self.logins.do_send(Tried { address: self.address, key: self.key, outcome });
    }
}

/// A hash to check unknown names' passwords against, made once (slow: on the blocking pool,
/// where its first use is). Its password is random and forgotten, so nothing matches it.
fn dummy_hash() -> &'static str {
    static DUMMY: OnceLock<String> = OnceLock::new();
    DUMMY.get_or_init(|| {
        let password = credentials::new_token().map(|t| t.secret).unwrap_or_else(|_| "no randomness".into());
        // Should hashing fail, an empty hash still costs a parse; only the timing suffers.
        credentials::hash_password(&password).unwrap_or_default()
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_unknown_name_is_checked_against_a_hash_nothing_matches() {
        assert!(dummy_hash().starts_with("$argon2id$"));
        assert!(!credentials::verify_password("", dummy_hash()));
    }
}

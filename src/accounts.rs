//! Users: `conduit user add` and the first user from the environment (for containers, where
//! nobody runs a command before the service starts).
//!
//! Every user is an admin for now (no role column until another role exists). A password never
//! comes from the command line (it would show in `ps` and shell history): `user add` reads it
//! from standard input, and a container gives the first one as `CONDUIT_ADMIN_PASSWORD`.

use std::collections::BTreeMap;
use std::fmt;

use crate::db::accounts::{self, UserRow};
use crate::db::{DbConnection, Store, StoreError};
use crate::domain::credentials;
use crate::domain::ids::UserId;
use crate::domain::time;

/// The first user's name, created at `serve` when no user exists.
pub const ADMIN_USER_ENV: &str = "CONDUIT_ADMIN_USER";
/// The first user's password.
pub const ADMIN_PASSWORD_ENV: &str = "CONDUIT_ADMIN_PASSWORD";

#[derive(Debug, thiserror::Error)]
pub enum AccountError {
    #[error("{0}")]
    Invalid(String),
    #[error("a user named {0:?} already exists")]
    Exists(String),
    #[error("{0}")]
    Credential(#[from] credentials::CredentialError),
    #[error("{0}")]
    Store(StoreError),
}

impl From<StoreError> for AccountError {
    fn from(e: StoreError) -> Self {
        AccountError::Store(e)
    }
}

/// A user to create: a checked name and password.
pub struct NewUser {
    name: String,
    password: String,
}

/// Never shows the password.
impl fmt::Debug for NewUser {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("NewUser").field("name", &self.name).finish_non_exhaustive()
    }
}

impl NewUser {
    pub fn new(name: &str, password: &str) -> Result<NewUser, AccountError> {
        let name = credentials::user_name(name).map_err(AccountError::Invalid)?;
        let password = credentials::password(password).map_err(AccountError::Invalid)?.to_string();
        Ok(NewUser { name, password })
    }

    /// The first user from `CONDUIT_ADMIN_USER` and `CONDUIT_ADMIN_PASSWORD`: `None` when
    /// neither is set, an error when only one is or either is invalid.
    pub fn from_env(env: &BTreeMap<String, String>) -> Result<Option<NewUser>, AccountError> {
        let get = |k: &str| env.get(k).filter(|v| !v.is_empty());
        match (get(ADMIN_USER_ENV), get(ADMIN_PASSWORD_ENV)) {
            (None, None) => Ok(None),
            (Some(name), Some(password)) => {
                let user = NewUser::new(name, password)
                    .map_err(|e| AccountError::Invalid(format!("{ADMIN_USER_ENV}/{ADMIN_PASSWORD_ENV}: {e}")))?;
                Ok(Some(user))
            }
            _ => Err(AccountError::Invalid(format!("set both {ADMIN_USER_ENV} and {ADMIN_PASSWORD_ENV}, or neither"))),
        }
    }

    pub fn name(&self) -> &str {
        &self.name
    }

    /// The row to store: the password hashed (argon2id; slow on purpose, call it off the async
    /// executor).
    fn row(&self) -> Result<UserRow, AccountError> {
        Ok(UserRow {
            id: UserId::new(),
            name: self.name.clone(),
            password_hash: credentials::hash_password(&self.password)?,
            created_at: time::now(),
        })
    }
}

/// Stores `user` (`conduit user add`); its name must be free.
pub fn add(conn: &mut DbConnection, user: &NewUser) -> Result<UserRow, AccountError> {
    let row = user.row()?;
    match accounts::insert_user(conn, &row) {
        Ok(()) => Ok(row),
        Err(StoreError::Conflict(_)) => Err(AccountError::Exists(user.name.clone())),
        Err(e) => Err(e.into()),
    }
}

/// Stores `user` if no user exists yet (the environment's first user, at every start);
/// answers whether it did.
pub async fn add_first(store: &Store, user: &NewUser) -> Result<bool, AccountError> {
    if store.run(accounts::count_users).await? > 0 {
        return Ok(false);
    }
    let row = tokio::task::spawn_blocking({
        let (name, password) = (user.name.clone(), user.password.clone());
        move || NewUser { name, password }.row()
    })
    .await
    .map_err(|e| AccountError::Invalid(format!("hashing the password failed: {e}")))??;
    Ok(store.run(move |conn| accounts::insert_first_user(conn, &row)).await?)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn env(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
        pairs.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect()
    }

    #[test]
    fn the_first_user_comes_from_both_variables_or_neither() {
        assert!(matches!(NewUser::from_env(&env(&[])), Ok(None)));
        let both = NewUser::from_env(&env(&[(ADMIN_USER_ENV, "ada"), (ADMIN_PASSWORD_ENV, "long enough")]));
        assert_eq!(both.ok().flatten().map(|u| u.name), Some("ada".to_string()));
        assert!(NewUser::from_env(&env(&[(ADMIN_USER_ENV, "ada")])).is_err());
        assert!(NewUser::from_env(&env(&[(ADMIN_USER_ENV, "ada"), (ADMIN_PASSWORD_ENV, "short")])).is_err());
        let user = NewUser::new("ada", "a secret password").expect("valid");
        assert!(!format!("{user:?}").contains("secret"));
    }
}

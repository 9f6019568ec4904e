//! Queries on `users` and `api_tokens`. Timestamps are RFC 3339 text, so "not expired" is a
//! text comparison with now (see `domain::time`).

use diesel::prelude::*;
use serde::Serialize;
use utoipa::ToSchema;

use super::schema::{api_tokens, users};
use super::{DbConnection, StoreError};
use crate::domain::access::Scope;
use crate::domain::ids::{ProjectId, TokenId, UserId};

#[derive(Debug, Clone, PartialEq, Queryable, Selectable, Insertable)]
#[diesel(table_name = users)]
pub struct UserRow {
    pub id: UserId,
    pub name: String,
    /// An argon2id PHC string.
    pub password_hash: String,
    pub created_at: String,
}

/// A token as stored: its hash, never its secret.
#[derive(Debug, Clone, PartialEq, Queryable, Selectable, Insertable)]
#[diesel(table_name = api_tokens)]
pub struct TokenRow {
    pub id: TokenId,
    pub name: String,
    pub scope: Scope,
    pub project_id: Option<ProjectId>,
    pub created_by: Option<UserId>,
    pub token_hash: String,
    pub created_at: String,
    pub expires_at: Option<String>,
    pub revoked_at: Option<String>,
    pub last_used_at: Option<String>,
}

/// A token as listed: everything but its hash.
#[derive(Debug, Clone, PartialEq, Serialize, ToSchema)]
pub struct TokenInfo {
    /// UUID.
    #[schema(value_type = String)]
    pub id: TokenId,
    pub name: String,
    pub scope: Scope,
    /// The one project it may reach; `null`: every project.
    #[schema(value_type = Option<String>)]
    pub project_id: Option<ProjectId>,
    /// The user who made it; `null` when it was made with `CONDUIT_AUTH_TOKEN` or a token.
    #[schema(value_type = Option<String>)]
    pub created_by: Option<UserId>,
    pub created_at: String,
    /// `null`: it never expires.
    pub expires_at: Option<String>,
    /// Set once it is revoked; it no longer works from then on.
    pub revoked_at: Option<String>,
    /// When it was last used (updated at most once a minute).
    pub last_used_at: Option<String>,
}

impl From<TokenRow> for TokenInfo {
    fn from(row: TokenRow) -> Self {
        TokenInfo {
            id: row.id,
            name: row.name,
            scope: row.scope,
            project_id: row.project_id,
            created_by: row.created_by,
            created_at: row.created_at,
            expires_at: row.expires_at,
            revoked_at: row.revoked_at,
            last_used_at: row.last_used_at,
        }
    }
}

pub fn insert_user(conn: &mut DbConnection, user: &UserRow) -> Result<(), StoreError> {
    diesel::insert_into(users::table).values(user).execute(conn)?;
    Ok(())
}

pub fn user_by_name(conn: &mut DbConnection, name: &str) -> Result<Option<UserRow>, StoreError> {
    Ok(users::table.filter(users::name.eq(name)).select(UserRow::as_select()).first(conn).optional()?)
}

pub fn count_users(conn: &mut DbConnection) -> Result<i64, StoreError> {
    Ok(users::table.count().get_result(conn)?)
}

/// Inserts `user` unless some user exists (the first user from the environment), in one
/// transaction; answers whether it was inserted.
pub fn insert_first_user(conn: &mut DbConnection, user: &UserRow) -> Result<bool, StoreError> {
    conn.write_transaction(|conn| {
        if count_users(conn)? > 0 {
            return Ok(false);
        }
        insert_user(conn, user)?;
        Ok(true)
    })
}

pub fn insert_token(conn: &mut DbConnection, token: &TokenRow) -> Result<(), StoreError> {
    diesel::insert_into(api_tokens::table).values(token).execute(conn)?;
    Ok(())
}

/// Every token, newest first.
pub fn list_tokens(conn: &mut DbConnection, limit: i64, offset: i64) -> Result<Vec<TokenRow>, StoreError> {
    Ok(api_tokens::table
        .order((api_tokens::created_at.desc(), api_tokens::id.asc()))
        .limit(limit)
        .offset(offset)
        .select(TokenRow::as_select())
        .load(conn)?)
}

/// The live token (not revoked, not expired at `now`) whose hash is `hash`.
pub fn live_token_by_hash(conn: &mut DbConnection, hash: &str, now: &str) -> Result<Option<TokenRow>, StoreError> {
    Ok(api_tokens::table
        .filter(api_tokens::token_hash.eq(hash))
        .filter(api_tokens::revoked_at.is_null())
        .filter(api_tokens::expires_at.is_null().or(api_tokens::expires_at.gt(now)))
        .select(TokenRow::as_select())
        .first(conn)
        .optional()?)
}

/// Whether any credential is stored that can sign in at `now`: a user, or a live token. While
/// none is (and no `CONDUIT_AUTH_TOKEN` is set) the API stays open on loopback.
pub fn any_credential(conn: &mut DbConnection, now: &str) -> Result<bool, StoreError> {
    if count_users(conn)? > 0 {
        return Ok(true);
    }
    let live: i64 = api_tokens::table
        .filter(api_tokens::revoked_at.is_null())
        .filter(api_tokens::expires_at.is_null().or(api_tokens::expires_at.gt(now)))
        .count()
        .get_result(conn)?;
    Ok(live > 0)
}

/// Marks the token revoked at `now` (a token revoked already keeps its first time); `NotFound`
/// when there is no such token.
pub fn revoke_token(conn: &mut DbConnection, id: &TokenId, now: &str) -> Result<(), StoreError> {
    let revoked = diesel::update(api_tokens::table.find(id).filter(api_tokens::revoked_at.is_null()))
        .set(api_tokens::revoked_at.eq(now))
        .execute(conn)?;
    if revoked == 0 {
        let exists: i64 = api_tokens::table.find(id).count().get_result(conn)?;
        if exists == 0 {
            return Err(StoreError::NotFound);
        }
    }
    Ok(())
}

/// Records a use of the token at `now`.
pub fn touch_token(conn: &mut DbConnection, id: &TokenId, now: &str) -> Result<(), StoreError> {
    diesel::update(api_tokens::table.find(id)).set(api_tokens::last_used_at.eq(now)).execute(conn)?;
    Ok(())
}

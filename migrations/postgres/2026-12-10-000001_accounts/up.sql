-- Accounts: the people who sign in (every user is an admin for now: there is no role column
-- until a role other than admin exists) and the API tokens an admin hands out.

-- password_hash is an argon2id PHC string ("$argon2id$v=19$m=...,t=...,p=...$salt$hash").
CREATE TABLE users (
    id            TEXT PRIMARY KEY NOT NULL,
    name          TEXT NOT NULL,
    password_hash TEXT NOT NULL,
    created_at    TEXT NOT NULL
);
CREATE UNIQUE INDEX users_name_key ON users (name);

-- A token is a random secret shown once; only its SHA-256 (hex) is kept, looked up by that.
-- project_id NULL: every project. created_by NULL: made with CONDUIT_AUTH_TOKEN or a token.
CREATE TABLE api_tokens (
    id           TEXT PRIMARY KEY NOT NULL,
    name         TEXT NOT NULL,
    scope        TEXT NOT NULL CHECK (scope IN ('read', 'operate', 'admin')),
    project_id   TEXT REFERENCES projects (id) ON DELETE CASCADE,
    created_by   TEXT REFERENCES users (id) ON DELETE SET NULL,
    token_hash   TEXT NOT NULL,
    created_at   TEXT NOT NULL,
    expires_at   TEXT,
    revoked_at   TEXT,
    last_used_at TEXT
);
CREATE UNIQUE INDEX api_tokens_hash_key ON api_tokens (token_hash);
CREATE INDEX api_tokens_project_idx ON api_tokens (project_id);
CREATE INDEX api_tokens_created_by_idx ON api_tokens (created_by);

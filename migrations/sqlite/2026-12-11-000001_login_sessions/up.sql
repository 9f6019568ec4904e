-- Dashboard sign-ins: a random secret in an HttpOnly cookie; only its SHA-256 (hex) is kept,
-- looked up by that. A user's sessions go with the user. Expired and revoked rows are kept
-- (revoked_at says when) so a user's list can be explained; they never sign anyone in.
CREATE TABLE login_sessions (
    id           TEXT PRIMARY KEY NOT NULL,
    user_id      TEXT NOT NULL REFERENCES users (id) ON DELETE CASCADE,
    secret_hash  TEXT NOT NULL,
    created_at   TEXT NOT NULL,
    last_seen_at TEXT NOT NULL,
    expires_at   TEXT NOT NULL,
    revoked_at   TEXT,
    -- The client's address and User-Agent (at most 200 characters) at sign-in, for the list.
    address      TEXT,
    user_agent   TEXT
);
CREATE UNIQUE INDEX login_sessions_hash_key ON login_sessions (secret_hash);
CREATE INDEX login_sessions_user_idx ON login_sessions (user_id);

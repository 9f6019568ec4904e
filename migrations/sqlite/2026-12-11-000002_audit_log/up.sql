-- The access audit: who did what, when, from where, with what result. One row per
-- state-changing API request (logins, logouts, token changes among them) and per refused
-- credential. Append-only: rows are never changed (a trigger refuses it); only whole rows past
-- the retention are deleted.
-- event: what happened (see domain::audit::AuditEvent). actor: who (local, admin, user, token,
-- anonymous), actor_id the user's or token's id. route: the route's pattern, never the path
-- as sent (no query string, so no `?token=`); target: the id the route names, or the one the
-- request made.
CREATE TABLE audit_log (
    id       INTEGER PRIMARY KEY AUTOINCREMENT NOT NULL,
    at       TEXT NOT NULL,
    event    TEXT NOT NULL,
    actor    TEXT NOT NULL,
    actor_id TEXT,
    method   TEXT NOT NULL,
    route    TEXT NOT NULL,
    target   TEXT,
    status   INTEGER NOT NULL,
    address  TEXT
);
CREATE INDEX audit_log_at_idx ON audit_log (at);
CREATE INDEX audit_log_actor_idx ON audit_log (actor_id, id);

CREATE TRIGGER audit_log_append_only BEFORE UPDATE ON audit_log
BEGIN
    SELECT RAISE(ABORT, 'the audit log is append-only');
END;

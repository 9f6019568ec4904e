-- What a cluster's nodes share of the login limits (see db::login_failures): each node limits
-- its own password checks per minute (its CPU), but a lockout holds on every node, or a
-- client spreading its guesses over N nodes would get N times the guesses.
-- login_failures: one row per failed password check or wrong guess at CONDUIT_AUTH_TOKEN by a
-- client address (as counted: an IPv4 address, or an IPv6 /64), and per check still running
-- (pending: it counts like a failure until its outcome is known).
CREATE TABLE login_failures (
    id      TEXT PRIMARY KEY NOT NULL,
    address TEXT NOT NULL,
    at      TEXT NOT NULL,
    pending BOOLEAN NOT NULL
);
CREATE INDEX login_failures_address_idx ON login_failures (address, at);
-- Rows that no longer count are removed as failures are recorded (by `at`).
CREATE INDEX login_failures_at_idx ON login_failures (at);

-- An address locked out until `until` (RFC 3339), on every node.
CREATE TABLE login_lockouts (
    address TEXT PRIMARY KEY NOT NULL,
    until   TEXT NOT NULL
);

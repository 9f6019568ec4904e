-- The stored log is the source of a session's live stream: a subscriber that falls behind (or
-- reconnects) catches up from it. Lines relayed as events carry the sequence number the event
-- had on the session's stream; a session's other events (status changes, permission decisions,
-- created/closed) are kept in session_events with theirs.
ALTER TABLE messages ADD COLUMN seq BIGINT;
-- When a line to the CLI was written to it; NULL while it waits in Conduit's queue (and for
-- good if the session ended first). Set for user turns; other lines to the CLI are written at
-- once.
ALTER TABLE messages ADD COLUMN delivered_at TEXT;
CREATE INDEX messages_session_seq_idx ON messages (session_id, seq) WHERE seq IS NOT NULL;

CREATE TABLE session_events (
    id         INTEGER PRIMARY KEY AUTOINCREMENT NOT NULL,
    session_id TEXT NOT NULL REFERENCES sessions (id) ON DELETE CASCADE,
    seq        BIGINT NOT NULL,
    kind       TEXT NOT NULL,
    name       TEXT NOT NULL,
    data       TEXT NOT NULL,
    timestamp  TEXT NOT NULL
);
CREATE UNIQUE INDEX session_events_seq_key ON session_events (session_id, seq);

-- Keepers (a session's CLI outlives the service): each line the CLI wrote is stored with the
-- keeper's number for it, so a restarted service knows which lines it has; the session keeps
-- what its conversation must know to go on (null: no keeper holds its CLI).
ALTER TABLE messages ADD COLUMN cli_seq BIGINT;
CREATE INDEX messages_session_cli_seq_idx ON messages (session_id, cli_seq) WHERE cli_seq IS NOT NULL;
ALTER TABLE sessions ADD COLUMN keeper_state TEXT;

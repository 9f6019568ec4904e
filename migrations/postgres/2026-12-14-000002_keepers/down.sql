ALTER TABLE sessions DROP COLUMN keeper_state;
DROP INDEX messages_session_cli_seq_idx;
ALTER TABLE messages DROP COLUMN cli_seq;

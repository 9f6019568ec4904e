DROP TABLE session_events;
DROP INDEX messages_session_seq_idx;
ALTER TABLE messages DROP COLUMN delivered_at;
ALTER TABLE messages DROP COLUMN seq;

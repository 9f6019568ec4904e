ALTER TABLE session_events DROP CONSTRAINT session_events_pkey;
CREATE UNIQUE INDEX session_events_seq_key ON session_events (session_id, seq);
ALTER TABLE session_events ADD CONSTRAINT session_events_pkey PRIMARY KEY (id);
DROP TRIGGER sessions_deleted_rows_go ON sessions;
DROP FUNCTION sessions_delete_rows();
DROP TRIGGER session_events_updated_session_exists ON session_events;
DROP TRIGGER session_events_inserted_session_exists ON session_events;
DROP TRIGGER messages_updated_session_exists ON messages;
DROP TRIGGER messages_inserted_session_exists ON messages;
DROP FUNCTION rows_sessions_exist();
ALTER TABLE session_events ADD CONSTRAINT session_events_session_id_fkey
    FOREIGN KEY (session_id) REFERENCES sessions (id) ON DELETE CASCADE;
ALTER TABLE messages ADD CONSTRAINT messages_session_id_fkey
    FOREIGN KEY (session_id) REFERENCES sessions (id) ON DELETE CASCADE;

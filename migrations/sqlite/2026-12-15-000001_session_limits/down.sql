ALTER TABLE sessions DROP COLUMN limits;
ALTER TABLE projects DROP COLUMN session_limits;

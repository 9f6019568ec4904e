DROP INDEX sessions_status_last_active_idx;
ALTER TABLE sessions DROP COLUMN closed_reason;

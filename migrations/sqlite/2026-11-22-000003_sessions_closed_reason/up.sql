-- Why a session ended: requested, idle_timeout, project_deleted, shutdown, cli_exited,
-- launch_failed, service_restarted. NULL while the session is live (and again once resumed).
ALTER TABLE sessions ADD COLUMN closed_reason TEXT;

-- The janitor's sweep asks for live sessions quiet since a cutoff: one range per live status.
CREATE INDEX sessions_status_last_active_idx ON sessions (status, last_active_at);

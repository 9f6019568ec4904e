ALTER TABLE projects DROP COLUMN turn_inactivity_timeout_ms;

-- A project's own turn inactivity timeout in milliseconds (0: never); null: the setting.
ALTER TABLE projects ADD COLUMN turn_inactivity_timeout_ms BIGINT;

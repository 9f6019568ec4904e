-- Sessions that wait: `waiting_for_limit` (a usage limit, until `resumes_at`) and `paused` (a
-- spent budget). `status_reason` says why in words; both are null otherwise.
ALTER TABLE sessions ADD COLUMN resumes_at TEXT;
ALTER TABLE sessions ADD COLUMN status_reason TEXT;

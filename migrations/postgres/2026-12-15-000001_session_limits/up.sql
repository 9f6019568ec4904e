-- Kernel limits on sessions' CLIs (memory, processes, CPU weight), as JSON objects: a
-- project's defaults for its sessions, and what a session's launch asked for itself (a resume
-- applies it again). Null: none.
ALTER TABLE projects ADD COLUMN session_limits TEXT;
ALTER TABLE sessions ADD COLUMN limits TEXT;

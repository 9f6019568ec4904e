-- Commands (`exec`) and background processes started in a session's workspace or a project's
-- folder. A row is written before its process starts, so a crash of the service leaves a
-- trace the next start finds (by `id`, the marker every process of the tree carries).
CREATE TABLE processes (
    id               TEXT PRIMARY KEY NOT NULL,
    project_id       TEXT NOT NULL REFERENCES projects (id) ON DELETE CASCADE,
    session_id       TEXT REFERENCES sessions (id) ON DELETE CASCADE,
    kind             TEXT NOT NULL,
    command          TEXT NOT NULL,
    cwd              TEXT NOT NULL,
    context          TEXT,
    status           TEXT NOT NULL,
    pid              INTEGER,
    exit_code        INTEGER,
    signal           INTEGER,
    end_reason       TEXT,
    started_at       TEXT NOT NULL,
    ended_at         TEXT,
    stdout_bytes     BIGINT NOT NULL DEFAULT 0,
    stderr_bytes     BIGINT NOT NULL DEFAULT 0,
    stdout_truncated BOOLEAN NOT NULL DEFAULT 0,
    stderr_truncated BOOLEAN NOT NULL DEFAULT 0
);
CREATE INDEX processes_project_idx ON processes (project_id, started_at);
CREATE INDEX processes_session_idx ON processes (session_id, started_at);
CREATE INDEX processes_status_idx ON processes (status, ended_at);

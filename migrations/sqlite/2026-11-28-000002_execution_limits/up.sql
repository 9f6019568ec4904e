-- A run that met a usage limit waits with status `waiting_for_limit` until `resumes_at`, then
-- runs again (null otherwise). SQLite cannot change a CHECK in place: the table is rebuilt with
-- its rows and indexes.
CREATE TABLE agent_executions_new (
    id            TEXT PRIMARY KEY NOT NULL,
    agent_id      TEXT NOT NULL REFERENCES agents (id) ON DELETE CASCADE,
    trigger_kind  TEXT NOT NULL CHECK (trigger_kind IN ('cron', 'manual')),
    status        TEXT NOT NULL CHECK (status IN ('queued', 'running', 'success', 'failure', 'timeout', 'cancelled', 'skipped', 'waiting_for_limit')),
    exit_code     INTEGER,
    started_at    TEXT,
    finished_at   TEXT,
    cost_usd      DOUBLE,
    input_tokens  BIGINT,
    output_tokens BIGINT,
    output        TEXT NOT NULL DEFAULT '',
    raw_output    TEXT NOT NULL DEFAULT '',
    error         TEXT,
    created_at    TEXT NOT NULL,
    resumes_at    TEXT
);
INSERT INTO agent_executions_new (id, agent_id, trigger_kind, status, exit_code, started_at, finished_at, cost_usd,
    input_tokens, output_tokens, output, raw_output, error, created_at)
    SELECT id, agent_id, trigger_kind, status, exit_code, started_at, finished_at, cost_usd, input_tokens,
    output_tokens, output, raw_output, error, created_at FROM agent_executions;
DROP TABLE agent_executions;
ALTER TABLE agent_executions_new RENAME TO agent_executions;
CREATE INDEX agent_executions_agent_idx ON agent_executions (agent_id, created_at);
CREATE INDEX agent_executions_status_idx ON agent_executions (status);

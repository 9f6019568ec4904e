DELETE FROM agent_executions WHERE status = 'skipped';
CREATE TABLE agent_executions_old (
    id            TEXT PRIMARY KEY NOT NULL,
    agent_id      TEXT NOT NULL REFERENCES agents (id) ON DELETE CASCADE,
    trigger_kind  TEXT NOT NULL CHECK (trigger_kind IN ('cron', 'manual')),
    status        TEXT NOT NULL CHECK (status IN ('queued', 'running', 'success', 'failure', 'timeout', 'cancelled')),
    exit_code     INTEGER,
    started_at    TEXT,
    finished_at   TEXT,
    cost_usd      DOUBLE,
    input_tokens  BIGINT,
    output_tokens BIGINT,
    output        TEXT NOT NULL DEFAULT '',
    raw_output    TEXT NOT NULL DEFAULT '',
    error         TEXT,
    created_at    TEXT NOT NULL
);
INSERT INTO agent_executions_old SELECT * FROM agent_executions;
DROP TABLE agent_executions;
ALTER TABLE agent_executions_old RENAME TO agent_executions;
CREATE INDEX agent_executions_agent_idx ON agent_executions (agent_id, created_at);
CREATE INDEX agent_executions_status_idx ON agent_executions (status);

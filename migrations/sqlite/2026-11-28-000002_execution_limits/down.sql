-- A run still waiting for a limit cannot be told apart from a failed one by the older service:
-- it is recorded as failed.
UPDATE agent_executions SET status = 'failure', finished_at = COALESCE(finished_at, created_at)
    WHERE status = 'waiting_for_limit';
CREATE TABLE agent_executions_old (
    id            TEXT PRIMARY KEY NOT NULL,
    agent_id      TEXT NOT NULL REFERENCES agents (id) ON DELETE CASCADE,
    trigger_kind  TEXT NOT NULL CHECK (trigger_kind IN ('cron', 'manual')),
    status        TEXT NOT NULL CHECK (status IN ('queued', 'running', 'success', 'failure', 'timeout', 'cancelled', 'skipped')),
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
INSERT INTO agent_executions_old SELECT id, agent_id, trigger_kind, status, exit_code, started_at, finished_at,
    cost_usd, input_tokens, output_tokens, output, raw_output, error, created_at FROM agent_executions;
DROP TABLE agent_executions;
ALTER TABLE agent_executions_old RENAME TO agent_executions;
CREATE INDEX agent_executions_agent_idx ON agent_executions (agent_id, created_at);
CREATE INDEX agent_executions_status_idx ON agent_executions (status);

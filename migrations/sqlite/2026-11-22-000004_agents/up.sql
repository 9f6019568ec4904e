-- Scheduled ("proactive") agents: a cron schedule and an objective run unattended with `claude -p`.
CREATE TABLE agents (
    id                   TEXT PRIMARY KEY NOT NULL,
    project_id           TEXT REFERENCES projects (id) ON DELETE CASCADE,
    name                 TEXT NOT NULL,
    objective            TEXT NOT NULL,
    schedule             TEXT NOT NULL,
    cwd                  TEXT NOT NULL,
    model                TEXT,
    timeout_ms           BIGINT NOT NULL DEFAULT 300000,
    status               TEXT NOT NULL DEFAULT 'active' CHECK (status IN ('active', 'paused', 'error')),
    consecutive_failures INTEGER NOT NULL DEFAULT 0,
    next_run_at          TEXT,
    created_at           TEXT NOT NULL,
    updated_at           TEXT NOT NULL
);
CREATE INDEX agents_project_idx ON agents (project_id);

-- One row per run of an agent. `output` is the clean text answer; `raw_output` every line the
-- CLI wrote, newline separated.
CREATE TABLE agent_executions (
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
CREATE INDEX agent_executions_agent_idx ON agent_executions (agent_id, created_at);
CREATE INDEX agent_executions_status_idx ON agent_executions (status);

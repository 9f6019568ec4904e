-- The cost ledger: one row per turn result with what that turn cost (the difference between
-- the CLI's cumulative totals before and after it), never the cumulative figures themselves.
-- Rows outlive their session, run and project (money spent stays spent): no foreign keys.
CREATE TABLE usage_ledger (
    id            INTEGER PRIMARY KEY AUTOINCREMENT NOT NULL,
    recorded_at   TEXT NOT NULL,
    project_id    TEXT,
    session_id    TEXT,
    execution_id  TEXT,
    agent_id      TEXT,
    agent         TEXT NOT NULL,
    model         TEXT,
    cost_usd      DOUBLE NOT NULL,
    input_tokens  BIGINT NOT NULL,
    output_tokens BIGINT NOT NULL
);
CREATE INDEX usage_ledger_recorded_idx ON usage_ledger (recorded_at);
CREATE INDEX usage_ledger_session_idx ON usage_ledger (session_id);

-- The ledger summed per hour (UTC, `YYYY-MM-DDTHH`) and per everything a query groups by,
-- kept in the same transaction as each ledger row. Queries read whole hours from here and
-- only the partial hours at their edges from the ledger. Absent ids are '' so the key is
-- unique (NULLs never conflict).
CREATE TABLE usage_hourly (
    hour          TEXT NOT NULL,
    project_id    TEXT NOT NULL,
    session_id    TEXT NOT NULL,
    agent_id      TEXT NOT NULL,
    agent         TEXT NOT NULL,
    model         TEXT NOT NULL,
    cost_usd      DOUBLE NOT NULL,
    input_tokens  BIGINT NOT NULL,
    output_tokens BIGINT NOT NULL,
    turns         BIGINT NOT NULL,
    PRIMARY KEY (hour, project_id, session_id, agent_id, agent, model)
);
CREATE INDEX usage_hourly_project_idx ON usage_hourly (project_id, hour);

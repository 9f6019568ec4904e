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

-- What was spent before the ledger: one row per session and per agent run that had a cost,
-- dated at its last activity (the per-turn detail was never kept).
INSERT INTO usage_ledger (recorded_at, project_id, session_id, execution_id, agent_id, agent, model,
    cost_usd, input_tokens, output_tokens)
SELECT last_active_at, project_id, id, NULL, NULL, agent, model, total_cost_usd, total_input_tokens,
    total_output_tokens
FROM sessions
WHERE total_cost_usd > 0 OR total_input_tokens > 0 OR total_output_tokens > 0;
INSERT INTO usage_ledger (recorded_at, project_id, session_id, execution_id, agent_id, agent, model,
    cost_usd, input_tokens, output_tokens)
SELECT COALESCE(e.finished_at, e.created_at), a.project_id, NULL, e.id, a.id, a.agent, a.model,
    COALESCE(e.cost_usd, 0), COALESCE(e.input_tokens, 0), COALESCE(e.output_tokens, 0)
FROM agent_executions e JOIN agents a ON a.id = e.agent_id
WHERE e.cost_usd > 0 OR e.input_tokens > 0 OR e.output_tokens > 0;
INSERT INTO usage_hourly (hour, project_id, session_id, agent_id, agent, model, cost_usd, input_tokens,
    output_tokens, turns)
SELECT substr(recorded_at, 1, 13), COALESCE(project_id, ''), COALESCE(session_id, ''), COALESCE(agent_id, ''),
    agent, COALESCE(model, ''), SUM(cost_usd), SUM(input_tokens), SUM(output_tokens), COUNT(*)
FROM usage_ledger
GROUP BY 1, 2, 3, 4, 5, 6;

-- Usage queries over a month read the rollups, and a month of hourly rows (one per hour and
-- session) is still tens of thousands: a second rollup per UTC day without the session answers
-- every grouping but `session` from a few thousand rows. Both rollups are kept by the database
-- itself, by a trigger on the ledger, in the statement that inserts the ledger row: whatever
-- writes the ledger keeps them exact, and the work is one prepared statement per turn.
-- Both are clustered on their key (WITHOUT ROWID): a window's rows are read in key order.
-- No query reads the ledger by session (the hourly rollup has them): its index only cost
-- every insert.
DROP INDEX usage_ledger_session_idx;

CREATE TABLE usage_hourly_new (
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
) WITHOUT ROWID;
INSERT INTO usage_hourly_new SELECT hour, project_id, session_id, agent_id, agent, model, cost_usd,
    input_tokens, output_tokens, turns FROM usage_hourly;
DROP TABLE usage_hourly;
ALTER TABLE usage_hourly_new RENAME TO usage_hourly;
CREATE INDEX usage_hourly_project_idx ON usage_hourly (project_id, hour);

-- Absent ids are '' as in the hourly rollup.
CREATE TABLE usage_daily (
    day           TEXT NOT NULL,
    project_id    TEXT NOT NULL,
    agent_id      TEXT NOT NULL,
    agent         TEXT NOT NULL,
    model         TEXT NOT NULL,
    cost_usd      DOUBLE NOT NULL,
    input_tokens  BIGINT NOT NULL,
    output_tokens BIGINT NOT NULL,
    turns         BIGINT NOT NULL,
    PRIMARY KEY (day, project_id, agent_id, agent, model)
) WITHOUT ROWID;
INSERT INTO usage_daily (day, project_id, agent_id, agent, model, cost_usd, input_tokens,
    output_tokens, turns)
SELECT substr(recorded_at, 1, 10), COALESCE(project_id, ''), COALESCE(agent_id, ''), agent,
    COALESCE(model, ''), SUM(cost_usd), SUM(input_tokens), SUM(output_tokens), COUNT(*)
FROM usage_ledger
GROUP BY 1, 2, 3, 4, 5;

CREATE TRIGGER usage_ledger_rollups AFTER INSERT ON usage_ledger
BEGIN
    INSERT INTO usage_hourly (hour, project_id, session_id, agent_id, agent, model, cost_usd,
        input_tokens, output_tokens, turns)
    VALUES (substr(NEW.recorded_at, 1, 13), COALESCE(NEW.project_id, ''), COALESCE(NEW.session_id, ''),
        COALESCE(NEW.agent_id, ''), NEW.agent, COALESCE(NEW.model, ''), NEW.cost_usd, NEW.input_tokens,
        NEW.output_tokens, 1)
    ON CONFLICT (hour, project_id, session_id, agent_id, agent, model) DO UPDATE SET
        cost_usd = cost_usd + excluded.cost_usd,
        input_tokens = input_tokens + excluded.input_tokens,
        output_tokens = output_tokens + excluded.output_tokens,
        turns = turns + 1;
    INSERT INTO usage_daily (day, project_id, agent_id, agent, model, cost_usd, input_tokens,
        output_tokens, turns)
    VALUES (substr(NEW.recorded_at, 1, 10), COALESCE(NEW.project_id, ''), COALESCE(NEW.agent_id, ''),
        NEW.agent, COALESCE(NEW.model, ''), NEW.cost_usd, NEW.input_tokens, NEW.output_tokens, 1)
    ON CONFLICT (day, project_id, agent_id, agent, model) DO UPDATE SET
        cost_usd = cost_usd + excluded.cost_usd,
        input_tokens = input_tokens + excluded.input_tokens,
        output_tokens = output_tokens + excluded.output_tokens,
        turns = turns + 1;
END;

DROP TRIGGER usage_ledger_rollups;
DROP TABLE usage_daily;
CREATE TABLE usage_hourly_old (
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
INSERT INTO usage_hourly_old SELECT * FROM usage_hourly;
DROP TABLE usage_hourly;
ALTER TABLE usage_hourly_old RENAME TO usage_hourly;
CREATE INDEX usage_hourly_project_idx ON usage_hourly (project_id, hour);
CREATE INDEX usage_ledger_session_idx ON usage_ledger (session_id);

-- Other agents' decisions go: the old CHECK cannot hold them.
CREATE TABLE permission_log_new (
    id              INTEGER PRIMARY KEY AUTOINCREMENT NOT NULL,
    project_id      TEXT REFERENCES projects (id) ON DELETE CASCADE,
    session_id      TEXT REFERENCES sessions (id) ON DELETE CASCADE,
    request_id      TEXT NOT NULL,
    tool_use_id     TEXT,
    decision_point  TEXT NOT NULL CHECK (decision_point IN ('hook', 'can_use_tool', 'exec')),
    tool_name       TEXT NOT NULL,
    tool_input      TEXT NOT NULL,
    decision        TEXT NOT NULL CHECK (decision IN ('allow', 'deny')),
    decision_source TEXT NOT NULL CHECK (decision_source IN ('auto_rule', 'auto_default')),
    rule_id         TEXT,
    reason          TEXT,
    decided_at      TEXT NOT NULL,
    command_reading TEXT
);
INSERT INTO permission_log_new SELECT id, project_id, session_id, request_id, tool_use_id, decision_point,
    tool_name, tool_input, decision, decision_source, rule_id, reason, decided_at, command_reading
    FROM permission_log WHERE decision_point IN ('hook', 'can_use_tool', 'exec');
DROP TABLE permission_log;
ALTER TABLE permission_log_new RENAME TO permission_log;
CREATE INDEX permission_log_session_idx ON permission_log (session_id, decided_at);
CREATE INDEX permission_log_project_idx ON permission_log (project_id, decided_at);
CREATE INDEX permission_log_decided_idx ON permission_log (decided_at);
CREATE INDEX permission_log_tool_use_idx ON permission_log (tool_use_id);
ALTER TABLE agents DROP COLUMN agent;
ALTER TABLE projects DROP COLUMN default_agent;
ALTER TABLE sessions DROP COLUMN agent;

-- Agent kinds: a session, a project's default and a scheduled agent name the agent CLI they
-- run (`claude`, `codex`, `gemini`, or an ACP agent defined in the settings). Every existing
-- row ran Claude Code.
ALTER TABLE sessions ADD COLUMN agent TEXT NOT NULL DEFAULT 'claude';
ALTER TABLE projects ADD COLUMN default_agent TEXT;
ALTER TABLE agents ADD COLUMN agent TEXT NOT NULL DEFAULT 'claude';

-- The permission log names the agent whose call was decided, and its mechanism joins the
-- decision points. SQLite cannot change a CHECK in place: the table is rebuilt with its rows
-- and indexes.
CREATE TABLE permission_log_new (
    id              INTEGER PRIMARY KEY AUTOINCREMENT NOT NULL,
    project_id      TEXT REFERENCES projects (id) ON DELETE CASCADE,
    session_id      TEXT REFERENCES sessions (id) ON DELETE CASCADE,
    request_id      TEXT NOT NULL,
    tool_use_id     TEXT,
    decision_point  TEXT NOT NULL CHECK (decision_point IN ('hook', 'can_use_tool', 'exec',
        'codex_command_approval', 'codex_file_change_approval', 'acp_permission')),
    tool_name       TEXT NOT NULL,
    tool_input      TEXT NOT NULL,
    decision        TEXT NOT NULL CHECK (decision IN ('allow', 'deny')),
    decision_source TEXT NOT NULL CHECK (decision_source IN ('auto_rule', 'auto_default')),
    rule_id         TEXT,
    reason          TEXT,
    decided_at      TEXT NOT NULL,
    command_reading TEXT,
    agent           TEXT
);
INSERT INTO permission_log_new SELECT id, project_id, session_id, request_id, tool_use_id, decision_point,
    tool_name, tool_input, decision, decision_source, rule_id, reason, decided_at, command_reading,
    CASE WHEN decision_point = 'exec' THEN NULL ELSE 'claude' END
    FROM permission_log;
DROP TABLE permission_log;
ALTER TABLE permission_log_new RENAME TO permission_log;
CREATE INDEX permission_log_session_idx ON permission_log (session_id, decided_at);
CREATE INDEX permission_log_project_idx ON permission_log (project_id, decided_at);
CREATE INDEX permission_log_decided_idx ON permission_log (decided_at);
CREATE INDEX permission_log_tool_use_idx ON permission_log (tool_use_id);

-- Conduit's initial schema. Ids are UUIDs stored as TEXT; timestamps are RFC 3339 UTC TEXT
-- with milliseconds ("2026-11-22T03:15:00.123Z"), which sort correctly as text on every backend.

CREATE TABLE projects (
    id                           TEXT PRIMARY KEY NOT NULL,
    name                         TEXT NOT NULL,
    folder_path                  TEXT NOT NULL,
    description                  TEXT,
    project_type                 TEXT NOT NULL DEFAULT 'generic',
    source                       TEXT NOT NULL DEFAULT 'manual' CHECK (source IN ('manual', 'imported')),
    default_model                TEXT,
    default_permission_mode      TEXT,
    default_system_prompt        TEXT,
    default_append_system_prompt TEXT,
    max_sessions                 INTEGER NOT NULL DEFAULT 5,
    created_at                   TEXT NOT NULL,
    updated_at                   TEXT NOT NULL
);
CREATE UNIQUE INDEX projects_folder_path_key ON projects (folder_path);
CREATE INDEX projects_name_idx ON projects (name);

-- project_id NULL = a global rule.
CREATE TABLE permission_rules (
    id            TEXT PRIMARY KEY NOT NULL,
    project_id    TEXT REFERENCES projects (id) ON DELETE CASCADE,
    tool_name     TEXT NOT NULL,
    rule_content  TEXT NOT NULL DEFAULT '',
    behavior      TEXT NOT NULL CHECK (behavior IN ('allow', 'deny')),
    priority      INTEGER NOT NULL DEFAULT 0,
    updated_input TEXT,
    created_at    TEXT NOT NULL,
    updated_at    TEXT NOT NULL
);
CREATE INDEX permission_rules_project_idx ON permission_rules (project_id, behavior, priority);

CREATE TABLE sessions (
    id                   TEXT PRIMARY KEY NOT NULL,
    project_id           TEXT NOT NULL REFERENCES projects (id) ON DELETE CASCADE,
    session_id           TEXT,
    external_key         TEXT,
    name                 TEXT NOT NULL,
    status               TEXT NOT NULL,
    model                TEXT,
    permission_mode      TEXT,
    system_prompt        TEXT,
    append_system_prompt TEXT,
    resume_session_id    TEXT,
    fork_session         BOOLEAN NOT NULL DEFAULT 0,
    transport            TEXT NOT NULL DEFAULT 'stdio',
    ws_port              INTEGER,
    cli_pid              INTEGER,
    cli_started_at       TEXT,
    total_cost_usd       DOUBLE NOT NULL DEFAULT 0,
    total_input_tokens   BIGINT NOT NULL DEFAULT 0,
    total_output_tokens  BIGINT NOT NULL DEFAULT 0,
    num_turns            INTEGER NOT NULL DEFAULT 0,
    error_message        TEXT,
    created_at           TEXT NOT NULL,
    last_active_at       TEXT NOT NULL,
    closed_at            TEXT
);
CREATE INDEX sessions_project_status_idx ON sessions (project_id, status);
CREATE INDEX sessions_status_idx ON sessions (status);
CREATE INDEX sessions_last_active_idx ON sessions (last_active_at);
CREATE INDEX sessions_external_key_idx ON sessions (project_id, external_key);

-- Every line exchanged with a CLI, raw, in order.
CREATE TABLE messages (
    id              INTEGER PRIMARY KEY AUTOINCREMENT NOT NULL,
    session_id      TEXT NOT NULL REFERENCES sessions (id) ON DELETE CASCADE,
    direction       TEXT NOT NULL CHECK (direction IN ('to_cli', 'from_cli')),
    message_type    TEXT NOT NULL,
    message_subtype TEXT,
    content         TEXT NOT NULL,
    timestamp       TEXT NOT NULL
);
CREATE INDEX messages_session_idx ON messages (session_id, id);

-- One row per permission decision. No foreign key on rule_id: the audit outlives deleted rules.
CREATE TABLE permission_log (
    id              INTEGER PRIMARY KEY AUTOINCREMENT NOT NULL,
    project_id      TEXT REFERENCES projects (id) ON DELETE CASCADE,
    session_id      TEXT REFERENCES sessions (id) ON DELETE CASCADE,
    request_id      TEXT NOT NULL,
    tool_use_id     TEXT,
    decision_point  TEXT NOT NULL CHECK (decision_point IN ('hook', 'can_use_tool')),
    tool_name       TEXT NOT NULL,
    tool_input      TEXT NOT NULL,
    decision        TEXT NOT NULL CHECK (decision IN ('allow', 'deny')),
    decision_source TEXT NOT NULL CHECK (decision_source IN ('auto_rule', 'auto_default')),
    rule_id         TEXT,
    reason          TEXT,
    decided_at      TEXT NOT NULL
);
CREATE INDEX permission_log_session_idx ON permission_log (session_id, decided_at);
CREATE INDEX permission_log_project_idx ON permission_log (project_id, decided_at);
CREATE INDEX permission_log_decided_idx ON permission_log (decided_at);
CREATE INDEX permission_log_tool_use_idx ON permission_log (tool_use_id);

CREATE TABLE webhooks (
    id         TEXT PRIMARY KEY NOT NULL,
    name       TEXT NOT NULL,
    url        TEXT NOT NULL,
    events     TEXT NOT NULL,
    secret     TEXT,
    active     BOOLEAN NOT NULL DEFAULT 1,
    created_at TEXT NOT NULL,
    updated_at TEXT NOT NULL
);
CREATE INDEX webhooks_active_idx ON webhooks (active);

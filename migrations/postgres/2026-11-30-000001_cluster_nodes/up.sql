-- Cluster mode keeps its nodes here; the same schema as SQLite's, so every query works on
-- both.
CREATE TABLE nodes (
    name TEXT PRIMARY KEY NOT NULL,
    address TEXT NOT NULL,
    capacity INTEGER NOT NULL,
    state TEXT NOT NULL CHECK (state IN ('live', 'left', 'lost')),
    role TEXT NOT NULL CHECK (role IN ('leader', 'follower')),
    live_sessions INTEGER NOT NULL DEFAULT 0,
    started_at TEXT NOT NULL,
    heartbeat_at TEXT NOT NULL,
    lease_until TEXT NOT NULL
);
CREATE INDEX nodes_state_lease_idx ON nodes (state, lease_until);

-- The node whose CLI runs the session (cluster mode); null on a single service.
ALTER TABLE sessions ADD COLUMN owner_node TEXT;
CREATE INDEX sessions_owner_status_idx ON sessions (owner_node, status);

-- Likewise the node running an agent run's CLI, and a command's or background process's.
ALTER TABLE agent_executions ADD COLUMN owner_node TEXT;
ALTER TABLE processes ADD COLUMN owner_node TEXT;

-- One live session per project and external_key, enforced by the database: concurrent launches
-- with one key on several nodes give exactly one session (the others answer with it).
CREATE UNIQUE INDEX sessions_live_external_key_idx ON sessions (project_id, external_key)
    WHERE external_key IS NOT NULL
      AND status IN ('starting', 'idle', 'active', 'compacting', 'waiting_for_limit', 'paused');

-- The scheduled time a cron run is for: each fire runs once across the cluster (a node whose
-- insert meets this index knows another node ran it).
ALTER TABLE agent_executions ADD COLUMN fire_at TEXT;
CREATE UNIQUE INDEX agent_executions_fire_idx ON agent_executions (agent_id, fire_at)
    WHERE fire_at IS NOT NULL;

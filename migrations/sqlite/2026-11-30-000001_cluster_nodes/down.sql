DROP INDEX agent_executions_fire_idx;
ALTER TABLE agent_executions DROP COLUMN fire_at;
DROP INDEX sessions_live_external_key_idx;
ALTER TABLE processes DROP COLUMN owner_node;
ALTER TABLE agent_executions DROP COLUMN owner_node;
DROP INDEX sessions_owner_status_idx;
ALTER TABLE sessions DROP COLUMN owner_node;
DROP INDEX nodes_state_lease_idx;
DROP TABLE nodes;

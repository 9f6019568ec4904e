-- Drops the whole schema created by up.sql: the trigger and its function first, then every
-- table, each before the tables it references.
DROP TRIGGER usage_ledger_rollups ON usage_ledger;
DROP FUNCTION usage_ledger_rollups();
DROP TABLE usage_daily;
DROP TABLE usage_hourly;
DROP TABLE usage_ledger;
DROP TABLE processes;
DROP TABLE agent_executions;
DROP TABLE agents;
DROP TABLE webhook_deliveries;
DROP TABLE webhooks;
DROP TABLE permission_log;
DROP TABLE session_events;
DROP TABLE messages;
DROP TABLE sessions;
DROP TABLE permission_rules;
DROP TABLE projects;

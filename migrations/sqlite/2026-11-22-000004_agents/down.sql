DROP TABLE agent_executions;
DROP TABLE agents;

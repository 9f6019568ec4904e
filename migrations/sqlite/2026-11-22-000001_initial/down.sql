DROP TABLE webhooks;
DROP TABLE permission_log;
DROP TABLE messages;
DROP TABLE sessions;
DROP TABLE permission_rules;
DROP TABLE projects;

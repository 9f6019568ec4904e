DROP TABLE login_sessions;

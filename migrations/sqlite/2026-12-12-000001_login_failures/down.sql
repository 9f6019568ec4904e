DROP TABLE login_lockouts;
DROP TABLE login_failures;

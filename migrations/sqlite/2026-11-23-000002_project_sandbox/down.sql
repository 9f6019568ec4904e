ALTER TABLE projects DROP COLUMN sandbox;

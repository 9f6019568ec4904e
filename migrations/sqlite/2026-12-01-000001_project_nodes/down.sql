ALTER TABLE projects DROP COLUMN nodes;

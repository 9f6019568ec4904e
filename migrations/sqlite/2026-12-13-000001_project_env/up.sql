-- A project's own environment variables for everything it starts, as a JSON object of
-- names to values (shown redacted); '': none.
ALTER TABLE projects ADD COLUMN env TEXT NOT NULL DEFAULT '';

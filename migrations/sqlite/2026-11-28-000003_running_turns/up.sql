-- The work-in-progress limit: how many turns a project's sessions may run at once (null: no
-- limit). Beyond it turns wait, first come first served, across the project's sessions.
ALTER TABLE projects ADD COLUMN max_running_turns INTEGER;

ALTER TABLE projects DROP COLUMN max_running_turns;

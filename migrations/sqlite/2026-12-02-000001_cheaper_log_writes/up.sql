-- PostgreSQL only: there, the session of a line or an event is checked once per statement
-- rather than once per row, and a session event has one index fewer. SQLite keeps its foreign
-- keys, whose checks are cheap in process, and its tables as they are. diesel refuses an empty
-- migration file, hence the SELECT.
SELECT 1;

-- Nothing to do on PostgreSQL: its schema starts complete (as of 2026-11-29-000001) in
-- 2026-11-22-000001_initial. diesel refuses an empty migration file, hence the SELECT.
SELECT 1;

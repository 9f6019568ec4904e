ALTER TABLE sessions DROP COLUMN status_reason;
ALTER TABLE sessions DROP COLUMN resumes_at;

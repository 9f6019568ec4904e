-- A session waiting for a usage limit: the stream number of the first user turn it still has to
-- deliver (the one the limit stopped, or the next one sent). Every user turn from there on is
-- delivered at the reset, also by a new process after a service restart. Null otherwise.
ALTER TABLE sessions ADD COLUMN parked_from_seq BIGINT;

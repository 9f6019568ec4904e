ALTER TABLE sessions DROP COLUMN parked_from_seq;

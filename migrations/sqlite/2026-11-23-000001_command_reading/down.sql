ALTER TABLE permission_log DROP COLUMN command_reading;

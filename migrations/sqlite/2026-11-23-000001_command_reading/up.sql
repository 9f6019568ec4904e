-- How a Bash call's command was read by the permission engine: a JSON object
-- {"commands": [...], "matched": "...", "not_analyzable": "..."}; NULL for other tools (and for
-- rows written before this column).
ALTER TABLE permission_log ADD COLUMN command_reading TEXT;

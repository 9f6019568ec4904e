-- Claude Code refuses the permission mode `delegate` (its list is default, acceptEdits, plan,
-- auto, dontAsk, bypassPermissions). Rows that name it could never start a CLI: they fall back
-- to the CLI's default.
UPDATE projects SET default_permission_mode = NULL WHERE default_permission_mode = 'delegate';
UPDATE sessions SET permission_mode = NULL WHERE permission_mode = 'delegate';
